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

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

const dvsAddr = "vspherehpc_rdma_dvs.rdma"

// rdmaDVSConfig is a switch over the given hosts (name -> vmnic) plus extra
// arguments. The switch is named testName(name), its port group
// testName("pvrdma-vms"): an external run creates them under its prefix.
func rdmaDVSConfig(lab *vcsimlab.Lab, name string, hosts map[string]string, extra string) string {
	var names []string
	for h := range hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, h := range names {
		fmt.Fprintf(&b, "  host {\n    host_system_id = %q\n    vmnic          = %q\n  }\n", lab.HostID(h), hosts[h])
	}
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
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

// dvsNameLine and portGroupLine are the lines of rdmaDVSConfig that name the
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
				Config: rdmaDVSConfig(lab, "rdma", hosts, `  version = "8.0.0"`),
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
				Config:       acctest.RequiredProviders + rdmaDVSConfig(lab, "rdma", hosts, `  version = "8.0.0"`),
				ResourceName: dvsAddr, ImportState: true, ImportStateKind: resource.ImportBlockWithID,
				ImportStateId: path,
			},
			{
				Config: rdmaDVSConfig(lab, "rdma", hosts, "  mtu = 1500\n  version = \"8.0.0\""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("mtu"), knownvalue.Int64Exact(1500))},
			},
			{
				Config:            rdmaDVSConfig(lab, "rdma", fewer, `  version = "8.0.0"`),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, fewer))},
			},
			{
				Config:            rdmaDVSConfig(lab, "rdma", moved, `  version = "8.0.0"`),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, moved))},
			},
			{
				// Rename, NIOC, description, upgrade and port group, all in place.
				Config: renamedPortGroup(rdmaDVSConfig(lab, "rdma-renamed", moved, `
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
				Config: renamedPortGroup(rdmaDVSConfig(lab, "rdma-renamed", moved, `
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

func TestAccRDMADVS_disappears(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""),
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
	config := rdmaDVSConfig(lab, "rdma", allHosts(lab, nics[0]), "")
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
			step(func() { acctest.Must(t, lab.SetSwitchMTU(ctx, name, 1500)) }),                           // MTU
			step(func() { acctest.Must(t, lab.SetSwitchNIOC(ctx, name, true)) }),                          // NIOC
			step(func() { acctest.Must(t, lab.RemoveSwitchHost(ctx, name, lab.HostNames()[0])) }),         // a host removed
			step(func() { acctest.Must(t, lab.SetSwitchUplink(ctx, name, lab.HostNames()[1], nics[1])) }), // a host's uplink moved to another NIC
			step(func() { acctest.Must(t, lab.SetPortGroupVLAN(ctx, portGroup, 42)) }),                    // the port group's VLAN
			{
				// With auto-expand, vCenter grows the port group as adapters
				// connect: more ports than configured is not drift.
				PreConfig:        func() { acctest.Must(t, lab.SetPortGroupPorts(ctx, portGroup, 24)) },
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
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
		return rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), `  version = "`+version+`"`)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: at("7.0.3")},
			{
				PreConfig: func() { acctest.Must(t, lab.UpgradeSwitch(context.Background(), testName("rdma"), "8.0.0")) },
				Config:    at("7.0.3"), PlanOnly: true,
				ExpectError: acctest.Wording(`Switch ` + testName("rdma") + ` is at version 8.0.0; vSphere cannot downgrade a distributed switch to 7.0.3.`),
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

// A port group deleted out of band is drift of the switch: the plan
// creates it again, in place, and the new port group's id is known after
// apply (not kept from state, where it is null). Another port group of the
// switch is not taken for it, however many refreshes come first.
func TestAccRDMADVS_portGroupGone(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	config := rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	portGroup, storage := testName("pvrdma-vms"), testName("storage")
	currentID := knownvalue.StringFunc(func(v string) error {
		id, err := lab.PortGroupID(ctx, portGroup)
		if err != nil || v != id {
			return fmt.Errorf("port_group_id %q, but port group %s is %q (%v)", v, portGroup, id, err)
		}
		return nil
	})
	var storageID string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					acctest.Must(t, lab.AddPortGroup(ctx, testName("rdma"), storage, 8))
					id, err := lab.PortGroupID(ctx, storage)
					acctest.Must(t, err)
					storageID = id
					acctest.Must(t, lab.DestroyPortGroup(ctx, portGroup))
				},
				RefreshState: true, ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(dvsAddr, tfjsonpath.New("port_group_id")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group_id"), currentID),
				},
				Check: func(*terraform.State) error {
					if id, err := lab.PortGroupID(ctx, storage); err != nil || id != storageID {
						return fmt.Errorf("port group %s after the apply: %q, %v; want %s, untouched", storage, id, err, storageID)
					}
					return nil
				},
			},
		},
		CheckDestroy: noNetworksLeft(lab),
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
	config := acctest.ProviderConfig(lab) + fmt.Sprintf(`
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

// Names with '/', '%' and '\' round-trip: vCenter stores them escaped
// (%2f, %25, %5c; ManagedEntity.name), the provider escapes them on the
// way and reads them unescaped, so state holds the names as given, the
// re-plan is empty, import (by UUID, or by the inventory path, where the
// escaped name is the path's element) reads the same, and a rename to
// other such names is drift-free too.
func TestAccRDMADVS_namesWithSlashPercentBackslash(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	hosts := allHosts(lab, lab.RDMANICs()[0])
	named := func(switchName, portGroup string) string {
		config := rdmaDVSConfig(lab, "rdma", hosts, "")
		config = strings.Replace(config, dvsNameLine("rdma"), fmt.Sprintf("name          = %q", testName(switchName)), 1)
		return strings.Replace(config, portGroupLine("pvrdma-vms"), fmt.Sprintf("name = %q", testName(portGroup)), 1)
	}
	stored := func(names ...string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			for _, n := range names {
				if got, err := lab.CountNetworks(ctx, n); err != nil || got != 1 {
					return fmt.Errorf("vCenter holds %d networks stored as %q (%v), want 1", got, n, err)
				}
			}
			return nil
		}
	}
	first, firstPG := `ü/x 100%\y`, `pvrdma/ü 5%\z`
	second, secondPG := `a\b/c`, `p%2fq`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: named(first, firstPG),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("name"), knownvalue.StringExact(testName(first))),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("name"), knownvalue.StringExact(testName(firstPG))),
				},
				Check: stored(testName(`ü%2fx 100%25%5cy`), testName(`pvrdma%2fü 5%25%5cz`)),
			},
			{Config: named(first, firstPG), PlanOnly: true}, // no drift
			{ResourceName: dvsAddr, ImportState: true, ImportStateVerify: true},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateVerify: true,
				ImportStateId: "/" + lab.DatacenterName() + "/network/" + testName(`ü%2fx 100%25%5cy`),
			},
			{
				// "p%2fq" is a name, not an escape sequence: stored as "p%252fq".
				Config: named(second, secondPG),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("name"), knownvalue.StringExact(testName(second))),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("name"), knownvalue.StringExact(testName(secondPG))),
				},
				Check: stored(testName(`a%5cb%2fc`), testName(`p%252fq`)),
			},
			{Config: named(second, secondPG), PlanOnly: true},
		},
	})
}

// A switch renamed while a new switch of the same configuration takes its
// old names. When the new switch depends on the renamed one (planned and
// applied after it), the apply renames, then creates; whatever order
// Terraform applies them in otherwise, the create waits in the provider
// for the rename (vsphere's TestCreateDVSWaitsForTheSwitchWhoseNamesItTakes).
// When the renamed switch depends on the new one instead, the new one is
// planned first, while the old names are still another switch's: refused at
// plan, saying to make it depend on the renamed switch.
func TestAccRDMADVS_newSwitchTakesTheNamesOfOneRenamed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	nics := lab.RDMANICs()
	switchConfig := func(resourceName, name, portGroup, nic, extra string) string {
		var b strings.Builder
		for _, h := range lab.HostNames() {
			fmt.Fprintf(&b, "  host {\n    host_system_id = %q\n    vmnic          = %q\n  }\n", lab.HostID(h), nic)
		}
		return fmt.Sprintf(`
resource "vspherehpc_rdma_dvs" %q {
  datacenter_id = %q
  name          = %q
  port_group {
    name = %q
  }
%s%s
}
`, resourceName, lab.DatacenterID(), testName(name), testName(portGroup), b.String(), extra)
	}
	before := acctest.ProviderConfig(lab) + switchConfig("old", "rdma", "pvrdma-vms", nics[0], "")
	both := func(oldExtra, newExtra string) string {
		return acctest.ProviderConfig(lab) + switchConfig("old", "rdma-old", "pvrdma-vms-old", nics[0], oldExtra) +
			switchConfig("new", "rdma", "pvrdma-vms", nics[1], newExtra)
	}
	names := func(addr, name, portGroup string) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact(testName(name))),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("port_group").AtMapKey("name"), knownvalue.StringExact(testName(portGroup))),
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             noNetworksLeft(lab),
		Steps: []resource.TestStep{
			{Config: before},
			{
				// The renamed switch depends on the new one: refused at plan.
				Config: both(`  depends_on = [vspherehpc_rdma_dvs.new]`, ""), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("already has a distributed switch called %q", testName("rdma")) +
					" (dvs-" /* its id follows */),
			},
			{
				Config: both(`  depends_on = [vspherehpc_rdma_dvs.new]`, ""), PlanOnly: true,
				ExpectError: acctest.Wording("If this configuration renames that switch, make this switch depend on the switch's resource (depends_on): " +
					"Terraform then plans and applies the rename first."),
			},
			{
				// The new switch depends on the renamed one: renamed, then created.
				Config: both("", `  depends_on = [vspherehpc_rdma_dvs.old]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("vspherehpc_rdma_dvs.old", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("vspherehpc_rdma_dvs.new", plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: append(names("vspherehpc_rdma_dvs.old", "rdma-old", "pvrdma-vms-old"),
					names("vspherehpc_rdma_dvs.new", "rdma", "pvrdma-vms")...),
			},
		},
	})
}
