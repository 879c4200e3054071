package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// After any failed apply a plain terraform destroy works the first time
// (issue 22, item 4): vCenter fails the apply of each resource that can be
// refused at apply, beside the resource it depends on, and one plain
// `terraform destroy` (with its refresh and the normal plan Terraform makes
// before a destroy, which the testing framework's own -refresh=false destroy
// skips) must leave the lab as it was.
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
		check  func(lab *vcsimlab.Lab, vm string) func(*terraform.State) error
	}{
		{
			name: "passthrough",
			config: func(lab *vcsimlab.Lab, _ string) string {
				return hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]", pf))
			},
			inject: func(lab *vcsimlab.Lab, _ string) error {
				return lab.InjectCallFault("UpdatePassthruConfig", "", vcsimlab.Fault{Type: "HostConfigFault"}, 1)
			},
			want: `Cannot`,
			check: func(lab *vcsimlab.Lab, _ string) func(*terraform.State) error {
				return passthroughIs(lab, host, pf, false)
			},
		},
		{
			name: "SR-IOV",
			config: func(lab *vcsimlab.Lab, _ string) string {
				return hostSRIOVConfig(lab, host, pf, 2)
			},
			inject: func(lab *vcsimlab.Lab, _ string) error {
				return lab.InjectCallFault("UpdatePassthruConfig", "", vcsimlab.Fault{Type: "HostConfigFault"}, 1)
			},
			want:  `Cannot`,
			check: func(lab *vcsimlab.Lab, _ string) func(*terraform.State) error { return sriovIs(lab, host, pf, 0) },
		},
		{
			name: "GPU setup on a passed-through GPU",
			config: func(lab *vcsimlab.Lab, vm string) string {
				return hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]", lab.GPUs()[0])) +
					strings.Replace(
						vmGPUMMIOConfig(lab, lab.VMUUID(vm), "\n"+gpuBlock(lab.GPUs()[0])+"  depends_on = [vspherehpc_host_pci_passthrough.p]\n"),
						acctest.ProviderConfig(lab),
						"",
						1,
					)
			},
			inject: func(lab *vcsimlab.Lab, vm string) error {
				return lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"})
			},
			want: `injected`,
			check: func(lab *vcsimlab.Lab, vm string) func(*terraform.State) error {
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
				return vmSRIOVNICConfig(lab, vm, "a", vmnic4PF, false)
			},
			inject: func(lab *vcsimlab.Lab, vm string) error {
				return lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"})
			},
			want: `injected`,
			check: func(lab *vcsimlab.Lab, vm string) func(*terraform.State) error {
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
				return rdmaDVSTwoSwitchesConfig(lab) + nicOn(lab.VMUUID(vm), "vspherehpc_rdma_dvs.a.port_group_id", "")
			},
			inject: func(lab *vcsimlab.Lab, vm string) error {
				return lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"})
			},
			want: `injected`,
			check: func(lab *vcsimlab.Lab, _ string) func(*terraform.State) error {
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
			d := newTFDir(
				t,
				lab,
				map[string]string{"main.tf": acctest.RequiredProviders + strings.Replace(c.config(lab, vm), acctest.ProviderConfig(lab), "", 1)},
			)
			acctest.Must(t, c.inject(lab, vm))
			if out, err := d.try("apply", "-auto-approve"); err == nil || !regexp.MustCompile(c.want).MatchString(out) {
				t.Fatalf("apply with an injected fault: %v, want a failure matching %s:\n%s", err, c.want, out)
			}
			if out, err := d.try("destroy", "-auto-approve"); err != nil {
				t.Fatalf("the first plain destroy after the failed apply: %v\n%s", err, out)
			}
			acctest.Must(t, c.check(lab, vm)(nil))
		})
	}
}

// Turning passthrough off for a GPU its VM still uses is refused at plan
// (it was a warning, the apply refused, and the next destroy failed once
// because the failed apply had dropped the VM's dependency on the host from
// state). Nothing is applied, so nothing needs undoing; but Terraform plans
// the configuration before a destroy (to refresh; hashicorp/terraform#32208)
// and a provider's plan error stops it there: while the configuration keeps
// the refused change, destroy with -refresh=false, which works the first
// time (README.md, "When a plan is refused").
func TestAccFailedApply_passthroughOffUnderVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100, which has passthrough off")
	host := lab.HostNames()[0]
	var vm string
	for _, n := range lab.VMNames() {
		if lab.VMHostName(n) == host && vm == "" {
			vm = n
		}
	}
	gpuSetup := strings.Replace(
		vmGPUMMIOConfig(lab, lab.VMUUID(vm), "  mmio_size_gb = 256\n"+gpuBlock(a100)+"  depends_on = [vspherehpc_host_pci_passthrough.p]\n"),
		acctest.ProviderConfig(lab),
		"",
		1,
	)
	config := func(pciIDs string) string {
		return acctest.RequiredProviders + strings.Replace(
			hostPCIPassthroughConfig(lab, host, "  pci_ids = "+pciIDs),
			acctest.ProviderConfig(lab),
			"",
			1,
		) + gpuSetup
	}
	d := newTFDir(t, lab, map[string]string{"main.tf": config(fmt.Sprintf("[%q, %q]", a100, lab.GPUs()[0]))})
	d.run("apply", "-auto-approve")
	d.write(map[string]string{"main.tf": config(fmt.Sprintf("[%q]", lab.GPUs()[0]))})
	out, err := d.try("apply", "-auto-approve")
	if err == nil || !regexp.MustCompile(`(?s)Device still used by VMs.*`+regexp.QuoteMeta(a100)+`.*`+regexp.QuoteMeta(vm)).MatchString(out) ||
		strings.Contains(out, "Modifying...") {
		t.Fatalf("passthrough off under the VM: %v, want a plan error naming %s and %s, nothing changed:\n%s", err, a100, vm, out)
	}
	if out, err := d.try("destroy", "-auto-approve"); err == nil || !strings.Contains(out, "Device still used by VMs") {
		t.Fatalf("a plain destroy of the refused configuration: %v, want the plan's refusal:\n%s", err, out)
	}
	if out, err := d.try("destroy", "-auto-approve", "-refresh=false"); err != nil {
		t.Fatalf("the first destroy -refresh=false: %v\n%s", err, out)
	}
	acctest.Must(t, passthroughIs(lab, host, a100, false)(nil))
}
