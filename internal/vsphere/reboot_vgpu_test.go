package vsphere

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// vgpuVM is a VM with vGPUs of profiles.
func vgpuVM(id, name string, profiles ...string) *mo.VirtualMachine {
	vm := &mo.VirtualMachine{Config: &types.VirtualMachineConfigInfo{}}
	vm.Self = types.ManagedObjectReference{Type: "VirtualMachine", Value: id}
	vm.Name = name
	for _, p := range profiles {
		vm.Config.Hardware.Device = append(vm.Config.Hardware.Device, &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{
			Backing: &types.VirtualPCIPassthroughVmiopBackingInfo{Vgpu: p}}})
	}
	return vm
}

// Maintenance mode's VMs with vGPUs go, in name order, to the first host
// whose A100 has room after those placed before them; one whose profile
// does not support vMotion, or that no host has room for, stays, and its
// reason says which.
func TestPlaceEvacuatedVGPUs(t *testing.T) {
	t.Parallel()
	offered := []VGPUProfile{{Name: "grid_a100-20c", MigrateSupported: true}, {Name: "grid_a100-10c", MigrateSupported: true},
		{Name: "grid_a100-40c"}}
	a100Host := func(id string, users ...VGPUUser) *Host {
		return &Host{ID: id, Name: id, VGPUProfiles: offered, GPUs: []GPU{{PCIID: "0000:af:00.0", VendorID: "10de", DeviceID: "20f1",
			MemoryGB: 40, GraphicsType: "sharedDirect", VGPUs: users}}}
	}
	// The second host's A100 runs one 20C: room for one more.
	hosts := []*Host{
		{ID: "host-2", Name: "host-2"}, // offers nothing
		a100Host("host-3", VGPUUser{VM: VMRef{MOID: "vm-9", Name: "other"}, Profiles: []string{"grid_a100-20c"}}),
		a100Host("host-4"),
	}
	stuck := placeEvacuatedVGPUs([]*mo.VirtualMachine{
		vgpuVM("vm-4", "d", "grid_a100-10c"),
		vgpuVM("vm-1", "a", "grid_a100-20c"),
		vgpuVM("vm-2", "b", "grid_a100-20c", "grid_a100-20c"), // host-3 is full after a, host-4 takes both
		vgpuVM("vm-3", "c", "grid_a100-40c"),                  // does not support vMotion
		vgpuVM("vm-5", "e", "grid_a100-20c"),                  // no room left anywhere
	}, offered, hosts, nil)
	got := map[string]string{}
	for _, s := range stuck {
		got[s.vm.Name] = s.reason
	}
	if len(got) != 3 || !strings.Contains(got["c"], "grid_a100-40c does not support vMotion") ||
		!strings.Contains(got["e"], "no other host of the cluster offers vGPU profile grid_a100-20c with room") ||
		!strings.Contains(got["d"], "grid_a100-10c with room") {
		t.Errorf("stuck %v, want c (no vMotion), d (no 10C beside 20Cs) and e (no room)", got)
	}
}

// Two empty A100 40GB hold eight 10Cs: two VMs of three spread over them
// fit, a third does not; with consolidation the first VM fills one GPU.
func TestVGPUDestinationCountsWhatItPlaced(t *testing.T) {
	t.Parallel()
	host := func(policy string) *Host {
		a100 := func(id string) GPU {
			return GPU{PCIID: id, VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect"}
		}
		return &Host{ID: "host-2", VGPUProfiles: []VGPUProfile{{Name: "grid_a100-10c"}}, Graphics: HostGraphics{AssignmentPolicy: policy},
			GPUs: []GPU{a100("0000:3b:00.0"), a100("0000:af:00.0")}}
	}
	three := []string{"grid_a100-10c", "grid_a100-10c", "grid_a100-10c"}
	perf := host("performance")
	d := &vgpuDestination{Host: perf, models: hostVGPUModels(perf), placed: map[string][]string{}}
	for vm := range 2 {
		if !d.take(three) {
			t.Fatalf("VM %d of three 10Cs does not fit on two A100 40GB (placed %v)", vm+1, d.placed)
		}
	}
	if d.take(three) {
		t.Errorf("a third VM of three 10Cs fit beside six on two A100 40GB (placed %v)", d.placed)
	}
	if len(d.placed["0000:3b:00.0"]) != 3 || len(d.placed["0000:af:00.0"]) != 3 {
		t.Errorf("performance placed %v, want three on each GPU", d.placed)
	}
	cons := host("consolidation")
	c := &vgpuDestination{Host: cons, models: hostVGPUModels(cons), placed: map[string][]string{}}
	if !c.take(three) || len(c.placed["0000:3b:00.0"]) != 3 {
		t.Errorf("consolidation placed %v, want the first GPU's", c.placed)
	}
}

// A host with GPUs of several models in Shared Direct does not say which
// offers a profile: it takes a VM whose profiles it offers, and the host
// decides at the migration.
func TestVGPUDestinationLeavesSeveralModelsToTheHost(t *testing.T) {
	t.Parallel()
	h := &Host{ID: "host-2", VGPUProfiles: []VGPUProfile{{Name: "grid_a100-40c"}}, GPUs: []GPU{
		{PCIID: "0000:3b:00.0", VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect",
			VGPUs: []VGPUUser{{VM: VMRef{MOID: "vm-9"}, Profiles: []string{"grid_a100-40c"}}}},
		{PCIID: "0000:af:00.0", VendorID: "10de", DeviceID: "2330", MemoryGB: 80, GraphicsType: "sharedDirect"},
	}}
	d := &vgpuDestination{Host: h, models: hostVGPUModels(h), placed: map[string][]string{}}
	if !d.take([]string{"grid_a100-40c"}) {
		t.Error("a host of two GPU models refused a profile it offers")
	}
	if d.take([]string{"grid_a100-20c"}) {
		t.Error("a host took a profile it does not offer")
	}
}

// The plan of a reboot reads more only for a running VM with vGPUs that DRS
// may move: nothing while the cluster's option is not set, then vCenter's
// setting (QueryOptions), then the other hosts (one more read), and the VM
// moves to the host that shares its A100.
func TestPlanHostRebootCallsForVGPUVMs(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true})
	c := labClient(lab)
	ctx := context.Background()
	first, second := lab.HostNames()[0], lab.HostNames()[1]
	for _, h := range []string{first, second} {
		acctest.Must(t, lab.ConfigureGraphics(ctx, h, "sharedDirect", "performance", nil))
		acctest.Must(t, lab.RebootHost(ctx, h))
	}
	acctest.Must(t, lab.CreateVM(ctx, "trainer", first, 19))
	acctest.Must(t, lab.AttachVGPU(ctx, "trainer", "grid_a100-20c"))
	acctest.Must(t, lab.PowerOnVM(ctx, "trainer"))
	plan := func(wantStuck bool, wantReads, wantQueries int) {
		t.Helper()
		lab.ResetCalls()
		r, err := c.PlanHostReboot(ctx, lab.HostID(first))
		if err != nil {
			t.Fatal(err)
		}
		if stuck := len(r.Stuck) == 1 && r.Stuck[0].Name == "trainer"; stuck != wantStuck || !wantStuck && len(r.Stuck) > 0 {
			t.Errorf("stuck %+v (%s), want trainer stuck: %v", r.Stuck, r.Why, wantStuck)
		}
		calls := lab.Calls()
		if calls["RetrievePropertiesEx"]+calls["RetrieveProperties"] != wantReads || calls["QueryOptions"] != wantQueries {
			t.Errorf("calls %v, want %d reads and %d QueryOptions", calls, wantReads, wantQueries)
		}
	}
	if _, err := c.PlanHostReboot(ctx, lab.HostID(first)); err != nil { // logs in: not the plan's cost
		t.Fatal(err)
	}
	plan(true, 1, 0)
	acctest.Must(t, lab.SetClusterDRSOption(ctx, "VgpuMMAutomationTimeoutSecs", "-1"))
	plan(true, 1, 1)
	// A user who may not read vCenter's settings is told which one.
	lab.FailCall("QueryOptions", "", &types.NoPermission{PrivilegeId: "System.Read"}, 1)
	if _, err := c.PlanHostReboot(ctx, lab.HostID(first)); !errors.Is(err, ErrNoPermission) ||
		!strings.Contains(err.Error(), "vgpu.hotmigrate.enabled") {
		t.Errorf("QueryOptions refused: %v, want ErrNoPermission naming the setting", err)
	}
	acctest.Must(t, lab.SetVCenterSetting(ctx, "vgpu.hotmigrate.enabled", "true"))
	plan(false, 2, 1)
}

// The vGPUs the same plan gives a running VM of a host count against the
// room maintenance mode would move VMs into, in place of those it runs.
func TestPlaceEvacuatedVGPUsCountsThePlan(t *testing.T) {
	t.Parallel()
	offered := []VGPUProfile{{Name: "grid_a100-20c", MigrateSupported: true}, {Name: "grid_a100-40c", MigrateSupported: true}}
	// host-2's A100 runs other's 40C, which the plan turns into a 20C.
	host := &Host{ID: "host-2", Name: "host-2", VGPUProfiles: offered, GPUs: []GPU{{PCIID: "0000:af:00.0", VendorID: "10de",
		DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect",
		VGPUs: []VGPUUser{{VM: VMRef{MOID: "vm-9", Name: "other"}, Profiles: []string{"grid_a100-40c"}}}}}}
	vms := func() []*mo.VirtualMachine { return []*mo.VirtualMachine{vgpuVM("vm-1", "a", "grid_a100-20c")} }
	if stuck := placeEvacuatedVGPUs(vms(), offered, []*Host{host}, nil); len(stuck) != 1 {
		t.Errorf("beside a running 40C: stuck %v, want a", stuck)
	}
	plan := []PlannedVGPUs{{HostID: "host-2", MOID: "vm-9", Name: "other", Profiles: []string{"grid_a100-20c"}}}
	if stuck := placeEvacuatedVGPUs(vms(), offered, []*Host{host}, plan); len(stuck) != 0 {
		t.Errorf("beside the plan's 20C for other: stuck %v, want none", stuck)
	}
	plan[0].Profiles = []string{"grid_a100-20c", "grid_a100-20c"}
	if stuck := placeEvacuatedVGPUs(vms(), offered, []*Host{host}, plan); len(stuck) != 1 {
		t.Errorf("beside the plan's two 20Cs for other: stuck %v, want a", stuck)
	}
}

// The evacuation estimate leaves MIG-backed vGPUs to the host: a host whose
// A100 runs a grid_a100-3-20c takes a VM's grid_a100-2-10c (MIG places
// instances of different sizes side by side), told by the GPU's vgpuMode
// or, without one, by the profiles' names; and it places nothing, so a
// time-sliced VM after it is not refused for another size.
func TestVGPUDestinationLeavesMIGToTheHost(t *testing.T) {
	t.Parallel()
	offered := []VGPUProfile{{Name: "grid_a100-3-20c", MigrateSupported: true}, {Name: "grid_a100-2-10c", MigrateSupported: true},
		{Name: "grid_a100-4-20c", MigrateSupported: true}}
	for _, mode := range []string{"multiInstanceGpu", ""} {
		h := &Host{ID: "host-2", Name: "host-2", VGPUProfiles: offered, GPUs: []GPU{{PCIID: "0000:3b:00.0", VendorID: "10de",
			DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect", VGPUMode: mode,
			VGPUs: []VGPUUser{{VM: VMRef{MOID: "vm-9", Name: "other"}, Profiles: []string{"grid_a100-3-20c"}}}}}}
		d := &vgpuDestination{Host: h, models: hostVGPUModels(h), placed: map[string][]string{}}
		if !d.take([]string{"grid_a100-2-10c"}) {
			t.Errorf("vgpuMode %q: a grid_a100-2-10c refused beside a running grid_a100-3-20c", mode)
		}
		if len(d.placed) != 0 {
			t.Errorf("vgpuMode %q: placed %v, want nothing counted for MIG-backed vGPUs", mode, d.placed)
		}
		stuck := placeEvacuatedVGPUs([]*mo.VirtualMachine{vgpuVM("vm-1", "a", "grid_a100-2-10c"), vgpuVM("vm-2", "b", "grid_a100-4-20c")},
			offered, []*Host{h}, nil)
		if len(stuck) != 0 {
			t.Errorf("vgpuMode %q: stuck %+v, want none (left to DRS)", mode, stuck)
		}
	}
}
