package vsphere

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"

	"github.com/vmware/govmomi/vim25/types"
)

func TestVGPUBoardAndSeries(t *testing.T) {
	t.Parallel()
	for name, want := range map[string][2]string{
		"grid_a100-40c": {"a100", "c"}, "grid_a100-3-20c": {"a100", "c"}, "nvidia_h100xm-80c": {"h100xm", "c"},
		"grid_p40-2q": {"p40", "q"}, "a100-40c": {"", ""}, "grid_a100": {"", ""}, "grid_a100-40": {"", ""},
	} {
		if b, s := VGPUBoardAndSeries(name); b != want[0] || s != want[1] {
			t.Errorf("VGPUBoardAndSeries(%q) = %q, %q; want %q, %q", name, b, s, want[0], want[1])
		}
	}
}

// The rules of a VM's vGPUs against a host with two A100 40GB in Shared
// Direct, one running a VM's 20C vGPU, the other a VM's 10C.
func TestPlanVGPUs(t *testing.T) {
	t.Parallel()
	a100 := func(id string, users ...VGPUUser) GPU {
		return GPU{PCIID: id, VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect", VGPUs: users}
	}
	host := &Host{ID: "host-1", Name: "esx01",
		VGPUProfiles: []VGPUProfile{{Name: "grid_a100-10c"}, {Name: "grid_a100-20c"}, {Name: "grid_a100-40c"}},
		GPUs: []GPU{
			a100("0000:3b:00.0", VGPUUser{VM: VMRef{MOID: "vm-1", Name: "a"}, Profiles: []string{"grid_a100-20c"}}),
			a100("0000:af:00.0", VGPUUser{VM: VMRef{MOID: "vm-2", Name: "b"}, Profiles: []string{"grid_a100-10c"}}),
			{PCIID: "0000:d8:00.0", VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "basic"},
		}}
	models := map[string][]string{"10de:20f1": {"grid_a100-10c", "grid_a100-20c", "grid_a100-40c"}}
	check := func(vgpus ...string) vgpuCheck {
		return vgpuCheck{label: "vm (vm-9)", moid: "vm-9", host: host, vgpus: vgpus, powersOn: true, models: models}
	}
	for _, c := range []struct {
		in   vgpuCheck
		want []Finding
	}{
		{check("grid_a100-20c"), nil},
		{check("grid_a100-10c", "grid_a100-10c", "grid_a100-10c"), nil},
		{check("grid_a100-20c", "grid_a100-20c"), []Finding{VGPUsDoNotFit{VM: "vm (vm-9)", Host: "esx01", Profile: "grid_a100-20c", Asked: 2, Fit: 1,
			Why: []string{"GPU 0000:af:00.0 runs vGPUs of virtual machine b of another size (grid_a100-10c)"}, PowersOn: true}}},
		{check("grid_a100-40c"), []Finding{VGPUsDoNotFit{VM: "vm (vm-9)", Host: "esx01", Profile: "grid_a100-40c", Asked: 1, Fit: 0,
			Why: []string{"GPU 0000:3b:00.0 runs vGPUs of virtual machine a of another size (grid_a100-20c)",
				"GPU 0000:af:00.0 runs vGPUs of virtual machine b of another size (grid_a100-10c)"}, PowersOn: true}}},
		{check("grid_h100-80c"), []Finding{VGPUProfileNotOffered{VM: "vm (vm-9)", Host: "esx01", Profile: "grid_h100-80c",
			Offered: []string{"grid_a100-10c", "grid_a100-20c", "grid_a100-40c"}, NotShared: []string{"0000:d8:00.0 (basic)"}}}},
		{check("grid_a100-10c", "grid_h100-80c"), []Finding{
			VGPUsMixed{VM: "vm (vm-9)", Profiles: []string{"grid_a100-10c", "grid_h100-80c"}},
			VGPUProfileNotOffered{VM: "vm (vm-9)", Host: "esx01", Profile: "grid_h100-80c",
				Offered: []string{"grid_a100-10c", "grid_a100-20c", "grid_a100-40c"}, NotShared: []string{"0000:d8:00.0 (basic)"}},
		}},
		{check("grid_a100-10c", "grid_a100-10c", "grid_a100-10c", "grid_a100-10c", "grid_a100-10c", "grid_a100-10c", "grid_a100-10c",
			"grid_a100-10c", "grid_a100-10c"), []Finding{TooManyVGPUs{VM: "vm (vm-9)", Asked: 9},
			VGPUsDoNotFit{VM: "vm (vm-9)", Host: "esx01", Profile: "grid_a100-10c", Asked: 9, Fit: 3,
				Why: []string{"GPU 0000:3b:00.0 runs vGPUs of virtual machine a of another size (grid_a100-20c)"}, PowersOn: true}}},
	} {
		if got := planVGPUs(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v:\n got %+v\nwant %+v", c.in.vgpus, got, c.want)
		}
	}
	// The VM's own vGPUs are given back at its power cycle; a host graphics
	// resource of the plan defers the host's checks.
	own := check("grid_a100-20c", "grid_a100-20c")
	own.moid = "vm-1"
	if got := planVGPUs(own); len(got) != 0 {
		t.Errorf("the VM's own vGPU counted against it: %+v", got)
	}
	// A VM listed on both GPUs, with two 20C vGPUs: one on each, so each
	// GPU has room for one more 20C.
	spread := VGPUUser{VM: VMRef{MOID: "vm-3", Name: "c"}, Profiles: []string{"grid_a100-20c", "grid_a100-20c"}}
	two := &Host{ID: "host-2", Name: "esx02", VGPUProfiles: host.VGPUProfiles, GPUs: []GPU{a100("0000:3b:00.0", spread), a100("0000:af:00.0", spread)}}
	if fit, why := vgpuRoom(vgpuCheck{host: two, models: models}, "grid_a100-20c"); fit != 2 || len(why) != 0 {
		t.Errorf("a VM spread over two GPUs: room %d (%v), want 2", fit, why)
	}
	// Mixed-size mode: the host decides.
	mixed := &Host{ID: "host-3", Name: "esx03", VGPUProfiles: host.VGPUProfiles, GPUs: []GPU{a100("0000:3b:00.0", spread)}}
	mixed.GPUs[0].VGPUMode = "mixedSize"
	if fit, _ := vgpuRoom(vgpuCheck{host: mixed, models: models}, "grid_a100-40c"); fit != MaxVGPUsPerVM {
		t.Errorf("mixed-size mode: room %d, want the host to decide", fit)
	}
	// A vCenter before API 7.0.3 says not which model offers a profile: the
	// room is left to the host's power-on.
	older := check("grid_a100-40c")
	older.models = nil
	if got := planVGPUs(older); len(got) != 0 {
		t.Errorf("without the models' profiles: %+v, want nothing", got)
	}
	planned := check("grid_h100-80c")
	planned.planned = true
	if got := planVGPUs(planned); len(got) != 0 {
		t.Errorf("with Shared Direct planned: %+v, want nothing", got)
	}
}

// With GPUs of one model in Shared Direct a host says how many more vGPUs
// of each profile fit; with two models it cannot tell which offers which.
func TestVGPUAvailability(t *testing.T) {
	t.Parallel()
	h := &Host{VGPUProfiles: []VGPUProfile{{Name: "grid_a100-10c", FrameBufferGB: 10}, {Name: "grid_a100-40c", FrameBufferGB: 40}, {Name: "odd"}},
		GPUs: []GPU{
			{PCIID: "a", VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect",
				VGPUs: []VGPUUser{{VM: VMRef{MOID: "vm-1"}, Profiles: []string{"grid_a100-10c"}}}},
			{PCIID: "b", VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect"},
			{PCIID: "c", VendorID: "10de", DeviceID: "2330", MemoryGB: 80, GraphicsType: "direct"},
		}}
	vgpuAvailability(h)
	var got []any
	for _, p := range h.VGPUProfiles {
		if p.Available == nil {
			got = append(got, nil)
		} else {
			got = append(got, *p.Available)
		}
	}
	if want := []any{int64(7), int64(1), nil}; !reflect.DeepEqual(got, want) {
		t.Errorf("available %v, want %v", got, want)
	}
	h.GPUs[2].GraphicsType = "sharedDirect"
	h.VGPUProfiles[0].Available, h.VGPUProfiles[1].Available = nil, nil
	vgpuAvailability(h)
	if h.VGPUProfiles[0].Available != nil || h.VGPUProfiles[1].Available != nil {
		t.Errorf("two models in Shared Direct: %+v, want unknown", h.VGPUProfiles)
	}
}

// With one GPU model in Shared Direct the host says which profiles are
// whose, and the plan asks vCenter nothing more; with two (the H100s'
// passthrough turned off too), the VM's ConfigTarget says it, one call.
// Either way the A100 40GB holds two grid_a100-20c, the H100s none.
func TestPlanGPUMMIOVGPUModels(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	c := labClient(lab)
	acctest.Must(t, lab.ConfigureGraphics(ctx, host, "sharedDirect", "performance", nil))
	acctest.Must(t, lab.RebootHost(ctx, host))
	plan := func(wantCalls int) {
		t.Helper()
		lab.ResetCalls()
		p, err := c.PlanGPUMMIO(ctx, GPUMMIOChange{VMID: lab.VMID(vm), VGPUs: []string{"grid_a100-20c", "grid_a100-20c", "grid_a100-20c"}})
		acctest.Must(t, err)
		i := slices.IndexFunc(p.Findings, func(f Finding) bool { _, ok := f.(VGPUsDoNotFit); return ok })
		if i < 0 || p.Findings[i].(VGPUsDoNotFit).Fit != 2 {
			t.Errorf("findings %+v, want room for 2", p.Findings)
		}
		if got := lab.Calls()["QueryConfigTarget"]; got != wantCalls {
			t.Errorf("%d QueryConfigTarget calls, want %d", got, wantCalls)
		}
	}
	plan(0)
	acctest.Must(t, c.SetHostPassthrough(ForChange(ctx), lab.HostID(host), map[string]bool{lab.GPUs()[0]: false, lab.GPUs()[1]: false}, nil))
	acctest.Must(t, lab.RebootHost(ctx, host))
	plan(1)
}

// Other running VMs of the host that the plan gives vGPUs count as placed
// before the VM, in place of the vGPUs they run now.
func TestVGPURoomCountsThePlan(t *testing.T) {
	t.Parallel()
	host := &Host{ID: "host-1", Name: "esx01", VGPUProfiles: []VGPUProfile{{Name: "grid_a100-10c"}, {Name: "grid_a100-20c"}},
		GPUs: []GPU{{PCIID: "0000:3b:00.0", VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect",
			VGPUs: []VGPUUser{{VM: VMRef{MOID: "vm-2", Name: "b"}, Profiles: []string{"grid_a100-10c"}}}}}}
	check := vgpuCheck{label: "a", moid: "vm-1", host: host, vgpus: []string{"grid_a100-20c"}, powersOn: true,
		models: map[string][]string{"10de:20f1": {"grid_a100-10c", "grid_a100-20c"}}}
	if fit, why := vgpuRoom(check, "grid_a100-20c"); fit != 0 || len(why) != 1 || !strings.Contains(why[0], "virtual machine b") {
		t.Errorf("beside b's running 10C: room %d (%v), want none for another size", fit, why)
	}
	// The plan gives b a 20C instead: one more fits.
	check.others = []PlannedVGPUs{{MOID: "vm-2", Name: "b", Profiles: []string{"grid_a100-20c"}}}
	if fit, why := vgpuRoom(check, "grid_a100-20c"); fit != 1 {
		t.Errorf("beside b's planned 20C: room %d (%v), want 1", fit, why)
	}
	// Two planned 20Cs fill the GPU, and the reason names the plan's VMs.
	check.others = append(check.others, PlannedVGPUs{MOID: "vm-3", Name: "c", Profiles: []string{"grid_a100-20c"}})
	if fit, why := vgpuRoom(check, "grid_a100-20c"); fit != 0 || len(why) != 1 || !strings.Contains(why[0], "this plan gives b, c") {
		t.Errorf("beside the plan's two 20Cs: room %d (%v), want none, naming b and c", fit, why)
	}
	// A planned 10C keeps 20Cs off the GPU.
	check.others = check.others[:1]
	check.others[0].Profiles = []string{"grid_a100-10c"}
	if fit, why := vgpuRoom(check, "grid_a100-20c"); fit != 0 || len(why) != 1 || !strings.Contains(why[0], "another size (grid_a100-10c)") {
		t.Errorf("beside the plan's 10C: room %d (%v), want none for another size", fit, why)
	}
}

// A MIG-backed profile beside a running MIG-backed vGPU of another size, on
// a GPU in MIG mode, is the host's to place: no finding.
func TestVGPUPlanLeavesMIGSizesSideBySideToTheHost(t *testing.T) {
	host := &Host{ID: "host-1", Name: "esx01", VGPUProfiles: []VGPUProfile{{Name: "grid_a100-3-20c"}, {Name: "grid_a100-2-10c"}},
		GPUs: []GPU{{PCIID: "0000:3b:00.0", VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect",
			VGPUMode: "multiInstanceGpu",
			VGPUs:    []VGPUUser{{VM: VMRef{MOID: "vm-2", Name: "b"}, Profiles: []string{"grid_a100-3-20c"}}}}}}
	check := vgpuCheck{label: "a", moid: "vm-1", host: host, vgpus: []string{"grid_a100-2-10c"}, powersOn: true,
		models: map[string][]string{"10de:20f1": {"grid_a100-3-20c", "grid_a100-2-10c"}}}
	if f := planVGPUs(check); len(f) > 0 {
		t.Errorf("MIG-backed profile: findings %+v, want none (left to the host)", f)
	}
}

// MIG-backed profiles are told by their name too, for a vCenter before API
// 8.0.3 that gives no vgpuMode: MIG places instances of different sizes
// side by side, and an A100 40GB holds one A100-4-20C, not 40/20, so the
// equal-size rule says nothing of them and the room is the host's to
// decide, with no availability claimed.
func TestVGPURoomMIGByName(t *testing.T) {
	t.Parallel()
	profiles := []VGPUProfile{{Name: "grid_a100-3-20c", FrameBufferGB: 20}, {Name: "grid_a100-2-10c", FrameBufferGB: 10},
		{Name: "grid_a100-4-20c", FrameBufferGB: 20}, {Name: "grid_a100-20c", FrameBufferGB: 20}}
	host := &Host{ID: "host-1", Name: "esx01", VGPUProfiles: profiles,
		GPUs: []GPU{{PCIID: "0000:3b:00.0", VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect",
			VGPUs: []VGPUUser{{VM: VMRef{MOID: "vm-2", Name: "b"}, Profiles: []string{"grid_a100-3-20c"}}}}}}
	models := map[string][]string{"10de:20f1": {"grid_a100-20c", "grid_a100-2-10c", "grid_a100-3-20c", "grid_a100-4-20c"}}
	check := vgpuCheck{label: "a", moid: "vm-1", host: host, vgpus: []string{"grid_a100-2-10c"}, powersOn: true, models: models}
	if f := planVGPUs(check); len(f) > 0 {
		t.Errorf("grid_a100-2-10c beside a running grid_a100-3-20c: findings %+v, want none (left to the host)", f)
	}
	// A time-sliced profile asked of a GPU that runs MIG-backed vGPUs: the
	// GPU is in MIG mode, which the equal-size rule does not model either.
	if fit, why := vgpuRoom(check, "grid_a100-20c"); fit != MaxVGPUsPerVM || len(why) != 0 {
		t.Errorf("grid_a100-20c beside a MIG-backed vGPU: room %d (%v), want the host to decide", fit, why)
	}
	empty := &Host{ID: "host-2", Name: "esx02", VGPUProfiles: profiles,
		GPUs: []GPU{{PCIID: "0000:3b:00.0", VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect"}}}
	if fit, _ := vgpuRoom(vgpuCheck{host: empty, models: models}, "grid_a100-4-20c"); fit != MaxVGPUsPerVM {
		t.Errorf("grid_a100-4-20c on an empty A100 40GB: room %d, want the host to decide (not 40/20)", fit)
	}
	vgpuAvailability(empty)
	for _, p := range empty.VGPUProfiles {
		mig := p.Name != "grid_a100-20c"
		got := "unknown"
		if p.Available != nil {
			got = fmt.Sprint(*p.Available)
		}
		if want := map[bool]string{true: "unknown", false: "2"}[mig]; got != want {
			t.Errorf("%s: available %s, want %s", p.Name, got, want)
		}
	}
	// A GPU in MIG or mixed-size mode claims no availability either.
	for _, mode := range []string{"multiInstanceGpu", "mixedSize"} {
		empty.GPUs[0].VGPUMode = mode
		for i := range empty.VGPUProfiles {
			empty.VGPUProfiles[i].Available = nil
		}
		vgpuAvailability(empty)
		for _, p := range empty.VGPUProfiles {
			if p.Available != nil {
				t.Errorf("%s on a GPU in %s mode: available %d, want unknown", p.Name, mode, *p.Available)
			}
		}
	}
}

func TestMIGBackedVGPU(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"grid_a100-3-20c": true, "grid_a100-1-5cme": true, "nvidia_h100xm-7-80c": true, "grid_a100-20c": false,
		"grid_a100-40c": false, "nvidia_h100xm-80c": false, "a100-3-20c": false, "grid_a100-x-20c": false, "grid_a100-3-20": false,
	} {
		if got := migBackedVGPU(name); got != want {
			t.Errorf("migBackedVGPU(%q) = %v, want %v", name, got, want)
		}
	}
}

// A nil ConfigTarget (QueryConfigTargetResponse.returnval is optional)
// gives no models, so the room is left to the host, as for a failed read.
func TestVGPUModelsOfTarget(t *testing.T) {
	t.Parallel()
	if got := vgpuModelsOfTarget(nil); got != nil {
		t.Errorf("nil target: %v, want nil", got)
	}
	target := &types.ConfigTarget{VgpuProfileInfo: []types.VirtualMachineVgpuProfileInfo{
		{ProfileName: "grid_a100-40c", DeviceVendorId: 0x20f1<<16 | 0x10de},
		{ProfileName: "grid_a100-20c", DeviceVendorId: 0x20f1<<16 | 0x10de},
	}}
	if got, want := vgpuModelsOfTarget(target), map[string][]string{"10de:20f1": {"grid_a100-20c", "grid_a100-40c"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("models %v, want %v", got, want)
	}
}

// GPUs a host graphics resource of the plan takes out of Shared Direct offer
// no vGPUs after the apply's reboot: a profile only they offer is refused,
// and the room counts the GPUs that stay.
func TestVGPUsWithGPUsLeavingSharedDirect(t *testing.T) {
	a100 := func(pci string) GPU {
		return GPU{PCIID: pci, VendorID: "10de", DeviceID: "20f1", MemoryGB: 40, GraphicsType: "sharedDirect"}
	}
	host := &Host{ID: "host-1", Name: "esx01", VGPUProfiles: []VGPUProfile{{Name: "grid_a100-20c", FrameBufferGB: 20}},
		GPUs: []GPU{a100("0000:3b:00.0"), a100("0000:5e:00.0")}}
	check := vgpuCheck{label: "a", moid: "vm-1", host: host, vgpus: slices.Repeat([]string{"grid_a100-20c"}, 4),
		models: map[string][]string{"10de:20f1": {"grid_a100-20c"}}}
	if f := planVGPUs(check); len(f) > 0 {
		t.Fatalf("both GPUs stay: findings %+v, want none", f)
	}
	check.leaving = []string{"0000:5e:00.0"}
	f := planVGPUs(check)
	if len(f) != 1 {
		t.Fatalf("one GPU leaves: findings %+v, want the room of the other", f)
	}
	if d, ok := f[0].(VGPUsDoNotFit); !ok || d.Fit != 2 || d.Asked != 4 {
		t.Errorf("one GPU leaves: %+v, want VGPUsDoNotFit with room for 2 of 4", f[0])
	}
	check.leaving = []string{"0000:3b:00.0", "0000:5e:00.0"}
	want := []Finding{VGPUProfileLeavesHost{VM: "a", Host: "esx01", Profile: "grid_a100-20c", Leaving: check.leaving}}
	if f := planVGPUs(check); !reflect.DeepEqual(f, want) {
		t.Errorf("both GPUs leave: findings %+v, want %+v", f, want)
	}
	if host.GPUs[1].GraphicsType != "sharedDirect" {
		t.Errorf("the check changed the host it was given: %+v", host.GPUs[1])
	}
}
