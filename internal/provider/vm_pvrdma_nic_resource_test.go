package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

const nicAddr = "vspherehpc_vm_pvrdma_nic.nic"

// vmPVRDMANICConfig is the two switches of rdmaDVSTwoSwitchesConfig and one adapter on the VM
// vmID, on port group "a" or "b", with extra arguments.
func vmPVRDMANICConfig(lab *vcsimlab.Lab, vmID, group, extra string) string {
	return rdmaDVSTwoSwitchesConfig(lab) + nicOn(vmID, "vspherehpc_rdma_dvs."+group+".port_group_id", extra)
}

func TestAccVMPVRDMANIC_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	// The adapter is changed in place throughout, never replaced.
	sameAdapter := statecheck.CompareValue(compare.ValuesSame())
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: vmPVRDMANICConfig(lab, uuid, "a", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					sameAdapter.AddStateValue(nicAddr, tfjsonpath.New("device_key")),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile("^"+uuid+`:\d+$`))),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("device_protocol"), knownvalue.StringExact("rocev2")),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("start_connected"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("mac_address"), knownvalue.StringRegexp(macPattern)),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("adapter_index"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("reserve_all_memory"), knownvalue.Bool(true)),
					statecheck.CompareValuePairs(
						nicAddr,
						tfjsonpath.New("distributed_port_group_id"),
						"vspherehpc_rdma_dvs.a",
						tfjsonpath.New("port_group_id"),
						compareSame,
					),
				},
			},
			// By the id, VM UUID:device key, which the import steps take from state.
			{ResourceName: nicAddr, ImportState: true, ImportStateVerify: true},
			{
				Config:       acctest.RequiredProviders + vmPVRDMANICConfig(lab, uuid, "a", ""),
				ResourceName: nicAddr, ImportState: true, ImportStateKind: resource.ImportBlockWithID,
			},
			{
				// Port group, protocol and start_connected change in place.
				Config: vmPVRDMANICConfig(lab, uuid, "b", `
  device_protocol = "rocev1"
  start_connected = false
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("device_protocol"), knownvalue.StringExact("rocev1")),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("start_connected"), knownvalue.Bool(false)),
					statecheck.CompareValuePairs(
						nicAddr,
						tfjsonpath.New("distributed_port_group_id"),
						"vspherehpc_rdma_dvs.b",
						tfjsonpath.New("port_group_id"),
						compareSame,
					),
				},
			},
			{
				Config: vmPVRDMANICConfig(lab, uuid, "b", `  mac_address = "00:50:56:2a:bb:cc"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("mac_address"), knownvalue.StringExact("00:50:56:2a:bb:cc")),
				},
			},
			{
				// The same VM by its managed object id: an update of the
				// spelling, not a new adapter.
				Config: vmPVRDMANICConfig(lab, lab.VMID(vm), "b", `  mac_address = "00:50:56:2a:bb:cc"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate)},
				},
				ConfigStateChecks: []statecheck.StateCheck{sameAdapter.AddStateValue(nicAddr, tfjsonpath.New("device_key"))},
			},
		},
	})
}

// A VM whose hardware version offers PVRDMA with no protocol choice
// (vmx-13; see internal/vcsimlab) gets an adapter that asks for none, as
// Ansible's vmware_guest_network sends it; the protocol is what vSphere
// reports (none in the lab), and plans stay empty.
func TestAccVMPVRDMANIC_noProtocolChoice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "upgrades the lab's vmx-11 VM legacy-node to vmx-13")
	ctx := context.Background()
	acctest.Must(t, lab.UpgradeVMHardware(ctx, "legacy-node", 13))
	uuid := lab.VMUUID("legacy-node")
	var key string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: vmPVRDMANICConfig(lab, uuid, "a", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(nicAddr, tfjsonpath.New("device_protocol")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("device_protocol"), knownvalue.Null()),
				},
				Check: func(s *terraform.State) error {
					key = s.RootModule().Resources[nicAddr].Primary.Attributes["device_key"]
					adapters, err := labClient(lab).VM(ctx, uuid)
					if err != nil {
						return err
					}
					for _, n := range adapters.NetworkAdapters {
						if n.Type == "vmxnet3vrdma" {
							return nil
						}
					}
					return fmt.Errorf("legacy-node has no PVRDMA adapter: %+v", adapters.NetworkAdapters)
				},
			},
			{Config: vmPVRDMANICConfig(lab, uuid, "a", ""), PlanOnly: true},
			{
				Config:   vmPVRDMANICConfig(lab, uuid, "a", `  device_protocol = "rocev2"`),
				PlanOnly: true, ExpectError: acctest.Wording("offers PVRDMA with no choice of protocol, so it cannot be rocev2. Remove device_protocol"),
			},
			{
				ResourceName: nicAddr, ImportState: true, ImportStateVerify: true,
				ImportStateIdFunc: func(*terraform.State) (string, error) { return uuid + ":" + key, nil },
			},
		},
	})
}

func TestAccVMPVRDMANIC_disappears(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", ""),
			Check: func(s *terraform.State) error {
				return lab.RemovePVRDMAAdapters(context.Background(), vm)
			},
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionCreate),
			}},
			ExpectNonEmptyPlan: true,
		}},
	})
}

func TestAccVMPVRDMANIC_drift(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	config := vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", "")
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate)}}
	converged := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("device_protocol"), knownvalue.StringExact("rocev2")),
		statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("start_connected"), knownvalue.Bool(true)),
		statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("reserve_all_memory"), knownvalue.Bool(true)),
		statecheck.CompareValuePairs(
			nicAddr,
			tfjsonpath.New("distributed_port_group_id"),
			"vspherehpc_rdma_dvs.a",
			tfjsonpath.New("port_group_id"),
			compareSame,
		),
	}
	ctx := context.Background()
	var groupB, switchB string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources["vspherehpc_rdma_dvs.b"].Primary.Attributes
					groupB, switchB = attrs["port_group_key"], attrs["id"]
					return nil
				},
			},
			{
				PreConfig: func() {
					startConnected := false
					acctest.Must(t, lab.EditPVRDMAAdapters(ctx, vm, vcsimlab.PVRDMAAdapterEdit{DeviceProtocol: "rocev1", StartConnected: &startConnected}))
				},
				Config: config, ConfigPlanChecks: update, ConfigStateChecks: converged,
			},
			{
				PreConfig: func() {
					acctest.Must(t, lab.EditPVRDMAAdapters(ctx, vm, vcsimlab.PVRDMAAdapterEdit{SwitchUUID: switchB, PortGroupKey: groupB}))
				},
				Config: config, ConfigPlanChecks: update, ConfigStateChecks: converged,
			},
			{
				PreConfig: func() { acctest.Must(t, lab.SetVMMemoryReservationLocked(ctx, vm, false)) },
				Config:    config, ConfigPlanChecks: update, ConfigStateChecks: converged,
			},
		},
	})
}

// nicOn is an adapter resource for the switches of rdmaDVSTwoSwitchesConfig.
func nicOn(vmID, portGroupID, extra string) string {
	return fmt.Sprintf(`
resource "vspherehpc_vm_pvrdma_nic" "nic" {
  virtual_machine_id        = %q
  distributed_port_group_id = %s
%s
}
`, vmID, portGroupID, extra)
}

// On a running VM with power_off_allowed, the provider shuts the guest down,
// adds the adapter and powers the VM back on; destroy does the same.
func TestAccVMPVRDMANIC_powerCycle(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "counts calls, and powers a VM on that the lab cannot power off again")
	vm := lab.VMNames()[1]
	acctest.Must(t, lab.PowerOnVM(context.Background(), vm))
	running := func(*terraform.State) error {
		v, err := labClient(lab).VM(context.Background(), lab.VMUUID(vm))
		if err == nil && v.PowerState != "on" {
			err = fmt.Errorf("%s is %s after the change, want on", vm, v.PowerState)
		}
		return err
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", `  power_off_allowed = true`),
				Check: resource.ComposeTestCheckFunc(running, func(*terraform.State) error {
					if n := lab.Calls()["ShutdownGuest"]; n != 1 {
						return fmt.Errorf("ShutdownGuest calls = %d, want 1", n)
					}
					return nil
				}),
			},
			{
				Config: vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", "  power_off_allowed = true\n  device_protocol = \"rocev1\""),
				Check: resource.ComposeTestCheckFunc(running, func(*terraform.State) error {
					if n := lab.Calls()["ShutdownGuest"]; n != 2 {
						return fmt.Errorf("ShutdownGuest calls = %d, want 2: a protocol change needs the VM off", n)
					}
					return nil
				}),
			},
		},
		CheckDestroy: running,
	})
}

// A reconfigure task that fails (once) adds nothing and records nothing; the
// next apply adds exactly one adapter.
func TestAccVMPVRDMANIC_failedReconfigure(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a task fault")
	vm := lab.VMNames()[0]
	config := vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rdmaDVSTwoSwitchesConfig(lab)},
			{
				PreConfig: func() {
					acctest.Must(t, lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"}))
				},
				Config:      config,
				ExpectError: acctest.Wording(`Cannot add a PVRDMA adapter to virtual machine`),
			},
			{
				Config: config,
				// Nothing was recorded: the adapter or setup is created now.
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionCreate),
				}},
				Check: pvrdmaAdaptersAre(lab, vm, 1),
			},
		},
	})
}

// Four adapters on one VM at Terraform's default parallelism: the provider
// serializes the VM's reconfigures, and each carries only its own device.
func TestAccVMPVRDMANIC_fourOnOneVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := rdmaDVSTwoSwitchesConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_vm_pvrdma_nic" "nic" {
  count                     = 4
  virtual_machine_id        = %q
  distributed_port_group_id = count.index %% 2 == 0 ? vspherehpc_rdma_dvs.a.port_group_id : vspherehpc_rdma_dvs.b.port_group_id
}
`, lab.VMUUID(lab.VMNames()[0]))
	var checks []statecheck.StateCheck
	for i := range 4 {
		checks = append(checks, statecheck.ExpectKnownValue(fmt.Sprintf("%s[%d]", nicAddr, i), tfjsonpath.New("device_key"), knownvalue.NotNull()))
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:            config,
			ConfigStateChecks: checks,
			Check: func(s *terraform.State) error {
				keys := map[string]bool{}
				for i := range 4 {
					keys[s.RootModule().Resources[fmt.Sprintf("%s.%d", nicAddr, i)].Primary.Attributes["device_key"]] = true
				}
				if len(keys) != 4 {
					return fmt.Errorf("device keys %v, want 4 distinct", keys)
				}
				return nil
			},
		}},
	})
}

// Removing the adapter from a running VM is refused at plan time unless
// power_off_allowed; allowing it changes nothing in vCenter by itself.
func TestAccVMPVRDMANIC_destroyOnARunningVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "counts calls, and powers a VM on that the lab cannot power off again")
	vm := lab.VMNames()[0]
	config := vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", "")
	var reconfigures int
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig:   func() { acctest.Must(t, lab.PowerOnVM(context.Background(), vm)) },
				Config:      rdmaDVSTwoSwitchesConfig(lab),
				ExpectError: acctest.Wording(`is powered on, and adding, removing or changing the protocol of a PVRDMA adapter needs it powered off`),
			},
			{
				// Moving the adapter to another VM removes it from this one:
				// the same refusal, at plan.
				Config:      vmPVRDMANICConfig(lab, lab.VMUUID(lab.VMNames()[1]), "a", ""),
				PlanOnly:    true,
				ExpectError: acctest.Wording(`is powered on, and adding, removing or changing the protocol of a PVRDMA adapter needs it powered off`),
			},
			{
				PreConfig: func() { reconfigures = lab.Calls()["ReconfigVM_Task"] },
				Config:    vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", "  power_off_allowed = true"),
				Check: func(*terraform.State) error {
					if n := lab.Calls()["ReconfigVM_Task"]; n != reconfigures {
						return fmt.Errorf("%d reconfigures for a provider-side setting, want none", n-reconfigures)
					}
					return nil
				},
			},
			{Config: rdmaDVSTwoSwitchesConfig(lab)},
		},
	})
}

// A VM vCenter returns no configuration for (its datastore lost) keeps its
// adapter in state: a refresh plans nothing, not a second adapter. Its
// destroy is refused with the reason until the VM is back, and then works.
func TestAccVMPVRDMANIC_inaccessibleVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "makes a VM inaccessible")
	vm := lab.VMNames()[0]
	ctx := context.Background()
	config := vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", "")
	sameAdapter := statecheck.CompareValue(compare.ValuesSame())
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            config,
				ConfigStateChecks: []statecheck.StateCheck{sameAdapter.AddStateValue(nicAddr, tfjsonpath.New("device_key"))},
				Check:             func(*terraform.State) error { return lab.SetVMAccessible(ctx, vm, false) },
			},
			{
				Config:   config,
				PlanOnly: true, // refreshed with the VM inaccessible: no change, so no second adapter
			},
			{
				Config:      rdmaDVSTwoSwitchesConfig(lab),
				ExpectError: acctest.Wording(`returns no configuration for virtual machine ` + vm),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.SetVMAccessible(ctx, vm, true)) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{sameAdapter.AddStateValue(nicAddr, tfjsonpath.New("device_key"))},
			},
		},
	})
}

// The end of the adapter's reconfigure task cannot be read (vCenter
// unreachable for a moment): the apply fails, but the adapter it made is in
// state (tainted, so the next apply replaces it), not left on the VM
// unknown to Terraform, where the next apply would add a second one.
func TestAccVMPVRDMANIC_taskEndLost(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "fails reads")
	vm := lab.VMNames()[0]
	config := vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rdmaDVSTwoSwitchesConfig(lab)},
			{
				PreConfig:   func() { lab.FailTaskEndRead(&types.HostNotConnected{}) },
				Config:      config,
				ExpectError: acctest.Wording(`vCenter refused the request (HostNotConnected)`),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: pvrdmaAdaptersAre(lab, vm, 1),
			},
		},
	})
}

// An adapter with a static MAC moved to another VM keeps its MAC: the
// adapter it replaces is the one that has it, and goes first.
func TestAccVMPVRDMANIC_movesWithItsMAC(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	from, to := lab.VMUUID(lab.VMNames()[0]), lab.VMUUID(lab.VMNames()[1])
	mac := `  mac_address = "00:50:56:2a:bb:cd"`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmPVRDMANICConfig(lab, from, "a", mac)},
			{
				Config: vmPVRDMANICConfig(lab, to, "a", mac),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("virtual_machine_id"), knownvalue.StringExact(to)),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("mac_address"), knownvalue.StringExact("00:50:56:2a:bb:cd")),
				},
			},
		},
	})
}

// Moved with its static MAC, the plan says the old adapter must go first:
// with create_before_destroy the new one would be added while the old one
// still has the MAC (Terraform tells the provider neither at plan nor at
// create, so a warning is what it can give).
func TestAccVMPVRDMANIC_movesWithItsMACWarnsOfCreateBeforeDestroy(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	from, to := lab.VMUUID(lab.VMNames()[0]), lab.VMUUID(lab.VMNames()[1])
	mac := `  mac_address = "00:50:56:2a:bb:ce"`
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + without(vmPVRDMANICConfig(lab, from, "a", mac), lab)})
	d.run("apply", "-auto-approve")
	d.write(map[string]string{"main.tf": acctest.RequiredProviders + without(vmPVRDMANICConfig(lab, to, "a", mac), lab)})
	out := d.run("plan")
	if !acctest.Wording(fmt.Sprintf("The PVRDMA adapter moves from virtual machine %s to %s and keeps MAC address 00:50:56:2a:bb:ce", from, to)).
		MatchString(out) ||
		!acctest.Wording("Do not set create_before_destroy on this resource").MatchString(out) {
		t.Errorf("the plan of an adapter moved with its static MAC must warn of create_before_destroy:\n%s", out)
	}
}
