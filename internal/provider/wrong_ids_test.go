package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// Ids of the wrong kind, and ids that name nothing, where arguments name
// vSphere objects (issue 37, item 6): the error says what the id looks like
// (a name, and whose; another kind's managed object id or UUID) and what
// was expected, and names each id of a list that names nothing.

// labClusterID is the managed object id of the lab's cluster.
func labClusterID(t *testing.T, lab *vcsimlab.Lab) string {
	t.Helper()
	cl, err := labClient(lab).ClusterByName(context.Background(), lab.DatacenterID(), lab.ClusterName())
	if err != nil {
		t.Fatalf("finding the lab's cluster: %v", err)
	}
	return cl.ID
}

// The data sources that take ids: a datacenter's name or a cluster's id as
// datacenter_id, a VM's id as a host's, a host's as a VM's, and a VM's id
// and a host's name among host_system_ids.
func TestAccWrongIDs_dataSources(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	host, vm := lab.HostNames()[0], lab.VMNames()[0]
	hostID, vmID, clusterID := lab.HostID(host), lab.VMID(vm), labClusterID(t, lab)
	step := func(config, want string) resource.TestStep {
		return resource.TestStep{Config: acctest.ProviderConfig(lab) + config, PlanOnly: true, ExpectError: acctest.Wording(want)}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			step(fmt.Sprintf(`
data "vspherehpc_cluster" "c" {
  datacenter_id = %q
  name          = %q
}
`, lab.DatacenterName(), lab.ClusterName()),
				fmt.Sprintf(`no datacenter has id %q (the name of datacenter %s); datacenter ids are managed object ids such as datacenter-3; `+
					`data.vspherehpc_datacenter looks one up by name`, lab.DatacenterName(), lab.DatacenterID())),
			step(fmt.Sprintf(`
data "vspherehpc_host" "h" {
  datacenter_id = %q
  name          = %q
}
`, clusterID, host),
				fmt.Sprintf(`no datacenter has id %s (it looks like a cluster's managed object id); datacenter ids are managed object ids such as `+
					`datacenter-3; data.vspherehpc_datacenter looks one up by name`, clusterID)),
			step(fmt.Sprintf(`
data "vspherehpc_host" "h" {
  host_system_id = %q
}
`, vmID),
				fmt.Sprintf(`no host has id %s (it looks like a virtual machine's managed object id); host ids are managed object ids such as `+
					`host-12; data.vspherehpc_host looks one up by name`, vmID)),
			step(fmt.Sprintf(`
data "vspherehpc_virtual_machine" "vm" {
  virtual_machine_id = %q
}
`, hostID),
				fmt.Sprintf(`%q is a host's managed object id, not a virtual machine's: a virtual machine's id is its BIOS UUID (8-4-4-4-12 hex `+
					`digits, such as 4223b7a1-5b2c-8d3e-1f40-9c1e2a3b4c5d) or its managed object id (such as vm-42)`, hostID)),
			step(fmt.Sprintf(`
data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = [%q, %q, %q]
  vmknic          = %q
}
`, hostID, vmID, host, lab.Vmknic()),
				fmt.Sprintf(`hosts %s (it looks like a virtual machine's managed object id), %q (the name of host %s) do not exist; host ids `+
					`are managed object ids such as host-12; data.vspherehpc_host looks one up by name`, vmID, host, hostID)),
		},
	})
}

// The scope of every list: a datacenter's name or a cluster's id as
// datacenter_id, a host's id as cluster_id, a VM's id and a host's name
// among host_system_ids, and which of two hosts does not exist.
func TestAccList_wrongKindScopes(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	host, vm := lab.HostNames()[0], lab.VMNames()[0]
	hostID, vmID, clusterID := lab.HostID(host), lab.VMID(vm), labClusterID(t, lab)
	runQueries(t, lab, "vspherehpc_host_pvrdma_settings", []query{
		{config: fmt.Sprintf("    datacenter_id = %q", lab.DatacenterName()),
			err: fmt.Sprintf(`no datacenter has id %q (the name of datacenter %s); datacenter ids are managed object ids such as datacenter-3; `+
				`data.vspherehpc_datacenter looks one up by name`, lab.DatacenterName(), lab.DatacenterID())},
		{config: fmt.Sprintf("    datacenter_id = %q", clusterID),
			err: fmt.Sprintf(`no datacenter has id %s (it looks like a cluster's managed object id); datacenter ids are managed object ids `+
				`such as datacenter-3`, clusterID)},
		{config: fmt.Sprintf("    cluster_id = %q", hostID),
			err: fmt.Sprintf(`no cluster has id %s (it looks like a host's managed object id); cluster ids are managed object ids such as `+
				`domain-c7; data.vspherehpc_cluster looks one up by name`, hostID)},
		{config: fmt.Sprintf("    host_system_ids = [%q, %q, %q]", hostID, vmID, host),
			err: fmt.Sprintf(`hosts %s (it looks like a virtual machine's managed object id), %q (the name of host %s) do not exist; host ids `+
				`are managed object ids such as host-12; data.vspherehpc_host looks one up by name`, vmID, host, hostID)},
		{config: fmt.Sprintf("    host_system_ids = [%q, \"host-9999\"]", hostID),
			err: "no host has id host-9999; data.vspherehpc_host looks one up by name"},
	})
}

// A resource's argument refused at plan says in its summary whether the id
// has another form ("Not a host id") or names nothing ("No such host").
func TestAccWrongIDs_resources(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	settings := func(hostID string) string {
		return acctest.ProviderConfig(lab) + fmt.Sprintf("resource \"vspherehpc_host_pvrdma_settings\" \"h\" {\n  host_system_id = %q\n}\n", hostID)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: settings(uuid), PlanOnly: true,
				ExpectError: regexp.MustCompile(`Error: Not a host id(?s:.*)` + acctest.Wording(fmt.Sprintf(`no host has id %s (it looks like a `+
					`virtual machine's BIOS UUID); host ids are managed object ids such as host-12; data.vspherehpc_host looks one up by name.`, uuid)).String()),
			},
			{
				Config: settings("host-9999"), PlanOnly: true,
				ExpectError: regexp.MustCompile(
					`Error: No such host(?s:.*)` + acctest.Wording(`no host has id host-9999; data.vspherehpc_host looks one up by name.`).String(),
				),
			},
		},
	})
}
