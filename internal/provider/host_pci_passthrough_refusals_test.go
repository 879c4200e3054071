package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
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
