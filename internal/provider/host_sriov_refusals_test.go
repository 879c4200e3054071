package provider

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A card is passed through whole or split into SR-IOV virtual functions,
// never both (issue 22, item 3). SR-IOV on a function passed through whole
// to a VM is refused at plan, naming the card and the VM, in the same plan
// as its passthrough resource or after it; the VM keeps the card.
func TestAccHostSRIOV_onACardPassedThroughRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card")
	host := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, host)
	var vm string
	for _, n := range lab.VMNames() {
		if lab.VMHostName(n) == host {
			vm = n
		}
	}
	passthrough := passthroughConfig(lab, host, `  pci_ids = ["`+pf+`"]`)
	sriov := strings.Replace(sriovConfig(lab, host, pf, 2), acctest.ProviderConfig(lab), "", 1)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: passthrough, Check: passthroughIs(lab, host, pf, true)},
			{
				PreConfig: func() { acctest.Must(t, lab.AttachGPU(context.Background(), vm, pf)) },
				Config:    passthrough + sriov, PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)One card, two uses.*PCI\s+device\s+` + regexp.QuoteMeta(pf) + `.*passed\s+through\s+whole.*or\s+split`),
			},
			{
				// The passthrough resource let go in the same plan: vCenter
				// still has the card passed through to the VM.
				Config: acctest.ProviderConfig(lab) + sriov, PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Device passed through whole.*PCI\s+device\s+` + regexp.QuoteMeta(pf) + `.*Virtual\s+machines\s+` +
					regexp.QuoteMeta(vm) + `\s+are\s+configured\s+with\s+it`),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.DetachGPU(context.Background(), vm, pf)) },
				Config:    passthrough,
				Check:     resource.ComposeTestCheckFunc(passthroughIs(lab, host, pf, true), sriovIs(lab, host, pf, 0)),
			},
		},
	})
}
