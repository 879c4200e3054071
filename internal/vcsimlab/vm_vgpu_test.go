package vcsimlab

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// gpuVMs are the VMs host i lists on GPU id (HostGraphicsInfo.vm), by name.
func gpuVMs(t *testing.T, l *Lab, i int, id string) []string {
	t.Helper()
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, i), []string{"config.graphicsInfo"}, &h)
	var out []string
	for _, g := range h.Config.GraphicsInfo {
		if g.PciId != id {
			continue
		}
		for _, ref := range g.Vm {
			var vm mo.VirtualMachine
			retrieve(t, l.Client(), ref, []string{"name"}, &vm)
			out = append(out, vm.Name)
		}
	}
	slices.Sort(out)
	return out
}

// vgpuLab is a lab whose first host shares its A100 (Shared Direct, after
// a reboot), with VMs a, b and c on that host.
func vgpuLab(t *testing.T, policy string) (*Lab, context.Context) {
	t.Helper()
	l := startLab(t)
	ctx := context.Background()
	host := l.HostNames()[0]
	must(t, l.ConfigureGraphics(ctx, host, "sharedDirect", policy, nil))
	must(t, l.RebootHost(ctx, host))
	for _, vm := range []string{"a", "b", "c"} {
		must(t, l.CreateVM(ctx, vm, host, 19))
	}
	return l, ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantInsufficientGraphics(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "Graphics resources admission control failed") {
		t.Errorf("%s: %v, want InsufficientGraphicsResourcesFault", what, err)
	}
}

// A GPU in Shared Direct takes vGPUs of one profile at a time, as many as
// NVIDIA's table allows (A100 40GB: two 20C), while their VMs run: a third
// is refused at power-on, as is another profile, until the GPU is empty;
// the host lists the running VMs on the GPU.
func TestVGPUsAreAdmittedAtPowerOn(t *testing.T) {
	t.Parallel()
	l, ctx := vgpuLab(t, "performance")
	const a100 = "0000:af:00.0"
	must(t, l.AttachVGPU(ctx, "a", "grid_a100-20c"))
	must(t, l.AttachVGPU(ctx, "b", "grid_a100-20c"))
	must(t, l.AttachVGPU(ctx, "c", "grid_a100-10c"))
	must(t, l.PowerOnVM(ctx, "a"))
	must(t, l.PowerOnVM(ctx, "b"))
	if got := gpuVMs(t, l, 0, a100); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("A100 lists %v, want a and b", got)
	}
	wantInsufficientGraphics(t, l.PowerOnVM(ctx, "c"), "a 10C beside two 20Cs")
	must(t, l.PowerOffVM(ctx, "a"))
	if got := gpuVMs(t, l, 0, a100); !slices.Equal(got, []string{"b"}) {
		t.Errorf("A100 after a's power-off lists %v, want b", got)
	}
	wantInsufficientGraphics(t, l.PowerOnVM(ctx, "c"), "a 10C beside a 20C")
	must(t, l.PowerOffVM(ctx, "b"))
	must(t, l.PowerOnVM(ctx, "c"))
	if got := gpuVMs(t, l, 0, a100); !slices.Equal(got, []string{"c"}) {
		t.Errorf("A100 lists %v, want c", got)
	}
	must(t, l.PowerOffVM(ctx, "c"))

	// A profile no GPU of the host offers (the H100s are passed through),
	// and a host with no GPU in Shared Direct.
	must(t, l.AttachVGPU(ctx, "hpc-node-0", "nvidia_h100xm-80c"))
	wantInsufficientGraphics(t, l.PowerOnVM(ctx, "hpc-node-0"), "an H100 profile")
	must(t, l.CreateVM(ctx, "elsewhere", l.HostNames()[1], 19))
	must(t, l.AttachVGPU(ctx, "elsewhere", "grid_a100-20c"))
	wantInsufficientGraphics(t, l.PowerOnVM(ctx, "elsewhere"), "a host without Shared Direct")
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, "elsewhere"), []string{"runtime.powerState"}, &vm)
	if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("a refused VM is %s", vm.Runtime.PowerState)
	}
}

// The assignment policy picks the GPU: performance spreads vGPUs over the
// GPUs, consolidation fills one first. Both H100s of the host are given
// back by passthrough, so that it shares two of a kind.
func TestVGPUAssignmentPolicy(t *testing.T) {
	t.Parallel()
	for policy, want := range map[string][2][]string{
		"performance":   {{"a"}, {"b"}},
		"consolidation": {{"a", "b"}, nil},
	} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			l, ctx := vgpuLab(t, policy)
			host := l.HostNames()[0]
			for _, id := range []string{"0000:3b:00.0", "0000:5e:00.0"} {
				must(t, l.updatePassthru(ctx, host, func([]types.BaseHostPciPassthruInfo) types.BaseHostPciPassthruConfig {
					return &types.HostPciPassthruConfig{Id: id, PassthruEnabled: false}
				}))
			}
			must(t, l.AttachVGPU(ctx, "a", "nvidia_h100xm-20c"))
			must(t, l.AttachVGPU(ctx, "b", "nvidia_h100xm-20c"))
			must(t, l.PowerOnVM(ctx, "a"))
			must(t, l.PowerOnVM(ctx, "b"))
			got := [2][]string{gpuVMs(t, l, 0, "0000:3b:00.0"), gpuVMs(t, l, 0, "0000:5e:00.0")}
			if !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
				t.Errorf("H100s list %v, want %v", got, want)
			}
		})
	}
}
