package vcsimlab

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// hostGraphics is what host i and its graphics manager say of its
// graphics: the manager's four properties, and the host's GPUs' graphics
// types by PCI id.
func hostGraphics(t *testing.T, l *Lab, i int) (mo.HostGraphicsManager, map[string]string) {
	t.Helper()
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, i), []string{
		"configManager.graphicsManager", "config.graphicsInfo", "config.graphicsConfig",
		"config.sharedPassthruGpuTypes", "config.sharedGpuCapabilities",
	}, &h)
	if h.ConfigManager.GraphicsManager == nil {
		t.Fatal("the host has no graphics manager")
	}
	var m mo.HostGraphicsManager
	retrieve(t, l.Client(), *h.ConfigManager.GraphicsManager,
		[]string{"graphicsInfo", "graphicsConfig", "sharedPassthruGpuTypes", "sharedGpuCapabilities"}, &m)
	if len(m.GraphicsInfo) != len(h.Config.GraphicsInfo) || !reflect.DeepEqual(m.GraphicsConfig, h.Config.GraphicsConfig) ||
		!slices.Equal(m.SharedPassthruGpuTypes, h.Config.SharedPassthruGpuTypes) ||
		len(m.SharedGpuCapabilities) != len(h.Config.SharedGpuCapabilities) {
		t.Fatalf("the graphics manager says %+v, the host %+v", m, h.Config)
	}
	gpuTypes := map[string]string{}
	for j, g := range h.Config.GraphicsInfo {
		if m.GraphicsInfo[j].GraphicsType != g.GraphicsType {
			t.Fatalf("GPU %s: the manager says %s, the host %s", g.PciId, m.GraphicsInfo[j].GraphicsType, g.GraphicsType)
		}
		gpuTypes[g.PciId] = g.GraphicsType
	}
	return m, gpuTypes
}

func updateGraphics(l *Lab, m mo.HostGraphicsManager, cfg types.HostGraphicsConfig) error {
	_, err := methods.UpdateGraphicsConfig(context.Background(), l.Client().Client,
		&types.UpdateGraphicsConfig{This: m.Self, Config: cfg})
	return err
}

// A host's graphics start as ESXi ships them (Shared, performance), and
// no GPU offers a vGPU type: the H100s are passed through, the A100 has no
// host driver. A Shared Direct configuration is kept at once and takes
// effect at the host's next reboot: the A100 is then shared by NVIDIA's
// vGPU manager and the host offers its C-series types, with vMotion and
// suspend. A GPU given back from passthrough starts as configured, and
// adds its types.
func TestGraphicsConfigTakesEffectAtReboot(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	m, gpus := hostGraphics(t, l, 0)
	if m.GraphicsConfig.HostDefaultGraphicsType != "shared" || m.GraphicsConfig.SharedPassthruAssignmentPolicy != "performance" ||
		len(m.GraphicsConfig.DeviceType) != 0 || len(m.SharedPassthruGpuTypes) != 0 {
		t.Fatalf("a new host's graphics: %+v", m)
	}
	want := map[string]string{"0000:3b:00.0": "direct", "0000:5e:00.0": "direct", "0000:af:00.0": "basic"}
	if !maps.Equal(gpus, want) {
		t.Fatalf("GPUs %v, want %v", gpus, want)
	}

	cfg := types.HostGraphicsConfig{HostDefaultGraphicsType: "sharedDirect", SharedPassthruAssignmentPolicy: "consolidation"}
	if err := updateGraphics(l, m, cfg); err != nil {
		t.Fatal(err)
	}
	m, gpus = hostGraphics(t, l, 0)
	if !reflect.DeepEqual(*m.GraphicsConfig, cfg) || !maps.Equal(gpus, want) || len(m.SharedPassthruGpuTypes) != 0 {
		t.Fatalf("before the reboot: %+v, GPUs %v; want the configuration kept, the GPUs as they were", m, gpus)
	}

	if err := l.RebootHost(ctx, l.HostNames()[0]); err != nil {
		t.Fatal(err)
	}
	m, gpus = hostGraphics(t, l, 0)
	want["0000:af:00.0"] = "sharedDirect"
	a100 := []string{"grid_a100-40c", "grid_a100-20c", "grid_a100-10c", "grid_a100-8c", "grid_a100-5c", "grid_a100-4c"}
	if !maps.Equal(gpus, want) || !slices.Equal(m.SharedPassthruGpuTypes, a100) {
		t.Fatalf("after the reboot: GPUs %v, types %v; want %v and %v", gpus, m.SharedPassthruGpuTypes, want, a100)
	}
	for j, c := range m.SharedGpuCapabilities {
		if c.Vgpu != a100[j] || !c.MigrateSupported || !c.SuspendSupported || c.MemorySnapshotSupported || c.DiskSnapshotSupported {
			t.Errorf("capabilities %d: %+v", j, c)
		}
	}
	if _, other := hostGraphics(t, l, 1); other["0000:af:00.0"] != "basic" {
		t.Errorf("another host's A100: %s, want basic (its graphics are its own)", other["0000:af:00.0"])
	}

	// An H100 given back by passthrough starts as configured, at once.
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, 0), []string{"configManager.pciPassthruSystem"}, &h)
	if _, err := methods.UpdatePassthruConfig(ctx, l.Client().Client, &types.UpdatePassthruConfig{
		This:   *h.ConfigManager.PciPassthruSystem,
		Config: []types.BaseHostPciPassthruConfig{&types.HostPciPassthruConfig{Id: "0000:5e:00.0", PassthruEnabled: false}},
	}); err != nil {
		t.Fatal(err)
	}
	m, gpus = hostGraphics(t, l, 0)
	want["0000:5e:00.0"] = "sharedDirect"
	if !maps.Equal(gpus, want) || !slices.Contains(m.SharedPassthruGpuTypes, "nvidia_h100xm-80c") || len(m.SharedPassthruGpuTypes) != len(a100)+7 {
		t.Fatalf("H100 given back: GPUs %v, types %v; want %v and the H100's seven types beside the A100's", gpus, m.SharedPassthruGpuTypes, want)
	}
}

// What UpdateGraphicsConfig refuses, with InvalidArgument naming the
// property, changing nothing.
func TestGraphicsConfigRefusals(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	m, _ := hostGraphics(t, l, 0)
	good := func() types.HostGraphicsConfig {
		return types.HostGraphicsConfig{HostDefaultGraphicsType: "shared", SharedPassthruAssignmentPolicy: "performance"}
	}
	for _, tc := range []struct {
		property string
		change   func(*types.HostGraphicsConfig)
	}{
		{"config.hostDefaultGraphicsType", func(c *types.HostGraphicsConfig) { c.HostDefaultGraphicsType = "direct" }},
		{"config.sharedPassthruAssignmentPolicy", func(c *types.HostGraphicsConfig) { c.SharedPassthruAssignmentPolicy = "fastest" }},
		{"config.deviceType.deviceId", func(c *types.HostGraphicsConfig) {
			c.DeviceType = []types.HostGraphicsConfigDeviceType{{DeviceId: "0000:d8:00.0", GraphicsType: "sharedDirect"}}
		}},
		{"config.deviceType.graphicsType", func(c *types.HostGraphicsConfig) {
			c.DeviceType = []types.HostGraphicsConfigDeviceType{{DeviceId: "0000:af:00.0", GraphicsType: "basic"}}
		}},
	} {
		cfg := good()
		tc.change(&cfg)
		err := updateGraphics(l, m, cfg)
		if invalidProperty(err) != tc.property {
			t.Errorf("%+v: %v, want InvalidArgument on %s", cfg, err, tc.property)
		}
	}
	if after, _ := hostGraphics(t, l, 0); !reflect.DeepEqual(after.GraphicsConfig, m.GraphicsConfig) {
		t.Errorf("refused configurations changed the host's: %+v", after.GraphicsConfig)
	}
	if err := updateGraphics(l, m, good()); err != nil {
		t.Errorf("the default configuration itself: %v", err)
	}
	var other mo.HostGraphicsManager
	other.Self = types.ManagedObjectReference{Type: "HostGraphicsManager", Value: "ha-graphics-manager"}
	if err := updateGraphics(l, other, good()); err == nil || !strings.Contains(err.Error(), "ha-graphics-manager") {
		t.Errorf("vcsim's own graphics manager reference: %v, want it not found", err)
	}
}

// invalidProperty is the property an InvalidArgument fault names; "" for
// any other error.
func invalidProperty(err error) string {
	if err == nil || !soap.IsSoapFault(err) {
		return ""
	}
	switch f := soap.ToSoapFault(err).VimFault().(type) {
	case types.InvalidArgument:
		return f.InvalidProperty
	case *types.InvalidArgument:
		return f.InvalidProperty
	}
	return ""
}

// ConfigureGraphics is the vSphere Client's edit: a device's own type
// overrides the host's default, and applies at the next reboot.
func TestConfigureGraphicsDeviceType(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	host := l.HostNames()[1]
	if err := l.ConfigureGraphics(ctx, host, "shared", "consolidation", map[string]string{"0000:af:00.0": "sharedDirect"}); err != nil {
		t.Fatal(err)
	}
	if err := l.RebootHost(ctx, host); err != nil {
		t.Fatal(err)
	}
	m, gpus := hostGraphics(t, l, 1)
	want := []types.HostGraphicsConfigDeviceType{{DeviceId: "0000:af:00.0", GraphicsType: "sharedDirect"}}
	if m.GraphicsConfig.SharedPassthruAssignmentPolicy != "consolidation" || !reflect.DeepEqual(m.GraphicsConfig.DeviceType, want) ||
		gpus["0000:af:00.0"] != "sharedDirect" || len(m.SharedPassthruGpuTypes) != 6 {
		t.Fatalf("after the edit and a reboot: %+v, GPUs %v", m, gpus)
	}
	if err := l.ConfigureGraphics(ctx, "no-such-host", "shared", "performance", nil); err == nil {
		t.Error("a host that does not exist was configured")
	}
}

// QueryConfigTarget lists what the hosts offer for vGPUs once a GPU is in
// Shared Direct: the types, the GPU model (its device and vendor ids in one
// number, its frame buffer) and each type's frame buffer, sharing and
// class; a host that shares no GPU adds nothing.
func TestQueryConfigTargetListsVGPUs(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	eb := environmentBrowser(t, l)
	query := func(host *types.ManagedObjectReference) *types.ConfigTarget {
		res, err := methods.QueryConfigTarget(ctx, l.Client().Client, &types.QueryConfigTarget{This: eb, Host: host})
		if err != nil {
			t.Fatal(err)
		}
		return res.Returnval
	}
	if ct := query(nil); len(ct.SharedGpuPassthroughTypes)+len(ct.VgpuDeviceInfo)+len(ct.VgpuProfileInfo) != 0 {
		t.Fatalf("no GPU shared, the cluster offers %+v", ct)
	}
	must(t, l.ConfigureGraphics(ctx, l.HostNames()[0], "sharedDirect", "performance", nil))
	must(t, l.RebootHost(ctx, l.HostNames()[0]))
	ct := query(nil)
	a100 := int64(0x20f1)<<16 | 0x10de
	if len(ct.SharedGpuPassthroughTypes) != 6 || ct.SharedGpuPassthroughTypes[0].Vgpu != "grid_a100-40c" ||
		len(ct.VgpuDeviceInfo) != 1 || ct.VgpuDeviceInfo[0].DeviceVendorId != a100 || ct.VgpuDeviceInfo[0].MaxFbSizeInGib != 40 ||
		!ct.VgpuDeviceInfo[0].TimeSlicedCapable || ct.VgpuDeviceInfo[0].QuadroProfileCapable || len(ct.VgpuProfileInfo) != 6 {
		t.Fatalf("the cluster offers %+v", ct)
	}
	if p := ct.VgpuProfileInfo[3]; p.ProfileName != "grid_a100-8c" || p.DeviceVendorId != a100 || p.FbSizeInGib != 8 ||
		p.ProfileSharing != "timeSliced" || p.ProfileClass != "compute" {
		t.Errorf("profile 3: %+v", p)
	}
	other := hostRef(l, 1)
	if ct := query(&other); len(ct.SharedGpuPassthroughTypes)+len(ct.VgpuDeviceInfo)+len(ct.VgpuProfileInfo) != 0 {
		t.Errorf("a host that shares no GPU offers %+v", ct)
	}
}
