package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccVMGPUMMIO_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100, an SR-IOV NIC, VMs legacy-node and installed-node, and powers a VM on")
	ctx := context.Background()
	vm, node1 := lab.VMNames()[0], lab.VMNames()[1]
	uuid := lab.VMUUID(vm)
	gpu0, gpu1 := lab.GPUs()[0], lab.GPUs()[1]
	// Another VM on the same host holds the second GPU (0000:5e:00.0).
	var other string
	for _, n := range lab.VMNames() {
		if n != vm && lab.VMHostName(n) == lab.VMHostName(vm) {
			other = n
		}
	}
	if other == "" {
		t.Fatal("no second VM on the host of " + vm)
	}
	acctest.Must(t, lab.AttachGPU(ctx, other, gpu1))
	acctest.Must(t, lab.PowerOnVM(ctx, node1))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmGPUMMIOConfig(lab, uuid, "  gpu {\n    pci_id = \""+gpu0+"\"\n    count  = 2\n  }\n"), PlanOnly: true,
				ExpectError: acctest.Wording(`The gpu block of ` + gpu0 + ` names one device: count is for dynamic DirectPath`)},
			{Config: vmGPUMMIOConfig(lab, uuid, "  gpu {\n    vendor_id = \"10de\"\n    device_id = \"2330\"\n  }\n"+
				"  gpu {\n    vendor_id = \"10de\"\n    device_id = \"2330\"\n    count     = 2\n  }\n"), PlanOnly: true,
				ExpectError: acctest.Wording(
					`gpu blocks 1, 2 all ask for GPUs of model 10de:2330, 3 in all. The GPUs of a model are one block: give one block with count = 3.`,
				)},
			{Config: vmGPUMMIOConfig(lab, uuid, "  gpu {\n    vendor_id = \"10de\"\n    device_id = \"2330\"\n    count     = 1\n  }\n"), PlanOnly: true,
				ExpectError: acctest.Wording(`count = 1 asks for one GPU of the model: leave count out for one GPU (count is for two or more).`)},
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock(gpu1)), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(`GPU %s on host %s is already configured on virtual machine %s (powered off).`, gpu1, lab.VMHostName(vm), other),
				)},
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock("0000:af:00.0")), PlanOnly: true,
				ExpectError: acctest.Wording(`GPU 0000:af:00.0 (GA100 [A100 PCIe 40GB]) on host ` + lab.VMHostName(vm) + ` is not active for passthrough.`)},
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock("0000:d8:00.0")), PlanOnly: true,
				ExpectError: acctest.Wording(`which has no GPU 0000:d8:00.0; no host of its cluster has it.`)},
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock(gpu0)+"  mmio_size_gb = 100"), PlanOnly: true,
				ExpectError: acctest.Wording(`mmio_size_gb = 100 is not a power of two`)},
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock(gpu0)+"  mmio_size_gb = 128"), PlanOnly: true,
				ExpectError: acctest.Wording(`mmio_size_gb = 128 is below 256, what 80 GB of GPU memory needs`)},
			{Config: vmGPUMMIOConfig(lab, lab.VMUUID("installed-node"), gpuBlock(gpu0)), PlanOnly: true,
				ExpectError: acctest.Wording(`has firmware bios and a guest OS`)},
			{Config: vmGPUMMIOConfig(lab, lab.VMUUID(node1), gpuBlock(gpu0)), PlanOnly: true,
				ExpectError: acctest.Wording(gpusNeedOff)},
			{Config: vmGPUMMIOConfig(lab, uuid, fmt.Sprintf(`  gpu {
    pci_id    = %q
    vendor_id = "10de"
  }`, gpu0)), PlanOnly: true, ExpectError: acctest.Wording(`Give a GPU either as pci_id`)},
		},
	})
}

func TestAccVMGPUMMIO_moreRefusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: vmGPUMMIOConfig(lab, uuid, "  gpu {\n    vendor_id = \"10de\"\n    device_id = \"ffff\"\n  }\n"), PlanOnly: true,
				ExpectError: acctest.Wording(`has no passthrough-active GPU with vendor id 10de and device id ffff`),
			},
			{
				Config: vmGPUMMIOConfig(lab, uuid, ""), PlanOnly: true,
				ExpectError: acctest.Wording(`List the VM's GPUs in gpu blocks, or set mmio_size_gb`),
			},
			// An EFI VM with one GPU, running: attaching a second needs it off,
			// and so does destroying (detaching) without power_off_allowed.
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock(lab.GPUs()[0]))},
			{
				PreConfig: func() { acctest.Must(t, lab.PowerOnVM(context.Background(), vm)) },
				Config:    vmGPUMMIOConfig(lab, uuid, twoGPUs(lab)), PlanOnly: true,
				ExpectError: acctest.Wording(gpusNeedOff),
			},
			{
				Config: acctest.ProviderConfig(lab), PlanOnly: true,
				ExpectError: acctest.Wording(`(set it on the resource and apply before destroying)`),
			},
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock(lab.GPUs()[0])+"  power_off_allowed = true")},
		},
	})
}

// A VM with nothing of a GPU setup has nothing to import.
func TestAccVMGPUMMIO_importNothing(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[1]
	uuid := lab.VMUUID(vm)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:       acctest.RequiredProviders + vmGPUMMIOConfig(lab, uuid, twoGPUs(lab)),
			ResourceName: gpuAddr, ImportState: true, ImportStateId: uuid,
			ExpectError: acctest.Wording("Virtual machine " + vm + " (" + uuid + ") has no GPU passthrough setup: no passthrough GPU and neither " +
				"pciPassthru.use64bitMMIO nor pciPassthru.64bitMMIOSizeGB. Create the resource instead"),
		}},
	})
}

// Bounds and values the schema cannot hold, refused at plan with what to do
// (issue 12): an MMIO window beyond what an ESXi host addresses, a size that
// is not a whole number, more dynamic GPUs of a model than the VM's host has
// (the lab's hosts have two H100 each), and a gpu block that lacks half of
// its vendor and device ids.
func TestAccVMGPUMMIO_boundsAndMessages(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	vendorID, deviceID, name, active := gpuModel(t, lab, vm)
	model := vendorID + ":" + deviceID
	if name != "" {
		model += " (" + name + ")"
	}
	dynamic := func(n int) string {
		if n == 1 {
			return fmt.Sprintf("  gpu {\n    vendor_id = %q\n    device_id = %q\n  }\n", vendorID, deviceID)
		}
		return fmt.Sprintf("  gpu {\n    vendor_id = %q\n    device_id = %q\n    count     = %d\n  }\n", vendorID, deviceID, n)
	}
	two := twoGPUs(lab)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmGPUMMIOConfig(lab, uuid, two+"  mmio_size_gb = 4611686018427387904"), PlanOnly: true,
				ExpectError: acctest.Wording(`mmio_size_gb = 4611686018427387904 GB is more than any ESXi host can address: the most is 1048576 GB (1 PiB, ` +
					`the maximum physical address of ESXi). Leave mmio_size_gb unset to size the window from the GPUs' memory, ` +
					`or give a power of two up to 1048576.`)},
			{Config: vmGPUMMIOConfig(lab, uuid, two+"  mmio_size_gb = 0"), PlanOnly: true,
				ExpectError: acctest.Wording(`mmio_size_gb = 0: the window must be at least 1 GB. Leave mmio_size_gb unset`)},
			{Config: vmGPUMMIOConfig(lab, uuid, two+"  mmio_size_gb = 512.5"), PlanOnly: true,
				ExpectError: acctest.Wording(`mmio_size_gb must be a whole number from 1 to 1048576; 512.5 is not.`)},
			{Config: vmGPUMMIOConfig(lab, uuid, two+"  mmio_size_gb = 1e400"), PlanOnly: true,
				ExpectError: acctest.Wording(`mmio_size_gb must be a whole number from 1 to 1048576; 1e+400 is not.`)},
			{Config: vmGPUMMIOConfig(lab, uuid, dynamic(active+1)+"  power_off_allowed = true"), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf(`Virtual machine %s (%s) asks for %d GPUs of model %s, but its host %s `+
					`has %d active for passthrough. Each GPU is one device at power on, so the VM would not power on: ask for at most %d of that model`,
					vm, uuid, active+1, model, lab.VMHostName(vm), active, active))},
			{Config: vmGPUMMIOConfig(lab, uuid, "  gpu {\n    vendor_id = \"10de\"\n  }\n"), PlanOnly: true,
				ExpectError: acctest.Wording(
					`A gpu block has vendor_id = "10de" but no device_id. Dynamic DirectPath needs both: add the GPU model's device_id`,
				)},
			{Config: vmGPUMMIOConfig(lab, uuid, two+"  gpu {\n    device_id = \"2330\"\n  }\n"), PlanOnly: true,
				ExpectError: acctest.Wording(`A gpu block has device_id = "2330" but no vendor_id. Dynamic DirectPath needs both: add the GPU's vendor_id`)},
			{Config: vmGPUMMIOConfig(lab, uuid, "  gpu {\n  }\n"), PlanOnly: true,
				ExpectError: acctest.Wording(`A gpu block is empty. Give pci_id (a device on the VM's host, e.g. 0000:3b:00.0), or vendor_id and device_id`)},
			// As many as the host has is accepted.
			{Config: vmGPUMMIOConfig(lab, uuid, dynamic(active)+"  power_off_allowed = true"), PlanOnly: true, ExpectNonEmptyPlan: true},
		},
	})
}

// Two resources of one configuration claiming one GPU, or one VM's setup,
// are refused at plan, naming both.
func TestAccVMGPUMMIO_claimedTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	var sameHost string
	for _, n := range lab.VMNames() {
		if n != vm && lab.VMHostName(n) == lab.VMHostName(vm) {
			sameHost = n
		}
	}
	if sameHost == "" {
		if !lab.Simulated() {
			t.Skip("needs two of VSPHERE_TEST_VMS on one host; " + vm + " has none beside it")
		}
		t.Fatal("no second VM on the host of " + vm)
	}
	one := "\n" + gpuBlock(lab.GPUs()[0])
	second := func(vmID string) string {
		return strings.Replace(strings.Replace(vmGPUMMIOConfig(lab, vmID, one), acctest.ProviderConfig(lab), "", 1), `"gpu" {`, `"again" {`, 1)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), one) + second(lab.VMUUID(sameHost)), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*claim\s+GPU\s+` + regexp.QuoteMeta(lab.GPUs()[0]) + `\s+on\s+host\s+` +
					regexp.QuoteMeta(lab.VMHostName(vm)) + `:\s+the\s+vspherehpc_vm_gpu_mmio\s+of\s+virtual\s+machine\s+.*` +
					`A\s+GPU\s+or\s+other\s+PCI\s+device\s+is\s+passed\s+through\s+to\s+one\s+VM\s+only`),
			},
			{
				Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab)) + second(lab.VMID(vm)), PlanOnly: true,
				ExpectError: regexp.MustCompile(
					`(?s)Claimed twice in this configuration.*claim\s+the\s+GPU\s+setup\s+of\s+virtual\s+machine.*One\s+vspherehpc_vm_gpu_mmio\s+manages\s+all`,
				),
			},
		},
	})
}

// A setup planned with no vCenter call (unchanged, here with no GPUs) still
// meets a second setup of its VM named the other way: the first names the
// VM by managed object id, the second by UUID.
func TestAccVMGPUMMIO_unchangedSetupClaimedTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	setup := func(name, vmID string) string {
		return fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" %q {
  virtual_machine_id = %q
  mmio_size_gb       = 64
  power_off_allowed  = true
}
`, name, vmID)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: acctest.ProviderConfig(lab) + setup("by_moid", lab.VMID(vm))},
			{
				Config: acctest.ProviderConfig(lab) + setup("by_moid", lab.VMID(vm)) + setup("by_uuid", lab.VMUUID(vm)), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*claim\s+the\s+GPU\s+setup\s+of\s+virtual\s+machine`),
			},
		},
	})
}

// A second setup of a VM with a value unknown at plan is still claimed,
// and meets the unchanged setup of that VM named the other way: unknown
// values must not let two setups of one VM through to the apply.
func TestAccVMGPUMMIO_unknownSetupClaimed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	first := fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "by_moid" {
  virtual_machine_id = %q
  power_off_allowed  = true
  gpu {
    pci_id = %q
  }
}
`, lab.VMID(vm), lab.GPUs()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: acctest.ProviderConfig(lab) + first},
			{
				Config: acctest.ProviderConfig(lab) + first + fmt.Sprintf(`
resource "terraform_data" "size" {
  input = 512
}
resource "vspherehpc_vm_gpu_mmio" "by_uuid" {
  virtual_machine_id = %q
  power_off_allowed  = true
  mmio_size_gb       = terraform_data.size.output
  gpu {
    pci_id = %q
  }
}
`, lab.VMUUID(vm), lab.GPUs()[1]), PlanOnly: true, // refused by the plan, not after an apply
				ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*claim\s+the\s+GPU\s+setup\s+of\s+virtual\s+machine`),
			},
		},
	})
}

// A VM named by a BIOS UUID that two VMs share is refused at plan, naming
// both, not set up on whichever vCenter finds first.
func TestAccVMGPUMMIO_sharedUUIDRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "gives two VMs one BIOS UUID")
	vms := lab.VMNames()
	shared := lab.VMUUID(vms[0])
	acctest.Must(t, lab.SetVMUUID(context.Background(), vms[1], shared))
	ids := []string{lab.VMID(vms[0]), lab.VMID(vms[1])}
	slices.Sort(ids) // as the error lists them
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      vmGPUMMIOConfig(lab, shared, twoGPUs(lab)),
			PlanOnly:    true,
			ExpectError: acctest.Wording(fmt.Sprintf("2 virtual machines have BIOS UUID %s (%s, %s)", shared, ids[0], ids[1])),
		}},
	})
}
