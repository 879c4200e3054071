package provider

import (
	"context"
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

// noNetworksLeft checks that no switch or port group of the test is left:
// the switch, its uplink port group ("rdma-DVUplinks-N") and the VMs' port
// group.
func noNetworksLeft(lab *vcsimlab.Lab) func(*terraform.State) error {
	return func(*terraform.State) error {
		for _, pattern := range []string{"rdma*", "pvrdma-vms*"} {
			n, err := lab.CountNetworks(context.Background(), pattern)
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
	resource.UnitTest(t, resource.TestCase{
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
	must(t, lab.InjectTaskFault("ReconfigureDvs_Task", "rdma", vcsimlab.Fault{Type: "DvsFault"}))
	config := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	resource.UnitTest(t, resource.TestCase{
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
					n, err := lab.CountNetworks(context.Background(), "rdma*")
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
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), ""),
			Check: func(*terraform.State) error {
				return lab.DestroySwitch(context.Background(), "rdma")
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
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			step(func() { must(t, lab.SetSwitchMTU(ctx, "rdma", 1500)) }),                            // MTU
			step(func() { must(t, lab.SetSwitchNIOC(ctx, "rdma", true)) }),                           // NIOC
			step(func() { must(t, lab.RemoveSwitchHost(ctx, "rdma", lab.HostNames()[0])) }),          // a host removed
			step(func() { must(t, lab.SetSwitchUplink(ctx, "rdma", lab.HostNames()[1], "vmnic5")) }), // a host's uplink moved to another NIC
			step(func() { must(t, lab.SetPortGroupVLAN(ctx, "pvrdma-vms", 42)) }),                    // the port group's VLAN
			{
				// With auto-expand, vCenter grows the port group as adapters
				// connect: more ports than configured is not drift.
				PreConfig:        func() { must(t, lab.SetPortGroupPorts(ctx, "pvrdma-vms", 24)) },
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
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
	resource.UnitTest(t, resource.TestCase{
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
				PreConfig: func() { must(t, lab.CreateSwitch(context.Background(), "storage-dvs", first, "vmnic5")) },
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

// Destroy is refused, naming the VM, while a PVRDMA adapter uses the port
// group; once the adapter is gone, destroy removes everything.
func TestAccRDMADVS_destroyRefusedWhileInUse(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vmName := lab.VMNames()[0]
	var switchUUID, portGroupKey string
	resource.UnitTest(t, resource.TestCase{
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
					must(t, lab.AddPVRDMAAdapter(context.Background(), vmName, switchUUID, portGroupKey))
				},
				Config:      providerConfig(lab),
				ExpectError: wrapped(fmt.Sprintf(`VM network adapters still use its port groups: port group "pvrdma-vms": %s (PVRDMA). Remove those adapters first`, vmName)),
			},
			{
				PreConfig: func() {
					must(t, lab.RemovePVRDMAAdapters(context.Background(), vmName))
				},
				Config: providerConfig(lab),
				Check:  noNetworksLeft(lab),
			},
		},
	})
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
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: at("7.0.3")},
			{
				PreConfig: func() { must(t, lab.UpgradeSwitch(context.Background(), "rdma", "8.0.0")) },
				Config:    at("7.0.3"), PlanOnly: true,
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
	must(t, lab.InjectTaskFault("CreateDVPortgroup_Task", "rdma", vcsimlab.Fault{Type: "DvsFault"}))
	config := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	resource.UnitTest(t, resource.TestCase{
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
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					return lab.AddPortGroup(context.Background(), "rdma", "storage", 8)
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

// Arguments naming what vCenter does not have, and names it already has, are
// refused at plan: nothing is created, so nothing is left tainted.
func TestAccRDMADVS_refusedAtPlan(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	first := lab.HostNames()[0]
	config := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	withHostID := func(id string) string {
		return strings.Replace(config, fmt.Sprintf("host_system_id = %q", lab.HostID(first)), fmt.Sprintf("host_system_id = %q", id), 1)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: withHostID("host-99999"), PlanOnly: true,
				ExpectError: wrapped("no host has id host-99999; host ids are managed object ids such as host-12; data.vspherehpc_host looks one up by name."),
			},
			// A host's name where its id belongs.
			{
				Config: withHostID(first), PlanOnly: true,
				ExpectError: wrapped(fmt.Sprintf("no host has id %s; host ids are managed object ids such as host-12", first)),
			},
			{
				Config: strings.Replace(config, fmt.Sprintf("datacenter_id = %q", lab.DatacenterID()), `datacenter_id = "DC0"`, 1), PlanOnly: true,
				ExpectError: wrapped(`no datacenter has id "DC0"; a datacenter id is a managed object id such as datacenter-3, not a name; data.vspherehpc_datacenter looks one up by name.`),
			},
			// "VM Network" is a standard port group of every host.
			{
				Config: strings.Replace(config, `name = "pvrdma-vms"`, `name = "VM Network"`, 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)already has a network called "VM Network"\s+\(network-\d+\).*Choose\s+another\s+port\s+group\s+name`),
			},
			{
				PreConfig: func() { must(t, lab.CreateSwitch(context.Background(), "storage-dvs", first, "vmnic5")) },
				Config:    strings.Replace(config, `name          = "rdma"`, `name          = "storage-dvs"`, 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)already has a distributed switch called\s+"storage-dvs"\s+\(dvs-\d+\).*Choose\s+another\s+name`),
			},
		},
		CheckDestroy: func(*terraform.State) error {
			n, err := lab.CountNetworks(context.Background(), "rdma*")
			if err == nil && n != 0 {
				err = fmt.Errorf("%d rdma networks exist after refused plans, want none", n)
			}
			return err
		},
	})
}

// A switch whose create failed after it existed (tainted, holding the hosts'
// NICs) is destroyed cleanly: destroy always works on what the provider made.
func TestAccRDMADVS_taintedSwitchDestroys(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	must(t, lab.InjectTaskFault("CreateDVPortgroup_Task", "rdma", vcsimlab.Fault{Type: "DvsFault"}))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), ""), ExpectError: wrapped(`Cannot create distributed switch rdma`)},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// Without vCenter settings a resource that needs vCenter is refused at plan,
// not at apply.
func TestAccRDMADVS_noVCenter(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := strings.Replace(dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), ""), providerConfig(lab), "", 1)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, PlanOnly: true, ExpectError: wrapped(`This needs vCenter, but the provider has no vCenter settings. Set vsphere_server, user and password`)},
		},
	})
}

// Two switches of one configuration claiming one host's NIC are refused at
// plan, naming both switches.
func TestAccRDMADVS_nicClaimedTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	first := lab.HostNames()[0]
	second := strings.NewReplacer(`resource "vspherehpc_rdma_dvs" "rdma"`, `resource "vspherehpc_rdma_dvs" "other"`,
		`name          = "rdma"`, `name          = "rdma-other"`, `name = "pvrdma-vms"`, `name = "pvrdma-other"`).
		Replace(strings.Replace(dvsConfig(lab, "rdma", map[string]string{first: "vmnic4"}, ""), providerConfig(lab), "", 1))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: dvsConfig(lab, "rdma", map[string]string{first: "vmnic4"}, "") + second, PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*Two resources of this configuration claim\s+vmnic4\s+of\s+host\s+` +
				lab.HostID(first) + `:\s+distributed\s+switch\s+"rdma(-other)?",\s+and\s+distributed\s+switch\s+"rdma(-other)?".\s+PVRDMA\s+needs\s+its\s+NIC`),
		}},
	})
}

// Numbers the schema cannot hold (issue 12): a fractional MTU and a VLAN id
// beyond any integer are refused naming the argument and its range, not with
// the framework's "always an error in the provider".
func TestAccRDMADVS_numbersNotWhole(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	hosts := allHosts(lab, "vmnic4")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: dvsConfig(lab, "rdma-numbers", hosts, "  mtu = 1500.5"), PlanOnly: true,
				ExpectError: wrapped(`mtu must be a whole number from 1280 to 9000; 1500.5 is not.`)},
			{Config: dvsConfig(lab, "rdma-numbers", hosts, "  uplink_count = 1e400"), PlanOnly: true,
				ExpectError: wrapped(`uplink_count must be a whole number from 1 to 32; 1e+400 is not.`)},
			{Config: strings.Replace(dvsConfig(lab, "rdma-numbers", hosts, ""), `name = "pvrdma-vms"`, "name = \"pvrdma-vms\"\n    vlan_id = 10.5", 1), PlanOnly: true,
				ExpectError: wrapped(`port_group.vlan_id must be a whole number from 0 to 4094; 10.5 is not.`)},
		},
	})
}

// A "/" in a switch or port group name breaks inventory paths: refused at
// plan.
func TestAccRDMADVS_slashInNames(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := dvsConfig(lab, "rdma", allHosts(lab, "vmnic4"), "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: strings.Replace(config, `name          = "rdma"`, `name          = "rdma/a"`, 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Attribute name must not contain "/": it separates the parts of\s+inventory\s+paths`),
			},
			{
				Config: strings.Replace(config, `name = "pvrdma-vms"`, `name = "pvrdma/vms"`, 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Attribute port_group.name must not contain "/"`),
			},
		},
	})
}
