package vsphere

import (
	"context"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestVGPUFrameBufferGB(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]int64{
		"grid_a100-40c": 40, "grid_a100-4c": 4, "nvidia_h100xm-80c": 80, "grid_a100d-80c": 80,
		"grid_a100-3-20c": 20, // MIG-backed: slices, then the frame buffer
		"grid_m10-8q":     8,
		"a100-40c":        0, // no prefix
		"grid_a100":       0,
		"grid_a100-c":     0,
		"nvidia_a40-12":   0,
		"":                0,
	} {
		if got := VGPUFrameBufferGB(name); got != want {
			t.Errorf("VGPUFrameBufferGB(%q) = %d, want %d", name, got, want)
		}
	}
}

// A host read carries its graphics: the configuration, each GPU's graphics
// type now and as configured, and the vGPU types it offers with their
// capabilities once a GPU is in Shared Direct.
func TestHostGraphics(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	name := lab.HostNames()[0]
	id := lab.HostID(name)
	h, err := labClient(lab).Host(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if h.Graphics != (HostGraphics{DefaultType: "shared", AssignmentPolicy: "performance"}) || len(h.VGPUProfiles) != 0 {
		t.Fatalf("a new host: %+v, profiles %v", h.Graphics, h.VGPUProfiles)
	}
	gpuTypes := func(h *Host) map[string][2]string {
		out := map[string][2]string{}
		for _, g := range h.GPUs {
			out[g.PCIID] = [2]string{g.GraphicsType, g.ConfiguredGraphicsType}
		}
		return out
	}
	if got := gpuTypes(h)["0000:af:00.0"]; got != [2]string{"basic", "shared"} {
		t.Errorf("the A100: %v, want basic, configured shared", got)
	}

	if err := lab.ConfigureGraphics(ctx, name, "sharedDirect", "consolidation", nil); err != nil {
		t.Fatal(err)
	}
	if h, err = labClient(lab).Host(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := gpuTypes(h)["0000:af:00.0"]; got != [2]string{"basic", "sharedDirect"} || len(h.VGPUProfiles) != 0 {
		t.Errorf("configured, not rebooted: the A100 %v, profiles %v; want basic, configured sharedDirect, none offered", got, h.VGPUProfiles)
	}
	if err := lab.RebootHost(ctx, name); err != nil {
		t.Fatal(err)
	}
	if h, err = labClient(lab).Host(ctx, id); err != nil {
		t.Fatal(err)
	}
	got := gpuTypes(h)
	if got["0000:af:00.0"] != [2]string{"sharedDirect", "sharedDirect"} || got["0000:3b:00.0"] != [2]string{"direct", "sharedDirect"} {
		t.Errorf("after the reboot: %v", got)
	}
	if h.Graphics.AssignmentPolicy != "consolidation" || len(h.VGPUProfiles) != 6 {
		t.Fatalf("after the reboot: %+v, profiles %+v", h.Graphics, h.VGPUProfiles)
	}
	p := h.VGPUProfiles[0]
	if p.Available == nil || *p.Available != 1 {
		t.Errorf("the first profile's room: %v, want one 40C on the A100 40GB", p.Available)
	}
	p.Available = nil
	if p != (VGPUProfile{Name: "grid_a100-40c", FrameBufferGB: 40, MigrateSupported: true, SuspendSupported: true}) {
		t.Errorf("the first profile: %+v", p)
	}
}
