package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

const dvsAddr = "vspherehpc_rdma_dvs.rdma"

// dvsConfig is a switch over the given hosts (name -> vmnic) plus extra
// arguments.
func dvsConfig(lab *vcsimlab.Lab, name string, hosts map[string]string, extra string) string {
	var names []string
	for h := range hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, h := range names {
		fmt.Fprintf(&b, "  host {\n    host_system_id = %q\n    vmnic          = %q\n  }\n", lab.HostID(h), hosts[h])
	}
	return providerConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_rdma_dvs" "rdma" {
  datacenter_id = %q
  name          = %q
  port_group {
    name = "pvrdma-vms"
  }
%s%s
}
`, lab.DatacenterID(), name, b.String(), extra)
}

func allHosts(lab *vcsimlab.Lab, vmnic string) map[string]string {
	hosts := map[string]string{}
	for _, h := range lab.HostNames() {
		hosts[h] = vmnic
	}
	return hosts
}

func hostSet(lab *vcsimlab.Lab, hosts map[string]string) knownvalue.Check {
	var checks []knownvalue.Check
	for h, nic := range hosts {
		checks = append(checks, knownvalue.ObjectExact(map[string]knownvalue.Check{
			"host_system_id": knownvalue.StringExact(lab.HostID(h)),
			"vmnic":          knownvalue.StringExact(nic),
		}))
	}
	return knownvalue.SetExact(checks)
}

// labDVS finds a switch by name with the lab's admin client.
func labDVS(t *testing.T, lab *vcsimlab.Lab, name string) *object.DistributedVirtualSwitch {
	t.Helper()
	found, err := object.NewSearchIndex(lab.Client().Client).FindByInventoryPath(context.Background(), "/"+lab.DatacenterName()+"/network/"+name)
	if err != nil || found == nil {
		t.Fatalf("switch %s: %v", name, err)
	}
	return object.NewDistributedVirtualSwitch(lab.Client().Client, found.Reference())
}

// networksNamed counts the networks (switches, port groups) of the datacenter
// whose names match pattern, e.g. "rdma*".
func networksNamed(lab *vcsimlab.Lab, pattern string) (int, error) {
	ctx := context.Background()
	finder := find.NewFinder(lab.Client().Client)
	dc, err := finder.Datacenter(ctx, lab.DatacenterName())
	if err != nil {
		return 0, err
	}
	finder.SetDatacenter(dc)
	nets, err := finder.NetworkList(ctx, pattern)
	var nf *find.NotFoundError
	if errors.As(err, &nf) {
		return 0, nil
	}
	return len(nets), err
}

// noNetworksLeft checks that no switch or port group of the test is left:
// the switch, its uplink port group ("rdma-DVUplinks-N") and the VMs' port
// group.
func noNetworksLeft(lab *vcsimlab.Lab) func(*terraform.State) error {
	return func(*terraform.State) error {
		for _, pattern := range []string{"rdma*", "pvrdma-vms*"} {
			n, err := networksNamed(lab, pattern)
			if err != nil {
				return err
			}
			if n != 0 {
				return fmt.Errorf("%d networks named %s left behind", n, pattern)
			}
		}
		return nil
	}
}

func reconfigureDVS(t *testing.T, lab *vcsimlab.Lab, name string, change func(*types.VMwareDVSConfigSpec)) {
	t.Helper()
	ctx := context.Background()
	s := labDVS(t, lab, name)
	var cfg mo.DistributedVirtualSwitch
	if err := s.Properties(ctx, s.Reference(), []string{"config"}, &cfg); err != nil {
		t.Fatal(err)
	}
	spec := &types.VMwareDVSConfigSpec{}
	spec.ConfigVersion = cfg.Config.GetDVSConfigInfo().ConfigVersion
	change(spec)
	task, err := s.Reconfigure(ctx, spec)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("reconfiguring %s out of band: %v", name, err)
	}
}

func TestAccRDMADVS_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	hosts := allHosts(lab, "vmnic4")
	first := lab.HostNames()[0]
	fewer := allHosts(lab, "vmnic4")
	delete(fewer, first)
	moved := allHosts(lab, "vmnic4")
	moved[first] = "vmnic5"
	uuid := ""
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: dvsConfig(lab, "rdma", hosts, `  version = "8.0.0"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("id"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("moid"), knownvalue.StringRegexp(regexp.MustCompile(`^dvs-\d+$`))),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("mtu"), knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("uplink_count"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("uplink_names"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("uplink1"), knownvalue.StringExact("uplink2"), knownvalue.StringExact("uplink3"), knownvalue.StringExact("uplink4"),
					})),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("network_io_control_enabled"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group_id"), knownvalue.StringRegexp(regexp.MustCompile(`^dvportgroup-\d+$`))),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("port_count"), knownvalue.Int64Exact(8)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, hosts)),
				},
				Check: func(s *terraform.State) error {
					uuid = s.RootModule().Resources[dvsAddr].Primary.ID
					return nil
				},
			},
			{ResourceName: dvsAddr, ImportState: true, ImportStateVerify: true},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateVerify: true,
				ImportStateId: "/" + lab.DatacenterName() + "/network/rdma",
			},
			{
				// Import then plan is empty: an import block plans a no-op import.
				Config:       requiredProviders + dvsConfig(lab, "rdma", hosts, `  version = "8.0.0"`),
				ResourceName: dvsAddr, ImportState: true, ImportStateKind: resource.ImportBlockWithID,
				ImportStateId: "/" + lab.DatacenterName() + "/network/rdma",
			},
			{
				Config: dvsConfig(lab, "rdma", hosts, "  mtu = 1500\n  version = \"8.0.0\""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("mtu"), knownvalue.Int64Exact(1500))},
			},
			{
				Config:            dvsConfig(lab, "rdma", fewer, `  version = "8.0.0"`),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, fewer))},
			},
			{
				Config:            dvsConfig(lab, "rdma", moved, `  version = "8.0.0"`),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, moved))},
			},
			{
				// Rename, NIOC, description, upgrade and port group, all in place.
				Config: strings.Replace(dvsConfig(lab, "rdma-renamed", moved, `
  description                = "PVRDMA fabric"
  network_io_control_enabled = true
  version                    = "8.0.3"
  uplink_count               = 2
`), `name = "pvrdma-vms"`, `name = "pvrdma-vms-2"
    vlan_id = 100
    port_count = 16`, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("name"), knownvalue.StringExact("rdma-renamed")),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("version"), knownvalue.StringExact("8.0.3")),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("description"), knownvalue.StringExact("PVRDMA fabric")),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("port_count"), knownvalue.Int64Exact(16)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("network_io_control_enabled"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("uplink_names"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("vlan_id"), knownvalue.Int64Exact(100)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("name"), knownvalue.StringExact("pvrdma-vms-2")),
				},
				Check: func(s *terraform.State) error {
					if got := s.RootModule().Resources[dvsAddr].Primary.ID; got != uuid {
						return fmt.Errorf("the switch was replaced: %s, was %s", got, uuid)
					}
					return nil
				},
			},
			{
				// vSphere cannot clear a description: dropping the argument keeps it.
				Config: strings.Replace(dvsConfig(lab, "rdma-renamed", moved, `
  network_io_control_enabled = true
  uplink_count               = 2
`), `name = "pvrdma-vms"`, `name = "pvrdma-vms-2"
    vlan_id = 100
    port_count = 16`, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
		// Nothing left behind: no switch, no port group, no uplink port group.
		CheckDestroy: noNetworksLeft(lab),
	})
}

// The create of a 3-host switch fails adding the hosts; the next apply
// converges, without a second switch and without an orphan.
func TestAccRDMADVS_createFailsHalfWay(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	lab.FailTaskOnce("ReconfigureDvs_Task", "rdma", &types.DvsFault{})
	config := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, ExpectError: wrapped(`Cannot create distributed switch rdma`)},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, allHosts(lab, "vmnic4"))),
				},
				Check: func(*terraform.State) error {
					n, err := networksNamed(lab, "rdma*")
					if err == nil && n != 2 { // the switch and its uplink port group
						err = fmt.Errorf("%d networks named rdma*, want the switch and its uplink port group", n)
					}
					return err
				},
			},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

func TestAccRDMADVS_disappears(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), ""),
			Check: func(*terraform.State) error {
				ctx := context.Background()
				task, err := labDVS(t, lab, "rdma").Destroy(ctx)
				if err == nil {
					err = task.Wait(ctx)
				}
				return err
			},
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionCreate),
			}},
			ExpectNonEmptyPlan: true,
		}},
	})
}

func TestAccRDMADVS_drift(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionUpdate)}}
	ctx := context.Background()
	step := func(change func()) resource.TestStep {
		return resource.TestStep{
			PreConfig:        change,
			Config:           config,
			ConfigPlanChecks: update,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("mtu"), knownvalue.Int64Exact(9000)),
				statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("network_io_control_enabled"), knownvalue.Bool(false)),
				statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, allHosts(lab, "vmnic4"))),
				statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("vlan_id"), knownvalue.Int64Exact(0)),
			},
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			step(func() { // MTU
				reconfigureDVS(t, lab, "rdma", func(s *types.VMwareDVSConfigSpec) { s.MaxMtu = 1500 })
			}),
			step(func() { // NIOC
				s := labDVS(t, lab, "rdma")
				_, err := methods.EnableNetworkResourceManagement(ctx, lab.Client().Client, &types.EnableNetworkResourceManagement{This: s.Reference(), Enable: true})
				if err != nil {
					t.Fatal(err)
				}
			}),
			step(func() { // a host removed
				reconfigureDVS(t, lab, "rdma", func(s *types.VMwareDVSConfigSpec) {
					s.Host = []types.DistributedVirtualSwitchHostMemberConfigSpec{{
						Operation: string(types.ConfigSpecOperationRemove),
						Host:      types.ManagedObjectReference{Type: "HostSystem", Value: lab.HostID(lab.HostNames()[0])},
					}}
				})
			}),
			step(func() { // a host's uplink moved to another NIC
				reconfigureDVS(t, lab, "rdma", func(s *types.VMwareDVSConfigSpec) {
					s.Host = []types.DistributedVirtualSwitchHostMemberConfigSpec{{
						Operation: string(types.ConfigSpecOperationEdit),
						Host:      types.ManagedObjectReference{Type: "HostSystem", Value: lab.HostID(lab.HostNames()[1])},
						Backing: &types.DistributedVirtualSwitchHostMemberPnicBacking{
							PnicSpec: []types.DistributedVirtualSwitchHostMemberPnicSpec{{PnicDevice: "vmnic5"}},
						},
					}}
				})
			}),
			step(func() { setPortGroupVLAN(t, lab, "pvrdma-vms", 42) }),
			{
				// With auto-expand, vCenter grows the port group as adapters
				// connect: more ports than configured is not drift.
				PreConfig:        func() { setPortGroupPorts(t, lab, "pvrdma-vms", 24) },
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

func setPortGroupVLAN(t *testing.T, lab *vcsimlab.Lab, name string, vlan int32) {
	t.Helper()
	reconfigurePortGroup(t, lab, name, types.DVPortgroupConfigSpec{
		DefaultPortConfig: &types.VMwareDVSPortSetting{Vlan: &types.VmwareDistributedVirtualSwitchVlanIdSpec{VlanId: vlan}},
	})
}

func setPortGroupPorts(t *testing.T, lab *vcsimlab.Lab, name string, ports int32) {
	t.Helper()
	reconfigurePortGroup(t, lab, name, types.DVPortgroupConfigSpec{NumPorts: ports})
}

// reconfigurePortGroup changes a port group out of band.
func reconfigurePortGroup(t *testing.T, lab *vcsimlab.Lab, name string, spec types.DVPortgroupConfigSpec) {
	t.Helper()
	ctx := context.Background()
	found, err := object.NewSearchIndex(lab.Client().Client).FindByInventoryPath(ctx, "/"+lab.DatacenterName()+"/network/"+name)
	if err != nil || found == nil {
		t.Fatalf("port group %s: %v", name, err)
	}
	pg := object.NewDistributedVirtualPortgroup(lab.Client().Client, found.Reference())
	var cfg mo.DistributedVirtualPortgroup
	if err := pg.Properties(ctx, pg.Reference(), []string{"config"}, &cfg); err != nil {
		t.Fatal(err)
	}
	spec.ConfigVersion = cfg.Config.ConfigVersion
	task, err := pg.Reconfigure(ctx, spec)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("changing port group %s out of band: %v", name, err)
	}
}

func TestAccRDMADVS_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	first := lab.HostNames()[0]
	with := func(nic string) map[string]string {
		hosts := allHosts(lab, "vmnic4")
		hosts[first] = nic
		return hosts
	}
	twice := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	twice = strings.Replace(twice, "  host {\n", fmt.Sprintf("  host {\n    host_system_id = %q\n    vmnic          = \"vmnic5\"\n  }\n  host {\n", lab.HostID(first)), 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: dvsConfig(lab, "rdma", with("vmnic9"), ""), PlanOnly: true,
				ExpectError: wrapped(fmt.Sprintf("Host %s (%s) has no physical NIC vmnic9; its NICs are vmnic0, vmnic1, vmnic4, vmnic5. Its free RDMA NICs: vmnic4, vmnic5.", first, lab.HostID(first))),
			},
			{
				Config: dvsConfig(lab, "rdma", with("vmnic0"), ""), PlanOnly: true,
				ExpectError: wrapped(fmt.Sprintf(`vmnic0 on host %s (%s) is an uplink of standard switch "vSwitch0". Free it there, or choose another NIC.`, first, lab.HostID(first))),
			},
			{Config: twice, PlanOnly: true, ExpectError: wrapped(`is listed with vmnic4 and with vmnic5. PVRDMA supports no NIC teaming`)},
			{Config: dvsConfig(lab, "rdma", with("eth0"), ""), PlanOnly: true, ExpectError: wrapped(`must name a physical NIC such as vmnic4`)},
			{
				Config:   strings.Replace(dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), ""), "  port_group {\n    name = \"pvrdma-vms\"\n  }\n", "", 1),
				PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)port_group.*must have a configuration value`),
			},
			{Config: dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), `  version = "6.5.0"`), PlanOnly: true, ExpectError: wrapped(`vCenter offers distributed switch versions 7.0.0, 7.0.2, 7.0.3, 8.0.0, 8.0.3, not 6.5.0.`)},
			{Config: dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), `  mtu = 9216`), PlanOnly: true, ExpectError: wrapped(`mtu value must be between 1280 and 9000`)},
			// A NIC another distributed switch uses is refused, naming that switch.
			{
				PreConfig: func() { createOtherDVS(t, lab, "storage-dvs", first, "vmnic5") },
				Config:    dvsConfig(lab, "rdma", with("vmnic5"), ""), PlanOnly: true,
				ExpectError: wrapped(fmt.Sprintf(`vmnic5 on host %s (%s) is an uplink of distributed switch "storage-dvs".`, first, lab.HostID(first))),
			},
			// A downgrade is refused at plan time.
			{Config: dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), `  version = "8.0.3"`)},
			{
				Config: dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), `  version = "8.0.0"`), PlanOnly: true,
				ExpectError: wrapped(`Switch rdma is at version 8.0.3; vSphere cannot downgrade a distributed switch to 8.0.0.`),
			},
		},
	})
}

// createOtherDVS makes a switch out of band that takes a host's NIC.
func createOtherDVS(t *testing.T, lab *vcsimlab.Lab, name, hostName, vmnic string) {
	t.Helper()
	ctx := context.Background()
	folders, err := object.NewDatacenter(lab.Client().Client, types.ManagedObjectReference{Type: "Datacenter", Value: lab.DatacenterID()}).Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	task, err := folders.NetworkFolder.CreateDVS(ctx, types.DVSCreateSpec{ConfigSpec: &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Name: name,
		Host: []types.DistributedVirtualSwitchHostMemberConfigSpec{{
			Operation: string(types.ConfigSpecOperationAdd),
			Host:      types.ManagedObjectReference{Type: "HostSystem", Value: lab.HostID(hostName)},
			Backing:   &types.DistributedVirtualSwitchHostMemberPnicBacking{PnicSpec: []types.DistributedVirtualSwitchHostMemberPnicSpec{{PnicDevice: vmnic}}},
		}},
	}}})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("creating %s out of band: %v", name, err)
	}
}

// Destroy is refused, naming the VM, while a PVRDMA adapter uses the port
// group; once the adapter is gone, destroy removes everything.
func TestAccRDMADVS_destroyRefusedWhileInUse(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vmName := lab.VMNames()[0]
	var switchUUID, portGroupKey string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), ""),
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources[dvsAddr].Primary.Attributes
					switchUUID, portGroupKey = attrs["id"], attrs["port_group_key"]
					return nil
				},
			},
			{
				PreConfig: func() {
					pvrdmaAdapter(t, lab, vmName, switchUUID, portGroupKey, types.VirtualDeviceConfigSpecOperationAdd)
				},
				Config:      providerConfig(lab),
				ExpectError: wrapped(fmt.Sprintf(`VM network adapters still use its port groups: port group "pvrdma-vms": %s (PVRDMA). Remove those adapters first`, vmName)),
			},
			{
				PreConfig: func() {
					pvrdmaAdapter(t, lab, vmName, switchUUID, portGroupKey, types.VirtualDeviceConfigSpecOperationRemove)
				},
				Config: providerConfig(lab),
				Check:  noNetworksLeft(lab),
			},
		},
	})
}

// pvrdmaAdapter adds a PVRDMA adapter on the port group to a VM, or removes
// the VM's PVRDMA adapters, out of band.
func pvrdmaAdapter(t *testing.T, lab *vcsimlab.Lab, vmName, switchUUID, portGroupKey string, op types.VirtualDeviceConfigSpecOperation) {
	t.Helper()
	ctx := context.Background()
	vm := object.NewVirtualMachine(lab.Client().Client, types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(vmName)})
	var err error
	if op == types.VirtualDeviceConfigSpecOperationAdd {
		err = vm.AddDevice(ctx, &types.VirtualVmxnet3Vrdma{
			VirtualVmxnet3: types.VirtualVmxnet3{VirtualVmxnet: types.VirtualVmxnet{VirtualEthernetCard: types.VirtualEthernetCard{
				VirtualDevice: types.VirtualDevice{Key: -1, Backing: &types.VirtualEthernetCardDistributedVirtualPortBackingInfo{
					Port: types.DistributedVirtualSwitchPortConnection{SwitchUuid: switchUUID, PortgroupKey: portGroupKey},
				}},
			}}},
			DeviceProtocol: "rocev2",
		})
	} else {
		devices, derr := vm.Device(ctx)
		if derr != nil {
			t.Fatal(derr)
		}
		err = vm.RemoveDevice(ctx, false, devices.SelectByType((*types.VirtualVmxnet3Vrdma)(nil))...)
	}
	if err != nil {
		t.Fatalf("%s PVRDMA adapter on %s: %v", op, vmName, err)
	}
}

// An upgrade made in vCenter shows in the plan: the configuration's older
// version would be a downgrade, which is refused until the configuration
// follows.
func TestAccRDMADVS_versionDrift(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	at := func(version string) string {
		return dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), `  version = "`+version+`"`)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: at("7.0.3")},
			{
				PreConfig: func() {
					ctx := context.Background()
					s := labDVS(t, lab, "rdma")
					res, err := methods.PerformDvsProductSpecOperation_Task(ctx, lab.Client().Client, &types.PerformDvsProductSpecOperation_Task{
						This: s.Reference(), Operation: "upgrade", ProductSpec: &types.DistributedVirtualSwitchProductSpec{Version: "8.0.0"},
					})
					if err == nil {
						err = object.NewTask(lab.Client().Client, res.Returnval).Wait(ctx)
					}
					if err != nil {
						t.Fatalf("upgrading out of band: %v", err)
					}
				},
				Config: at("7.0.3"), PlanOnly: true,
				ExpectError: wrapped(`Switch rdma is at version 8.0.0; vSphere cannot downgrade a distributed switch to 7.0.3.`),
			},
			{
				Config: at("8.0.0"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

// A create that fails after the hosts joined (the port group step) leaves a
// tainted switch holding the hosts' NICs; the replacement's plan must not
// take those NICs for another switch's.
func TestAccRDMADVS_createFailsAfterHostsJoined(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	lab.FailTaskOnce("CreateDVPortgroup_Task", "rdma", &types.DvsFault{})
	config := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, ExpectError: wrapped(`Cannot create distributed switch rdma`)},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group_id"), knownvalue.NotNull()),
				},
			},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// A switch with several port groups imports with the one named after ":".
func TestAccRDMADVS_importChoosesPortGroup(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	path := "/" + lab.DatacenterName() + "/network/rdma"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					ctx := context.Background()
					s := labDVS(t, lab, "rdma")
					res, err := methods.CreateDVPortgroup_Task(ctx, lab.Client().Client, &types.CreateDVPortgroup_Task{
						This: s.Reference(), Spec: types.DVPortgroupConfigSpec{Name: "storage", Type: "earlyBinding", NumPorts: 8},
					})
					if err == nil {
						err = object.NewTask(lab.Client().Client, res.Returnval).Wait(ctx)
					}
					return err
				},
			},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateId: path,
				ExpectError: wrapped(`Switch rdma has 2 port groups (pvrdma-vms, storage). Import it as ` + path + `:<port group name>`),
			},
			{ResourceName: dvsAddr, ImportState: true, ImportStateId: path + ":pvrdma-vms", ImportStateVerify: true},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateId: path + ":nope",
				ExpectError: wrapped(`Switch rdma has no port group "nope"; its port groups are pvrdma-vms, storage.`),
			},
		},
	})
}
