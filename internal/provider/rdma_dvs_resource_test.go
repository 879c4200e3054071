package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
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
// arguments. The switch is named testName(name), its port group
// testName("pvrdma-vms"): an external run creates them under its prefix.
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
    %s
  }
%s%s
}
`, lab.DatacenterID(), testName(name), portGroupLine("pvrdma-vms"), b.String(), extra)
}

// dvsNameLine and portGroupLine are the lines of dvsConfig that name the
// switch and its port group (given as the test writes them), for tests that
// edit them.
func dvsNameLine(name string) string { return fmt.Sprintf("name          = %q", testName(name)) }

func portGroupLine(name string) string { return fmt.Sprintf("name = %q", testName(name)) }

// destroySwitchAfter destroys, once the test is over, a switch it created
// out of band on an external vCenter; a simulated lab goes with its test.
func destroySwitchAfter(t *testing.T, lab *vcsimlab.Lab, name string) {
	t.Helper()
	if lab.Simulated() {
		return
	}
	t.Cleanup(func() {
		if err := lab.DestroySwitch(context.Background(), name); err != nil {
			t.Errorf("destroying switch %s: %v", name, err)
		}
	})
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
		for _, pattern := range []string{testName("rdma") + "*", testName("pvrdma-vms") + "*"} {
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
	nics := lab.RDMANICs()
	hosts := allHosts(lab, nics[0])
	first := lab.HostNames()[0]
	fewer := allHosts(lab, nics[0])
	delete(fewer, first)
	moved := allHosts(lab, nics[0])
	moved[first] = nics[1]
	uuid := ""
	path := "/" + lab.DatacenterName() + "/network/" + testName("rdma")
	// The port group renamed, with a VLAN and more ports.
	renamedPortGroup := func(config string) string {
		return strings.Replace(config, portGroupLine("pvrdma-vms"), portGroupLine("pvrdma-vms-2")+`
    vlan_id = 100
    port_count = 16`, 1)
	}
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
				ImportStateId: path,
			},
			{
				// Import then plan is empty: an import block plans a no-op import.
				Config:       requiredProviders + dvsConfig(lab, "rdma", hosts, `  version = "8.0.0"`),
				ResourceName: dvsAddr, ImportState: true, ImportStateKind: resource.ImportBlockWithID,
				ImportStateId: path,
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
				Config: renamedPortGroup(dvsConfig(lab, "rdma-renamed", moved, `
  description                = "PVRDMA fabric"
  network_io_control_enabled = true
  version                    = "8.0.3"
  uplink_count               = 2
`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("name"), knownvalue.StringExact(testName("rdma-renamed"))),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("version"), knownvalue.StringExact("8.0.3")),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("description"), knownvalue.StringExact("PVRDMA fabric")),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("port_count"), knownvalue.Int64Exact(16)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("network_io_control_enabled"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("uplink_names"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("vlan_id"), knownvalue.Int64Exact(100)),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("name"), knownvalue.StringExact(testName("pvrdma-vms-2"))),
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
				Config: renamedPortGroup(dvsConfig(lab, "rdma-renamed", moved, `
  network_io_control_enabled = true
  uplink_count               = 2
`)),
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
	simulatedOnly(t, lab, "injects a task fault")
	must(t, lab.InjectTaskFault("ReconfigureDvs_Task", testName("rdma"), vcsimlab.Fault{Type: "DvsFault"}))
	nic := lab.RDMANICs()[0]
	config := dvsConfig(lab, "rdma", allHosts(lab, nic), "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, ExpectError: wrapped(`Cannot create distributed switch ` + testName("rdma"))},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, allHosts(lab, nic))),
				},
				Check: func(*terraform.State) error {
					pattern := testName("rdma") + "*"
					n, err := lab.CountNetworks(context.Background(), pattern)
					if err == nil && n != 2 { // the switch and its uplink port group
						err = fmt.Errorf("%d networks named %s, want the switch and its uplink port group", n, pattern)
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
			Config: dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""),
			Check: func(*terraform.State) error {
				return lab.DestroySwitch(context.Background(), testName("rdma"))
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
	nics := lab.RDMANICs()
	config := dvsConfig(lab, "rdma", allHosts(lab, nics[0]), "")
	name, portGroup := testName("rdma"), testName("pvrdma-vms")
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
				statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, allHosts(lab, nics[0]))),
				statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("vlan_id"), knownvalue.Int64Exact(0)),
			},
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			step(func() { must(t, lab.SetSwitchMTU(ctx, name, 1500)) }),                           // MTU
			step(func() { must(t, lab.SetSwitchNIOC(ctx, name, true)) }),                          // NIOC
			step(func() { must(t, lab.RemoveSwitchHost(ctx, name, lab.HostNames()[0])) }),         // a host removed
			step(func() { must(t, lab.SetSwitchUplink(ctx, name, lab.HostNames()[1], nics[1])) }), // a host's uplink moved to another NIC
			step(func() { must(t, lab.SetPortGroupVLAN(ctx, portGroup, 42)) }),                    // the port group's VLAN
			{
				// With auto-expand, vCenter grows the port group as adapters
				// connect: more ports than configured is not drift.
				PreConfig:        func() { must(t, lab.SetPortGroupPorts(ctx, portGroup, 24)) },
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

func TestAccRDMADVS_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	nics := lab.RDMANICs()
	first := lab.HostNames()[0]
	with := func(nic string) map[string]string {
		hosts := allHosts(lab, nics[0])
		hosts[first] = nic
		return hosts
	}
	twice := dvsConfig(lab, "rdma", allHosts(lab, nics[0]), "")
	twice = strings.Replace(twice, "  host {\n", fmt.Sprintf("  host {\n    host_system_id = %q\n    vmnic          = %q\n  }\n  host {\n", lab.HostID(first), nics[1]), 1)
	teaming := wrapped(fmt.Sprintf(`is listed with %s and with %s. PVRDMA supports no NIC teaming`, nics[0], nics[1]))
	// What the refusals list of the first host and of vCenter: the lab's
	// NICs and vCenter 8.0.3's switch versions, or what an external
	// vCenter has.
	missing := "vmnic9" // a NIC the host does not have
	nicList, freeRDMA := "vmnic0, vmnic1, vmnic4, vmnic5", "vmnic4, vmnic5"
	usedNIC, usedBy := "vmnic0", `standard switch "vSwitch0"` // "" when the host has no NIC a switch uses
	offered := "7.0.0, 7.0.2, 7.0.3, 8.0.0, 8.0.3"
	if !lab.Simulated() {
		host, err := labService(lab).Host(ctx, lab.HostID(first))
		must(t, err)
		var names, free []string
		for _, n := range host.PhysicalNICs {
			names = append(names, n.Name)
			if n.RDMADevice != "" && n.Switch == "" {
				free = append(free, n.Name)
			}
		}
		// A NIC a standard switch uses, else one a distributed switch uses.
		usedNIC, usedBy = "", ""
		for _, kind := range []string{"standard switch", "distributed switch"} {
			for _, n := range host.PhysicalNICs {
				if usedNIC == "" && n.Switch != "" && (n.SwitchUUID == "") == (kind == "standard switch") {
					usedNIC, usedBy = n.Name, fmt.Sprintf("%s %q", kind, n.Switch)
				}
			}
		}
		for slices.Contains(names, missing) {
			missing += "9"
		}
		nicList, freeRDMA = strings.Join(names, ", "), strings.Join(free, ", ")
		versions, err := labService(lab).DVSVersions(ctx)
		must(t, err)
		offered = strings.Join(versions, ", ")
		// Which of the host's two entries comes first depends on how
		// Terraform orders the set's elements, by their values.
		teaming = regexp.MustCompile(teaming.String() + "|" +
			wrapped(fmt.Sprintf(`is listed with %s and with %s. PVRDMA supports no NIC teaming`, nics[1], nics[0])).String())
	}
	steps := []resource.TestStep{
		{
			Config: dvsConfig(lab, "rdma", with(missing), ""), PlanOnly: true,
			ExpectError: wrapped(fmt.Sprintf("Host %s (%s) has no physical NIC %s; its NICs are %s. Its free RDMA NICs: %s.", first, lab.HostID(first), missing, nicList, freeRDMA)),
		},
	}
	if usedNIC != "" {
		steps = append(steps, resource.TestStep{
			Config: dvsConfig(lab, "rdma", with(usedNIC), ""), PlanOnly: true,
			ExpectError: wrapped(fmt.Sprintf(`%s on host %s (%s) is an uplink of %s. Free it there, or choose another NIC.`, usedNIC, first, lab.HostID(first), usedBy)),
		})
	}
	steps = append(steps,
		resource.TestStep{Config: twice, PlanOnly: true, ExpectError: teaming},
		resource.TestStep{Config: dvsConfig(lab, "rdma", with("eth0"), ""), PlanOnly: true, ExpectError: wrapped(`must name a physical NIC such as vmnic4`)},
		resource.TestStep{
			Config:   strings.Replace(dvsConfig(lab, "rdma", allHosts(lab, nics[0]), ""), "  port_group {\n    "+portGroupLine("pvrdma-vms")+"\n  }\n", "", 1),
			PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)port_group.*must have a configuration value`),
		},
		resource.TestStep{Config: dvsConfig(lab, "rdma", allHosts(lab, nics[0]), `  version = "6.5.0"`), PlanOnly: true, ExpectError: wrapped(`vCenter offers distributed switch versions ` + offered + `, not 6.5.0.`)},
		resource.TestStep{Config: dvsConfig(lab, "rdma", allHosts(lab, nics[0]), `  mtu = 9216`), PlanOnly: true, ExpectError: wrapped(`mtu value must be between 1280 and 9000`)},
		// A NIC another distributed switch uses is refused, naming that switch.
		resource.TestStep{
			PreConfig: func() {
				must(t, lab.CreateSwitch(ctx, testName("storage-dvs"), first, nics[1]))
				destroySwitchAfter(t, lab, testName("storage-dvs"))
			},
			Config: dvsConfig(lab, "rdma", with(nics[1]), ""), PlanOnly: true,
			ExpectError: wrapped(fmt.Sprintf(`%s on host %s (%s) is an uplink of distributed switch %q.`, nics[1], first, lab.HostID(first), testName("storage-dvs"))),
		},
		// A downgrade is refused at plan time.
		resource.TestStep{Config: dvsConfig(lab, "rdma", allHosts(lab, nics[0]), `  version = "8.0.3"`)},
		resource.TestStep{
			Config: dvsConfig(lab, "rdma", allHosts(lab, nics[0]), `  version = "8.0.0"`), PlanOnly: true,
			ExpectError: wrapped(`Switch ` + testName("rdma") + ` is at version 8.0.3; vSphere cannot downgrade a distributed switch to 8.0.0.`),
		},
	)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
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
				Config: dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""),
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
				// Refused at plan: no adapter resource of this plan removes it.
				Config: providerConfig(lab),
				ExpectError: wrapped(fmt.Sprintf(`Switch still in use VM network adapters that this configuration does not remove still use the port groups `+
					`of switch %s: port group %q: %s (PVRDMA).`, testName("rdma"), testName("pvrdma-vms"), vmName)),
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
		return dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), `  version = "`+version+`"`)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: at("7.0.3")},
			{
				PreConfig: func() { must(t, lab.UpgradeSwitch(context.Background(), testName("rdma"), "8.0.0")) },
				Config:    at("7.0.3"), PlanOnly: true,
				ExpectError: wrapped(`Switch ` + testName("rdma") + ` is at version 8.0.0; vSphere cannot downgrade a distributed switch to 7.0.3.`),
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
	simulatedOnly(t, lab, "injects a task fault")
	must(t, lab.InjectTaskFault("CreateDVPortgroup_Task", testName("rdma"), vcsimlab.Fault{Type: "DvsFault"}))
	config := dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, ExpectError: wrapped(`Cannot create distributed switch ` + testName("rdma"))},
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
	config := dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	name, portGroup, storage := testName("rdma"), testName("pvrdma-vms"), testName("storage")
	path := "/" + lab.DatacenterName() + "/network/" + name
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					return lab.AddPortGroup(context.Background(), name, storage, 8)
				},
			},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateId: path,
				ExpectError: wrapped(`Switch ` + name + ` has 2 port groups (` + portGroup + `, ` + storage + `). Import it as ` + path + `:<port group name>`),
			},
			{ResourceName: dvsAddr, ImportState: true, ImportStateId: path + ":" + portGroup, ImportStateVerify: true},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateId: path + ":nope",
				ExpectError: wrapped(`Switch ` + name + ` has no port group "nope"; its port groups are ` + portGroup + `, ` + storage + `.`),
			},
		},
	})
}

// Arguments naming what vCenter does not have, and names it already has, are
// refused at plan: nothing is created, so nothing is left tainted.
func TestAccRDMADVS_refusedAtPlan(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	first := lab.HostNames()[0]
	config := dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	withHostID := func(id string) string {
		return strings.Replace(config, fmt.Sprintf("host_system_id = %q", lab.HostID(first)), fmt.Sprintf("host_system_id = %q", id), 1)
	}
	steps := []resource.TestStep{
		{
			Config: withHostID("host-99999"), PlanOnly: true,
			ExpectError: wrapped("no host has id host-99999; host ids are managed object ids such as host-12; data.vspherehpc_host looks one up by name."),
		},
		// A host's name where its id belongs.
		{
			Config: withHostID(first), PlanOnly: true,
			ExpectError: wrapped(fmt.Sprintf("no host has id %s; host ids are managed object ids such as host-12", first)),
		},
		// The datacenter's name where its id belongs.
		{
			Config: strings.Replace(config, fmt.Sprintf("datacenter_id = %q", lab.DatacenterID()), fmt.Sprintf("datacenter_id = %q", lab.DatacenterName()), 1), PlanOnly: true,
			ExpectError: wrapped(fmt.Sprintf(`no datacenter has id %q; a datacenter id is a managed object id such as datacenter-3, not a name; data.vspherehpc_datacenter looks one up by name.`, lab.DatacenterName())),
		},
	}
	// "VM Network" is a standard port group of every lab host (and of an
	// ESXi host as installed: an external vCenter may have none).
	vmNetwork := lab.Simulated()
	if !vmNetwork {
		n, err := lab.CountNetworks(ctx, "VM Network")
		must(t, err)
		vmNetwork = n > 0
	}
	if vmNetwork {
		steps = append(steps, resource.TestStep{
			Config: strings.Replace(config, portGroupLine("pvrdma-vms"), `name = "VM Network"`, 1), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)already has a network called "VM Network"\s+\(network-\d+\).*Choose\s+another\s+port\s+group\s+name`),
		})
	}
	storage := testName("storage-dvs")
	steps = append(steps, resource.TestStep{
		PreConfig: func() {
			must(t, lab.CreateSwitch(ctx, storage, first, lab.RDMANICs()[1]))
			destroySwitchAfter(t, lab, storage)
		},
		Config: strings.Replace(config, dvsNameLine("rdma"), fmt.Sprintf("name          = %q", storage), 1), PlanOnly: true,
		ExpectError: regexp.MustCompile(`(?s)already has a distributed switch called\s+"` + regexp.QuoteMeta(storage) + `"\s+\(dvs-\d+\).*Choose\s+another\s+name`),
	})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
		CheckDestroy: func(*terraform.State) error {
			pattern := testName("rdma") + "*"
			n, err := lab.CountNetworks(ctx, pattern)
			if err == nil && n != 0 {
				err = fmt.Errorf("%d networks named %s exist after refused plans, want none", n, pattern)
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
	simulatedOnly(t, lab, "injects a task fault")
	must(t, lab.InjectTaskFault("CreateDVPortgroup_Task", testName("rdma"), vcsimlab.Fault{Type: "DvsFault"}))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""), ExpectError: wrapped(`Cannot create distributed switch ` + testName("rdma"))},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// Without vCenter settings a resource that needs vCenter is refused at plan,
// not at apply.
func TestAccRDMADVS_noVCenter(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := strings.Replace(dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""), providerConfig(lab), "", 1)
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
	nic := lab.RDMANICs()[0]
	second := strings.NewReplacer(`resource "vspherehpc_rdma_dvs" "rdma"`, `resource "vspherehpc_rdma_dvs" "other"`,
		dvsNameLine("rdma"), dvsNameLine("rdma-other"), portGroupLine("pvrdma-vms"), portGroupLine("pvrdma-other")).
		Replace(strings.Replace(dvsConfig(lab, "rdma", map[string]string{first: nic}, ""), providerConfig(lab), "", 1))
	name := regexp.QuoteMeta(testName("rdma"))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: dvsConfig(lab, "rdma", map[string]string{first: nic}, "") + second, PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*Two\s+resource\s+instances\s+of\s+this\s+configuration\s+claim\s+` + regexp.QuoteMeta(nic) + `\s+of\s+host\s+` +
				lab.HostID(first) + `:\s+distributed\s+switch\s+"` + name + `(-other)?",\s+and\s+distributed\s+switch\s+"` + name + `(-other)?".*PVRDMA\s+needs\s+its\s+NIC`),
		}},
	})
}

// Numbers the schema cannot hold (issue 12): a fractional MTU and a VLAN id
// beyond any integer are refused naming the argument and its range, not with
// the framework's "always an error in the provider".
func TestAccRDMADVS_numbersNotWhole(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	hosts := allHosts(lab, lab.RDMANICs()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: dvsConfig(lab, "rdma-numbers", hosts, "  mtu = 1500.5"), PlanOnly: true,
				ExpectError: wrapped(`mtu must be a whole number from 1280 to 9000; 1500.5 is not.`)},
			{Config: dvsConfig(lab, "rdma-numbers", hosts, "  uplink_count = 1e400"), PlanOnly: true,
				ExpectError: wrapped(`uplink_count must be a whole number from 1 to 32; 1e+400 is not.`)},
			{Config: strings.Replace(dvsConfig(lab, "rdma-numbers", hosts, ""), portGroupLine("pvrdma-vms"), portGroupLine("pvrdma-vms")+"\n    vlan_id = 10.5", 1), PlanOnly: true,
				ExpectError: wrapped(`port_group.vlan_id must be a whole number from 0 to 4094; 10.5 is not.`)},
		},
	})
}

// A "/" in a switch or port group name breaks inventory paths: refused at
// plan.
func TestAccRDMADVS_slashInNames(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: strings.Replace(config, dvsNameLine("rdma"), `name          = "rdma/a"`, 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Attribute name must not contain "/": it separates the parts of\s+inventory\s+paths`),
			},
			{
				Config: strings.Replace(config, portGroupLine("pvrdma-vms"), `name = "pvrdma/vms"`, 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Attribute port_group.name must not contain "/"`),
			},
		},
	})
}

// A version known only at apply (here it depends on another switch's id) is
// not planned as vCenter's newest: the plan leaves it unknown, and the
// switch gets the version the configuration gives.
func TestAccRDMADVS_versionKnownAtApply(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	nics := lab.RDMANICs()
	var hosts strings.Builder
	for _, h := range lab.HostNames() {
		fmt.Fprintf(&hosts, "  host {\n    host_system_id = %q\n    vmnic          = %%q\n  }\n", lab.HostID(h))
	}
	config := providerConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_rdma_dvs" "first" {
  datacenter_id = %[1]q
  name          = %[2]q
  version       = "8.0.3"
  port_group {
    name = %[3]q
  }
%[4]s}

resource "vspherehpc_rdma_dvs" "second" {
  datacenter_id = %[1]q
  name          = %[5]q
  version       = vspherehpc_rdma_dvs.first.id != "" ? "7.0.3" : "8.0.0"
  port_group {
    name = %[6]q
  }
%[7]s}
`, lab.DatacenterID(), testName("rdma-first"), testName("pvrdma-first"), fmt.Sprintf(hosts.String(), repeat(nics[0], len(lab.HostNames()))...),
		testName("rdma-second"), testName("pvrdma-second"), fmt.Sprintf(hosts.String(), repeat(nics[1], len(lab.HostNames()))...))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue("vspherehpc_rdma_dvs.second", tfjsonpath.New("version")),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("vspherehpc_rdma_dvs.second", tfjsonpath.New("version"), knownvalue.StringExact("7.0.3")),
			},
		}},
	})
}

// repeat is n copies of s, as fmt arguments.
func repeat(s string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = s
	}
	return out
}
