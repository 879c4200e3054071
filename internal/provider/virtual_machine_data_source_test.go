package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vmware/govmomi/object"
	govmomitypes "github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccVirtualMachineDataSource(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's vmx-11 VM legacy-node and its VMs' hardware, and clones a VM")
	name := lab.VMNames()[0]
	byID, byMOID, byName, legacy := "data.vspherehpc_virtual_machine.by_id", "data.vspherehpc_virtual_machine.by_moid",
		"data.vspherehpc_virtual_machine.by_name", "data.vspherehpc_virtual_machine.legacy"
	nic0 := func(attr string) tfjsonpath.Path {
		return tfjsonpath.New("network_interfaces").AtSliceIndex(0).AtMapKey(attr)
	}
	config := acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_virtual_machine" "by_id" {
  virtual_machine_id = %[1]q
}
data "vspherehpc_virtual_machine" "by_moid" {
  virtual_machine_id = %[2]q
}
data "vspherehpc_virtual_machine" "by_name" {
  datacenter_id = %[3]q
  name          = %[4]q
}
data "vspherehpc_virtual_machine" "legacy" {
  datacenter_id = %[3]q
  name          = "legacy-node"
}
`, lab.VMUUID(name), lab.VMID(name), lab.DatacenterID(), name)

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("id"), knownvalue.StringExact(lab.VMUUID(name))),
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("moid"), knownvalue.StringExact(lab.VMID(name))),
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("name"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("hardware_version"), knownvalue.Int64Exact(19)),
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("firmware"), knownvalue.StringExact("bios")),
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("power_state"), knownvalue.StringExact("off")),
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("guest_family"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("network_interfaces"), knownvalue.ListSizeExact(1)),
					statecheck.ExpectKnownValue(byID, nic0("adapter_type"), knownvalue.StringExact("vmxnet3")),
					statecheck.ExpectKnownValue(byID, nic0("network_id"), knownvalue.StringRegexp(regexp.MustCompile(`^network-`))),
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("pci_passthrough_devices"), knownvalue.ListSizeExact(0)),
					statecheck.CompareValuePairs(byID, tfjsonpath.New("id"), byMOID, tfjsonpath.New("id"), compareSame),
					statecheck.CompareValuePairs(byID, tfjsonpath.New("id"), byName, tfjsonpath.New("id"), compareSame),
					statecheck.CompareValuePairs(byID, tfjsonpath.New("host_system_id"), byName, tfjsonpath.New("host_system_id"), compareSame),
					statecheck.ExpectKnownValue(legacy, tfjsonpath.New("hardware_version"), knownvalue.Int64Exact(11)),
				},
			},
			{
				// A PVRDMA adapter, a GPU and a vGPU added out of band read back with their types.
				PreConfig: func() {
					acctest.Must(t, lab.AttachGPU(context.Background(), name, lab.GPUs()[0]))
					acctest.Must(t, lab.AttachVGPU(context.Background(), name, "grid_a100-20c"))
				},
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(byID, tfjsonpath.New("pci_passthrough_devices"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectPartial(map[string]knownvalue.Check{
							"pci_id":       knownvalue.StringExact(lab.GPUs()[0]),
							"vendor_id":    knownvalue.StringExact("10de"),
							"device_id":    knownvalue.StringExact("2330"),
							"dynamic":      knownvalue.Bool(false),
							"vgpu_profile": knownvalue.StringExact(""),
						}),
						knownvalue.ObjectPartial(map[string]knownvalue.Check{
							"pci_id": knownvalue.StringExact(""), "vgpu_profile": knownvalue.StringExact("grid_a100-20c"),
						}),
					})),
				},
			},
			{
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_virtual_machine" "vm" {
  virtual_machine_id = "4200aaaa-0000-0000-0000-000000000000"
}
`,
				ExpectError: acctest.Wording(`no virtual machine has UUID 4200aaaa-0000-0000-0000-000000000000`),
			},
			{
				// vCenter allows two VMs of one name in different folders.
				PreConfig:   func() { acctest.Must(t, lab.CloneVMIntoFolder(context.Background(), name, "team-b")) },
				Config:      config,
				ExpectError: acctest.Wording(`2 virtual machines are called "` + name + `" (` + lab.VMID(name)),
			},
		},
	})
}

// Argument combinations are refused before any vCenter call.
func TestAccVirtualMachineDataSource_arguments(t *testing.T) {
	t.Parallel()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      `data "vspherehpc_virtual_machine" "vm" { name = "x" }`,
				ExpectError: acctest.Wording(`Attribute "datacenter_id" must be specified when "name" is specified`),
			},
			{
				Config:      `data "vspherehpc_virtual_machine" "vm" {}`,
				ExpectError: acctest.Wording(`Exactly one of these attributes must be configured: [virtual_machine_id,name]`),
			},
			{
				Config: `
data "vspherehpc_virtual_machine" "vm" {
  virtual_machine_id = "vm-1"
  datacenter_id      = "datacenter-1"
}`,
				ExpectError: regexp.MustCompile(
					`Attribute "(datacenter_id|virtual_machine_id)" cannot be specified when\s+"(virtual_machine_id|datacenter_id)" is\s+specified`,
				),
			},
			{
				Config: `
data "vspherehpc_virtual_machine" "vm" {
  virtual_machine_id = "vm-1"
  name               = "x"
}`,
				ExpectError: acctest.Wording(`Exactly one of these attributes must be configured: [virtual_machine_id,name]`),
			},
		},
	})
}

// An inaccessible VM is read with no configuration: the look-up is an error
// naming it rather than an empty UUID, hardware version 0 and no devices.
func TestAccVirtualMachineDataSource_inaccessible(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "makes a VM inaccessible")
	name := lab.VMNames()[0]
	config := func(block string) string { return acctest.ProviderConfig(lab) + block }
	byMOID := config(fmt.Sprintf(`
data "vspherehpc_virtual_machine" "vm" {
  virtual_machine_id = %q
}
`, lab.VMID(name)))
	byName := config(fmt.Sprintf(`
data "vspherehpc_virtual_machine" "vm" {
  datacenter_id = %q
  name          = %q
}
`, lab.DatacenterID(), name))
	message := acctest.Wording(fmt.Sprintf(`vCenter returns no configuration for virtual machine %q (%s)`, name, lab.VMID(name)))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { acctest.Must(t, lab.SetVMAccessible(context.Background(), name, false)) },
				Config:      byMOID,
				ExpectError: message,
			},
			{
				Config:      byName,
				ExpectError: message,
			},
			{
				PreConfig: func() { acctest.Must(t, lab.SetVMAccessible(context.Background(), name, true)) },
				Config:    byName,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.vspherehpc_virtual_machine.vm", tfjsonpath.New("id"), knownvalue.StringExact(lab.VMUUID(name))),
				},
			},
		},
	})
}

// vCenter stores '%', '/' and '\' in a name escaped ("%25", "%2f", "%5c";
// vSphere API reference, ManagedEntity.name, and vcsim's CreateVM_Task does
// the same): a VM is found by its name as a person writes it, and its name
// is output that way.
func TestAccVirtualMachineDataSource_escapedName(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "creates a VM")
	const name = `gpu/node\1 100%`
	ctx := context.Background()
	c := lab.Client().Client
	src := object.NewVirtualMachine(c, govmomitypes.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(lab.VMNames()[0])})
	pool, err := src.ResourcePool(ctx)
	acctest.Must(t, err)
	folders, err := object.NewDatacenter(c, govmomitypes.ManagedObjectReference{Type: "Datacenter", Value: lab.DatacenterID()}).Folders(ctx)
	acctest.Must(t, err)
	task, err := folders.VmFolder.CreateVM(ctx, govmomitypes.VirtualMachineConfigSpec{Name: name, GuestId: "otherGuest64",
		Files: &govmomitypes.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"}}, pool, nil)
	acctest.Must(t, err)
	acctest.Must(t, task.Wait(ctx))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_virtual_machine" "vm" {
  datacenter_id = %q
  name          = %q
}
data "vspherehpc_virtual_machine" "by_moid" {
  virtual_machine_id = data.vspherehpc_virtual_machine.vm.moid
}
`, lab.DatacenterID(), name),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.vspherehpc_virtual_machine.vm", tfjsonpath.New("name"), knownvalue.StringExact(name)),
				statecheck.ExpectKnownValue("data.vspherehpc_virtual_machine.by_moid", tfjsonpath.New("name"), knownvalue.StringExact(name)),
			},
		}},
	})
}
