package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccHostPVRDMASettings_identity(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	needsVmk0(t, lab, name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(hostSettings, hostPVRDMASettingsConfig(lab, name, fmt.Sprintf("  vmknic = %q", lab.Vmknic())), map[string]knownvalue.Check{
			"host_system_id": knownvalue.StringExact(lab.HostID(name)),
		}),
	})
}

func TestAccHostPVRDMASettings_list(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	hosts := lab.HostNames()
	// A host an administrator turned PVRDMA back off on is not listed.
	acctest.Must(t, lab.SetHostOption(context.Background(), hosts[1], "Net.PVRDMAVmknic", ""))
	acctest.Must(t, lab.SetRuleset(context.Background(), hosts[1], "pvrdma", false))
	runQueries(t, lab, "vspherehpc_host_pvrdma_settings", append([]query{
		{config: inDatacenter(lab), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_host_pvrdma_settings.q", len(hosts)-1),
			displayed("vspherehpc_host_pvrdma_settings", hosts[0]+" (vmknic vmk1, firewall on)"),
			querycheck.ExpectIdentity("vspherehpc_host_pvrdma_settings.q", map[string]knownvalue.Check{
				"host_system_id": knownvalue.StringExact(lab.HostID(hosts[0])),
			}),
		}},
		{config: onHosts(lab, hosts[0]), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_host_pvrdma_settings.q", 1),
			querycheck.ExpectResourceKnownValues(
				"vspherehpc_host_pvrdma_settings.q",
				queryfilter.ByDisplayName(knownvalue.StringRegexp(regexp.MustCompile("^"+hosts[0]))),
				[]querycheck.KnownValueCheck{
					{Path: tfjsonpath.New("vmknic"), KnownValue: knownvalue.StringExact("vmk1")},
					{Path: tfjsonpath.New("firewall_enabled"), KnownValue: knownvalue.Bool(true)},
				},
			),
		}},
		{config: onHosts(lab, hosts[1]), checks: []querycheck.QueryResultCheck{querycheck.ExpectLength("vspherehpc_host_pvrdma_settings.q", 0)}},
	}, scopeErrors(lab)...))
}
