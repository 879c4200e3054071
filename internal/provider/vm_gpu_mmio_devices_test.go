package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// InfiniBand devices beside a VM's GPUs: the lab's ConnectX-7 PFs are
// 0000:86:00.0 and 0000:87:00.0, and VF k of 0000:86:00.0 is 0000:86:00.(k+1).
const (
	ibPF      = "0000:86:00.0"
	ibWholePF = "0000:87:00.0"
	ibVF0     = "0000:86:00.1"
	ibVF1     = "0000:86:00.2"
)

// hostSRIOVIBConfig turns SR-IOV on for ibPF with four VFs on the host of vm.
func hostSRIOVIBConfig(lab *vcsimlab.Lab, vm string) string {
	return fmt.Sprintf(`
resource "vspherehpc_host_sriov" "ib" {
  host_system_id        = %q
  pci_id                = %q
  num_virtual_functions = 4
}
`, lab.HostID(lab.VMHostName(vm)), ibPF)
}

// hostPCIPassthroughIBConfig turns passthrough on for ibVF0 and the whole
// ibWholePF. The VF exists once SR-IOV is active, and vSphere links no VF
// to its PF, so a configuration applies SR-IOV first, then this.
func hostPCIPassthroughIBConfig(lab *vcsimlab.Lab, vm string) string {
	return fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "ib" {
  host_system_id = %q
  pci_ids        = [%q, %q]
  depends_on     = [vspherehpc_host_sriov.ib]
}
`, lab.HostID(lab.VMHostName(vm)), ibVF0, ibWholePF)
}

// vmDevicesAre checks the VM itself: its passthrough devices, as an
// administrator sees them in vCenter.
func vmDevicesAre(lab *vcsimlab.Lab, vm string, want ...string) func(*terraform.State) error {
	return func(*terraform.State) error {
		got, err := lab.VMSettings(context.Background(), vm)
		if err != nil {
			return err
		}
		have := slices.Sorted(slices.Values(got.GPUs))
		if !slices.Equal(have, slices.Sorted(slices.Values(want))) {
			return fmt.Errorf("passthrough devices of %s: %v, want %v", vm, have, want)
		}
		return nil
	}
}

// A VM with a GPU, an InfiniBand VF and a whole PF: one resource manages all
// three, applies, plans empty, imports, and sees a device detached out of
// band as drift.
func TestAccVMGPUMMIO_infinibandDevices(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's InfiniBand cards and their SR-IOV virtual functions")
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	gpu := lab.GPUs()[0]
	withVM := func(devices ...string) string {
		body := `
  depends_on = [vspherehpc_host_pci_passthrough.ib]
` + gpuBlock(gpu)
		for _, d := range devices {
			body += fmt.Sprintf("  pci_device {\n    pci_id = %q\n  }\n", d)
		}
		return vmGPUMMIOConfig(lab, uuid, body) + hostSRIOVIBConfig(lab, vm) + hostPCIPassthroughIBConfig(lab, vm)
	}
	device := func(i int) tfjsonpath.Path { return tfjsonpath.New("pci_device").AtSliceIndex(i).AtMapKey("pci_id") }
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: acctest.ProviderConfig(lab) + hostSRIOVIBConfig(lab, vm)},
			{
				Config: withVM(ibVF0, ibWholePF),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(1)),
					statecheck.ExpectKnownValue(gpuAddr, device(0), knownvalue.StringExact(ibVF0)),
					statecheck.ExpectKnownValue(gpuAddr, device(1), knownvalue.StringExact(ibWholePF)),
					// Sized from the GPU only: 80 GB -> 256.
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("total_gpu_memory_gb"), knownvalue.Float64Exact(80)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(256)),
				},
				Check: vmDevicesAre(lab, vm, gpu, ibVF0, ibWholePF),
			},
			{Config: withVM(ibVF0, ibWholePF), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			{ResourceName: gpuAddr, ImportState: true, ImportStateId: uuid, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"extra_config_before"}},
			// The VM's setup, the host's SR-IOV and its passthrough: one
			// read each.
			refreshReads(lab, 3),
			{
				PreConfig: func() { acctest.Must(t, lab.DetachGPU(context.Background(), vm, ibVF0)) },
				Config:    withVM(ibVF0, ibWholePF),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate),
				}},
				Check: vmDevicesAre(lab, vm, gpu, ibVF0, ibWholePF),
			},
			{
				// The whole PF leaves; the GPU and the VF stay.
				Config: withVM(ibVF0),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("pci_device"), knownvalue.ListSizeExact(1)),
				},
				Check: vmDevicesAre(lab, vm, gpu, ibVF0),
			},
		},
		CheckDestroy: vmDevicesAre(lab, vm),
	})
}

// Every refusal of a device beside the GPUs, at plan time, on a lab whose
// hosts need a reboot for passthrough and SR-IOV changes.
func TestAccVMGPUMMIO_deviceRefusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "uses the lab's InfiniBand cards and A100, and reboots hosts")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	gpu0, gpu1 := lab.GPUs()[0], lab.GPUs()[1]
	var sameHost, otherHost string
	for _, n := range lab.VMNames() {
		switch {
		case n == vm:
		case lab.VMHostName(n) == host && sameHost == "":
			sameHost = n
		case lab.VMHostName(n) != host && otherHost == "":
			otherHost = n
		}
	}
	if sameHost == "" || otherHost == "" {
		t.Fatalf("need a second VM on %s and one on another host", host)
	}
	service := labClient(lab)
	config := func(vmName, body string) string {
		return vmGPUMMIOConfig(lab, lab.VMUUID(vmName), "  mmio_size_gb = 64\n"+body)
	}
	one := func(pciID string) string { return fmt.Sprintf("  pci_device {\n    pci_id = %q\n  }\n", pciID) }
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { acctest.Must(t, service.SetHostSRIOV(ctx, lab.HostID(host), ibPF, 4)) },
				Config:    config(vm, one(ibVF0)), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("SR-IOV of %s on host %s changes at its next reboot, and virtual functions appear only then", ibPF, host),
				),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.RebootHost(ctx, host)) },
				Config:    config(vm, one(ibVF0)), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("PCI device %s (ConnectX Family mlx5Gen Virtual Function) on host %s is not enabled for passthrough", ibVF0, host),
				),
			},
			{
				PreConfig: func() {
					acctest.Must(t, service.SetHostPassthrough(ctx, lab.HostID(host), map[string]bool{ibVF0: true, ibVF1: true}, nil))
				},
				Config: config(vm, one(ibVF0)), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("Passthrough of PCI device %s (ConnectX Family mlx5Gen Virtual Function) on host %s is enabled but not active yet", ibVF0, host),
				),
			},
			{
				PreConfig: func() {
					acctest.Must(t, lab.RebootHost(ctx, host))
					acctest.Must(t, lab.AttachGPU(ctx, sameHost, ibVF0))
				},
				Config: config(vm, one(ibVF0)), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("PCI device %s on host %s is already configured on virtual machine %s", ibVF0, host, sameHost)),
			},
			{
				// Only the first VM's host has the VFs.
				Config: config(otherHost, one(ibVF1)), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("runs on host %s, which has no PCI device %s; it is on host %s", lab.VMHostName(otherHost), ibVF1, host),
				),
			},
			{
				Config: config(vm, one(gpu1)), PlanOnly: true,
				ExpectError: acctest.Wording("PCI device " + gpu1 + " is a GPU (GH100 [H100 SXM5 80GB]). List it in a gpu block instead"),
			},
			{
				Config: config(vm, "\n"+gpuBlock(gpu0)+one(gpu0)), PlanOnly: true,
				ExpectError: acctest.Wording("PCI device " + gpu0 + " is listed both in a gpu block and in a pci_device block"),
			},
			{
				// Two VMs of one configuration claim one VF.
				Config: config(vm, one(ibVF1)) + fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "again" {
  virtual_machine_id = %q
  mmio_size_gb       = 64
  pci_device {
    pci_id = %q
  }
}
`, lab.VMUUID(sameHost), ibVF1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*claim\s+PCI\s+device\s+0000:86:00.2\s+on\s+host`),
			},
			{
				// Turned on in the same configuration, but this host applies
				// passthrough only at its next reboot.
				Config: config(vm, one("0000:86:00.3")+"  depends_on = [vspherehpc_host_pci_passthrough.vf]\n") + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "vf" {
  host_system_id = %q
  pci_ids        = ["0000:86:00.3"]
}
`, lab.HostID(host)), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("PCI device 0000:86:00.3 on host %s is turned on by this configuration, but the host applies that only at its next reboot", host),
				),
			},
			{
				Config: config(vm, fmt.Sprintf("  gpu {\n    pci_id = %q\n  }\n  depends_on = [vspherehpc_host_pci_passthrough.a100]\n", a100)) + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "a100" {
  host_system_id = %q
  pci_ids        = [%q]
}
`, lab.HostID(host), a100), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("GPU %s on host %s is turned on by this configuration, but the host applies that only at its next reboot", a100, host),
				),
			},
		},
	})
}

// A device that is not active for passthrough is worded by why (issue 22,
// item 5): a GPU enabled and waiting for the host's reboot, a card split
// into virtual functions and a switch uplink are not told to "enable it".
func TestAccVMGPUMMIO_notActiveWording(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "uses the lab's InfiniBand cards and reboots hosts")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	gpu := lab.GPUs()[1]
	service := labClient(lab)
	h, err := service.Host(ctx, lab.HostID(host))
	acctest.Must(t, err)
	uplink := h.PhysicalNICs[slices.IndexFunc(h.PhysicalNICs, func(n vsphere.PhysicalNIC) bool { return n.Name == lab.RDMANICs()[0] })]
	acctest.Must(t, lab.CreateSwitch(ctx, testName("taken"), host, uplink.Name))
	destroySwitchAfter(t, lab, testName("taken"))
	config := func(body string) string { return vmGPUMMIOConfig(lab, lab.VMUUID(vm), "  mmio_size_gb = 64\n"+body) }
	device := func(pciID string) string { return fmt.Sprintf("  pci_device {\n    pci_id = %q\n  }\n", pciID) }
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config(device(uplink.PCIID)), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						"PCI device %s (%s) on host %s is an uplink of switch %q",
						uplink.PCIID,
						strings.TrimSpace(deviceName(t, lab, host, uplink.PCIID)),
						host,
						testName("taken"),
					),
				),
			},
			{
				PreConfig: func() {
					acctest.Must(t, service.SetHostSRIOV(ctx, lab.HostID(host), ibPF, 2))
					acctest.Must(t, lab.RebootHost(ctx, host))
				},
				Config: config(device(ibPF)), PlanOnly: true,
				ExpectError: regexp.MustCompile(
					`(?s)PCI device serves SR-IOV virtual functions.*` + regexp.QuoteMeta(ibPF) + `.*Give\s+one\s+of\s+its\s+virtual\s+functions`,
				),
			},
			{
				PreConfig: func() {
					acctest.Must(t, service.SetHostPassthrough(ctx, lab.HostID(host), map[string]bool{gpu: false}, nil))
					acctest.Must(t, lab.RebootHost(ctx, host))
					acctest.Must(t, service.SetHostPassthrough(ctx, lab.HostID(host), map[string]bool{gpu: true}, nil))
				},
				Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), gpuBlock(gpu)), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)GPU waits for a host reboot.*GPU\s+` + regexp.QuoteMeta(gpu) + `.*enabled\s+but\s+not\s+active\s+yet`),
			},
			{
				// Put the lab back: SR-IOV off, the GPU active.
				PreConfig: func() {
					acctest.Must(t, service.SetHostSRIOV(ctx, lab.HostID(host), ibPF, 0))
					acctest.Must(t, lab.RebootHost(ctx, host))
				},
				Config: acctest.ProviderConfig(lab),
			},
		},
	})
}

// deviceName is the name the host gives a PCI device.
func deviceName(t *testing.T, lab *vcsimlab.Lab, host, pciID string) string {
	t.Helper()
	p, err := labClient(lab).HostPassthrough(context.Background(), lab.HostID(host))
	acctest.Must(t, err)
	if d := p.Device(pciID); d != nil {
		return d.DeviceName
	}
	t.Fatalf("host %s has no PCI device %s", host, pciID)
	return ""
}
