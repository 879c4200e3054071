package provider

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A cluster whose last host is of a newer GPU generation (two H200s at PCI
// ids no other host has, vcsimlab.Options.NewerGPUHost): a GPU asked for
// by a PCI id that only another host of the VM's cluster has is refused at
// plan time, naming the GPU, the VM's host and the host that has it. The
// refused plan changes nothing: the setup stays as applied, untainted, and
// the VM keeps its GPU.
func TestAccVMGPUMMIO_gpuOnAnotherHost(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{NewerGPUHost: true})
	simulatedOnly(t, lab, "needs a cluster whose hosts have different GPUs")
	ctx := context.Background()
	hosts := lab.HostNames()
	newer := hosts[len(hosts)-1]
	// A VM on the first host and one on the newer host.
	var vm, vmOnNewer string
	for _, name := range lab.VMNames() {
		switch host := lab.VMHostName(name); {
		case host == hosts[0] && vm == "":
			vm = name
		case host == newer && vmOnNewer == "":
			vmOnNewer = name
		}
	}
	if vm == "" || vmOnNewer == "" {
		t.Fatalf("no VM on %s or on %s", hosts[0], newer)
	}
	// The newer host's GPUs, as the provider's service layer reads them.
	newerHost, err := labClient(lab).Host(ctx, lab.HostID(newer))
	if err != nil {
		t.Fatal(err)
	}
	var h200s []string
	for _, g := range newerHost.GPUs {
		if g.PassthroughActive {
			h200s = append(h200s, g.PCIID)
		}
	}
	if len(h200s) == 0 || slices.Contains(h200s, lab.GPUs()[0]) {
		t.Fatalf("host %s has GPUs %v: want its own, not %s", newer, h200s, lab.GPUs()[0])
	}
	uuid := lab.VMUUID(vm)
	applied := vmGPUMMIOConfig(lab, uuid, gpuBlock(lab.GPUs()[0]))
	unchanged := func(*terraform.State) error {
		settings, err := lab.VMSettings(ctx, vm)
		if err != nil {
			return err
		}
		if !slices.Equal(settings.GPUs, []string{lab.GPUs()[0]}) {
			return fmt.Errorf("%s has GPUs %v, want %s only", vm, settings.GPUs, lab.GPUs()[0])
		}
		return nil
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: applied, Check: unchanged},
			{
				// The newer host's H200 for a VM of the first host.
				Config:   vmGPUMMIOConfig(lab, uuid, gpuBlock(h200s[0])),
				PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("Virtual machine %s (%s) runs on host %s, which has no GPU %s; it is on host %s. "+
					"A VM can only pass through its own host's GPUs.", vm, uuid, hosts[0], h200s[0], newer)),
			},
			{
				// Nothing was tainted or changed: the applied setup plans empty.
				Config:           applied,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            unchanged,
			},
			{
				// The other way round: the first host's H100 for a VM of the
				// newer host, which the first host (of the others, in the
				// cluster's order) has.
				Config: applied + fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "newer" {
  virtual_machine_id = %q
%s}
`, lab.VMUUID(vmOnNewer), gpuBlock(lab.GPUs()[0])),
				PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("Virtual machine %s (%s) runs on host %s, which has no GPU %s; it is on host %s.",
					vmOnNewer, lab.VMUUID(vmOnNewer), newer, lab.GPUs()[0], hosts[0])),
			},
			{
				// The newer host's own H200 is fine for its VM.
				Config: applied + fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "newer" {
  virtual_machine_id = %q
%s}
`, lab.VMUUID(vmOnNewer), gpuBlock(h200s[0])),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("vspherehpc_vm_gpu_mmio.newer", plancheck.ResourceActionCreate),
				}},
				Check: func(s *terraform.State) error {
					settings, err := lab.VMSettings(ctx, vmOnNewer)
					if err != nil {
						return err
					}
					if !slices.Equal(settings.GPUs, []string{h200s[0]}) {
						return fmt.Errorf("%s has GPUs %v, want %s", vmOnNewer, settings.GPUs, h200s[0])
					}
					return unchanged(s)
				},
			},
		},
	})
}

// A setup planned unchanged is still checked when its VM has moved to
// another host since it was applied (DRS, a cold migration): its GPUs are
// PCI ids on the host the VM runs on, and there the GPU may be another
// VM's. Back on its host, the plan is empty again.
func TestAccVMGPUMMIO_vmMovedToAnotherHost(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "moves a VM between the lab's hosts")
	ctx := context.Background()
	a, b := vmsOnTwoHosts(t, lab)
	from, to := lab.VMHostName(a), lab.VMHostName(b)
	gpu := lab.GPUs()[0]
	config := vmGPUMMIOConfig(lab, lab.VMUUID(a), gpuBlock(gpu))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					acctest.Must(t, lab.AttachGPU(ctx, b, gpu))
					acctest.Must(t, lab.MigrateVM(ctx, a, to))
				},
				Config: config, PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf(`GPU %s on host %s is already configured on virtual machine %s`, gpu, to, b)),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.MigrateVM(ctx, a, from)) },
				Config:    config, PlanOnly: true,
			},
		},
	})
}
