package provider

import (
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccClusterDataSource(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 4})
	names := slices.Sorted(slices.Values(lab.HostNames()))
	var wantNames, wantIDs []knownvalue.Check
	for _, n := range names {
		wantNames = append(wantNames, knownvalue.StringExact(n))
		wantIDs = append(wantIDs, knownvalue.StringExact(lab.HostID(n)))
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: providerConfig(lab) + `
data "vspherehpc_cluster" "hpc" {
  datacenter_id = "` + lab.DatacenterID() + `"
  name          = "` + lab.ClusterName() + `"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.vspherehpc_cluster.hpc", tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^domain-c\d+$`))),
					statecheck.ExpectKnownValue("data.vspherehpc_cluster.hpc", tfjsonpath.New("host_names"), knownvalue.ListExact(wantNames)),
					statecheck.ExpectKnownValue("data.vspherehpc_cluster.hpc", tfjsonpath.New("host_system_ids"), knownvalue.ListExact(wantIDs)),
				},
			},
			{
				Config: providerConfig(lab) + `
data "vspherehpc_cluster" "hpc" {
  datacenter_id = "` + lab.DatacenterID() + `"
  name          = "no-such-cluster"
}
`,
				ExpectError: wrapped(`has no cluster called "no-such-cluster"; it has "` + lab.ClusterName() + `" (domain-c`),
			},
		},
	})
}
