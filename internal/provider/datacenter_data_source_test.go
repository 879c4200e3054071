package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
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
				Config: acctest.ProviderConfig(lab) + `
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
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_datacenter" "dc" {
  name = "no-such-dc"
}
`,
				ExpectError: acctest.Wording(`no datacenter is called "no-such-dc"; vCenter has "` + lab.DatacenterName() + `" (` + lab.DatacenterID() + `)`),
			},
			{
				// vCenter allows two datacenters of one name in different folders.
				PreConfig: func() { acctest.Must(t, lab.CreateDatacenter(context.Background(), "site-b", lab.DatacenterName())) },
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_datacenter" "dc" {
  name = "` + lab.DatacenterName() + `"
}
`,
				ExpectError: acctest.Wording(`2 datacenters are called "` + lab.DatacenterName() + `"`),
			},
		},
	})
}

// An empty string where a look-up expects a name or an id is refused at
// validation, naming the argument and what to give: an empty datacenter name
// picked vCenter's only datacenter, as if no name were given. Also when the
// value is known only at apply (Terraform validates again before the read).
func TestAccLookups_emptyArguments(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	dc, host, vm := lab.DatacenterID(), lab.HostNames()[0], lab.VMNames()[0]
	dcFix := "datacenter_id is empty: give the datacenter's managed object id, e.g. data.vspherehpc_datacenter.dc.id."
	for i, tc := range []struct{ config, want string }{
		{`data "vspherehpc_datacenter" "x" { name = "" }`,
			`name is empty: give the datacenter's name, or leave name out to use vCenter's only datacenter.`},
		{`resource "terraform_data" "name" { input = "" }
data "vspherehpc_datacenter" "x" { name = terraform_data.name.output }`,
			`name is empty: give the datacenter's name, or leave name out to use vCenter's only datacenter.`},
		{fmt.Sprintf(`data "vspherehpc_cluster" "x" {
  datacenter_id = ""
  name          = %q
}`, lab.ClusterName()), dcFix},
		{fmt.Sprintf(`data "vspherehpc_cluster" "x" {
  datacenter_id = %q
  name          = ""
}`, dc), `name is empty: give the cluster's name.`},
		{`data "vspherehpc_host" "x" { host_system_id = "" }`,
			`host_system_id is empty: give the host's managed object id (what vsphere_host.id exports), or name with datacenter_id.`},
		{fmt.Sprintf(`data "vspherehpc_host" "x" {
  datacenter_id = ""
  name          = %q
}`, host), dcFix},
		{fmt.Sprintf(`data "vspherehpc_host" "x" {
  datacenter_id = %q
  name          = ""
}`, dc), `name is empty: give the host's name as vCenter shows it, or host_system_id.`},
		{`data "vspherehpc_virtual_machine" "x" { virtual_machine_id = "" }`,
			`virtual_machine_id is empty: give the VM's UUID (what vsphere_virtual_machine.id exports) or managed object id, or name with datacenter_id.`},
		{fmt.Sprintf(`data "vspherehpc_virtual_machine" "x" {
  datacenter_id = ""
  name          = %q
}`, vm), dcFix},
		{fmt.Sprintf(`data "vspherehpc_virtual_machine" "x" {
  datacenter_id = %q
  name          = ""
}`, dc), `name is empty: give the VM's name, or virtual_machine_id.`},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: acctest.ProviderConfig(lab) + tc.config + "\n", ExpectError: acctest.Wording(tc.want)}},
			})
		})
	}
}
