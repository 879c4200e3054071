package provider

import (
	"context"
	"fmt"
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

// A VM unregistered and registered again from its .vmx (after storage
// maintenance, say) is the same VM, configuration and BIOS UUID included,
// under a new managed object id (vcsimlab.Lab.ReregisterVM). The resources
// on it must follow it: no error, nothing re-created.

// reregisterConfig is a PVRDMA adapter on port group "a" and a GPU setup
// with the lab's first GPU, both on the VM vmID (an HCL expression).
func reregisterConfig(lab *vcsimlab.Lab, vmID, extra string) string {
	return rdmaDVSTwoSwitchesConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_vm_pvrdma_nic" "nic" {
  virtual_machine_id        = %[1]s
  distributed_port_group_id = vspherehpc_rdma_dvs.a.port_group_id
%[2]s
}
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %[1]s
%[3]s}
`, vmID, extra, gpuBlock(lab.GPUs()[0]))
}

// pvrdmaAdapters reads the VM's PVRDMA adapters by its BIOS UUID, as
// vCenter has them now.
func pvrdmaAdapters(lab *vcsimlab.Lab, vm string) ([]vsphere.NetworkAdapter, *vsphere.VM, error) {
	v, err := labClient(lab).VM(context.Background(), lab.VMUUID(vm))
	if err != nil {
		return nil, nil, err
	}
	var out []vsphere.NetworkAdapter
	for _, n := range v.NetworkAdapters {
		if n.Type == "vmxnet3vrdma" {
			out = append(out, n)
		}
	}
	return out, v, nil
}

// pvrdmaAdaptersAre checks that the VM has want PVRDMA adapters, as vCenter
// has them now.
func pvrdmaAdaptersAre(lab *vcsimlab.Lab, vm string, want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		nics, _, err := pvrdmaAdapters(lab, vm)
		if err == nil && len(nics) != want {
			err = fmt.Errorf("%s has %d PVRDMA adapters, want %d: %+v", vm, len(nics), want, nics)
		}
		return err
	}
}

// checkOneAdapter checks that the VM has exactly one PVRDMA adapter, with
// device key *key (set on the first call) and protocol protocol, and its
// GPU setup, under managed object id lab.VMID(vm).
func checkOneAdapter(lab *vcsimlab.Lab, vm string, key *int64, protocol string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		nics, v, err := pvrdmaAdapters(lab, vm)
		if err != nil {
			return err
		}
		if len(nics) != 1 {
			return fmt.Errorf("%s has %d PVRDMA adapters, want 1: %+v", vm, len(nics), nics)
		}
		if *key == 0 {
			*key = nics[0].Key
		}
		if nics[0].Key != *key || nics[0].DeviceProtocol != protocol {
			return fmt.Errorf("%s's PVRDMA adapter is %d (%s), want %d (%s)", vm, nics[0].Key, nics[0].DeviceProtocol, *key, protocol)
		}
		if v.MOID != lab.VMID(vm) {
			return fmt.Errorf("%s is %s, the lab says %s", vm, v.MOID, lab.VMID(vm))
		}
		if len(v.PCIPassthroughs) != 1 || v.PCIPassthroughs[0].PCIID != lab.GPUs()[0] || v.Firmware != "efi" {
			return fmt.Errorf("%s's GPU setup: %+v, firmware %s", vm, v.PCIPassthroughs, v.Firmware)
		}
		return nil
	}
}

// checkNothingLeft checks, after destroy, that the re-registered VM has
// neither the adapter nor the GPU: destroy reached it under its new id.
func checkNothingLeft(lab *vcsimlab.Lab, vm string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		nics, v, err := pvrdmaAdapters(lab, vm)
		if err != nil {
			return err
		}
		if len(nics) != 0 || len(v.PCIPassthroughs) != 0 {
			return fmt.Errorf("after destroy %s (%s) has PVRDMA adapters %+v and passthrough devices %+v", vm, v.MOID, nics, v.PCIPassthroughs)
		}
		return nil
	}
}

// The VM given by BIOS UUID: a refresh after the re-registration finds it
// under its new id (the remembered id is stale, the UUID is searched
// again), state keeps the UUID and the adapter's key, the plan is empty,
// and a later update and the destroy act on the re-registered VM.
func TestAccVMReregistered_byUUID(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "re-registers a VM")
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	var key int64
	var oldID string
	config := reregisterConfig(lab, fmt.Sprintf("%q", uuid), "")
	followed := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("virtual_machine_id"), knownvalue.StringExact(uuid)),
		statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("virtual_machine_id"), knownvalue.StringExact(uuid)),
		statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("id"), knownvalue.StringExact(uuid)),
		statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(1)),
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeTestCheckFunc(checkOneAdapter(lab, vm, &key, "rocev2"), func(*terraform.State) error {
					oldID = lab.VMID(vm)
					return nil
				}),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.ReregisterVM(context.Background(), vm)) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: append(followed,
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("id"), knownvalue.StringFunc(func(id string) error {
						if want := fmt.Sprintf("%s:%d", uuid, key); id != want {
							return fmt.Errorf("id %s, want %s", id, want)
						}
						return nil
					})),
				),
				Check: resource.ComposeTestCheckFunc(checkOneAdapter(lab, vm, &key, "rocev2"), func(*terraform.State) error {
					if lab.VMID(vm) == oldID {
						return fmt.Errorf("%s kept its managed object id %s: it was not re-registered", vm, oldID)
					}
					return nil
				}),
			},
			{
				// An update reaches the re-registered VM.
				Config: reregisterConfig(lab, fmt.Sprintf("%q", uuid), `  device_protocol = "rocev1"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: followed,
				Check:             checkOneAdapter(lab, vm, &key, "rocev1"),
			},
		},
		CheckDestroy: checkNothingLeft(lab, vm),
	})
}

// The VM given by managed object id, looked up by name as a configuration
// does it (vspherehpc_virtual_machine's moid): after the re-registration
// the lookup gives the new id, and the resources follow the VM as they do
// when it is given by UUID: found again by the UUID their id holds,
// virtual_machine_id the new id, nothing re-created (vm_common.go readVM
// and followVM).
func TestAccVMReregistered_byMOID(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "re-registers a VM")
	vm := lab.VMNames()[0]
	var key int64
	lookup := fmt.Sprintf(`
data "vspherehpc_virtual_machine" "vm" {
  name          = %q
  datacenter_id = %q
}
`, vm, lab.DatacenterID())
	config := lookup + reregisterConfig(lab, "data.vspherehpc_virtual_machine.vm.moid", "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check:  checkOneAdapter(lab, vm, &key, "rocev2"),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.ReregisterVM(context.Background(), vm)) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.CompareValuePairs(
						nicAddr,
						tfjsonpath.New("virtual_machine_id"),
						"data.vspherehpc_virtual_machine.vm",
						tfjsonpath.New("moid"),
						compareSame,
					),
					statecheck.CompareValuePairs(
						gpuAddr,
						tfjsonpath.New("virtual_machine_id"),
						"data.vspherehpc_virtual_machine.vm",
						tfjsonpath.New("moid"),
						compareSame,
					),
				},
				Check: checkOneAdapter(lab, vm, &key, "rocev2"),
			},
		},
		CheckDestroy: checkNothingLeft(lab, vm),
	})
}

// reregisterBeforeApply is a plan check that registers the VM again after
// the plan and before its apply, as an administrator may between
// `terraform plan -out` and `terraform apply` of that plan: the apply runs
// with the managed object id the plan read.
type reregisterBeforeApply struct {
	lab *vcsimlab.Lab
	vm  string
}

func (r reregisterBeforeApply) CheckPlan(ctx context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = r.lab.ReregisterVM(ctx, r.vm)
}
