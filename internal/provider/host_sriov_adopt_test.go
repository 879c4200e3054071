package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccHostSRIOV_identity(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(sriovAddr, hostSRIOVConfig(lab, name, pf, 4), map[string]knownvalue.Check{
			"host_system_id": knownvalue.StringExact(lab.HostID(name)),
			"pci_id":         knownvalue.StringExact(pf),
		}),
	})
}

func TestAccHostSRIOV_list(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	hosts := lab.HostNames()
	runQueries(t, lab, "vspherehpc_host_sriov", append([]query{
		{config: inDatacenter(lab), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_host_sriov.q", 1),
			querycheck.ExpectIdentity("vspherehpc_host_sriov.q", map[string]knownvalue.Check{
				"host_system_id": knownvalue.StringExact(lab.HostID(hosts[0])),
				"pci_id":         knownvalue.StringExact(vcsimlab.HandBuiltSRIOVPF),
			}),
			querycheck.ExpectResourceKnownValues(
				"vspherehpc_host_sriov.q",
				queryfilter.ByDisplayName(knownvalue.StringRegexp(regexp.MustCompile("^"+hosts[0]))),
				[]querycheck.KnownValueCheck{{Path: tfjsonpath.New("num_virtual_functions"), KnownValue: knownvalue.Int64Exact(4)}},
			),
		}},
		{config: onHosts(lab, hosts[1:]...), checks: []querycheck.QueryResultCheck{querycheck.ExpectLength("vspherehpc_host_sriov.q", 0)}},
	}, scopeErrors(lab)...))
}
