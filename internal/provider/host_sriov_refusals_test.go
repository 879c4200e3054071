package provider

import (
	"context"
	"fmt"
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
	passthrough := hostPCIPassthroughConfig(lab, host, `  pci_ids = ["`+pf+`"]`)
	sriov := strings.Replace(hostSRIOVConfig(lab, host, pf, 2), acctest.ProviderConfig(lab), "", 1)
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

func TestAccHostSRIOV_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card and A100")
	name := lab.HostNames()[0]
	id := lab.HostID(name)
	pf, maxVFs := sriovPF(t, lab, name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostSRIOVConfig(lab, name, pf, maxVFs+1), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("PCI device %s of host %s (%s) supports at most %d virtual functions, not %d.", pf, name, id, maxVFs, maxVFs+1),
				),
			},
			{
				Config: hostSRIOVConfig(lab, name, "0000:af:00.0", 4), PlanOnly: true,
				ExpectError: regexp.MustCompile(
					`(?s)PCI\s+device\s+0000:af:00.0\s+\(GA100.*is\s+not\s+SR-IOV\s+capable.*Its\s+SR-IOV\s+capable\s+devices:.*` + regexp.QuoteMeta(pf),
				),
			},
			{
				Config: hostSRIOVConfig(lab, name, "0000:99:00.0", 4), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)has\s+no\s+PCI\s+device\s+0000:99:00.0.\s+Its\s+SR-IOV\s+capable\s+devices:`),
			},
		},
	})
}

// A function passed through whole cannot also serve virtual functions: an
// SR-IOV resource on a device an unchanged passthrough resource manages is
// refused at plan, naming both.
func TestAccHostSRIOV_claimedByPassthrough(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	passthrough := hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, pf))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: passthrough},
			{
				Config: passthrough + strings.Replace(hostSRIOVConfig(lab, name, pf, 4), acctest.ProviderConfig(lab), "", 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)One card, two uses.*PCI\s+device\s+` + regexp.QuoteMeta(pf) + `\s+of\s+host\s+` + lab.HostID(name) +
					`\s+is\s+claimed\s+for\s+(passthrough|SR-IOV).*passed\s+through\s+whole.*or\s+split`),
			},
		},
	})
}

// Import says why there is nothing to import: a device that is no SR-IOV
// function (the lab's A100) cannot be managed by this resource at all, and
// only an SR-IOV capable function with SR-IOV off, not passed through whole,
// is one to create. The GPU's import said "create the resource instead",
// which plan then refuses.
func TestAccHostSRIOV_importRefusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card and A100")
	name := lab.HostNames()[0]
	id := lab.HostID(name)
	pf, _ := sriovPF(t, lab, name)
	importStep := func(pciID string, want *regexp.Regexp) resource.TestStep {
		return resource.TestStep{
			Config: acctest.RequiredProviders + hostSRIOVConfig(lab, name, pf, 4), ResourceName: sriovAddr, ImportState: true, ImportStateId: id + ":" + pciID,
			ExpectError: want,
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			importStep("0000:af:00.0", regexp.MustCompile(`(?s)Not an SR-IOV function.*`+acctest.Wording(
				fmt.Sprintf(
					"PCI device 0000:af:00.0 (GA100 [A100 PCIe 40GB]) of host %s (%s) is not SR-IOV capable, so vspherehpc_host_sriov cannot manage it",
					name,
					id,
				),
			).String()+
				`.*vspherehpc_host_pci_passthrough`)),
			importStep("0000:99:00.0", regexp.MustCompile(`(?s)No such PCI device.*`+acctest.Wording(
				fmt.Sprintf("Host %s (%s) has no PCI device 0000:99:00.0. Its SR-IOV capable devices: %s", name, id, pf)).String())),
			importStep(pf, regexp.MustCompile(`(?s)Nothing to import.*`+acctest.Wording(
				fmt.Sprintf("SR-IOV is off for PCI device %s", pf)).String()+`.*`+acctest.Wording("create the resource instead").String())),
			// Passed through whole, the card is not one to create either.
			func() resource.TestStep {
				step := importStep(pf, regexp.MustCompile(`(?s)Nothing to import.*`+acctest.Wording(
					fmt.Sprintf(
						"SR-IOV is off for PCI device %s (MT2910 Family [ConnectX-7]) of host %s (%s), which is passed through whole.",
						pf,
						name,
						id,
					),
				).String()+
					`.*`+acctest.Wording("turn its passthrough off first").String()))
				step.PreConfig = func() {
					acctest.Must(t, labClient(lab).SetHostPassthrough(context.Background(), id, map[string]bool{pf: true}, nil))
				}
				return step
			}(),
		},
	})
	if err := sriovIs(lab, name, pf, 0)(nil); err != nil {
		t.Error(err) // a refused import changes nothing
	}
}
