package vcsimlab

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// hostGPUs are the NVIDIA PCI devices of host i as hardware.pciDevice,
// config.pciPassthruInfo, config.graphicsInfo and the host's
// HostPciPassthruSystem list them, by id.
type hostGPUs struct {
	devices  map[string]types.HostPciDevice
	passthru map[string]types.HostPciPassthruInfo
	graphics map[string]types.HostGraphicsInfo
	system   map[string]types.HostPciPassthruInfo
}

func readHostGPUs(t *testing.T, l *Lab, i int) hostGPUs {
	t.Helper()
	var h mo.HostSystem
	retrieve(
		t,
		l.Client(),
		hostRef(l, i),
		[]string{"hardware.pciDevice", "config.pciPassthruInfo", "config.graphicsInfo", "configManager.pciPassthruSystem"},
		&h,
	)
	out := hostGPUs{devices: map[string]types.HostPciDevice{}, graphics: map[string]types.HostGraphicsInfo{}}
	for _, d := range h.Hardware.PciDevice {
		if uint16(d.VendorId) == nvidia {
			out.devices[d.Id] = d
		}
	}
	gpuInfos := func(infos []types.BaseHostPciPassthruInfo) map[string]types.HostPciPassthruInfo {
		m := map[string]types.HostPciPassthruInfo{}
		for _, p := range infos {
			if info := p.GetHostPciPassthruInfo(); out.devices[info.Id].Id != "" {
				m[info.Id] = *info
			}
		}
		return m
	}
	var sys mo.HostPciPassthruSystem
	retrieve(t, l.Client(), *h.ConfigManager.PciPassthruSystem, []string{"pciPassthruInfo"}, &sys)
	out.passthru, out.system = gpuInfos(h.Config.PciPassthruInfo), gpuInfos(sys.PciPassthruInfo)
	for _, g := range h.Config.GraphicsInfo {
		out.graphics[g.PciId] = g
	}
	return out
}

// With Options.NewerGPUHost the cluster's last host has two H200s at its
// own PCI addresses, and none of the other hosts' GPUs; the other hosts are
// as by default.
func TestNewerGPUHost(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{NewerGPUHost: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	last := len(l.HostNames()) - 1
	for i := range l.HostNames() {
		got := readHostGPUs(t, l, i)
		want := map[string]int16{"0000:3b:00.0": 0x2330, "0000:5e:00.0": 0x2330, "0000:af:00.0": 0x20f1}
		if i == last {
			want = map[string]int16{"0000:19:00.0": 0x2335, "0000:9b:00.0": 0x2335}
		}
		for _, list := range []int{len(got.devices), len(got.passthru), len(got.graphics), len(got.system)} {
			if list != len(want) {
				t.Errorf("host %d: %d devices, %d passthrough entries, %d graphics, %d in its passthrough system; want %d each",
					i, len(got.devices), len(got.passthru), len(got.graphics), len(got.system), len(want))
				break
			}
		}
		for id, device := range want {
			d, info, g := got.devices[id], got.passthru[id], got.graphics[id]
			if d.DeviceId != device || !info.PassthruCapable || got.system[id].Id != id {
				t.Errorf("host %d %s: device %#x, passthrough %+v, in the passthrough system: %v", i, id, uint16(d.DeviceId), info, got.system[id].Id != "")
			}
			if i == last && (!info.PassthruActive || g.MemorySizeInKB != 141<<20 || g.DeviceName != "GH100 [H200 SXM 141GB]" || g.GraphicsType != "direct") {
				t.Errorf("host %d %s: %+v %+v, want an active H200 of 141 GB", i, id, info, g)
			}
		}
	}

	// vSphere's checks follow each host's own GPUs.
	ctx := context.Background()
	var onLast, onFirst string
	for _, vm := range l.VMNames() {
		switch l.VMHostName(vm) {
		case l.HostNames()[last]:
			onLast = vm
		case l.HostNames()[0]:
			onFirst = vm
		}
	}
	if err := l.AttachGPU(ctx, onFirst, "0000:19:00.0"); err == nil {
		t.Errorf("%s (host 0) was given the H200 of the last host", onFirst)
	}
	if err := l.AttachGPU(ctx, onLast, "0000:3b:00.0"); err == nil {
		t.Errorf("%s (the last host) was given an H100 its host does not have", onLast)
	}
	if err := l.AttachGPU(ctx, onLast, "0000:19:00.0"); err != nil {
		t.Errorf("attaching the last host's H200 to %s: %v", onLast, err)
	}
	target, err := adminConfigTarget(ctx, object.NewVirtualMachine(l.Client().Client, vmRef(l, onLast)))
	if err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, p := range target.PciPassthrough {
		if info, ok := p.(*types.VirtualMachinePciPassthroughInfo); ok && uint16(info.PciDevice.VendorId) == nvidia {
			offered = append(offered, info.PciDevice.Id)
		}
	}
	slices.Sort(offered)
	if !slices.Equal(offered, []string{"0000:19:00.0", "0000:9b:00.0"}) {
		t.Errorf("QueryConfigTarget on the last host offers GPUs %v, want its two H200s", offered)
	}
	if g := readHostGPUs(t, l, last).graphics["0000:19:00.0"]; !slices.Equal(g.Vm, []types.ManagedObjectReference{vmRef(l, onLast)}) {
		t.Errorf("graphicsInfo of the H200 lists %v, want %s", g.Vm, onLast)
	}
}

func TestNewerGPUHostNeedsTwoHosts(t *testing.T) {
	t.Parallel()
	if l, err := Start(context.Background(), Options{Hosts: 1, NewerGPUHost: true}); err == nil {
		l.Close()
		t.Fatal("a one-host lab with NewerGPUHost started")
	}
}
