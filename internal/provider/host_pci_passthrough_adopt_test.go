package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A passthrough's identity names its devices: a resource that manages one
// of the host's two H100s imports by identity with that one, and plans no
// change, though the other has passthrough on too.
func TestAccHostPCIPassthrough_identity(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's H100s, which start with passthrough on")
	name := lab.HostNames()[0]
	gpu := lab.GPUs()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(passthroughAddr, hostPCIPassthroughConfig(lab, name, "  pci_ids = "+hclList([]string{gpu})), map[string]knownvalue.Check{
			"host_system_id": knownvalue.StringExact(lab.HostID(name)),
			"pci_ids":        knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(gpu)}),
		}),
	})
}

func TestAccHostPCIPassthrough_list(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	hosts := lab.HostNames()
	// Passthrough turned off for both H100s of the last host: not listed.
	ctx := context.Background()
	acctest.Must(
		t,
		labClient(lab).SetHostPassthrough(ctx, lab.HostID(hosts[len(hosts)-1]), map[string]bool{lab.GPUs()[0]: false, lab.GPUs()[1]: false}, nil),
	)
	cluster, err := labClient(lab).ClusterByName(ctx, lab.DatacenterID(), lab.ClusterName())
	acctest.Must(t, err)
	runQueries(t, lab, "vspherehpc_host_pci_passthrough", append([]query{
		{config: inDatacenter(lab), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_host_pci_passthrough.q", len(hosts)-1),
			displayed(
				"vspherehpc_host_pci_passthrough",
				fmt.Sprintf("%s: %s GH100 [H100 SXM5 80GB], %s GH100 [H100 SXM5 80GB]", hosts[0], lab.GPUs()[0], lab.GPUs()[1]),
			),
		}},
		{config: fmt.Sprintf("    cluster_id = %q", cluster.ID), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_host_pci_passthrough.q", len(hosts)-1),
			querycheck.ExpectResourceKnownValues("vspherehpc_host_pci_passthrough.q", queryfilter.ByResourceIdentity(map[string]knownvalue.Check{
				"host_system_id": knownvalue.StringExact(lab.HostID(hosts[0])),
				// sorted, as the lab's H100s are
				"pci_ids": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(lab.GPUs()[0]), knownvalue.StringExact(lab.GPUs()[1])}),
			}), []querycheck.KnownValueCheck{
				{Path: tfjsonpath.New("pci_ids"), KnownValue: knownvalue.SetExact([]knownvalue.Check{
					knownvalue.StringExact(lab.GPUs()[0]), knownvalue.StringExact(lab.GPUs()[1]),
				})},
			}),
		}},
		{config: onHosts(lab, hosts[len(hosts)-1]), checks: []querycheck.QueryResultCheck{querycheck.ExpectLength("vspherehpc_host_pci_passthrough.q", 0)}},
	}, scopeErrors(lab)...))
}
