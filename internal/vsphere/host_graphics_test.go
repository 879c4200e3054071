package vsphere

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// Settings set are read back at once; the GPUs follow at the reboot, and
// until then the state says a reboot is required.
func TestSetHostGraphics(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	name := lab.HostNames()[0]
	id := lab.HostID(name)
	c := labClient(lab)
	st, err := c.HostGraphics(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := HostGraphicsSettings{DefaultType: "shared", AssignmentPolicy: "performance", Devices: map[string]string{}}
	if !reflect.DeepEqual(st.Settings, want) || len(st.Pending) > 0 {
		t.Fatalf("a new host: %+v", st)
	}
	set := HostGraphicsSettings{DefaultType: "shared", AssignmentPolicy: "consolidation", Devices: map[string]string{"0000:af:00.0": "sharedDirect"}}
	if err := c.SetHostGraphics(ForChange(ctx), id, set); err != nil {
		t.Fatal(err)
	}
	st, err = labClient(lab).HostGraphics(ctx, id)
	if err != nil || !reflect.DeepEqual(st.Settings, set) || !slices.Equal(st.Pending, []string{"0000:af:00.0"}) {
		t.Fatalf("after the change: %+v, %v; want the settings, GPU 0000:af:00.0 waiting for a reboot", st, err)
	}
	if pending, err := c.PendingDeviceChanges(ForChange(ctx), id); err != nil || !slices.Equal(pending, []string{"0000:af:00.0"}) {
		t.Fatalf("pending device changes %v (%v), want the GPU's graphics", pending, err)
	}
	if err := lab.RebootHost(ctx, name); err != nil {
		t.Fatal(err)
	}
	if st, err = labClient(lab).HostGraphics(ctx, id); err != nil || len(st.Pending) > 0 {
		t.Fatalf("after the reboot: %+v, %v; want no reboot required", st, err)
	}
	err = c.SetHostGraphics(ForChange(ctx), id, HostGraphicsSettings{DefaultType: "direct", AssignmentPolicy: "performance"})
	if err == nil {
		t.Error("an invalid default type was taken")
	}
}

func TestPlanHostGraphics(t *testing.T) {
	t.Parallel()
	st := &HostGraphicsState{HostID: "host-1", HostName: "esx01", GPUs: []GPU{
		{PCIID: "0000:3b:00.0", DeviceName: "GA100", PassthroughEnabled: true, VMs: []VMRef{{Name: "b"}, {Name: "a"}}}, {PCIID: "0000:af:00.0"},
	}}
	got := PlanHostGraphics(st, HostGraphicsSettings{Devices: map[string]string{
		"0000:3b:00.0": "shared", "0000:af:00.0": "sharedDirect", "0000:d8:00.0": "shared",
	}})
	want := []Finding{
		GraphicsDevicePassedThrough{Host: "esx01", PCIID: "0000:3b:00.0", Name: "GA100", VMs: []string{"a", "b"}},
		GraphicsDeviceNotGPU{Host: "esx01", PCIID: "0000:d8:00.0", GPUs: []string{"0000:3b:00.0", "0000:af:00.0"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings %+v, want %+v", got, want)
	}
	if got := PlanHostGraphics(st, HostGraphicsSettings{DefaultType: "sharedDirect"}); len(got) != 0 {
		t.Errorf("a default type with a GPU passed through: %+v, want nothing (passthrough GPUs keep theirs)", got)
	}
}

// A GPU waits for a reboot when the settings change whether the vGPU
// manager drives it; one passed through, or not a graphics device, never.
func TestHostGraphicsPending(t *testing.T) {
	t.Parallel()
	gpus := []GPU{
		{PCIID: "a", GraphicsType: "basic"}, {PCIID: "b", GraphicsType: "sharedDirect"},
		{PCIID: "c", GraphicsType: "direct"}, {PCIID: "d"}, {PCIID: "e", GraphicsType: "shared"},
	}
	for _, c := range []struct {
		s    HostGraphicsSettings
		want []string
	}{
		{HostGraphicsSettings{DefaultType: "shared"}, []string{"b"}},
		{HostGraphicsSettings{DefaultType: "sharedDirect"}, []string{"a", "e"}},
		{HostGraphicsSettings{DefaultType: "shared", Devices: map[string]string{"b": "sharedDirect", "c": "sharedDirect"}}, nil},
		{HostGraphicsSettings{DefaultType: "sharedDirect", Devices: map[string]string{"a": "shared", "e": "shared"}}, nil},
	} {
		if got := c.s.Pending(gpus); !slices.Equal(got, c.want) {
			t.Errorf("%+v: pending %v, want %v", c.s, got, c.want)
		}
	}
}
