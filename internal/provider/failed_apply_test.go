package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// After any failed apply a plain terraform destroy works the first time
// (issue 22, item 4): vCenter fails the apply of each resource that can be
// refused at apply, beside the resource it depends on, and the test's own
// destroy (run once by the framework) must leave the lab as it was.
func TestAccFailedApply_destroyWorksFirstTime(t *testing.T) {
	t.Parallel()
	probe := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, probe, "injects faults")
	host := probe.HostNames()[0]
	pf, _ := sriovPF(t, probe, host)
	cases := []struct {
		name   string
		config func(lab *vcsimlab.Lab, vm string) string
		inject func(lab *vcsimlab.Lab, vm string) error
		want   string
		check  func(lab *vcsimlab.Lab, vm string) resource.TestCheckFunc
	}{
		{
			name: "passthrough",
			config: func(lab *vcsimlab.Lab, _ string) string {
				return passthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]", pf))
			},
			inject: func(lab *vcsimlab.Lab, _ string) error {
				return lab.InjectCallFault("UpdatePassthruConfig", "", vcsimlab.Fault{Type: "HostConfigFault"}, 1)
			},
			want:  `Cannot`,
			check: func(lab *vcsimlab.Lab, _ string) resource.TestCheckFunc { return passthroughIs(lab, host, pf, false) },
		},
		{
			name: "SR-IOV",
			config: func(lab *vcsimlab.Lab, _ string) string {
				return sriovConfig(lab, host, pf, 2)
			},
			inject: func(lab *vcsimlab.Lab, _ string) error {
				return lab.InjectCallFault("UpdatePassthruConfig", "", vcsimlab.Fault{Type: "HostConfigFault"}, 1)
			},
			want:  `Cannot`,
			check: func(lab *vcsimlab.Lab, _ string) resource.TestCheckFunc { return sriovIs(lab, host, pf, 0) },
		},
		{
			name: "GPU setup on a passed-through GPU",
			config: func(lab *vcsimlab.Lab, vm string) string {
				return passthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]", lab.GPUs()[0])) +
					strings.Replace(gpuConfig(lab, lab.VMUUID(vm), "\n"+gpuBlock(lab.GPUs()[0])+"  depends_on = [vspherehpc_host_pci_passthrough.p]\n"), providerConfig(lab), "", 1)
			},
			inject: func(lab *vcsimlab.Lab, vm string) error {
				return lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"})
			},
			want: `injected`,
			check: func(lab *vcsimlab.Lab, vm string) resource.TestCheckFunc {
				return func(*terraform.State) error {
					_, _, gpus, err := vmExtraConfig(lab, vm)
					if err == nil && gpus != 0 {
						err = fmt.Errorf("%s has %d GPUs after destroy", vm, gpus)
					}
					return err
				}
			},
		},
		{
			name: "SR-IOV adapter on its function",
			config: func(lab *vcsimlab.Lab, vm string) string {
				return sriovNICConfig(lab, vm, "a", vmnic4PF, false)
			},
			inject: func(lab *vcsimlab.Lab, vm string) error {
				return lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"})
			},
			want: `injected`,
			check: func(lab *vcsimlab.Lab, vm string) resource.TestCheckFunc {
				return func(*terraform.State) error {
					adapters, err := lab.SRIOVAdapters(context.Background(), vm)
					if err == nil && len(adapters) != 0 {
						err = fmt.Errorf("%s has SR-IOV adapters after destroy: %+v", vm, adapters)
					}
					return err
				}
			},
		},
		{
			name: "PVRDMA adapter on its switch",
			config: func(lab *vcsimlab.Lab, vm string) string {
				return switchesConfig(lab) + nicOn(lab.VMUUID(vm), "vspherehpc_rdma_dvs.a.port_group_id", "")
			},
			inject: func(lab *vcsimlab.Lab, vm string) error {
				return lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"})
			},
			want: `injected`,
			check: func(lab *vcsimlab.Lab, _ string) resource.TestCheckFunc {
				return func(*terraform.State) error {
					n, err := lab.CountNetworks(context.Background(), testName("rdma-")+"*")
					if err == nil && n != 0 {
						err = fmt.Errorf("%d switches left after destroy", n)
					}
					return err
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lab := startLab(t, vcsimlab.Options{})
			var vm string
			for _, n := range lab.VMNames() {
				if lab.VMHostName(n) == host && vm == "" {
					vm = n
				}
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					PreConfig:   func() { must(t, c.inject(lab, vm)) },
					Config:      c.config(lab, vm),
					ExpectError: regexp.MustCompile(c.want),
				}},
				CheckDestroy: c.check(lab, vm),
			})
		})
	}
}
