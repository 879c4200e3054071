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

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

const nicAddr = "vspherehpc_vm_pvrdma_nic.nic"

// nicConfig is the two switches of switchesConfig and one adapter on the VM
// vmID, on port group "a" or "b", with extra arguments.
func nicConfig(lab *vcsimlab.Lab, vmID, group, extra string) string {
	return switchesConfig(lab) + nicOn(vmID, "vspherehpc_rdma_dvs."+group+".port_group_id", extra)
}

func TestAccVMPVRDMANIC_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	var key string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: nicConfig(lab, uuid, "a", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile("^"+uuid+`:\d+$`))),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("device_protocol"), knownvalue.StringExact("rocev2")),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("start_connected"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("mac_address"), knownvalue.StringRegexp(macPattern)),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("adapter_index"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("reserve_all_memory"), knownvalue.Bool(true)),
					statecheck.CompareValuePairs(nicAddr, tfjsonpath.New("distributed_port_group_id"), "vspherehpc_rdma_dvs.a", tfjsonpath.New("port_group_id"), compareSame),
				},
				Check: func(s *terraform.State) error {
					key = s.RootModule().Resources[nicAddr].Primary.Attributes["device_key"]
					return nil
				},
			},
			{
				ResourceName: nicAddr, ImportState: true, ImportStateVerify: true,
				ImportStateIdFunc: func(*terraform.State) (string, error) { return uuid + ":" + key, nil },
			},
			{
				Config:       requiredProviders + nicConfig(lab, uuid, "a", ""),
				ResourceName: nicAddr, ImportState: true, ImportStateKind: resource.ImportBlockWithID,
				ImportStateIdFunc: func(*terraform.State) (string, error) { return uuid + ":" + key, nil },
			},
			{
				// Port group, protocol and start_connected change in place.
				Config: nicConfig(lab, uuid, "b", `
  device_protocol = "rocev1"
  start_connected = false
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("device_protocol"), knownvalue.StringExact("rocev1")),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("start_connected"), knownvalue.Bool(false)),
					statecheck.CompareValuePairs(nicAddr, tfjsonpath.New("distributed_port_group_id"), "vspherehpc_rdma_dvs.b", tfjsonpath.New("port_group_id"), compareSame),
				},
			},
			{
				Config:            nicConfig(lab, uuid, "b", `  mac_address = "00:50:56:2a:bb:cc"`),
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate)}},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("mac_address"), knownvalue.StringExact("00:50:56:2a:bb:cc"))},
			},
			{
				// The same VM by its managed object id: an update of the
				// spelling, not a new adapter.
				Config:           nicConfig(lab, lab.VMID(vm), "b", `  mac_address = "00:50:56:2a:bb:cc"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate)}},
				Check: func(s *terraform.State) error {
					if got := s.RootModule().Resources[nicAddr].Primary.Attributes["device_key"]; got != key {
						return fmt.Errorf("device key %s, was %s: the adapter was replaced", got, key)
					}
					return nil
				},
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
	must(t, lab.UpgradeVMHardware(ctx, "legacy-node", 13))
	uuid := lab.VMUUID("legacy-node")
	var key string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: nicConfig(lab, uuid, "a", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(nicAddr, tfjsonpath.New("device_protocol")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("device_protocol"), knownvalue.Null()),
				},
				Check: func(s *terraform.State) error {
					key = s.RootModule().Resources[nicAddr].Primary.Attributes["device_key"]
					adapters, err := labService(lab).VM(ctx, uuid)
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
			{Config: nicConfig(lab, uuid, "a", ""), PlanOnly: true},
			{
				Config:   nicConfig(lab, uuid, "a", `  device_protocol = "rocev2"`),
				PlanOnly: true, ExpectError: wrapped("offers PVRDMA with no choice of protocol, so it cannot be rocev2. Remove device_protocol"),
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
			Config: nicConfig(lab, lab.VMUUID(vm), "a", ""),
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
	config := nicConfig(lab, lab.VMUUID(vm), "a", "")
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionUpdate)}}
	converged := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("device_protocol"), knownvalue.StringExact("rocev2")),
		statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("start_connected"), knownvalue.Bool(true)),
		statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("reserve_all_memory"), knownvalue.Bool(true)),
		statecheck.CompareValuePairs(nicAddr, tfjsonpath.New("distributed_port_group_id"), "vspherehpc_rdma_dvs.a", tfjsonpath.New("port_group_id"), compareSame),
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
					must(t, lab.EditPVRDMAAdapters(ctx, vm, vcsimlab.PVRDMAAdapterEdit{DeviceProtocol: "rocev1", StartConnected: &startConnected}))
				},
				Config: config, ConfigPlanChecks: update, ConfigStateChecks: converged,
			},
			{
				PreConfig: func() {
					must(t, lab.EditPVRDMAAdapters(ctx, vm, vcsimlab.PVRDMAAdapterEdit{SwitchUUID: switchB, PortGroupKey: groupB}))
				},
				Config: config, ConfigPlanChecks: update, ConfigStateChecks: converged,
			},
			{
				PreConfig: func() { must(t, lab.SetVMMemoryReservationLocked(ctx, vm, false)) },
				Config:    config, ConfigPlanChecks: update, ConfigStateChecks: converged,
			},
		},
	})
}

// nicOn is an adapter resource for the switches of switchesConfig.
func nicOn(vmID, portGroupID, extra string) string {
	return fmt.Sprintf(`
resource "vspherehpc_vm_pvrdma_nic" "nic" {
  virtual_machine_id        = %q
  distributed_port_group_id = %s
%s
}
`, vmID, portGroupID, extra)
}

func TestAccVMPVRDMANIC_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's vmx-11 VM legacy-node and upgrades it, the lab's vmnic1, and powers a VM on")
	ctx := context.Background()
	vm0, vm1 := lab.VMNames()[0], lab.VMNames()[1]
	must(t, lab.PowerOnVM(ctx, vm1))
	node0, err := labService(lab).VM(ctx, lab.VMUUID(vm0))
	if err != nil {
		t.Fatal(err)
	}
	standard := node0.NetworkAdapters[0].NetworkID
	// A switch over one host only, on its free 10 GbE NIC.
	var partialGroup string
	partial := func() {
		spec := vsphere.DVSSpec{DatacenterID: lab.DatacenterID(), Name: testName("partial"), UplinkCount: 1, MTU: 9000,
			PortGroup: vsphere.PortGroupSpec{Name: testName("partial-vms"), Ports: 8, AutoExpand: true},
			Hosts:     []vsphere.DVSHost{{HostID: lab.HostID(lab.HostNames()[0]), Vmnic: "vmnic1"}}}
		id, key, err := labService(lab).CreateDVS(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		d, err := labService(lab).DVS(ctx, id, key)
		if err != nil {
			t.Fatal(err)
		}
		partialGroup = d.PortGroup.ID
	}
	switches := switchesConfig(lab)
	groupA := "vspherehpc_rdma_dvs.a.port_group_id"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// First: the post-test destroy runs the last step's configuration.
				Config:   switches + nicOn(lab.VMUUID(vm0), groupA, `  device_protocol = "iwarp"`),
				PlanOnly: true, ExpectError: regexp.MustCompile(`value must be one of`),
			},
			{Config: switches},
			{
				Config: switches + nicOn(lab.VMUUID("legacy-node"), groupA, ""), PlanOnly: true,
				ExpectError: wrapped(fmt.Sprintf("Virtual machine legacy-node (%s) has hardware version 11 (vmx-11); PVRDMA adapters need vmx-13 or later. Upgrade the VM's compatibility while it is powered off: with the vSphere provider, set hardware_version = 13", lab.VMUUID("legacy-node"))),
			},
			{
				Config:   switches + nicOn(lab.VMUUID(vm0), groupA, `  device_protocol = "rocev3"`),
				PlanOnly: true, ExpectError: regexp.MustCompile(`value must be one of`),
			},
			{
				// At vmx-13 the VM offers PVRDMA with no protocol choice.
				PreConfig: func() { must(t, lab.UpgradeVMHardware(ctx, "legacy-node", 13)) },
				Config:    switches + nicOn(lab.VMUUID("legacy-node"), groupA, `  device_protocol = "rocev1"`), PlanOnly: true,
				ExpectError: wrapped(fmt.Sprintf(`Virtual machine legacy-node (%s) (hardware version 13) offers PVRDMA with no choice of protocol, so it cannot be rocev1. Remove device_protocol`, lab.VMUUID("legacy-node"))),
			},
			{
				Config: switches + nicOn(lab.VMUUID(vm0), `"`+standard+`"`, ""), PlanOnly: true,
				ExpectError: wrapped(standard + ` (VM Network) is a standard network; PVRDMA adapters need a distributed port group`),
			},
			{
				Config: switches + nicOn(lab.VMUUID(vm1), groupA, ""), PlanOnly: true,
				ExpectError: wrapped(`is powered on, and adding, removing or changing the protocol of a PVRDMA adapter needs it powered off. Power it off first, or set power_off_allowed = true`),
			},
		},
	})
	// A port group whose switch spans only one host of the cluster.
	partial()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:   providerConfig(lab) + nicOn(lab.VMUUID(vm0), `"`+partialGroup+`"`, ""),
			PlanOnly: true,
			ExpectError: wrapped(fmt.Sprintf(`Hosts %s of the cluster of virtual machine %s (%s) are not members of switch %s`,
				strings.Join(lab.HostNames()[1:], ", "), vm0, lab.VMUUID(vm0), testName("partial"))),
		}},
	})
}

// On a running VM with power_off_allowed, the provider shuts the guest down,
// adds the adapter and powers the VM back on; destroy does the same.
func TestAccVMPVRDMANIC_powerCycle(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "counts calls, and powers a VM on that the lab cannot power off again")
	vm := lab.VMNames()[1]
	must(t, lab.PowerOnVM(context.Background(), vm))
	running := func(*terraform.State) error {
		v, err := labService(lab).VM(context.Background(), lab.VMUUID(vm))
		if err == nil && v.PowerState != "on" {
			err = fmt.Errorf("%s is %s after the change, want on", vm, v.PowerState)
		}
		return err
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: nicConfig(lab, lab.VMUUID(vm), "a", `  power_off_allowed = true`),
				Check: resource.ComposeTestCheckFunc(running, func(*terraform.State) error {
					if n := lab.Calls()["ShutdownGuest"]; n != 1 {
						return fmt.Errorf("ShutdownGuest calls = %d, want 1", n)
					}
					return nil
				}),
			},
			{
				Config: nicConfig(lab, lab.VMUUID(vm), "a", "  power_off_allowed = true\n  device_protocol = \"rocev1\""),
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
	config := nicConfig(lab, lab.VMUUID(vm), "a", "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: switchesConfig(lab)},
			{
				PreConfig: func() {
					must(t, lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"}))
				},
				Config:      config,
				ExpectError: wrapped(`Cannot add a PVRDMA adapter to virtual machine`),
			},
			{
				Config: config,
				// Nothing was recorded: the adapter or setup is created now.
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionCreate),
				}},
				Check: func(*terraform.State) error {
					v, err := labService(lab).VM(context.Background(), lab.VMUUID(vm))
					if err != nil {
						return err
					}
					n := 0
					for _, a := range v.NetworkAdapters {
						if a.Type == "vmxnet3vrdma" {
							n++
						}
					}
					if n != 1 {
						return fmt.Errorf("%s has %d PVRDMA adapters, want 1", vm, n)
					}
					return nil
				},
			},
		},
	})
}

// Four adapters on one VM at Terraform's default parallelism: the provider
// serializes the VM's reconfigures, and each carries only its own device.
func TestAccVMPVRDMANIC_fourOnOneVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := switchesConfig(lab) + fmt.Sprintf(`
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
	config := nicConfig(lab, lab.VMUUID(vm), "a", "")
	var reconfigures int
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig:   func() { must(t, lab.PowerOnVM(context.Background(), vm)) },
				Config:      switchesConfig(lab),
				ExpectError: wrapped(`is powered on, and adding, removing or changing the protocol of a PVRDMA adapter needs it powered off`),
			},
			{
				PreConfig: func() { reconfigures = lab.Calls()["ReconfigVM_Task"] },
				Config:    nicConfig(lab, lab.VMUUID(vm), "a", "  power_off_allowed = true"),
				Check: func(*terraform.State) error {
					if n := lab.Calls()["ReconfigVM_Task"]; n != reconfigures {
						return fmt.Errorf("%d reconfigures for a provider-side setting, want none", n-reconfigures)
					}
					return nil
				},
			},
			{Config: switchesConfig(lab)},
		},
	})
}

// Arguments naming what vCenter does not have are refused at plan, naming
// them and where the right id comes from; imports of what is no PVRDMA
// adapter say which adapters the VM has.
func TestAccVMPVRDMANIC_refusedAtPlan(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	node0, err := labService(lab).VM(ctx, uuid)
	if err != nil {
		t.Fatal(err)
	}
	// The VM's regular adapter: the lab's VMs have a vmxnet3 one first, on
	// VM Network; an external target's VM says what it has.
	i := slices.IndexFunc(node0.NetworkAdapters, func(a vsphere.NetworkAdapter) bool { return a.Type != "vmxnet3vrdma" })
	if i < 0 && !lab.Simulated() {
		t.Skipf("needs %s to have a network adapter other than PVRDMA ones", vm)
	}
	regular, regularType := node0.NetworkAdapters[0].Key, "vmxnet3"
	if !lab.Simulated() {
		regular, regularType = node0.NetworkAdapters[i].Key, node0.NetworkAdapters[i].Type
	}
	group := "vspherehpc_rdma_dvs.a.port_group_id"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: switchesConfig(lab)}, // the port group ids are known from here on
			{
				Config: switchesConfig(lab) + nicOn("4200aaaa-0000-0000-0000-000000000000", group, ""), PlanOnly: true,
				ExpectError: wrapped("no virtual machine has UUID 4200aaaa-0000-0000-0000-000000000000; use vsphere_virtual_machine's id, or data.vspherehpc_virtual_machine to look one up by name."),
			},
			{
				Config: switchesConfig(lab) + nicOn("not-a-uuid", group, ""), PlanOnly: true,
				ExpectError: wrapped(`"not-a-uuid" is neither a virtual machine's BIOS UUID (8-4-4-4-12 hex digits`),
			},
			{
				Config: switchesConfig(lab) + nicOn(uuid, `"dvportgroup-99999"`, ""), PlanOnly: true,
				ExpectError: wrapped("no distributed port group has id dvportgroup-99999; use the port_group_id of a vspherehpc_rdma_dvs"),
			},
			{Config: nicConfig(lab, uuid, "a", "")},
			{
				ResourceName: nicAddr, ImportState: true, ImportStateId: uuid + ":99999",
				ExpectError: regexp.MustCompile(`has\s+no\s+network\s+adapter\s+with\s+device\s+key\s+99999\.\s+Its\s+PVRDMA\s+adapters\s+have\s+device\s+keys\s+\d+\s+\(on\s+dvportgroup-\d+\);\s+import\s+one\s+of\s+those`),
			},
			{
				ResourceName: nicAddr, ImportState: true, ImportStateId: fmt.Sprintf("%s:%d", uuid, regular),
				ExpectError: wrapped(fmt.Sprintf("Device %d of virtual machine %s is a %s adapter, not a PVRDMA one.", regular, vm, regularType)),
			},
		},
	})
}

// One static MAC on two adapters of one configuration is refused at plan, and
// so is a MAC another VM's adapter already has in vCenter.
func TestAccVMPVRDMANIC_macClaimedTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	name1 := lab.VMNames()[1]
	vm0, vm1 := lab.VMUUID(lab.VMNames()[0]), lab.VMUUID(name1)
	node1, err := labService(lab).VM(ctx, vm1)
	if err != nil {
		t.Fatal(err)
	}
	mac := `  mac_address = "00:50:56:01:02:03"`
	second := strings.Replace(nicOn(vm1, "vspherehpc_rdma_dvs.a.port_group_id", mac), `"nic"`, `"second"`, 1)
	steps := []resource.TestStep{
		{Config: switchesConfig(lab)},
		{
			Config: switchesConfig(lab) + nicOn(vm0, "vspherehpc_rdma_dvs.a.port_group_id", mac) + second, PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*claim\s+MAC\s+address\s+00:50:56:01:02:03:.*Two\s+adapters\s+with\s+one\s+MAC`),
		},
	}
	// The MAC of the other VM's adapter (the lab's VMs have one) given to
	// this one. vCenter generates MACs in the part of VMware's prefix that
	// no configuration may give: on an external target whose VM has only
	// such a MAC, this step is left out.
	if lab.Simulated() || len(node1.NetworkAdapters) > 0 && staticMACProblem(node1.NetworkAdapters[0].MAC) == "" {
		taken := node1.NetworkAdapters[0].MAC
		steps = append(steps, resource.TestStep{
			Config: switchesConfig(lab) + nicOn(vm0, "vspherehpc_rdma_dvs.a.port_group_id", `  mac_address = "`+taken+`"`), PlanOnly: true,
			ExpectError: wrapped("Virtual machine " + name1 + " already has a network adapter with MAC address " + taken + "."),
		})
	} else {
		t.Logf("%s has no network adapter with a MAC a configuration can give: the MAC-in-use check is not tried", name1)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
	})
}

// A static MAC is checked against VMware's rule for static addresses, not
// only for shape (issue 12): multicast and the reserved part of VMware's
// prefix are refused at plan with an address that works; VMware's static
// range and other unicast addresses plan.
func TestAccVMPVRDMANIC_staticMACRule(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	mac := func(m string) string { return fmt.Sprintf("  mac_address = %q", m) }
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: nicConfig(lab, uuid, "a", mac("01:00:5e:00:00:01")), PlanOnly: true,
				ExpectError: wrapped(`mac_address = "01:00:5e:00:00:01" is a multicast address (the lowest bit of its first byte is set), and an adapter needs a unicast address`)},
			{Config: nicConfig(lab, uuid, "a", mac("ff:ff:ff:ff:ff:ff")), PlanOnly: true,
				ExpectError: wrapped(`mac_address = "ff:ff:ff:ff:ff:ff" is a multicast address`)},
			{Config: nicConfig(lab, uuid, "a", mac("00:50:56:aa:bb:cc")), PlanOnly: true,
				ExpectError: wrapped(`mac_address = "00:50:56:aa:bb:cc" is in the part of VMware's prefix 00:50:56 that vSphere reserves for the addresses ` +
					`vCenter generates and for VMkernel adapters: static addresses with that prefix go from 00:50:56:00:00:00 to 00:50:56:3f:ff:ff, e.g. 00:50:56:2a:bb:cc.`)},
			{Config: nicConfig(lab, uuid, "a", mac("00:50:56:40:00:00")), PlanOnly: true,
				ExpectError: wrapped(`mac_address = "00:50:56:40:00:00" is in the part of VMware's prefix 00:50:56 that vSphere reserves`)},
			{Config: nicConfig(lab, uuid, "a", mac("00:50:56:AA:BB:CC")), PlanOnly: true,
				ExpectError: wrapped(`mac_address = "00:50:56:AA:BB:CC" is not a MAC address in lower case, such as 00:50:56:0a:0b:0c.`)},
			{Config: nicConfig(lab, uuid, "a", mac("00:50:56:3f:ff:ff")), PlanOnly: true, ExpectNonEmptyPlan: true},
			{Config: nicConfig(lab, uuid, "a", mac("02:00:00:00:00:01")), PlanOnly: true, ExpectNonEmptyPlan: true},
		},
	})
}

// Only a MAC the configuration gives is claimed: two adapters that vCenter
// gave one MAC (a clone, a copied VM) do not stop every plan.
func TestAccVMPVRDMANIC_generatedMACsNotClaimed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	name0, name1 := lab.VMNames()[0], lab.VMNames()[1]
	vm0, vm1 := lab.VMUUID(name0), lab.VMUUID(name1)
	config := switchesConfig(lab) + nicOn(vm0, "vspherehpc_rdma_dvs.a.port_group_id", "") +
		strings.Replace(nicOn(vm1, "vspherehpc_rdma_dvs.a.port_group_id", ""), `"nic"`, `"second"`, 1)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					must(t, lab.EditPVRDMAAdapters(ctx, name0, vcsimlab.PVRDMAAdapterEdit{MAC: "00:50:56:01:02:03"}))
					must(t, lab.EditPVRDMAAdapters(ctx, name1, vcsimlab.PVRDMAAdapterEdit{MAC: "00:50:56:01:02:03"}))
				},
				Config: config, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
