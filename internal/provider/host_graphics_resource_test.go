package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

const graphicsAddr = "vspherehpc_host_graphics.g"

// hostGraphicsConfig is a vspherehpc_host_graphics "g" of a host with the
// arguments args.
func hostGraphicsConfig(lab *vcsimlab.Lab, hostName, args string) string {
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_graphics" "g" {
  host_system_id = %q
%s}
`, lab.HostID(hostName), args)
}

// graphicsAre checks the host itself: its settings, and how it drives the
// lab's A100 (the only GPU not passed through).
func graphicsAre(lab *vcsimlab.Lab, hostName string, want vsphere.HostGraphicsSettings, a100Type string) func(*terraform.State) error {
	return func(*terraform.State) error {
		st, err := labClient(lab).HostGraphics(context.Background(), lab.HostID(hostName))
		if err != nil {
			return err
		}
		if want.Devices == nil {
			want.Devices = map[string]string{}
		}
		if st.Settings.DefaultType != want.DefaultType || st.Settings.AssignmentPolicy != want.AssignmentPolicy ||
			!maps.Equal(st.Settings.Devices, want.Devices) {
			return fmt.Errorf("host %s has graphics %+v, want %+v", hostName, st.Settings, want)
		}
		for _, g := range st.GPUs {
			if g.PCIID == a100 && g.GraphicsType != a100Type {
				return fmt.Errorf("host %s drives the A100 as %q, want %q", hostName, g.GraphicsType, a100Type)
			}
		}
		return nil
	}
}

var esxiGraphicsDefaults = vsphere.HostGraphicsSettings{DefaultType: "shared", AssignmentPolicy: "performance"}

// Create keeps the settings at once; the A100 waits for the host's graphics
// to restart. reboot_allowed then reboots the host in the apply, and a
// change of the policy alone needs no reboot. Destroy with reboot_allowed
// puts back ESXi's defaults and reboots, so the A100 is driven as before.
func TestAccHostGraphics_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "sets a host's graphics and reboots it")
	name := lab.HostNames()[0]
	reboots := func(want int) func(*terraform.State) error {
		return func(*terraform.State) error {
			if got := lab.Calls()["RebootHost_Task"]; got != want {
				return fmt.Errorf("%d host reboots, want %d", got, want)
			}
			return nil
		}
	}
	sharedDirect := vsphere.HostGraphicsSettings{DefaultType: "sharedDirect", AssignmentPolicy: "consolidation"}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: lab.ResetCalls,
				Config:    hostGraphicsConfig(lab, name, `  assignment_policy = "consolidation"`+"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(true)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(name))),
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("default_graphics_type"), knownvalue.StringExact("sharedDirect")),
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("gpu_graphics_types"), knownvalue.MapSizeExact(0)),
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("settings_before"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"default_graphics_type": knownvalue.StringExact("shared"), "assignment_policy": knownvalue.StringExact("performance"),
						"gpu_graphics_types": knownvalue.MapSizeExact(0),
					})),
				},
				Check: resource.ComposeTestCheckFunc(graphicsAre(lab, name, sharedDirect, "basic"), reboots(0)),
			},
			{
				ResourceName: graphicsAddr, ImportState: true, ImportStateVerify: true, ImportStateId: lab.HostID(name),
				ImportStateVerifyIgnore: []string{"settings_before"},
			},
			{
				// The opt-in alone: the apply reboots the host, and the A100
				// offers vGPUs after it.
				Config: hostGraphicsConfig(lab, name, "  assignment_policy = \"consolidation\"\n  reboot_allowed = true\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(graphicsAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				},
				Check: resource.ComposeTestCheckFunc(graphicsAre(lab, name, sharedDirect, "sharedDirect"), reboots(1)),
			},
			{
				// The policy applies from the next power-on: no reboot.
				Config: hostGraphicsConfig(lab, name, "  reboot_allowed = true\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				}},
				Check: resource.ComposeTestCheckFunc(
					graphicsAre(lab, name, vsphere.HostGraphicsSettings{DefaultType: "sharedDirect", AssignmentPolicy: "performance"}, "sharedDirect"),
					reboots(1)),
			},
			{
				// A GPU of its own type: Shared, which vGPU is not; the plan
				// says the host must restart its graphics, and the apply does.
				Config: hostGraphicsConfig(lab, name, fmt.Sprintf("  reboot_allowed = true\n  gpu_graphics_types = { %q = \"shared\" }\n", a100)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("gpu_graphics_types"), knownvalue.MapExact(map[string]knownvalue.Check{
						a100: knownvalue.StringExact("shared"),
					})),
				},
				Check: resource.ComposeTestCheckFunc(graphicsAre(lab, name, vsphere.HostGraphicsSettings{
					DefaultType: "sharedDirect", AssignmentPolicy: "performance", Devices: map[string]string{a100: "shared"},
				}, "basic"), reboots(2)),
			},
			{
				// Back to vGPU for the destroy below to put back.
				Config: hostGraphicsConfig(lab, name, "  reboot_allowed = true\n"),
				Check: resource.ComposeTestCheckFunc(
					graphicsAre(lab, name, vsphere.HostGraphicsSettings{DefaultType: "sharedDirect", AssignmentPolicy: "performance"}, "sharedDirect"),
					reboots(3)),
			},
		},
		// Destroy puts back ESXi's defaults, and its reboot drives the A100
		// as before.
		CheckDestroy: resource.ComposeTestCheckFunc(graphicsAre(lab, name, esxiGraphicsDefaults, "basic"), reboots(4)),
	})
}

// Settings changed in vCenter are drift the plan puts back; a GPU the host
// drives differently after a reboot by hand is read as such. Host settings
// have no object of their own to lose: a host removed from vCenter drops
// out of state at refresh, and the plan names the missing host.
func TestAccHostGraphics_driftAndDisappears(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 8})
	simulatedOnly(t, lab, "sets a host's graphics behind Terraform's back")
	name := lab.HostWithoutVMs()
	ctx := context.Background()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostGraphicsConfig(lab, name, ""),
				Check: func(*terraform.State) error {
					return lab.ConfigureGraphics(ctx, name, "shared", "consolidation", nil)
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(graphicsAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("default_graphics_type"), knownvalue.StringExact("sharedDirect")),
				}},
				ExpectNonEmptyPlan: true,
			},
			{
				// Applied again, then rebooted by hand: nothing waits any more.
				Config: hostGraphicsConfig(lab, name, ""),
				Check:  func(*terraform.State) error { return lab.RebootHost(ctx, name) },
			},
			{
				Config: hostGraphicsConfig(lab, name, ""), PlanOnly: true, // an empty plan
			},
			{
				Config: hostGraphicsConfig(lab, name, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				},
			},
			{
				PreConfig:   func() { acctest.Must(t, lab.RemoveHost(ctx, name)) },
				Config:      hostGraphicsConfig(lab, name, ""),
				PlanOnly:    true,
				ExpectError: acctest.Wording(fmt.Sprintf("no host has id %s; data.vspherehpc_host looks one up by name.", lab.HostID(name))),
			},
		},
	})
}

// Refused at plan, with nothing created: a GPU the host does not have, a
// GPU passed through now or by a resource of the same plan, two resources
// on one host (identical ones too), a host that does not exist, and values
// outside what vSphere takes.
func TestAccHostGraphics_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's GPUs")
	name := lab.HostNames()[0]
	hostID := lab.HostID(name)
	gpus := lab.GPUs()
	twice := hostGraphicsConfig(lab, name, "") + strings.Replace(
		strings.Replace(hostGraphicsConfig(lab, name, ""), acctest.ProviderConfig(lab), "", 1), `"g"`, `"h"`, 1)
	passthroughToo := hostGraphicsConfig(lab, name, fmt.Sprintf("  gpu_graphics_types = { %q = \"sharedDirect\" }\n", a100)) +
		strings.Replace(hostPCIPassthroughConfig(lab, name, fmt.Sprintf("  pci_ids = [%q]\n", a100)), acctest.ProviderConfig(lab), "", 1)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostGraphicsConfig(lab, name, `  gpu_graphics_types = { "0000:d8:00.0" = "sharedDirect" }`+"\n"), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("Host %s has no GPU 0000:d8:00.0, so it cannot have a graphics type of its own. "+
					"The host's GPUs: %s, %s, %s.", name, gpus[0], gpus[1], a100)),
			},
			{
				Config: hostGraphicsConfig(lab, name, fmt.Sprintf("  gpu_graphics_types = { %q = \"sharedDirect\" }\n", gpus[0])), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("GPU %s (GH100 [H100 SXM5 80GB]) of host %s has passthrough on, so the host's "+
					"graphics do not drive it", gpus[0], name)),
			},
			{
				Config: passthroughToo, PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)One card, two uses.*` + regexp.QuoteMeta(a100) + `.*claimed\s+for\s+(passthrough|the\s+host's\s+graphics)`),
			},
			{
				Config: twice, PlanOnly: true,
				ExpectError: acctest.Wording("Two resource instances of this configuration claim the graphics settings of host " + hostID),
			},
			{
				Config: strings.Replace(hostGraphicsConfig(lab, name, ""), hostID, "host-999", 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)host_system_id.*host-999`),
			},
			{
				Config: strings.Replace(hostGraphicsConfig(lab, name, ""), hostID, lab.DatacenterID(), 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)host_system_id.*` + regexp.QuoteMeta(lab.DatacenterID())),
			},
			{
				Config: hostGraphicsConfig(lab, name, `  default_graphics_type = "direct"`+"\n"), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)default_graphics_type.*shared`),
			},
			{
				Config: hostGraphicsConfig(lab, name, `  assignment_policy = "fastest"`+"\n"), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)assignment_policy.*consolidation`),
			},
			{
				Config: hostGraphicsConfig(lab, name, `  gpu_graphics_types = { "af:00.0" = "shared" }`+"\n"), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)gpu_graphics_types.*PCI id`),
			},
		},
		CheckDestroy: graphicsAre(lab, name, esxiGraphicsDefaults, "basic"),
	})
}

// A reboot the apply could not make (a running VM that cannot move) is
// refused at plan, naming the VM.
func TestAccHostGraphics_rebootRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "runs a VM with a passed-through GPU")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	acctest.Must(t, lab.AttachGPU(context.Background(), vm, lab.GPUs()[0]))
	acctest.Must(t, lab.PowerOnVM(context.Background(), vm))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: hostGraphicsConfig(lab, host, "  reboot_allowed = true\n"), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Host cannot enter maintenance mode.*` + regexp.QuoteMeta(vm)),
		}},
	})
}

func TestAccHostGraphics_identity(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(graphicsAddr, hostGraphicsConfig(lab, name, ""), map[string]knownvalue.Check{
			"host_system_id": knownvalue.StringExact(lab.HostID(name)),
		}),
	})
}

// The list finds the hosts whose graphics are not ESXi's defaults, each as
// the resource would read it.
func TestAccHostGraphics_list(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "sets a host's graphics by hand")
	hosts := lab.HostNames()
	acctest.Must(t, lab.ConfigureGraphics(context.Background(), hosts[0], "sharedDirect", "consolidation", map[string]string{a100: "shared"}))
	runQueries(t, lab, graphicsType, append([]query{
		{config: inDatacenter(lab), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength(graphicsType+".q", 1),
			displayed(graphicsType, hosts[0]+" (default sharedDirect, consolidation, "+a100+" shared)"),
			querycheck.ExpectIdentity(graphicsType+".q", map[string]knownvalue.Check{"host_system_id": knownvalue.StringExact(lab.HostID(hosts[0]))}),
			querycheck.ExpectResourceKnownValues(graphicsType+".q", queryfilter.ByDisplayName(knownvalue.StringRegexp(regexp.MustCompile("^"+hosts[0]))),
				[]querycheck.KnownValueCheck{
					{Path: tfjsonpath.New("default_graphics_type"), KnownValue: knownvalue.StringExact("sharedDirect")},
					{Path: tfjsonpath.New("assignment_policy"), KnownValue: knownvalue.StringExact("consolidation")},
					{
						Path:       tfjsonpath.New("gpu_graphics_types"),
						KnownValue: knownvalue.MapExact(map[string]knownvalue.Check{a100: knownvalue.StringExact("shared")}),
					},
				}),
		}},
		{config: onHosts(lab, hosts[1:]...), checks: []querycheck.QueryResultCheck{querycheck.ExpectLength(graphicsType+".q", 0)}},
	}, scopeErrors(lab)...))
}
