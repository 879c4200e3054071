package provider

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
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
	hostChecks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue("data.vspherehpc_cluster.hpc", tfjsonpath.New("host_names"), knownvalue.ListExact(wantNames)),
		statecheck.ExpectKnownValue("data.vspherehpc_cluster.hpc", tfjsonpath.New("host_system_ids"), knownvalue.ListExact(wantIDs)),
	}
	var hostCheck resource.TestCheckFunc
	notFound := acctest.Wording(`has no cluster called "no-such-cluster"; it has "` + lab.ClusterName() + `" (domain-c`)
	if !lab.Simulated() {
		// An external cluster may hold more hosts than the test was lent,
		// and its datacenter more clusters.
		hostChecks, hostCheck = nil, clusterListsHosts(lab, "data.vspherehpc_cluster.hpc")
		notFound = regexp.MustCompile(`(?s)` + acctest.Wording(`has no cluster called "no-such-cluster"; it has`).String() +
			`.*` + acctest.Wording(`"`+lab.ClusterName()+`" (domain-c`).String())
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_cluster" "hpc" {
  datacenter_id = "` + lab.DatacenterID() + `"
  name          = "` + lab.ClusterName() + `"
}
`,
				ConfigStateChecks: append([]statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.vspherehpc_cluster.hpc", tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^domain-c\d+$`))),
				}, hostChecks...),
				Check: hostCheck,
			},
			{
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_cluster" "hpc" {
  datacenter_id = "` + lab.DatacenterID() + `"
  name          = "no-such-cluster"
}
`,
				ExpectError: notFound,
			},
		},
	})
}

// clusterListsHosts checks that a cluster data source lists its hosts in
// name order, each with its id, the lab's hosts among them.
func clusterListsHosts(lab *vcsimlab.Lab, address string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[address]
		if !ok {
			return fmt.Errorf("%s is not in state", address)
		}
		attrs := rs.Primary.Attributes
		n, err := strconv.Atoi(attrs["host_names.#"])
		if err != nil || attrs["host_system_ids.#"] != attrs["host_names.#"] {
			return fmt.Errorf("%s lists %s host names and %s host ids", address, attrs["host_names.#"], attrs["host_system_ids.#"])
		}
		ids := map[string]string{}
		var names []string
		for i := range n {
			name := attrs[fmt.Sprintf("host_names.%d", i)]
			names = append(names, name)
			ids[name] = attrs[fmt.Sprintf("host_system_ids.%d", i)]
		}
		if !slices.IsSorted(names) {
			return fmt.Errorf("%s lists its hosts out of name order: %v", address, names)
		}
		for _, h := range lab.HostNames() {
			if id, ok := ids[h]; !ok || id != lab.HostID(h) {
				return fmt.Errorf("%s lists host %s as %q (listed: %t), want %s", address, h, id, ok, lab.HostID(h))
			}
		}
		return nil
	}
}
