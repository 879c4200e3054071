package vcsimlab

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

const labA100 = "0000:af:00.0"

// vgpuPair is a lab whose first two hosts share their A100 (Shared
// Direct), with VM "a" on the first given vGPU profile and powered on.
func vgpuPair(t *testing.T, profile string) (*Lab, context.Context, string, string) {
	t.Helper()
	l, ctx := vgpuLab(t, "performance")
	second := l.HostNames()[1]
	must(t, l.ConfigureGraphics(ctx, second, "sharedDirect", "performance", nil))
	must(t, l.RebootHost(ctx, second))
	must(t, l.AttachVGPU(ctx, "a", profile))
	must(t, l.PowerOnVM(ctx, "a"))
	return l, ctx, l.HostNames()[0], second
}

// vCenter's vgpu.hotmigrate.enabled starts false; vMotion of a running VM
// with a vGPU is refused until it is true, then places the vGPU on the
// destination's GPU, and both hosts list the VM where it runs. A
// destination without room refuses it.
func TestVMotionOfVGPUVMs(t *testing.T) {
	t.Parallel()
	l, ctx, first, second := vgpuPair(t, "grid_a100-20c")
	opts, err := object.NewOptionManager(l.Client().Client, *l.Client().ServiceContent.Setting).Query(ctx, vgpuHotMigrateSetting)
	if err != nil || len(opts) != 1 || opts[0].GetOptionValue().Value != "false" {
		t.Fatalf("vCenter's %s: %v, %v; want false", vgpuHotMigrateSetting, opts, err)
	}
	if err := l.MigrateVM(ctx, "a", second); err == nil || !strings.Contains(err.Error(), "vGPU hot migration is not enabled") {
		t.Fatalf("vMotion without %s: %v", vgpuHotMigrateSetting, err)
	}
	must(t, l.SetVCenterSetting(ctx, vgpuHotMigrateSetting, "true"))

	// The second host's A100 holds one 40C: no room for a 20C.
	must(t, l.CreateVM(ctx, "full", second, 19))
	must(t, l.AttachVGPU(ctx, "full", "grid_a100-40c"))
	must(t, l.PowerOnVM(ctx, "full"))
	wantInsufficientGraphics(t, l.MigrateVM(ctx, "a", second), "vMotion to a full GPU")
	if l.VMHostName("a") != first {
		t.Fatalf("a refused vMotion is on %s", l.VMHostName("a"))
	}
	must(t, l.PowerOffVM(ctx, "full"))

	must(t, l.MigrateVM(ctx, "a", second))
	if l.VMHostName("a") != second {
		t.Fatalf("a is on %s after vMotion to %s", l.VMHostName("a"), second)
	}
	if got := gpuVMs(t, l, 1, labA100); !slices.Equal(got, []string{"a"}) {
		t.Errorf("%s's A100 lists %v, want a", second, got)
	}
	if got := gpuVMs(t, l, 0, labA100); len(got) != 0 {
		t.Errorf("%s's A100 still lists %v", first, got)
	}
	// The first host's A100 is free again: another VM's 40C fits there.
	must(t, l.AttachVGPU(ctx, "b", "grid_a100-40c"))
	must(t, l.PowerOnVM(ctx, "b"))
}

// DRS moves a running VM with a vGPU off a host entering maintenance mode
// only with the cluster's VgpuMMAutomationTimeoutSecs at -1 and vCenter's
// vgpu.hotmigrate.enabled true, to a host whose GPUs have room; otherwise
// the task waits and times out.
func TestMaintenanceModeMovesVGPUVMs(t *testing.T) {
	t.Parallel()
	l, ctx, first, second := vgpuPair(t, "grid_a100-20c")
	stays := func(what string) {
		t.Helper()
		if err := enterMaintenance(ctx, l, first, 1); !fault.Is(err, &types.Timedout{}) {
			t.Fatalf("maintenance mode %s: %v, want Timedout", what, err)
		}
		if l.VMHostName("a") != first {
			t.Fatalf("a moved to %s %s", l.VMHostName("a"), what)
		}
	}
	stays("without the DRS option")
	must(t, l.SetClusterDRSOption(ctx, vgpuEvacuationOption, "-1"))
	stays("without vgpu.hotmigrate.enabled")
	must(t, l.SetVCenterSetting(ctx, vgpuHotMigrateSetting, "true"))
	must(t, l.CreateVM(ctx, "full", second, 19))
	must(t, l.AttachVGPU(ctx, "full", "grid_a100-40c"))
	must(t, l.PowerOnVM(ctx, "full"))
	stays("with no room on the other hosts")
	must(t, l.PowerOffVM(ctx, "full"))

	must(t, enterMaintenance(ctx, l, first, 0))
	if l.VMHostName("a") != second {
		t.Fatalf("a is on %s after %s entered maintenance mode", l.VMHostName("a"), first)
	}
	if got := gpuVMs(t, l, 1, labA100); !slices.Equal(got, []string{"a"}) {
		t.Errorf("%s's A100 lists %v, want a", second, got)
	}
}

// The cluster keeps its DRS advanced options: an incremental spec adds and
// changes options by key, a full one replaces them.
func TestClusterKeepsDRSOptions(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	options := func() map[string]any {
		t.Helper()
		clusters, err := l.adminFinder().ClusterComputeResourceList(ctx, "*")
		must(t, err)
		var c mo.ClusterComputeResource
		must(t, clusters[0].Properties(ctx, clusters[0].Reference(), []string{"configurationEx"}, &c))
		out := map[string]any{}
		for _, o := range c.ConfigurationEx.(*types.ClusterConfigInfoEx).DrsConfig.Option {
			out[o.GetOptionValue().Key] = o.GetOptionValue().Value
		}
		return out
	}
	must(t, l.SetClusterDRSOption(ctx, vgpuEvacuationOption, "-1"))
	must(t, l.SetClusterDRSOption(ctx, "LBMaxVmotionPerHost", "1"))
	must(t, l.SetClusterDRSOption(ctx, vgpuEvacuationOption, "0"))
	if got := options(); len(got) != 2 || got[vgpuEvacuationOption] != "0" || got["LBMaxVmotionPerHost"] != "1" {
		t.Fatalf("options %v, want both, %s 0", got, vgpuEvacuationOption)
	}
	clusters, err := l.adminFinder().ClusterComputeResourceList(ctx, "*")
	must(t, err)
	spec := &types.ClusterConfigSpecEx{DrsConfig: &types.ClusterDrsConfigInfo{
		Option: []types.BaseOptionValue{&types.OptionValue{Key: "LBMaxVmotionPerHost", Value: "2"}},
	}}
	must(t, adminWait(ctx)(clusters[0].Reconfigure(ctx, spec, false)))
	if got := options(); len(got) != 1 || got["LBMaxVmotionPerHost"] != "2" {
		t.Fatalf("options %v after a full spec, want LBMaxVmotionPerHost 2 alone", got)
	}
}
