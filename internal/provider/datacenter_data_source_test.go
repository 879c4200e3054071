package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccDatacenterDataSource(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "needs a vCenter of one datacenter (the default look-up), and creates a second one")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: providerConfig(lab) + `
data "vspherehpc_datacenter" "by_name" {
  name = "` + lab.DatacenterName() + `"
}
data "vspherehpc_datacenter" "only_one" {}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.vspherehpc_datacenter.by_name", tfjsonpath.New("id"), knownvalue.StringExact(lab.DatacenterID())),
					statecheck.ExpectKnownValue("data.vspherehpc_datacenter.only_one", tfjsonpath.New("name"), knownvalue.StringExact(lab.DatacenterName())),
					statecheck.CompareValuePairs("data.vspherehpc_datacenter.by_name", tfjsonpath.New("id"),
						"data.vspherehpc_datacenter.only_one", tfjsonpath.New("id"), compareSame),
				},
			},
			{
				Config: providerConfig(lab) + `
data "vspherehpc_datacenter" "dc" {
  name = "no-such-dc"
}
`,
				ExpectError: wrapped(`no datacenter is called "no-such-dc"; vCenter has "` + lab.DatacenterName() + `" (` + lab.DatacenterID() + `)`),
			},
			{
				// vCenter allows two datacenters of one name in different folders.
				PreConfig: func() { must(t, lab.CreateDatacenter(context.Background(), "site-b", lab.DatacenterName())) },
				Config: providerConfig(lab) + `
data "vspherehpc_datacenter" "dc" {
  name = "` + lab.DatacenterName() + `"
}
`,
				ExpectError: wrapped(`2 datacenters are called "` + lab.DatacenterName() + `"`),
			},
		},
	})
}
