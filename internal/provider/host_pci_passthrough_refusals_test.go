package provider

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// Passing through whole a function that serves virtual functions is refused
// at plan, beside its SR-IOV resource or in place of it.
func TestAccHostPCIPassthrough_ofAFunctionServingVFsRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card")
	host := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, host)
	sriov := hostSRIOVConfig(lab, host, pf, 2)
	passthrough := strings.Replace(hostPCIPassthroughConfig(lab, host, `  pci_ids = ["`+pf+`"]`), acctest.ProviderConfig(lab), "", 1)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: sriov, Check: sriovIs(lab, host, pf, 2)},
			{
				// vCenter's state already refuses it: SR-IOV is on.
				Config: sriov + passthrough, PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Device serves SR-IOV virtual functions.*PCI\s+device\s+` + regexp.QuoteMeta(pf)),
			},
			{
				// SR-IOV let go in the same plan: the host still serves the VFs.
				Config: acctest.ProviderConfig(lab) + passthrough, PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Device serves SR-IOV virtual functions.*PCI\s+device\s+` + regexp.QuoteMeta(pf) +
					`.*SR-IOV\s+on\s+with\s+2\s+virtual\s+functions.*turn\s+SR-IOV\s+off\s+first`),
			},
			{Config: sriov, Check: resource.ComposeTestCheckFunc(sriovIs(lab, host, pf, 2), passthroughIs(lab, host, pf, false))},
		},
	})
}

// Passing through a GPU in Shared Direct on which a running VM has its vGPU
// is refused at plan, by PCI id or by match, naming the VM and what to do:
// once the host applied it, the GPU is passed through whole and the VM does
// not power on again. With the VM off, it is a warning, not a refusal.
func TestAccHostPCIPassthrough_ofAGPUUnderRunningVGPUsRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "places vGPUs")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	ctx := context.Background()
	sharedDirectHost(t, lab, host)
	acctest.Must(t, lab.AttachVGPU(ctx, vm, "grid_a100-20c"))
	acctest.Must(t, lab.PowerOnVM(ctx, vm))
	refused := regexp.MustCompile(`(?s)GPU shared as vGPUs.*` + regexp.QuoteMeta(a100) + `.*` + regexp.QuoteMeta(vm) +
		`.*vspherehpc_host_graphics`)
	byID := hostPCIPassthroughConfig(lab, host, `  pci_ids = ["`+a100+`"]`)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: byID, PlanOnly: true, ExpectError: refused},
			{
				Config:   hostPCIPassthroughConfig(lab, host, "  match {\n    vendor_id = \"10de\"\n    device_id = \"20f1\"\n  }\n"),
				PlanOnly: true, ExpectError: refused,
			},
			{
				PreConfig: func() { acctest.Must(t, lab.PowerOffVM(ctx, vm)) },
				Config:    byID, PlanOnly: true, ExpectNonEmptyPlan: true,
			},
		},
	})
}

// The warning for a GPU in Shared Direct no running vGPU uses says what
// passing it through does and where its graphics are changed.
func TestHostPCIPassthroughGPUSharedAsVGPUsIsAWarning(t *testing.T) {
	var diags diag.Diagnostics
	addPassthroughFindings(&diags, []vsphere.Finding{vsphere.DeviceSharedAsVGPUs{Host: "esx-1 (host-12)", PCIID: a100, Name: "GA100"}})
	if diags.HasError() || diags.WarningsCount() != 1 || !strings.Contains(diags[0].Detail(), "GPU "+a100+" (GA100) of host esx-1 (host-12)") ||
		!strings.Contains(diags[0].Detail(), "vspherehpc_host_graphics") {
		t.Errorf("DeviceSharedAsVGPUs with no VM: %v; want one warning naming the GPU and vspherehpc_host_graphics", diags)
	}
}
