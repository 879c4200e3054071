package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
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

const sriovNICAddr = "vspherehpc_vm_sriov_nic.n"

// The lab's ConnectX-6 Dx ports are SR-IOV capable: vmnic4 (0000:d8:00.0),
// the uplink of rdmaDVSTwoSwitchesConfig's rdma-a, and vmnic5 (0000:d8:00.1), rdma-b's.
const (
	vmnic4PF = "0000:d8:00.0"
	vmnic5PF = "0000:d8:00.1"
)

// hostSRIOVVmnic4Config turns SR-IOV on for vmnic4 on the host of vm, beside
// the two switches.
func hostSRIOVVmnic4Config(lab *vcsimlab.Lab, vm string) string {
	return rdmaDVSTwoSwitchesConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_sriov" "vmnic4" {
  host_system_id        = %q
  pci_id                = %q
  num_virtual_functions = 4
}
`, lab.HostID(lab.VMHostName(vm)), vmnic4PF)
}

func vmSRIOVNICConfig(lab *vcsimlab.Lab, vm, portGroup, pf string, powerOffAllowed bool) string {
	return hostSRIOVVmnic4Config(lab, vm) + fmt.Sprintf(`
resource "vspherehpc_vm_sriov_nic" "n" {
  virtual_machine_id        = %q
  distributed_port_group_id = vspherehpc_rdma_dvs.%s.port_group_id
  physical_function         = %q
  power_off_allowed         = %t
  depends_on                = [vspherehpc_host_sriov.vmnic4]
}
`, lab.VMUUID(vm), portGroup, pf, powerOffAllowed)
}

// sriovAdapterIs checks the VM itself: its one SR-IOV adapter's physical
// function as vCenter stores it.
func sriovAdapterIs(lab *vcsimlab.Lab, vm, wantPF string) func(*terraform.State) error {
	return func(*terraform.State) error {
		got, err := lab.SRIOVAdapters(context.Background(), vm)
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0].PhysicalFunction != wantPF {
			return fmt.Errorf("SR-IOV adapters of %s: %+v, want one on %s", vm, got, wantPF)
		}
		return nil
	}
}

func TestAccVMSRIOVNIC_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	pinned := vmSRIOVNICConfig(lab, vm, "a", vmnic4PF, false)
	automatic := vmSRIOVNICConfig(lab, vm, "a", "automatic", false)
	// Once the VM runs, destroy needs to power it off.
	running := vmSRIOVNICConfig(lab, vm, "a", "automatic", true)
	var key int64
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: pinned,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("physical_function"), knownvalue.StringExact(vmnic4PF)),
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("assigned_physical_function"), knownvalue.StringExact(vmnic4PF)),
					// The VM is off: no VF yet.
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("virtual_function"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("memory_reservation_locked_to_max"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("mac_address"), knownvalue.StringRegexp(macPattern)),
				},
				Check: resource.ComposeTestCheckFunc(sriovAdapterIs(lab, vm, vmnic4PF), func(s *terraform.State) error {
					_, err := fmt.Sscan(s.RootModule().Resources[sriovNICAddr].Primary.Attributes["device_key"], &key)
					return err
				}),
			},
			{ResourceName: sriovNICAddr, ImportState: true, ImportStateVerify: true, ImportStateIdFunc: func(s *terraform.State) (string, error) {
				return s.RootModule().Resources[sriovNICAddr].Primary.ID, nil
			}},
			// Three host look-ups by name (one read of the names, shared,
			// and one each), then one read each: two switches, the host's
			// SR-IOV, the adapter.
			refreshReads(lab, 1+3+4),
			{
				// Drift: moved to vmnic5 in vCenter.
				PreConfig: func() {
					acctest.Must(t, lab.SetHostSRIOV(ctx, lab.VMHostName(vm), vmnic5PF, 2))
					acctest.Must(t, lab.SetSRIOVAdapterPF(ctx, vm, int32(key), vmnic5PF))
				},
				Config: pinned,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovNICAddr, plancheck.ResourceActionUpdate),
				}},
				Check: sriovAdapterIs(lab, vm, vmnic4PF),
			},
			{
				// vCenter's choice; once it chose at power on, the id reads
				// Automatic-<PCI id> and the plan stays empty.
				Config: automatic,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("physical_function"), knownvalue.StringExact("automatic")),
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("assigned_physical_function"), knownvalue.StringExact("")),
				},
				Check: sriovAdapterIs(lab, vm, "Automatic-0000:00:00.0"),
			},
			{
				// Disappears: removed in vCenter, planned again.
				PreConfig: func() { acctest.Must(t, lab.RemoveSRIOVAdapters(ctx, vm)) },
				Config:    automatic,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovNICAddr, plancheck.ResourceActionCreate),
				}},
				Check: sriovAdapterIs(lab, vm, "Automatic-0000:00:00.0"),
			},
			{Config: running},
			{
				PreConfig:        func() { acctest.Must(t, lab.PowerOnVM(ctx, vm)) },
				Config:           running,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("physical_function"), knownvalue.StringExact("automatic")),
					statecheck.ExpectKnownValue(sriovNICAddr, tfjsonpath.New("assigned_physical_function"), knownvalue.StringExact(vmnic4PF)),
					statecheck.ExpectKnownValue(
						sriovNICAddr,
						tfjsonpath.New("virtual_function"),
						knownvalue.StringRegexp(regexp.MustCompile(`^0000:d8:0[0-9]\.[0-7]$`)),
					),
				},
				Check: sriovAdapterIs(lab, vm, "Automatic-"+vmnic4PF),
			},
		},
		CheckDestroy: func(*terraform.State) error {
			got, err := lab.SRIOVAdapters(ctx, vm)
			if err != nil || len(got) != 0 {
				return fmt.Errorf("after destroy: SR-IOV adapters %+v, %v; want none", got, err)
			}
			return nil
		},
	})
}

// Every refusal of an SR-IOV adapter, at plan time, on a lab whose hosts
// need a reboot for SR-IOV changes.
func TestAccVMSRIOVNIC_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs, InfiniBand card and A100, creates a VM and reboots hosts")
	ctx := context.Background()
	vm, vm1 := lab.VMNames()[0], lab.VMNames()[1]
	uplink := lab.RDMANICs()[0] // vmnic4, whose PF is vmnic4PF
	host := lab.VMHostName(vm)
	hostLabel := fmt.Sprintf("%s (%s)", host, lab.HostID(host))
	node0, err := labClient(lab).VM(ctx, lab.VMUUID(vm))
	if err != nil {
		t.Fatal(err)
	}
	// vCenter's own addresses are in the part of VMware's prefix no
	// configuration may give: the MAC in use is a static one.
	acctest.Must(t, lab.SetAdapterMAC(ctx, vm1, "00:50:56:01:0a:0b"))
	node1, err := labClient(lab).VM(ctx, lab.VMUUID(vm1))
	if err != nil {
		t.Fatal(err)
	}
	switches := rdmaDVSTwoSwitchesConfig(lab)
	nic := func(vmName, portGroup, pf, extra string) string {
		return switches + fmt.Sprintf(`
resource "vspherehpc_vm_sriov_nic" "n" {
  virtual_machine_id        = %q
  distributed_port_group_id = %s
  physical_function         = %q
%s
}
`, lab.VMUUID(vmName), portGroup, pf, extra)
	}
	groupA := "vspherehpc_rdma_dvs.a.port_group_id"
	acctest.Must(t, lab.CreateVM(ctx, "esxi51-node", host, 9)) // a VM made for ESXi 5.1 (vmx-09)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: switches},
			{
				Config: nic(vm, groupA, "0000:99:00.0", ""), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("The VM's host %s has no PCI device 0000:99:00.0. Its SR-IOV capable devices:", hostLabel)),
			},
			{
				Config: nic(vm, groupA, "0000:af:00.0", ""), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						"PCI device 0000:af:00.0 (GA100 [A100 PCIe 40GB]) of the VM's host %s is not SR-IOV capable. Its SR-IOV capable devices:",
						hostLabel,
					),
				),
			},
			{
				Config: nic(vm, groupA, ibPF, ""), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("PCI device %s (MT2910 Family [ConnectX-7]) of host %s is no network adapter of the host", ibPF, hostLabel),
				),
			},
			{
				Config: nic(vm, groupA, vmnic4PF, ""), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("SR-IOV of %s (%s) on host %s is off", vmnic4PF, uplink, hostLabel)),
			},
			{
				// Turned on by this configuration, on a host that applies it
				// only at a reboot this apply does not do (no reboot_allowed).
				Config: nic(vm, groupA, vmnic4PF, "  depends_on = [vspherehpc_host_sriov.s]") + fmt.Sprintf(`
resource "vspherehpc_host_sriov" "s" {
  host_system_id        = %q
  pci_id                = %q
  num_virtual_functions = 4
}
`, lab.HostID(host), vmnic4PF), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						"SR-IOV of %s on host %s is turned on by this configuration, but the host applies that only at its next reboot",
						vmnic4PF,
						hostLabel,
					),
				),
			},
			{
				PreConfig: func() { acctest.Must(t, labClient(lab).SetHostSRIOV(ctx, lab.HostID(host), vmnic4PF, 4)) },
				Config:    nic(vm, groupA, vmnic4PF, ""), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("SR-IOV of %s (%s) on host %s is enabled but not active yet", vmnic4PF, uplink, hostLabel)),
			},
			{
				// Waiting for the reboot, vmnic4 is no choice for vCenter yet.
				Config: nic(vm, groupA, "automatic", ""), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(`among the SR-IOV-active uplinks of switch %s on the VM's host %s, and it has none`, testName("rdma-a"), hostLabel),
				),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.RebootHost(ctx, host)) },
				Config:    nic(vm, `"`+node0.NetworkAdapters[0].NetworkID+`"`, vmnic4PF, ""), PlanOnly: true,
				ExpectError: acctest.Wording(node0.NetworkAdapters[0].NetworkID + " (VM Network) is a standard network"),
			},
			{
				Config: nic(vm, `"dvportgroup-999"`, vmnic4PF, ""), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)distributed_port_group_id.*dvportgroup-999`),
			},
			{
				Config: nic(vm, groupA, vmnic4PF, fmt.Sprintf("  mac_address = %q", node1.NetworkAdapters[0].MAC)), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("Virtual machine %s already has a network adapter with MAC address %s", vm1, node1.NetworkAdapters[0].MAC),
				),
			},
			{
				Config: nic("esxi51-node", groupA, vmnic4PF, ""), PlanOnly: true,
				ExpectError: acctest.Wording("has hardware version 9 (vmx-9); SR-IOV adapters need vmx-10 (ESXi 5.5 compatibility) or later"),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.PowerOnVM(ctx, vm)) },
				Config:    nic(vm, groupA, vmnic4PF, ""), PlanOnly: true,
				ExpectError: acctest.Wording("is powered on, and adding or removing an SR-IOV adapter, or changing its physical function needs it powered off"),
			},
		},
	})
}

// An adapter on a switch that the VM's host is not a member of is refused at
// plan, naming the host and the switch (issue 22, item 4: it was a warning,
// and the apply failed with "*types.InvalidArgument").
func TestAccVMSRIOVNIC_hostNotOnSwitch(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	vm := lab.VMNames()[0]
	var elsewhere string
	for _, h := range lab.HostNames() {
		if h != lab.VMHostName(vm) {
			elsewhere = h
		}
	}
	sw := rdmaDVSConfig(lab, "rdma", map[string]string{elsewhere: lab.RDMANICs()[0]}, "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: sw},
			{
				Config: sw + fmt.Sprintf(`
resource "vspherehpc_vm_sriov_nic" "n" {
  virtual_machine_id        = %q
  distributed_port_group_id = vspherehpc_rdma_dvs.rdma.port_group_id
  physical_function         = %q
}
`, lab.VMUUID(vm), vmnic4PF), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)The VM's host is not on the switch.*runs\s+on\s+host\s+` + regexp.QuoteMeta(lab.VMHostName(vm)) +
					`.*no\s+member\s+of\s+switch\s+` + regexp.QuoteMeta(testName("rdma"))),
			},
		},
	})
}

// Two new adapters on a function with one free virtual function are refused
// at plan, naming both VMs (issue 22, item 3: both planned, and the second
// VM could not power on while the first ran), also when the function gets
// its virtual functions in the same plan.
func TestAccVMSRIOVNIC_moreAdaptersThanFreeVFs(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	vm := lab.VMNames()[0]
	other := otherVMOnHost(lab, vm)
	oneVF := strings.Replace(hostSRIOVVmnic4Config(lab, vm), "num_virtual_functions = 4", "num_virtual_functions = 1", 1)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rdmaDVSTwoSwitchesConfig(lab)},
			{
				// SR-IOV turned on in the same plan: its count is what the
				// adapters count on.
				Config: oneVF + pinnedAdapter(lab, "first", vm) + pinnedAdapter(lab, "second", other), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Not enough free virtual functions.*` + regexp.QuoteMeta(vmnic4PF) +
					`.*gets,\s+as\s+this\s+configuration's\s+vspherehpc_host_sriov\s+sets\s+it,\s+` +
					`1\s+virtual\s+functions,\s+1\s+of\s+them\s+free.*takes\s+2\s+of\s+them`),
			},
			{Config: oneVF},
			{
				Config: oneVF + pinnedAdapter(lab, "first", vm) + pinnedAdapter(lab, "second", other), PlanOnly: true,
				ExpectError: regexp.MustCompile(
					`(?s)Not enough free virtual functions.*` + regexp.QuoteMeta(
						vmnic4PF,
					) + `.*1\s+virtual\s+functions,\s+1\s+of\s+them\s+free.*takes\s+2\s+of\s+them`,
				),
			},
			{Config: oneVF + pinnedAdapter(lab, "first", vm)},
		},
	})
}

// A physical function that is no uplink of the port group's switch is a
// warning, not a refusal: vCenter takes the adapter, and applies the port
// group's policies through the switch the NIC backs.
func TestSRIOVNICPFNotUplinkIsAWarning(t *testing.T) {
	for _, c := range []struct {
		uplinkOf, want string
	}{
		{"", "vmnic5 on host esx-1 (host-12) is no uplink of any switch, not of rdma-a"},
		{"rdma-b", "vmnic5 on host esx-1 (host-12) is an uplink of switch rdma-b, not of rdma-a"},
	} {
		var diags diag.Diagnostics
		addSRIOVNICFinding(&diags, vsphere.PFNotUplink{NIC: "vmnic5", Host: "esx-1 (host-12)", Switch: "rdma-a", UplinkOf: c.uplinkOf})
		if diags.HasError() || diags.WarningsCount() != 1 || !strings.Contains(diags[0].Detail(), c.want) {
			t.Errorf("PFNotUplink (uplink of %q): %v; want one warning saying %q", c.uplinkOf, diags, c.want)
		}
	}
}

// A count a vspherehpc_host_sriov of the same plan changes, on a host that
// applies it only at a reboot this apply does not do, is not the count the
// plan's adapters get: they count against the virtual functions there are.
func TestAccVMSRIOVNIC_freeVFsWaitingForAReboot(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs and reboots a host")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	other := otherVMOnHost(lab, vm)
	acctest.Must(t, lab.SetHostSRIOV(ctx, lab.VMHostName(vm), vmnic4PF, 1))
	acctest.Must(t, lab.RebootHost(ctx, lab.VMHostName(vm)))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rdmaDVSTwoSwitchesConfig(lab)},
			{
				Config: hostSRIOVVmnic4Config(lab, vm) + pinnedAdapter(lab, "first", vm) + pinnedAdapter(lab, "second", other), PlanOnly: true,
				ExpectError: regexp.MustCompile(
					`(?s)Not enough free virtual functions.*` + regexp.QuoteMeta(
						vmnic4PF,
					) + `.*\shas\s+1\s+virtual\s+functions,\s+1\s+of\s+them\s+free.*takes\s+2\s+of\s+them`,
				),
			},
		},
	})
}

// otherVMOnHost is a lab VM on the same host as vm.
func otherVMOnHost(lab *vcsimlab.Lab, vm string) string {
	for _, n := range lab.VMNames() {
		if n != vm && lab.VMHostName(n) == lab.VMHostName(vm) {
			return n
		}
	}
	return ""
}

// pinnedAdapter is an SR-IOV adapter named name on vm, on port group "a",
// taking a virtual function of vmnic4 after hostSRIOVVmnic4Config's
// vspherehpc_host_sriov.
func pinnedAdapter(lab *vcsimlab.Lab, name, vm string) string {
	return fmt.Sprintf(`
resource "vspherehpc_vm_sriov_nic" %q {
  virtual_machine_id        = %q
  distributed_port_group_id = vspherehpc_rdma_dvs.a.port_group_id
  physical_function         = %q
  depends_on                = [vspherehpc_host_sriov.vmnic4]
}
`, name, lab.VMUUID(vm), vmnic4PF)
}

// A virtual function a GPU setup of the same plan passes through is one
// fewer for the SR-IOV adapters of its function: one VF, passed through and
// wanted by an adapter, is refused whichever Terraform plans first.
func TestAccVMSRIOVNIC_freeVFsTakenByPassthrough(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	vm := lab.VMNames()[0]
	other := otherVMOnHost(lab, vm)
	oneVF := strings.Replace(hostSRIOVVmnic4Config(lab, vm), "num_virtual_functions = 4", "num_virtual_functions = 1", 1) + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "vf" {
  host_system_id = %q
  pci_ids        = [vspherehpc_host_sriov.vmnic4.virtual_function_ids[0]]
}
`, lab.HostID(lab.VMHostName(vm)))
	passedThrough := func(dependsOn string) string {
		return fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "vf" {
  virtual_machine_id = %q
  mmio_size_gb       = 64
  pci_device {
    pci_id = vspherehpc_host_sriov.vmnic4.virtual_function_ids[0]
  }
  depends_on = [vspherehpc_host_pci_passthrough.vf%s]
}
`, lab.VMUUID(other), dependsOn)
	}
	refused := regexp.MustCompile(`(?s)Not enough free virtual functions.*` + regexp.QuoteMeta(vmnic4PF) +
		`.*1\s+virtual\s+functions,\s+1\s+of\s+them\s+free.*takes\s+2\s+of\s+them:.*virtual\s+function\s+\S+\s+passed\s+through\s+to\s+virtual\s+machine`)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: oneVF},
			// The GPU setup planned after the adapter, then before it.
			{Config: oneVF + pinnedAdapter(lab, "first", vm) + passedThrough(", vspherehpc_vm_sriov_nic.first"), PlanOnly: true, ExpectError: refused},
			{Config: oneVF + strings.Replace(pinnedAdapter(lab, "first", vm), "[vspherehpc_host_sriov.vmnic4]",
				"[vspherehpc_host_sriov.vmnic4, vspherehpc_vm_gpu_mmio.vf]", 1) + passedThrough(""), PlanOnly: true, ExpectError: refused},
			// Either alone fits.
			{Config: oneVF + passedThrough("")},
		},
	})
}
