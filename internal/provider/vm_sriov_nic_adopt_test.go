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

func TestAccVMSRIOVNIC_identity(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	vm := lab.VMNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(sriovNICAddr, vmSRIOVNICConfig(lab, vm, "a", vmnic4PF, false), map[string]knownvalue.Check{
			"virtual_machine_id": knownvalue.StringExact(lab.VMUUID(vm)),
			"device_key":         knownvalue.NotNull(),
		}, statecheck.ExpectIdentityValueMatchesState(sriovNICAddr, tfjsonpath.New("device_key"))),
	})
}

func TestAccVMSRIOVNIC_list(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	vms := lab.VMNames()
	runQueries(t, lab, "vspherehpc_vm_sriov_nic", append([]query{
		{config: inDatacenter(lab), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_vm_sriov_nic.q", 1),
			querycheck.ExpectResourceKnownValues(
				"vspherehpc_vm_sriov_nic.q",
				queryfilter.ByDisplayName(knownvalue.StringRegexp(regexp.MustCompile("^"+vms[0]+" "))),
				[]querycheck.KnownValueCheck{
					{Path: tfjsonpath.New("physical_function"), KnownValue: knownvalue.StringExact(vcsimlab.HandBuiltSRIOVPF)},
					{Path: tfjsonpath.New("mac_address"), KnownValue: knownvalue.Null()},
				},
			),
		}},
		{config: onHosts(lab, lab.VMHostName(vms[1])), checks: []querycheck.QueryResultCheck{querycheck.ExpectLength("vspherehpc_vm_sriov_nic.q", 0)}},
	}, scopeErrors(lab)...))
}
