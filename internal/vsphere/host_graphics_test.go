package vsphere

import (
	"context"
	"reflect"
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
	if !reflect.DeepEqual(st.Settings, want) || st.RebootRequired {
		t.Fatalf("a new host: %+v", st)
	}
	set := HostGraphicsSettings{DefaultType: "shared", AssignmentPolicy: "consolidation", Devices: map[string]string{"0000:af:00.0": "sharedDirect"}}
	if err := c.SetHostGraphics(ForChange(ctx), id, set); err != nil {
		t.Fatal(err)
	}
	if st, err = labClient(lab).HostGraphics(ctx, id); err != nil || !reflect.DeepEqual(st.Settings, set) || !st.RebootRequired {
		t.Fatalf("after the change: %+v, %v; want the settings, a reboot required", st, err)
	}
	if err := lab.RebootHost(ctx, name); err != nil {
		t.Fatal(err)
	}
	if st, err = labClient(lab).HostGraphics(ctx, id); err != nil || st.RebootRequired {
		t.Fatalf("after the reboot: %+v, %v; want no reboot required", st, err)
	}
	err = c.SetHostGraphics(ForChange(ctx), id, HostGraphicsSettings{DefaultType: "direct", AssignmentPolicy: "performance"})
	if err == nil {
		t.Error("an invalid default type was taken")
	}
}

func TestPlanHostGraphics(t *testing.T) {
	t.Parallel()
	h := &Host{ID: "host-1", Name: "esx01", GPUs: []GPU{
		{PCIID: "0000:3b:00.0", PassthroughEnabled: true}, {PCIID: "0000:af:00.0"},
	}}
	planned := PlannedHostDevices{Passthrough: map[string]bool{HostDeviceKey("host-1", "0000:AF:00.0"): true}}
	got := PlanHostGraphics(h, HostGraphicsSettings{Devices: map[string]string{
		"0000:3b:00.0": "sharedDirect", "0000:af:00.0": "sharedDirect", "0000:d8:00.0": "shared",
	}}, planned)
	want := []Finding{
		GraphicsDevicePassedThrough{Host: "esx01", PCIID: "0000:3b:00.0"},
		GraphicsDevicePassedThrough{Host: "esx01", PCIID: "0000:af:00.0", Planned: true},
		GraphicsDeviceNotGPU{Host: "esx01", PCIID: "0000:d8:00.0", GPUs: []string{"0000:3b:00.0", "0000:af:00.0"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings %+v, want %+v", got, want)
	}
	if got := PlanHostGraphics(h, HostGraphicsSettings{Devices: map[string]string{"0000:3b:00.0": "shared"}}, PlannedHostDevices{}); len(got) != 0 {
		t.Errorf("a passed-through GPU set to shared: %+v, want nothing", got)
	}
}
