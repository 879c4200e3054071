package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// Every finding a planner can return has words in the resource that asks it,
// even with every field empty (vCenter leaves fields empty), and a finding a
// resource has no words for is an error, never silence (issue 22, item 5).
func TestWordingCoversEveryFinding(t *testing.T) {
	withPower := func(l []vsphere.Finding) []vsphere.Finding {
		return append(append([]vsphere.Finding{}, l...), vsphere.PowerFindings...)
	}
	resources := []struct {
		name     string
		findings []vsphere.Finding
		word     func(*diag.Diagnostics, vsphere.Finding)
	}{
		{"vspherehpc_rdma_dvs", vsphere.DVSFindings, func(d *diag.Diagnostics, f vsphere.Finding) { addDVSFinding(d, f, dvsWording{}) }},
		{"vspherehpc_host_pvrdma_settings", vsphere.HostPVRDMAFindings, addHostPVRDMAFinding},
		{"vspherehpc_host_pci_passthrough", vsphere.PassthroughFindings, func(d *diag.Diagnostics, f vsphere.Finding) {
			addPassthroughFindings(d, []vsphere.Finding{f})
		}},
		{"vspherehpc_host_sriov", vsphere.HostSRIOVFindings, func(d *diag.Diagnostics, f vsphere.Finding) { addHostSRIOVFinding(d, f, "fix") }},
		{"vspherehpc_host_graphics", vsphere.HostGraphicsFindings, addHostGraphicsFinding},
		{"vspherehpc_vm_gpu_mmio", withPower(vsphere.GPUMMIOFindings), func(d *diag.Diagnostics, f vsphere.Finding) {
			addGPUMMIOFinding(d, f, blockPaths{})
		}},
		{"vspherehpc_vm_pvrdma_nic", withPower(vsphere.PVRDMANICFindings), addPVRDMANICFinding},
		{"vspherehpc_vm_sriov_nic", withPower(vsphere.SRIOVNICFindings), addSRIOVNICFinding},
		{"vspherehpc_vm_power", vsphere.PowerActionFindings, addPowerActionFinding},
	}
	foreign := vsphere.NoSuchVmknic{} // a host settings' finding: no VM or switch resource words it
	for _, r := range resources {
		for _, f := range r.findings {
			t.Run(fmt.Sprintf("%s/%T", r.name, f), func(t *testing.T) {
				var diags diag.Diagnostics
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("panic wording an empty %T: %v", f, p)
						}
					}()
					r.word(&diags, f)
				}()
				if len(diags) == 0 {
					t.Fatalf("no words for %T", f)
				}
				for _, d := range diags {
					if d.Summary() == "Unexpected finding" || strings.TrimSpace(d.Detail()) == "" {
						t.Errorf("%T worded as %q: %q", f, d.Summary(), d.Detail())
					}
				}
			})
		}
		if r.name == "vspherehpc_host_pvrdma_settings" {
			continue
		}
		var diags diag.Diagnostics
		r.word(&diags, foreign)
		if !diags.HasError() || diags[0].Summary() != "Unexpected finding" {
			t.Errorf("%s words a finding of another planner as %v, want an Unexpected finding error", r.name, diags)
		}
	}
}
