package vsphere

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A pool's check reads nothing more when the VM's host has the pool; when
// it has not, one read of the cluster (its DRS setting and hosts) tells
// where the pool is (the other hosts come from the read of every host the
// VM's host's read started). Labels planned by a host resource of
// the same plan count as the host's.
func TestPlanPools(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	hosts := lab.HostNames()
	var here, elsewhere string
	for _, vm := range lab.VMNames() {
		switch h := lab.VMHostName(vm); {
		case h == hosts[0] && here == "":
			here = vm
		case h != hosts[0] && elsewhere == "":
			elsewhere = vm
		}
	}
	pooled := GPURequest{VendorID: "10de", DeviceID: "2330", Label: "training"}
	for _, gpu := range lab.GPUs()[:2] {
		acctest.Must(t, lab.SetHardwareLabel(ctx, hosts[0], gpu, "training"))
	}
	plan := func(vm string, n int, planned PlannedHostDevices) (*GPUMMIOPlan, map[string]int) {
		t.Helper()
		c := labClient(lab)
		lab.ResetCalls()
		gpus := make([]GPURequest, n)
		for i := range gpus {
			gpus[i] = pooled
		}
		p, err := c.PlanGPUMMIO(ctx, GPUMMIOChange{VMID: lab.VMUUID(vm), GPUs: gpus, PowerOffAllowed: true, Planned: planned})
		if err != nil {
			t.Fatal(err)
		}
		return p, lab.Calls()
	}
	p, here2 := plan(here, 2, PlannedHostDevices{})
	if len(p.Findings) != 0 || !p.Sized || p.TotalMemoryGB != 160 {
		t.Fatalf("two of a pool of two on the VM's host: %#v, sized %t, %.0f GB", p.Findings, p.Sized, p.TotalMemoryGB)
	}
	p, _ = plan(here, 3, PlannedHostDevices{})
	if f, ok := onlyFinding[PoolTooSmall](p.Findings); !ok || f.Free != 2 || f.Asked != 3 || f.Index != 2 || f.Best != 0 || !f.DRS {
		t.Fatalf("three of a pool of two: %#v", p.Findings)
	}
	p, elsewhereCalls := plan(elsewhere, 2, PlannedHostDevices{})
	if f, ok := onlyFinding[PoolOnOtherHost](p.Findings); !ok || f.Host != hosts[0] || !p.Sized {
		t.Fatalf("a VM on another host of the DRS cluster: %#v", p.Findings)
	}
	t.Logf("calls of a pool's plan: on the VM's host %v; on another host %v", here2, elsewhereCalls)
	if here2["RetrievePropertiesEx"] != 2 || elsewhereCalls["RetrievePropertiesEx"] != 3 {
		t.Errorf("reads of a pool's plan: %d on the VM's host, %d on another; want 2 (the VM, its host) and 3 (and the cluster)",
			here2["RetrievePropertiesEx"], elsewhereCalls["RetrievePropertiesEx"])
	}
	// With manual DRS, DRS only recommends the host: said so.
	acctest.Must(t, lab.SetClusterDRS(ctx, true, types.DrsBehaviorManual))
	p, _ = plan(elsewhere, 2, PlannedHostDevices{})
	if f, ok := onlyFinding[PoolOnOtherHost](p.Findings); !ok || !f.Manual {
		t.Fatalf("a VM on another host of a manual DRS cluster: %#v", p.Findings)
	}
	// A VM its DRS override leaves out of DRS powers on where it is.
	acctest.Must(t, lab.SetClusterDRS(ctx, true, types.DrsBehaviorFullyAutomated))
	acctest.Must(t, lab.SetVMDRSOverride(ctx, elsewhere, false, ""))
	p, _ = plan(elsewhere, 2, PlannedHostDevices{})
	if f, ok := onlyFinding[PoolTooSmall](p.Findings); !ok || f.DRS || f.BestHost != hosts[0] {
		t.Fatalf("a VM excluded from DRS, the pool on another host: %#v", p.Findings)
	}
	// A label the plan gives the VM's host's devices counts.
	other := lab.VMHostName(elsewhere)
	planned := PlannedHostDevices{Labels: map[string]string{}}
	for _, gpu := range lab.GPUs()[:2] {
		planned.Labels[HostDeviceKey(lab.HostID(other), gpu)] = "training"
	}
	if p, _ = plan(elsewhere, 2, planned); len(p.Findings) != 0 {
		t.Fatalf("a pool the same plan labels on the VM's host: %#v", p.Findings)
	}
}

// onlyFinding is the one finding of findings when it is an F.
func onlyFinding[F Finding](findings []Finding) (F, bool) {
	var zero F
	if len(findings) != 1 {
		return zero, false
	}
	f, ok := findings[0].(F)
	return f, ok
}
