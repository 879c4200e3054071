package provider

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// An administrator changes the pvrdma ruleset with esxcli on the host (govc
// host.esxcli), not through the vSphere Client: the next plan shows the
// drift and the apply undoes it, as esxcli then shows.

// pvrdmaRulesetShows checks the host's pvrdma ruleset as an administrator
// reads it with esxcli: enabled, and the allowed addresses as "ruleset
// allowedip list" prints them ("All", or addresses then networks).
func pvrdmaRulesetShows(lab *vcsimlab.Lab, hostName string, enabled bool, allowed string) func(*terraform.State) error {
	return func(*terraform.State) error {
		ctx := context.Background()
		rows, err := lab.Esxcli(ctx, hostName, "network", "firewall", "ruleset", "list", "--ruleset-id", vsphere.PVRDMARuleset)
		if err != nil {
			return err
		}
		if len(rows) != 1 || rows[0]["Enabled"] != strconv.FormatBool(enabled) {
			return fmt.Errorf("esxcli ruleset list on %s shows %v, want %s enabled %v", hostName, rows, vsphere.PVRDMARuleset, enabled)
		}
		rows, err = lab.Esxcli(ctx, hostName, "network", "firewall", "ruleset", "allowedip", "list", "--ruleset-id", vsphere.PVRDMARuleset)
		if err != nil {
			return err
		}
		if len(rows) != 1 || rows[0]["AllowedIPAddresses"] != allowed {
			return fmt.Errorf("esxcli ruleset allowedip list on %s shows %v, want %q", hostName, rows, allowed)
		}
		return nil
	}
}

// esxcliChange is an administrator's esxcli command on a host, as a step's
// PreConfig.
func esxcliChange(t *testing.T, lab *vcsimlab.Lab, hostName string, args ...string) func() {
	return func() {
		_, err := lab.Esxcli(context.Background(), hostName, args...)
		acctest.Must(t, err)
	}
}

// expectDrift checks that the plan reports an attribute of a resource as
// changed outside of Terraform (the plan's resource_drift): before is its
// value in the prior state, after its value read from vSphere.
type expectDrift struct {
	address, attribute string
	before, after      knownvalue.Check
}

func (c expectDrift) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceDrift {
		if rc.Address != c.address || rc.Change == nil {
			continue
		}
		before, _ := rc.Change.Before.(map[string]any)
		after, _ := rc.Change.After.(map[string]any)
		if err := c.before.CheckValue(before[c.attribute]); err != nil {
			resp.Error = fmt.Errorf("%s.%s before the drift: %w", c.address, c.attribute, err)
		} else if err := c.after.CheckValue(after[c.attribute]); err != nil {
			resp.Error = fmt.Errorf("%s.%s after the drift: %w", c.address, c.attribute, err)
		}
		return
	}
	resp.Error = fmt.Errorf("the plan reports no drift of %s", c.address)
}

func TestAccHostPVRDMASettings_esxcliDrift(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	config := hostPVRDMASettingsConfig(lab, name, `
  vmknic               = "vmk1"
  firewall_allowed_ips = ["192.0.2.0/24", "198.51.100.7"]
`)
	configured := knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("192.0.2.0/24"), knownvalue.StringExact("198.51.100.7")})
	// As the provider set it: enabled, those addresses (addresses first).
	applied := pvrdmaRulesetShows(lab, name, true, "198.51.100.7, 192.0.2.0/24")
	driftPlan := func(attribute string, before, after knownvalue.Check) resource.ConfigPlanChecks {
		return resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			expectDrift{address: hostSettings, attribute: attribute, before: before, after: after},
			plancheck.ExpectResourceAction(hostSettings, plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue(hostSettings, tfjsonpath.New("firewall_enabled"), knownvalue.Bool(true)),
			plancheck.ExpectKnownValue(hostSettings, tfjsonpath.New("firewall_allowed_ips"), configured),
		}}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, Check: applied},
			{
				// esxcli network firewall ruleset set --ruleset-id pvrdma --enabled false
				PreConfig: esxcliChange(t, lab, name, "network", "firewall", "ruleset", "set",
					"--ruleset-id", vsphere.PVRDMARuleset, "--enabled", "false"),
				Config:           config,
				ConfigPlanChecks: driftPlan("firewall_enabled", knownvalue.Bool(true), knownvalue.Bool(false)),
				Check:            applied,
			},
			{
				// One address swapped for another in the allowed list.
				PreConfig: func() {
					esxcliChange(t, lab, name, "network", "firewall", "ruleset", "allowedip", "remove",
						"--ruleset-id", vsphere.PVRDMARuleset, "--ip-address", "198.51.100.7")()
					esxcliChange(t, lab, name, "network", "firewall", "ruleset", "allowedip", "add",
						"--ruleset-id", vsphere.PVRDMARuleset, "--ip-address", "203.0.113.9")()
				},
				Config: config,
				ConfigPlanChecks: driftPlan("firewall_allowed_ips", configured,
					knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("192.0.2.0/24"), knownvalue.StringExact("203.0.113.9")})),
				Check: applied,
			},
			{
				// The ruleset opened to all addresses, its list kept.
				PreConfig: esxcliChange(t, lab, name, "network", "firewall", "ruleset", "set",
					"--ruleset-id", vsphere.PVRDMARuleset, "--allowed-all", "true"),
				Config:           config,
				ConfigPlanChecks: driftPlan("firewall_allowed_ips", configured, knownvalue.ListSizeExact(0)),
				Check:            applied,
			},
		},
		// The lab host started disabled and open to all: destroy puts that
		// back, as esxcli shows.
		CheckDestroy: pvrdmaRulesetShows(lab, name, false, "All"),
	})
}
