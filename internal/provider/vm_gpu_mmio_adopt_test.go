package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccVMGPUMMIO_identity(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(gpuAddr, vmGPUMMIOConfig(lab, uuid, twoGPUs(lab)), map[string]knownvalue.Check{
			"virtual_machine_id": knownvalue.StringExact(uuid),
		}),
	})
}

func TestAccVMGPUMMIO_list(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	vms := lab.VMNames()
	small := queryfilter.ByDisplayName(knownvalue.StringRegexp(regexp.MustCompile("^" + vms[1] + ":")))
	runQueries(t, lab, "vspherehpc_vm_gpu_mmio", append([]query{
		{config: inDatacenter(lab), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_vm_gpu_mmio.q", 2),
			displayed("vspherehpc_vm_gpu_mmio", vms[0]+": 1 passthrough device, MMIO window 256 GB"),
			// The window smaller than the rule is left to the rule.
			querycheck.ExpectResourceKnownValues("vspherehpc_vm_gpu_mmio.q", small, []querycheck.KnownValueCheck{
				{Path: tfjsonpath.New("mmio_size_gb"), KnownValue: knownvalue.Null()},
				{Path: tfjsonpath.New("peer_to_peer"), KnownValue: knownvalue.Null()},
				{Path: tfjsonpath.New("numa_node_affinity"), KnownValue: knownvalue.Null()},
				{Path: tfjsonpath.New("gpu"), KnownValue: knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
					"pci_id": knownvalue.StringExact(lab.GPUs()[1]), "vendor_id": knownvalue.Null(), "device_id": knownvalue.Null(), "count": knownvalue.Null(),
					"label": knownvalue.Null(),
				})})},
			}),
		}},
		{config: onHosts(lab, lab.VMHostName(vms[0])), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_vm_gpu_mmio.q", 1),
			querycheck.ExpectIdentity(
				"vspherehpc_vm_gpu_mmio.q",
				map[string]knownvalue.Check{"virtual_machine_id": knownvalue.StringExact(lab.VMUUID(vms[0]))},
			),
			// Its GPUDirect RDMA keys and NUMA node affinity, set by hand, are adopted.
			querycheck.ExpectResourceKnownValues("vspherehpc_vm_gpu_mmio.q",
				queryfilter.ByDisplayName(knownvalue.StringRegexp(regexp.MustCompile("^"+vms[0]+":"))),
				[]querycheck.KnownValueCheck{
					{Path: tfjsonpath.New("peer_to_peer"), KnownValue: knownvalue.Bool(true)},
					{Path: tfjsonpath.New("numa_node_affinity"), KnownValue: knownvalue.SetExact([]knownvalue.Check{knownvalue.Int64Exact(0)})},
				}),
		}},
		{config: onHosts(lab, hostWithoutAdapters(lab)), checks: []querycheck.QueryResultCheck{querycheck.ExpectLength("vspherehpc_vm_gpu_mmio.q", 0)}},
	}, scopeErrors(lab)...))
}

// A powered-on VM whose adopted setup changes (here a window too small for
// its GPU) needs to be off for the change: the query says so, with the two
// ways to do it, beside the change itself; one whose setup stays as it is
// is not said to.
func TestAccVMGPUMMIO_listSaysARunningVMMustPowerOff(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	vms := lab.VMNames()
	for _, vm := range vms[:2] {
		acctest.Must(t, lab.PowerOnVM(context.Background(), vm))
	}
	d := newTFDir(t, lab, adoptExample(t))
	d.env = append(d.env, "TF_VAR_datacenter="+lab.DatacenterName())
	_, warnings := queryDiagnostics(t, d)
	for _, want := range []string{
		fmt.Sprintf("Virtual machine %s has an MMIO window of %d GB for 80 GB of GPU memory: too small to boot", vms[1], vcsimlab.HandBuiltSmallWindow),
		fmt.Sprintf("Virtual machine %s is powered on, and these changes need it off: power it off before the apply, or set "+
			"power_off_allowed = true in the generated configuration", vms[1]),
	} {
		if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("no warning %q; the warnings:\n%s", want, strings.Join(warnings, "\n"))
		}
	}
	if slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, vms[0]+" is powered on") }) {
		t.Errorf("%s, whose setup does not change, is said to need powering off:\n%s", vms[0], strings.Join(warnings, "\n"))
	}
}
