package provider

import (
	"context"
	"encoding/json"
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

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

const hostSettings = "vspherehpc_host_pvrdma_settings.h"

func hostPVRDMASettingsConfig(lab *vcsimlab.Lab, hostName, body string) string {
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_pvrdma_settings" "h" {
  host_system_id = %q
%s
}
`, lab.HostID(hostName), body)
}

// hostSettingsAre checks the host itself, not just state.
func hostSettingsAre(lab *vcsimlab.Lab, hostName string, want vsphere.PVRDMASettings) func(*terraform.State) error {
	return func(*terraform.State) error {
		got, err := labClient(lab).HostPVRDMA(context.Background(), lab.HostID(hostName))
		if err != nil {
			return err
		}
		if got.Settings.Vmknic != want.Vmknic || got.Settings.FirewallEnabled != want.FirewallEnabled ||
			!slices.Equal(got.Settings.AllowedIPs, want.AllowedIPs) {
			return fmt.Errorf("host %s has %+v, want %+v", hostName, got.Settings, want)
		}
		return nil
	}
}

// needsVmk0 skips a test that sets vmk0 (the resource's default) on an
// external vCenter whose host has no vmk0. ESXi creates vmk0 for its
// management network, and every lab host has it.
func needsVmk0(t *testing.T, lab *vcsimlab.Lab, hostName string) {
	t.Helper()
	if lab.Simulated() {
		return
	}
	h, err := labClient(lab).HostPVRDMA(context.Background(), lab.HostID(hostName))
	acctest.Must(t, err)
	if !slices.Contains(h.Vmknics, "vmk0") {
		t.Skipf("host %s has no vmk0, which the test sets (the default vmknic); its vmknics are %s", hostName, strings.Join(h.Vmknics, ", "))
	}
}

func TestAccHostPVRDMASettings_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	needsVmk0(t, lab, name)
	vmknic := lab.Vmknic()
	// The lab host starts unset, disabled, open to all; an external host as
	// it is.
	original := vsphere.PVRDMASettings{}
	if !lab.Simulated() {
		original = pvrdmaSettingsOf(t, lab, name)
	}
	settings := fmt.Sprintf(`
  vmknic               = %q
  firewall_allowed_ips = ["192.0.2.0/24", "198.51.100.7"]
`, vmknic)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostPVRDMASettingsConfig(lab, name, settings),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hostSettings, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(name))),
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("vmknic"), knownvalue.StringExact(vmknic)),
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("firewall_enabled"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("firewall_allowed_ips"), knownvalue.SetExact([]knownvalue.Check{
						knownvalue.StringExact("192.0.2.0/24"), knownvalue.StringExact("198.51.100.7"),
					})),
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("settings_before"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"vmknic": knownvalue.StringExact(original.Vmknic), "firewall_enabled": knownvalue.Bool(original.FirewallEnabled),
						"firewall_allowed_ips": knownvalue.ListSizeExact(len(original.AllowedIPs)),
					})),
				},
				Check: hostSettingsAre(
					lab,
					name,
					vsphere.PVRDMASettings{Vmknic: vmknic, FirewallEnabled: true, AllowedIPs: []string{"192.0.2.0/24", "198.51.100.7"}},
				),
			},
			{
				// An import records the settings as found: destroy then
				// leaves them so; the created resource recorded the original.
				ResourceName:            hostSettings,
				ImportState:             true,
				ImportStateId:           lab.HostID(name),
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"settings_before"},
			},
			{
				// Import then plan is empty: an import block plans a no-op import.
				Config:          acctest.RequiredProviders + hostPVRDMASettingsConfig(lab, name, settings),
				ResourceName:    hostSettings,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
				ImportStateId:   lab.HostID(name),
			},
			{
				// Defaults: vmk0, enabled, all addresses; updated in place.
				Config: hostPVRDMASettingsConfig(lab, name, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hostSettings, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("vmknic"), knownvalue.StringExact("vmk0")),
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("firewall_allowed_ips"), knownvalue.SetSizeExact(0)),
				},
				Check: hostSettingsAre(lab, name, vsphere.PVRDMASettings{Vmknic: "vmk0", FirewallEnabled: true}),
			},
			{
				Config: hostPVRDMASettingsConfig(lab, name, `  firewall_enabled = false`),
				Check:  hostSettingsAre(lab, name, vsphere.PVRDMASettings{Vmknic: "vmk0"}),
			},
		},
		// Destroy puts back what the host had.
		CheckDestroy: hostSettingsAre(lab, name, original),
	})
}

// A host that started with its PVRDMA vmknic (vmk1 in the lab) and the
// ruleset on is back to exactly that.
func TestAccHostPVRDMASettings_restoresOnDestroy(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[1]
	needsVmk0(t, lab, name)
	ctx := context.Background()
	var before vsphere.PVRDMASettings
	if !lab.Simulated() {
		// An external host gets back what it had before the test set it.
		before = pvrdmaSettingsOf(t, lab, name)
		t.Cleanup(func() {
			if err := lab.SetHostOption(ctx, name, vsphere.PVRDMAVmknicOption, before.Vmknic); err != nil {
				t.Errorf("restoring %s on %s: %v", vsphere.PVRDMAVmknicOption, name, err)
			}
			if err := lab.SetRuleset(ctx, name, vsphere.PVRDMARuleset, before.FirewallEnabled); err != nil {
				t.Errorf("restoring the %s ruleset on %s: %v", vsphere.PVRDMARuleset, name, err)
			}
		})
	}
	acctest.Must(t, lab.SetHostOption(ctx, name, vsphere.PVRDMAVmknicOption, lab.Vmknic()))
	acctest.Must(t, lab.SetRuleset(ctx, name, vsphere.PVRDMARuleset, true))
	// The addresses the ruleset admits stay as they were: all in the lab.
	original := vsphere.PVRDMASettings{Vmknic: lab.Vmknic(), FirewallEnabled: true, AllowedIPs: before.AllowedIPs}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: hostPVRDMASettingsConfig(lab, name, `
  vmknic               = "vmk0"
  firewall_enabled     = false
  firewall_allowed_ips = ["192.0.2.10"]
`),
			Check: hostSettingsAre(lab, name, vsphere.PVRDMASettings{Vmknic: "vmk0", AllowedIPs: []string{"192.0.2.10"}}),
		}},
		CheckDestroy: hostSettingsAre(lab, name, original),
	})
}

func TestAccHostPVRDMASettings_drift(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	vmknic := lab.Vmknic()
	config := hostPVRDMASettingsConfig(lab, name, fmt.Sprintf(`  vmknic = %q`, vmknic))
	ctx := context.Background()
	other := "vmk0" // what someone sets by hand
	if vmknic == other {
		other = "" // an external host whose PVRDMA vmknic is vmk0
	}
	driftPlan := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
		plancheck.ExpectResourceAction(hostSettings, plancheck.ResourceActionUpdate),
	}}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				// Someone points PVRDMA at vmk0 by hand: the plan puts vmknic back.
				PreConfig:        func() { acctest.Must(t, lab.SetHostOption(ctx, name, vsphere.PVRDMAVmknicOption, other)) },
				Config:           config,
				ConfigPlanChecks: driftPlan,
				Check:            hostSettingsAre(lab, name, vsphere.PVRDMASettings{Vmknic: vmknic, FirewallEnabled: true}),
			},
			{
				// Someone turns the ruleset off: the plan turns it on again.
				PreConfig:        func() { acctest.Must(t, lab.SetRuleset(ctx, name, vsphere.PVRDMARuleset, false)) },
				Config:           config,
				ConfigPlanChecks: driftPlan,
				Check:            hostSettingsAre(lab, name, vsphere.PVRDMASettings{Vmknic: vmknic, FirewallEnabled: true}),
			},
		},
	})
}

// Host settings have no object of their own to lose: the host is the object.
// A host removed from vCenter drops out of state at refresh, and the plan
// names the missing host rather than planning settings for it.
func TestAccHostPVRDMASettings_hostRemoved(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 8})
	simulatedOnly(t, lab, "removes a host from vCenter")
	name := lab.HostWithoutVMs()
	id := lab.HostID(name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: hostPVRDMASettingsConfig(lab, name, "")},
			{
				PreConfig:   func() { acctest.Must(t, lab.RemoveHost(context.Background(), name)) },
				Config:      fmt.Sprintf("%s\nresource \"vspherehpc_host_pvrdma_settings\" \"h\" {\n  host_system_id = %q\n}\n", acctest.ProviderConfig(lab), id),
				PlanOnly:    true,
				ExpectError: acctest.Wording(fmt.Sprintf("no host has id %s; data.vspherehpc_host looks one up by name.", id)),
			},
		},
	})
}

func TestAccHostPVRDMASettings_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	// A vmknic the host does not have, and those it has: the lab host's, or
	// an external host's.
	missing, vmknics := "vmk7", "vmk0, vmk1"
	if !lab.Simulated() {
		h, err := labClient(lab).HostPVRDMA(context.Background(), lab.HostID(name))
		acctest.Must(t, err)
		for slices.Contains(h.Vmknics, missing) {
			missing += "7"
		}
		vmknics = strings.Join(h.Vmknics, ", ")
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:   hostPVRDMASettingsConfig(lab, name, fmt.Sprintf(`  vmknic = %q`, missing)),
				PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("Host %s (%s) has no VMkernel adapter %s; its adapters are %s.", name, lab.HostID(name), missing, vmknics),
				),
			},
			{
				Config:      hostPVRDMASettingsConfig(lab, name, `  vmknic = "eth0"`),
				PlanOnly:    true,
				ExpectError: acctest.Wording(`must name a VMkernel adapter such as vmk0 or vmk1`),
			},
			{
				Config:      hostPVRDMASettingsConfig(lab, name, `  firewall_allowed_ips = ["192.0.2.7/24"]`),
				PlanOnly:    true,
				ExpectError: acctest.Wording(`"192.0.2.7/24" is not a network address: write 192.0.2.0/24`),
			},
			{
				// Warned about at plan time, refused at apply.
				Config:      strings.Replace(hostPVRDMASettingsConfig(lab, name, ""), lab.HostID(name), "host-99999", 1),
				ExpectError: acctest.Wording(`no host has id host-99999`),
			},
		},
	})
}

// A host whose option manager refuses the key fails the apply with the reason.
func TestAccHostPVRDMASettings_optionRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a call fault")
	name := lab.HostNames()[0]
	acctest.Must(t, lab.InjectCallFault("UpdateOptions", "", vcsimlab.Fault{Type: "InvalidName", Detail: vsphere.PVRDMAVmknicOption}, 1))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: hostPVRDMASettingsConfig(lab, name, ""),
			ExpectError: regexp.MustCompile(
				`(?s)Cannot set PVRDMA on host.*does not know the advanced option\s+Net.PVRDMAVmknic: PVRDMA needs ESXi 6.5 or later`,
			),
		}},
	})
}

// All hosts of a cluster at Terraform's default parallelism, through look-ups.
// (count, not for_each: the testing framework's state shim rejects for_each.)
func TestAccHostPVRDMASettings_manyHosts(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 8})
	hosts := `["` + strings.Join(lab.HostNames(), `", "`) + `"]`
	config := acctest.ProviderConfig(lab) + fmt.Sprintf(`
locals {
  hosts = %s
}
data "vspherehpc_host" "esx" {
  count         = length(local.hosts)
  datacenter_id = %q
  name          = local.hosts[count.index]
}
resource "vspherehpc_host_pvrdma_settings" "esx" {
  count          = length(data.vspherehpc_host.esx)
  host_system_id = data.vspherehpc_host.esx[count.index].id
  vmknic         = %q
}
`, hosts, lab.DatacenterID(), lab.Vmknic())
	var checks []statecheck.StateCheck
	for i, h := range lab.HostNames() {
		checks = append(checks, statecheck.ExpectKnownValue(fmt.Sprintf("vspherehpc_host_pvrdma_settings.esx[%d]", i),
			tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(h))))
		checks = append(checks, labStateCheck(hostSettingsAre(lab, h, vsphere.PVRDMASettings{Vmknic: lab.Vmknic(), FirewallEnabled: true})))
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:            config,
			ConfigStateChecks: checks,
		}},
	})
}

// labStateCheck runs a check of the lab itself (it reads no Terraform state)
// among a step's state checks.
type labStateCheck func(*terraform.State) error

func (c labStateCheck) CheckState(_ context.Context, _ statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = c(nil)
}

// A create that fails after changing the host (the vmknic is set, the
// ruleset update fails) is still tracked, so destroy puts the host back.
func TestAccHostPVRDMASettings_failedCreateIsRestored(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a call fault")
	name := lab.HostNames()[0]
	acctest.Must(t, lab.InjectCallFault("UpdateRuleset", "", vcsimlab.Fault{Type: "InvalidArgument", Detail: "spec.allowedHosts"}, 1))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      hostPVRDMASettingsConfig(lab, name, fmt.Sprintf(`  vmknic = %q`, lab.Vmknic())),
				ExpectError: acctest.Wording(`Cannot set PVRDMA on host`),
			},
			{
				// Dropping the resource destroys the tracked (tainted) one.
				Config: acctest.ProviderConfig(lab),
				Check:  hostSettingsAre(lab, name, vsphere.PVRDMASettings{}),
			},
		},
	})
}

// Two host-settings resources of one configuration on one host are refused
// at plan: each would undo the other.
func TestAccHostPVRDMASettings_hostClaimedTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	twice := hostPVRDMASettingsConfig(lab, name, fmt.Sprintf(`  vmknic = %q`, lab.Vmknic())) + fmt.Sprintf(`
resource "vspherehpc_host_pvrdma_settings" "again" {
  host_system_id = %q
  vmknic         = "vmk0"
}
`, lab.HostID(name))
	either := `(?:vmk0|` + regexp.QuoteMeta(lab.Vmknic()) + `)`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: twice, PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*claim\s+the\s+PVRDMA\s+settings\s+of\s+host\s+` + lab.HostID(name) +
				`:\s+a\s+vspherehpc_host_pvrdma_settings\s+with\s+vmknic\s+` + either +
				`,\s+and\s+a\s+vspherehpc_host_pvrdma_settings\s+with\s+vmknic\s+` + either + `.*One\s+vspherehpc_host_pvrdma_settings`),
		}},
	})
}

// firewall_allowed_ips is a list with the semantics of a set (a set costs
// quadratic plan time, issue 12; BenchmarkHostPVRDMASettingsAllowedIPs): an
// entry given twice is refused at plan, and the host's own order (sorted)
// is not drift against the configuration's.
func TestAccHostPVRDMASettings_allowedIPsAsASet(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	needsVmk0(t, lab, name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      hostPVRDMASettingsConfig(lab, name, `  firewall_allowed_ips = ["192.0.2.7", "198.51.100.0/24", "192.0.2.7"]`),
				PlanOnly:    true,
				ExpectError: acctest.Wording(`firewall_allowed_ips lists "192.0.2.7" more than once: list each value once (distinct() drops repeats).`),
			},
			{
				// Not in the host's order: the apply keeps it, and the next
				// plan (which the test framework checks) is empty.
				Config: hostPVRDMASettingsConfig(lab, name, `  firewall_allowed_ips = ["198.51.100.7", "192.0.2.10", "192.0.2.0/24"]`),
				Check: hostSettingsAre(lab, name, vsphere.PVRDMASettings{Vmknic: "vmk0", FirewallEnabled: true,
					AllowedIPs: []string{"192.0.2.0/24", "192.0.2.10", "198.51.100.7"}}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("firewall_allowed_ips"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("198.51.100.7"), knownvalue.StringExact("192.0.2.10"), knownvalue.StringExact("192.0.2.0/24"),
					})),
				},
			},
			{
				// Another order in the configuration is a change of the
				// list (an update that changes nothing on the host).
				Config:             hostPVRDMASettingsConfig(lab, name, `  firewall_allowed_ips = ["192.0.2.0/24", "192.0.2.10", "198.51.100.7"]`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

// A host disconnected from vCenter, which then returns no configuration for
// it, keeps its settings in state: a refresh neither drops them (a plan
// would set them again on a host it cannot read) nor fails. A change to
// them is refused, naming the host and what to do, until it is connected.
func TestAccHostPVRDMASettings_hostDisconnected(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "disconnects a host")
	name := lab.HostNames()[0]
	ctx := context.Background()
	config := hostPVRDMASettingsConfig(lab, name, "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostConnected(ctx, name, false)) },
				Config:    config,
				PlanOnly:  true,
			},
			{
				Config:      hostPVRDMASettingsConfig(lab, name, `  firewall_enabled = false`),
				ExpectError: acctest.Wording(fmt.Sprintf("vCenter returns no configuration for host %s (connection state: disconnected)", name)),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostConnected(ctx, name, true)) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hostSettings, plancheck.ResourceActionNoop),
				}},
			},
		},
	})
}

// What destroy puts back is kept in state (settings_before). State an older
// release wrote keeps it in private state: a refresh moves it into state,
// and a destroy without refresh reads it there.
func TestAccHostPVRDMASettings_restoreRecordMovesFromPrivateState(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "sets a lab host's vmknic option and ruleset by hand")
	ctx := context.Background()
	name := lab.HostNames()[1]
	acctest.Must(t, lab.SetHostOption(ctx, name, vsphere.PVRDMAVmknicOption, lab.Vmknic()))
	acctest.Must(t, lab.SetRuleset(ctx, name, vsphere.PVRDMARuleset, true))
	d := newTFDir(
		t,
		lab,
		map[string]string{"main.tf": acctest.RequiredProviders + without(hostPVRDMASettingsConfig(lab, name, `  firewall_enabled = false`), lab)},
	)
	d.run("apply", "-auto-approve")
	recorded := fmt.Sprintf(`"settings_before":{"firewall_allowed_ips":[],"firewall_enabled":true,"vmknic":%q}`, lab.Vmknic())
	if s := d.run("show", "-json"); !strings.Contains(s, recorded) {
		t.Fatalf("state must hold what destroy puts back (%s):\n%s", recorded, s)
	}
	// What an older release wrote: the record in private state only.
	record, err := json.Marshal(vsphere.PVRDMASettings{Vmknic: lab.Vmknic(), FirewallEnabled: true})
	acctest.Must(t, err)
	older := func() {
		d.editState(func(_ string, inst map[string]any) {
			delete(inst["attributes"].(map[string]any), "settings_before")
			setPrivate(t, inst, map[string][]byte{"before": record})
		})
	}
	older()
	d.run("apply", "-refresh-only", "-auto-approve")
	if s := d.run("show", "-json"); !strings.Contains(s, recorded) {
		t.Errorf("after a refresh the state must hold what destroy puts back (%s):\n%s", recorded, s)
	}
	if changes := d.plan(); len(changes) > 0 {
		t.Errorf("the plan after the refresh must be empty: %+v", changes)
	}
	older()
	d.run("destroy", "-auto-approve", "-refresh=false")
	if err := hostSettingsAre(lab, name, vsphere.PVRDMASettings{Vmknic: lab.Vmknic(), FirewallEnabled: true})(nil); err != nil {
		t.Error(err)
	}
}
