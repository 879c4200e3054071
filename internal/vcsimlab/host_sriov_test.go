package vcsimlab

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// sriovState is a host's SR-IOV entry of a PF and the PCI ids of its VFs
// in hardware.pciDevice and in config.pciPassthruInfo.
func sriovState(t *testing.T, l *Lab, i int, pf sriovPF) (sr types.HostSriovInfo, devices, infos []string) {
	t.Helper()
	h := hostConfig(t, l, i)
	for _, d := range h.Hardware.PciDevice {
		if p, _, vf := pfOf(d.Id); vf && p == pf {
			if uint16(d.VendorId) != mellanox || uint16(d.DeviceId) != connectXVFDevice {
				t.Errorf("VF %s: vendor %#x device %#x", d.Id, uint16(d.VendorId), uint16(d.DeviceId))
			}
			devices = append(devices, d.Id)
		}
	}
	for _, p := range h.Config.PciPassthruInfo {
		info := p.GetHostPciPassthruInfo()
		if s, ok := p.(*types.HostSriovInfo); ok && s.Id == pf.id {
			sr = *s
		}
		if p, _, vf := pfOf(info.Id); vf && p == pf {
			if !info.PassthruCapable {
				t.Errorf("VF %s is not passthrough capable", info.Id)
			}
			infos = append(infos, info.Id)
		}
	}
	return sr, devices, infos
}

// updateSriov sends one HostSriovConfig to host i's HostPciPassthruSystem.
func updateSriov(l *Lab, i int, cfg *types.HostSriovConfig) error {
	ps := ref("HostPciPassthruSystem", "pcipassthrusystem-"+l.HostID(l.HostNames()[i]))
	_, err := methods.UpdatePassthruConfig(
		context.Background(),
		l.Client().Client,
		&types.UpdatePassthruConfig{This: ps, Config: []types.BaseHostPciPassthruConfig{cfg}},
	)
	return err
}

// TestInfiniBandPFs: every host has two ConnectX-7 PFs (15b3:1021), listed
// in hardware.pciDevice and as HostSriovInfo in config.pciPassthruInfo and
// the HostPciPassthruSystem: SR-IOV capable up to 16 VFs, off, no VF. They
// are no GPUs (class 0x02, network).
func TestInfiniBandPFs(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	for i := range l.HostNames() {
		h := hostConfig(t, l, i)
		var sys mo.HostPciPassthruSystem
		retrieve(t, l.Client(), *h.ConfigManager.PciPassthruSystem, []string{"pciPassthruInfo"}, &sys)
		for _, pf := range ibPFs {
			k := slices.IndexFunc(h.Hardware.PciDevice, func(d types.HostPciDevice) bool { return d.Id == pf.id })
			if k < 0 {
				t.Fatalf("%s: no PCI device %s", h.Name, pf.id)
			}
			d := h.Hardware.PciDevice[k]
			if uint16(d.VendorId) != 0x15b3 || uint16(d.DeviceId) != 0x1021 || d.ClassId>>8 != 0x02 || d.Bus != pf.bus {
				t.Errorf("%s %s: %+v", h.Name, pf.id, d)
			}
			for _, infos := range [][]types.BaseHostPciPassthruInfo{h.Config.PciPassthruInfo, sys.PciPassthruInfo} {
				j := slices.IndexFunc(infos, func(p types.BaseHostPciPassthruInfo) bool { return p.GetHostPciPassthruInfo().Id == pf.id })
				if j < 0 {
					t.Fatalf("%s: %s not in pciPassthruInfo", h.Name, pf.id)
				}
				sr, ok := infos[j].(*types.HostSriovInfo)
				want := types.HostSriovInfo{
					HostPciPassthruInfo:         types.HostPciPassthruInfo{Id: pf.id, PassthruCapable: true},
					SriovCapable:                true,
					MaxVirtualFunctionSupported: 16,
				}
				if !ok || *sr != want {
					t.Errorf("%s %s: %#v, want %#v", h.Name, pf.id, infos[j], want)
				}
			}
			if _, devices, infos := sriovState(t, l, i, pf); len(devices)+len(infos) != 0 {
				t.Errorf("%s: VFs before SR-IOV is on: %v %v", h.Name, devices, infos)
			}
		}
	}
}

// TestSriovConfig: HostSriovConfig through UpdatePassthruConfig, active at
// once on the lab's hosts: the requested VFs appear at the functions after
// their PF, passthrough capable; lowering the count or turning SR-IOV off
// removes them; counts above the maximum and devices without SR-IOV are
// refused with HostConfigFault, changing nothing. A VF is passed to a VM
// once its passthrough is active.
func TestSriovConfig(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	pf := ibPFs[0]
	check := func(enabled bool, requested, present int32, wantIDs ...string) {
		t.Helper()
		sr, devices, infos := sriovState(t, l, 0, pf)
		if sr.SriovEnabled != enabled || sr.SriovActive != enabled || sr.NumVirtualFunctionRequested != requested || sr.NumVirtualFunction != present {
			t.Errorf("SR-IOV state %+v, want enabled=active=%v, %d requested, %d present", sr, enabled, requested, present)
		}
		if !slices.Equal(devices, wantIDs) || !slices.Equal(infos, wantIDs) {
			t.Errorf("VFs %v (devices), %v (passthrough), want %v", devices, infos, wantIDs)
		}
	}
	if err := updateSriov(l, 0, &types.HostSriovConfig{
		HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id},
		SriovEnabled:          true,
		NumVirtualFunction:    9,
	}); err != nil {
		t.Fatal(err)
	}
	nine := []string{
		"0000:86:00.1",
		"0000:86:00.2",
		"0000:86:00.3",
		"0000:86:00.4",
		"0000:86:00.5",
		"0000:86:00.6",
		"0000:86:00.7",
		"0000:86:01.0",
		"0000:86:01.1",
	}
	check(true, 9, 9, nine...)
	if sr, _, _ := sriovState(t, l, 1, pf); sr.SriovEnabled {
		t.Error("the change reached another host")
	}

	for _, bad := range []*types.HostSriovConfig{
		{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id}, SriovEnabled: true, NumVirtualFunction: 17},
		{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: "0000:af:00.0"}, SriovEnabled: true, NumVirtualFunction: 1},
		{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: nine[0]}, SriovEnabled: true, NumVirtualFunction: 1},
	} {
		if err := updateSriov(l, 0, bad); !fault.Is(err, &types.HostConfigFault{}) {
			t.Errorf("SR-IOV %s with %d VFs: %v, want HostConfigFault", bad.Id, bad.NumVirtualFunction, err)
		}
	}
	check(true, 9, 9, nine...)

	// Passthrough of a VF, then the VF to a VM of the host.
	vm := ""
	for _, name := range l.VMNames() {
		if l.VMHostName(name) == l.HostNames()[0] && name != "legacy-node" {
			vm = name
		}
	}
	if err := l.AttachGPU(context.Background(), vm, nine[8]); err == nil {
		t.Error("a VF whose passthrough is not active was attached")
	}
	ps := ref("HostPciPassthruSystem", "pcipassthrusystem-"+l.HostID(l.HostNames()[0]))
	if _, err := methods.UpdatePassthruConfig(context.Background(), l.Client().Client, &types.UpdatePassthruConfig{
		This: ps,
		Config: []types.BaseHostPciPassthruConfig{
			&types.HostPciPassthruConfig{Id: nine[8], PassthruEnabled: true},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.AttachGPU(context.Background(), vm, nine[8]); err != nil {
		t.Errorf("attach VF %s to %s: %v", nine[8], vm, err)
	}

	if err := updateSriov(l, 0, &types.HostSriovConfig{
		HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id},
		SriovEnabled:          true,
		NumVirtualFunction:    2,
	}); err != nil {
		t.Fatal(err)
	}
	check(true, 2, 2, nine[:2]...)
	if err := updateSriov(l, 0, &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id}, SriovEnabled: false}); err != nil {
		t.Fatal(err)
	}
	check(false, 0, 0)
}

// TestPendingUntilReboot: on hosts without
// deviceRebindWithoutRebootSupported (Options.HostsNeedReboot), and with
// applyNow false on any host, passthrough and SR-IOV changes are enabled
// but not active, without VFs, until RebootHost.
func TestPendingUntilReboot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{HostsNeedReboot: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	var hc mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, 0), []string{"capability", "runtime.bootTime"}, &hc)
	if c := hc.Capability; c == nil || c.DeviceRebindWithoutRebootSupported == nil || *c.DeviceRebindWithoutRebootSupported {
		t.Fatal("capability.deviceRebindWithoutRebootSupported is not false")
	}
	booted := hc.Runtime.BootTime
	pf := ibPFs[1]
	ps := ref("HostPciPassthruSystem", "pcipassthrusystem-"+l.HostID(l.HostNames()[0]))
	if _, err := methods.UpdatePassthruConfig(ctx, l.Client().Client, &types.UpdatePassthruConfig{This: ps, Config: []types.BaseHostPciPassthruConfig{
		&types.HostPciPassthruConfig{Id: "0000:af:00.0", PassthruEnabled: true},
		&types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id}, SriovEnabled: true, NumVirtualFunction: 3},
	}}); err != nil {
		t.Fatal(err)
	}
	a100 := func() (types.HostPciPassthruInfo, string) {
		h := hostConfig(t, l, 0)
		var info types.HostPciPassthruInfo
		for _, p := range h.Config.PciPassthruInfo {
			if p.GetHostPciPassthruInfo().Id == "0000:af:00.0" {
				info = *p.GetHostPciPassthruInfo()
			}
		}
		for _, g := range h.Config.GraphicsInfo {
			if g.PciId == "0000:af:00.0" {
				return info, g.GraphicsType
			}
		}
		return info, ""
	}
	if info, graphics := a100(); !info.PassthruEnabled || info.PassthruActive || graphics != "basic" {
		t.Errorf("A100 before the reboot: %+v, graphics %s; want enabled, not active, basic", info, graphics)
	}
	sr, devices, infos := sriovState(t, l, 0, pf)
	if !sr.SriovEnabled || sr.SriovActive || sr.NumVirtualFunctionRequested != 3 || sr.NumVirtualFunction != 0 || len(devices)+len(infos) != 0 {
		t.Errorf("SR-IOV before the reboot: %+v, VFs %v %v; want enabled, 3 requested, not active, none present", sr, devices, infos)
	}
	if err := l.AttachGPU(ctx, "hpc-node-0", "0000:af:00.0"); err == nil {
		t.Error("a GPU with passthrough pending was attached")
	}

	if err := l.RebootHost(ctx, l.HostNames()[0]); err != nil {
		t.Fatal(err)
	}
	if info, graphics := a100(); !info.PassthruEnabled || !info.PassthruActive || graphics != "direct" {
		t.Errorf("A100 after the reboot: %+v, graphics %s; want active, direct", info, graphics)
	}
	want := []string{"0000:87:00.1", "0000:87:00.2", "0000:87:00.3"}
	sr, devices, infos = sriovState(t, l, 0, pf)
	if !sr.SriovActive || sr.NumVirtualFunction != 3 || !slices.Equal(devices, want) || !slices.Equal(infos, want) {
		t.Errorf("SR-IOV after the reboot: %+v, VFs %v %v; want active, %v", sr, devices, infos, want)
	}
	retrieve(t, l.Client(), hostRef(l, 0), []string{"runtime.bootTime"}, &hc)
	if hc.Runtime.BootTime == nil || (booted != nil && !hc.Runtime.BootTime.After(*booted)) {
		t.Errorf("bootTime %v after the reboot, was %v", hc.Runtime.BootTime, booted)
	}
	if sr, _, _ := sriovState(t, l, 1, pf); sr.SriovEnabled {
		t.Error("the change reached another host")
	}
}

// TestApplyNowFalse: applyNow false leaves a change pending until the host
// reboots, even on a host that can rebind devices without a reboot.
func TestApplyNowFalse(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	pf := ibPFs[0]
	if err := updateSriov(l, 0, &types.HostSriovConfig{
		HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id, ApplyNow: types.NewBool(false)},
		SriovEnabled:          true,
		NumVirtualFunction:    1,
	}); err != nil {
		t.Fatal(err)
	}
	if sr, devices, _ := sriovState(t, l, 0, pf); !sr.SriovEnabled || sr.SriovActive || len(devices) != 0 {
		t.Errorf("before the reboot: %+v, VFs %v; want enabled, not active, none", sr, devices)
	}
	if err := l.RebootHost(context.Background(), l.HostNames()[0]); err != nil {
		t.Fatal(err)
	}
	if sr, devices, _ := sriovState(t, l, 0, pf); !sr.SriovActive || !slices.Equal(devices, []string{"0000:86:00.1"}) {
		t.Errorf("after the reboot: %+v, VFs %v", sr, devices)
	}
}

// TestEthernetSRIOVPFs: the ConnectX-6 Dx ports vmnic4 and vmnic5 are
// SR-IOV PFs (HostSriovInfo, capable up to 8 VFs, off), and their VFs get
// the PCI ids of the SR-IOV rule PF + offset + k × stride: 00.2 to 01.1 for
// port 0, 01.2 to 02.1 for port 1. SR-IOV of vmnic4 is accepted while it is
// a switch's uplink.
func TestEthernetSRIOVPFs(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	pfs := ethPFs()
	h := hostConfig(t, l.Lab, 0)
	for _, pf := range pfs {
		j := slices.IndexFunc(h.Config.PciPassthruInfo, func(p types.BaseHostPciPassthruInfo) bool { return p.GetHostPciPassthruInfo().Id == pf.id })
		if j < 0 {
			t.Fatalf("%s not in pciPassthruInfo", pf.id)
		}
		want := types.HostSriovInfo{
			HostPciPassthruInfo:         types.HostPciPassthruInfo{Id: pf.id, PassthruCapable: true},
			SriovCapable:                true,
			MaxVirtualFunctionSupported: 8,
		}
		if sr, ok := h.Config.PciPassthruInfo[j].(*types.HostSriovInfo); !ok || *sr != want {
			t.Errorf("%s: %#v, want %#v", pf.id, h.Config.PciPassthruInfo[j], want)
		}
	}

	if err := l.reconfigure(l.createDVS("uplink"), &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0),
	}}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"0000:d8:00.0": {"0000:d8:00.2", "0000:d8:00.3", "0000:d8:00.4", "0000:d8:00.5", "0000:d8:00.6", "0000:d8:00.7", "0000:d8:01.0", "0000:d8:01.1"},
		"0000:d8:00.1": {"0000:d8:01.2", "0000:d8:01.3", "0000:d8:01.4", "0000:d8:01.5", "0000:d8:01.6", "0000:d8:01.7", "0000:d8:02.0", "0000:d8:02.1"},
	}
	for _, pf := range pfs {
		if err := updateSriov(l.Lab, 0, &types.HostSriovConfig{
			HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id},
			SriovEnabled:          true,
			NumVirtualFunction:    8,
		}); err != nil {
			t.Fatalf("SR-IOV of %s: %v", pf.id, err)
		}
		sr, devices, infos := sriovState(t, l.Lab, 0, pf)
		if !sr.SriovActive || sr.NumVirtualFunction != 8 || !slices.Equal(devices, want[pf.id]) || !slices.Equal(infos, want[pf.id]) {
			t.Errorf("%s: %+v, VFs %v %v, want active, %v", pf.id, sr, devices, infos, want[pf.id])
		}
	}
	if err := updateSriov(l.Lab, 0, &types.HostSriovConfig{
		HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pfs[0].id},
		SriovEnabled:          true,
		NumVirtualFunction:    9,
	}); !fault.Is(err, &types.HostConfigFault{}) {
		t.Errorf("9 VFs: %v, want HostConfigFault", err)
	}
}

// TestVFIDsAreUnique: no VF of any PF has the PCI id of another VF, of a
// PF or of another lab device.
func TestVFIDsAreUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, d := range pciDevices() {
		seen[d.Id] = "device"
	}
	for _, id := range tenGbENICs {
		seen[id] = "10 GbE NIC"
	}
	for _, pf := range sriovPFs {
		for k := range int(pf.maxVFs) {
			id := vfID(pf, k)
			if owner, dup := seen[id]; dup {
				t.Errorf("VF %d of %s is %s, also %s", k, pf.id, id, owner)
			}
			seen[id] = "a VF of " + pf.id
			if got, j, ok := pfOf(id); !ok || got != pf || j != k {
				t.Errorf("pfOf(%s) = %s, %d, want %s, %d", id, got.id, j, pf.id, k)
			}
		}
	}
}

func sriovOn(pf string, vfs int32) *types.HostSriovConfig {
	return &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf}, SriovEnabled: vfs > 0, NumVirtualFunction: vfs}
}

// TestSriovDevicePools: a host lists one SR-IOV network device pool per
// switch with an uplink whose SR-IOV is active, distributed or standard,
// kept as SR-IOV and the uplinks change; the InfiniBand PFs, no NICs, join
// none.
func TestSriovDevicePools(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	s := l.createDVS("pools")
	uuid := l.dvs(s).Config.GetDVSConfigInfo().Uuid
	member := func(op types.ConfigSpecOperation, pnic string) {
		t.Helper()
		if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(op, pnic, 0)}}); err != nil {
			t.Fatal(err)
		}
	}
	member(types.ConfigSpecOperationAdd, "vmnic4")
	l.wantPools("before SR-IOV", 0)
	for _, cfg := range []*types.HostSriovConfig{sriovOn("0000:d8:00.0", 4), sriovOn(ibPFs[0].id, 4)} {
		if err := updateSriov(l.Lab, 0, cfg); err != nil {
			t.Fatal(err)
		}
	}
	l.wantPools("SR-IOV on vmnic4", 0, []string{uuid, "vmnic4"})
	l.wantPools("another host", 1)

	member(types.ConfigSpecOperationEdit, "vmnic5")
	l.wantPools("uplink moved to vmnic5", 0)
	if err := updateSriov(l.Lab, 0, sriovOn("0000:d8:00.1", 2)); err != nil {
		t.Fatal(err)
	}
	l.wantPools("SR-IOV on vmnic5", 0, []string{uuid, "vmnic5"})
	member(types.ConfigSpecOperationRemove, "")
	l.wantPools("host off the switch", 0)

	if err := l.SetStandardSwitchUplinks(ctx, l.HostNames()[0], "vSwitch1", "vmnic4", "vmnic5"); err != nil {
		t.Fatal(err)
	}
	l.wantPools("vSwitch1 on vmnic4 and vmnic5", 0, []string{"key-vim.host.VirtualSwitch-vSwitch1", "vmnic4", "vmnic5"})
	if err := updateSriov(l.Lab, 0, sriovOn("0000:d8:00.0", 0)); err != nil {
		t.Fatal(err)
	}
	l.wantPools("SR-IOV off on vmnic4", 0, []string{"key-vim.host.VirtualSwitch-vSwitch1", "vmnic5"})
}

// TestSriovDevicePoolsAfterReboot: a pool appears when SR-IOV takes effect,
// at the reboot for a change pending.
func TestSriovDevicePoolsAfterReboot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start, err := Start(ctx, Options{HostsNeedReboot: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(start.Close)
	l := &lab{Lab: start, t: t, c: newClient(t, start)}
	if err := l.SetStandardSwitchUplinks(ctx, l.HostNames()[0], "vSwitch1", "vmnic4"); err != nil {
		t.Fatal(err)
	}
	if err := updateSriov(l.Lab, 0, sriovOn("0000:d8:00.0", 4)); err != nil {
		t.Fatal(err)
	}
	l.wantPools("pending", 0)
	if err := l.RebootHost(ctx, l.HostNames()[0]); err != nil {
		t.Fatal(err)
	}
	l.wantPools("after the reboot", 0, []string{"key-vim.host.VirtualSwitch-vSwitch1", "vmnic4"})
}

// TestSriovRefusedOnPassedThroughFunction: SR-IOV on a function passed
// through whole is refused with HostConfigFault and changes nothing: the
// lab's safe answer where the vSphere documentation says nothing.
func TestSriovRefusedOnPassedThroughFunction(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	pf := ibPFs[0]
	ps := ref("HostPciPassthruSystem", "pcipassthrusystem-"+l.HostID(l.HostNames()[0]))
	if _, err := methods.UpdatePassthruConfig(context.Background(), l.Client().Client, &types.UpdatePassthruConfig{
		This: ps,
		Config: []types.BaseHostPciPassthruConfig{
			&types.HostPciPassthruConfig{Id: pf.id, PassthruEnabled: true},
		},
	}); err != nil {
		t.Fatal(err)
	}
	err := updateSriov(
		l,
		0,
		&types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id}, SriovEnabled: true, NumVirtualFunction: 2},
	)
	if !fault.Is(err, &types.HostConfigFault{}) {
		t.Fatalf("SR-IOV on a passed-through function: %v, want HostConfigFault", err)
	}
	sr, devices, infos := sriovState(t, l, 0, pf)
	if !sr.PassthruEnabled || sr.SriovEnabled || len(devices)+len(infos) != 0 {
		t.Errorf("after the refusal: %+v, VFs %v %v; want passthrough kept, SR-IOV off, no VFs", sr, devices, infos)
	}
}
