package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccVMPVRDMANIC_identity(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(nicAddr, vmPVRDMANICConfig(lab, uuid, "a", ""), map[string]knownvalue.Check{
			"virtual_machine_id": knownvalue.StringExact(uuid),
			"device_key":         knownvalue.NotNull(),
		}, statecheck.ExpectIdentityValueMatchesState(nicAddr, tfjsonpath.New("device_key"))),
	})
}

func TestAccVMPVRDMANIC_list(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	vms := lab.VMNames()
	runQueries(t, lab, "vspherehpc_vm_pvrdma_nic", append([]query{
		{config: inDatacenter(lab), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_vm_pvrdma_nic.q", 2),
			// Named by VM and MAC; the MAC is left to vCenter in the result.
			querycheck.ExpectResourceKnownValues(
				"vspherehpc_vm_pvrdma_nic.q",
				queryfilter.ByDisplayName(knownvalue.StringRegexp(regexp.MustCompile("^"+vms[0]+` ([0-9a-f]{2}:){5}[0-9a-f]{2}$`))),
				[]querycheck.KnownValueCheck{
					{Path: tfjsonpath.New("virtual_machine_id"), KnownValue: knownvalue.StringExact(lab.VMUUID(vms[0]))},
					{Path: tfjsonpath.New("device_protocol"), KnownValue: knownvalue.StringExact("rocev2")},
					{Path: tfjsonpath.New("mac_address"), KnownValue: knownvalue.Null()},
				},
			),
		}},
		// Only the VMs on the first VM's host.
		{config: onHosts(lab, lab.VMHostName(vms[0])), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_vm_pvrdma_nic.q", 1),
			querycheck.ExpectIdentity("vspherehpc_vm_pvrdma_nic.q", map[string]knownvalue.Check{
				"virtual_machine_id": knownvalue.StringExact(lab.VMUUID(vms[0])), "device_key": knownvalue.NotNull(),
			}),
		}},
		{config: onHosts(lab, hostWithoutAdapters(lab)), checks: []querycheck.QueryResultCheck{querycheck.ExpectLength("vspherehpc_vm_pvrdma_nic.q", 0)}},
	}, scopeErrors(lab)...))
}
