package vcsimlab

import (
	"context"
	"net"
	"reflect"
	"slices"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator/esx"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func hostConfig(t *testing.T, l *Lab, i int) mo.HostSystem {
	t.Helper()
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, i), []string{"name", "config", "hardware", "configManager"}, &h)
	return h
}

func TestHostRDMANICs(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	macs := map[string]string{}
	ips := map[string]bool{}
	_, testNet, _ := net.ParseCIDR("192.0.2.0/24")
	for i := range l.HostNames() {
		h := hostConfig(t, l, i)
		n := h.Config.Network
		pnics := map[string]types.PhysicalNic{}
		pcis := map[string]bool{}
		for _, p := range n.Pnic {
			pnics[p.Device] = p
			if pcis[p.Pci] {
				t.Errorf("%s: PCI address %s used twice", h.Name, p.Pci)
			}
			pcis[p.Pci] = true
		}
		for _, name := range []string{"vmnic0", "vmnic1"} {
			if p := pnics[name]; p.LinkSpeed == nil || p.LinkSpeed.SpeedMb != 10000 || p.RdmaDevice != "" {
				t.Errorf("%s %s: %+v, want 10 GbE without RDMA", h.Name, name, p.LinkSpeed)
			}
		}
		for j, name := range []string{"vmnic4", "vmnic5"} {
			p, ok := pnics[name]
			if !ok || p.LinkSpeed == nil || p.LinkSpeed.SpeedMb != 100000 || !p.LinkSpeed.Duplex || p.Driver != "nmlx5_core" {
				t.Fatalf("%s %s: %+v, want 100 GbE full duplex nmlx5_core", h.Name, name, p)
			}
			if owner, dup := macs[p.Mac]; dup {
				t.Errorf("%s %s: MAC %s also on %s", h.Name, name, p.Mac, owner)
			}
			macs[p.Mac] = h.Name + " " + name
			rdma := n.RdmaDevice[j]
			backing, _ := rdma.Backing.(*types.HostRdmaDevicePnicBacking)
			if p.RdmaDevice != rdma.Key || backing == nil || backing.PairedUplink != name ||
				rdma.ConnectionInfo.State != "active" || rdma.ConnectionInfo.Mtu != 4096 ||
				!rdma.Capability.RoceV1Capable || !rdma.Capability.RoceV2Capable {
				t.Errorf("%s %s: RDMA device %+v not paired, active, MTU 4096, RoCE v1+v2", h.Name, name, rdma)
			}
		}
		if vs := n.Vswitch[0]; vs.Name != "vSwitch0" || !slices.Equal(vs.Pnic, []string{"key-vim.host.PhysicalNic-vmnic0"}) {
			t.Errorf("%s: %s has uplinks %v, want vmnic0 only", h.Name, vs.Name, vs.Pnic)
		}
		vnics := map[string]types.HostVirtualNic{}
		for _, v := range n.Vnic {
			vnics[v.Device] = v
		}
		if v := vnics["vmk0"]; v.Portgroup != "Management Network" || v.Spec.Mtu != 1500 {
			t.Errorf("%s vmk0: %q MTU %d", h.Name, v.Portgroup, v.Spec.Mtu)
		}
		v := vnics["vmk1"]
		ip := net.ParseIP(v.Spec.Ip.IpAddress)
		if v.Portgroup != "pvrdma-vmk" || v.Spec.Mtu != 9000 || !testNet.Contains(ip) || ips[ip.String()] {
			t.Errorf("%s vmk1: %q MTU %d IP %s, want pvrdma-vmk, 9000, a unique address in 192.0.2.0/24", h.Name, v.Portgroup, v.Spec.Mtu, ip)
		}
		ips[ip.String()] = true
	}
}

func TestHostGPUs(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	for i := range l.HostNames() {
		h := hostConfig(t, l, i)
		ids := map[string]bool{}
		var gpus []types.HostPciDevice
		for _, d := range h.Hardware.PciDevice {
			if ids[d.Id] {
				t.Errorf("%s: PCI id %s listed twice", h.Name, d.Id)
			}
			ids[d.Id] = true
			if uint16(d.VendorId) == 0x10de {
				gpus = append(gpus, d)
			}
		}
		if len(gpus) != 3 {
			t.Fatalf("%s: %d NVIDIA devices, want 3", h.Name, len(gpus))
		}
		want := map[string]struct {
			device         uint16
			memKB          int64
			enabled, found bool
		}{
			"0000:3b:00.0": {device: 0x2330, memKB: 80 << 20, enabled: true},
			"0000:5e:00.0": {device: 0x2330, memKB: 80 << 20, enabled: true},
			"0000:af:00.0": {device: 0x20f1, memKB: 40 << 20},
		}
		for _, g := range gpus {
			w := want[g.Id]
			if uint16(g.DeviceId) != w.device || g.ClassId != 0x0302 {
				t.Errorf("%s %s: device %#x class %#x", h.Name, g.Id, uint16(g.DeviceId), g.ClassId)
			}
		}
		var gpuEntries int
		for _, p := range h.Config.PciPassthruInfo {
			info := p.GetHostPciPassthruInfo()
			w, ok := want[info.Id]
			if !ok {
				continue // a NIC: TestPassthruInfoListsNICs
			}
			gpuEntries++
			if !info.PassthruCapable || info.PassthruEnabled != w.enabled || info.PassthruActive != w.enabled {
				t.Errorf("%s %s passthrough: %+v, want enabled=active=%v", h.Name, info.Id, info, w.enabled)
			}
		}
		for _, g := range h.Config.GraphicsInfo {
			w := want[g.PciId]
			if g.MemorySizeInKB != w.memKB || g.GraphicsType != graphicsType(w.enabled) || g.VendorName == "" || g.DeviceName == "" || len(g.Vm) != 0 {
				t.Errorf("%s graphics %+v, want %d KB, %s, no VM", h.Name, g, w.memKB, graphicsType(w.enabled))
			}
		}
		if len(h.Config.GraphicsInfo) != 3 || gpuEntries != 3 {
			t.Errorf("%s: %d graphics, %d GPU passthrough entries, want 3 each", h.Name, len(h.Config.GraphicsInfo), gpuEntries)
		}
	}
	// The simulator's shared template is left alone.
	for _, d := range esx.HostHardwareInfo.PciDevice {
		if uint16(d.VendorId) == 0x10de {
			t.Error("the GPUs leaked into the simulator's hardware template")
		}
	}
}

func advancedOption(t *testing.T, l *Lab, i int) *object.OptionManager {
	t.Helper()
	h := object.NewHostSystem(l.Client().Client, hostRef(l, i))
	om, err := h.ConfigManager().OptionManager(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return om
}

func TestPVRDMAVmknicOption(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	for i := range l.HostNames() {
		opts, err := advancedOption(t, l, i).Query(ctx, pvrdmaOption)
		if err != nil || len(opts) != 1 || opts[0].GetOptionValue().Value != "" {
			t.Fatalf("host %d: QueryOptions(%s) = %v, %v; want one empty value", i, pvrdmaOption, opts, err)
		}
	}
	om := advancedOption(t, l, 0)
	if err := om.Update(ctx, []types.BaseOptionValue{&types.OptionValue{Key: pvrdmaOption, Value: "vmk1"}}); err != nil {
		t.Fatal(err)
	}
	opts, err := om.Query(ctx, pvrdmaOption)
	if err != nil || opts[0].GetOptionValue().Value != "vmk1" {
		t.Errorf("after update: %v, %v; want vmk1", opts, err)
	}
	other, err := advancedOption(t, l, 1).Query(ctx, pvrdmaOption)
	if err != nil || other[0].GetOptionValue().Value != "" {
		t.Errorf("another host: %v, %v; want it unchanged", other, err)
	}
}

func TestUpdateOptionsRefusesUnknownKey(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l)
	ref := advancedOption(t, l, 0).Reference()
	err := object.NewOptionManager(c.Client, ref).Update(ctx, []types.BaseOptionValue{
		&types.OptionValue{Key: pvrdmaOption, Value: "vmk0"},
		&types.OptionValue{Key: "Net.NoSuchOption", Value: "1"},
	})
	var name *types.InvalidName
	if _, ok := fault.As(err, &name); !ok || name.Name != "Net.NoSuchOption" {
		t.Fatalf("UpdateOptions with an unknown key: %v, want InvalidName Net.NoSuchOption", err)
	}
	if _, err := object.NewOptionManager(c.Client, ref).Query(ctx, "Net.NoSuchOption"); !fault.Is(err, &types.InvalidName{}) {
		t.Errorf("the unknown key was created: %v", err)
	}
	opts, err := object.NewOptionManager(c.Client, ref).Query(ctx, pvrdmaOption)
	if err != nil || opts[0].GetOptionValue().Value != "" {
		t.Errorf("a refused update changed %s: %v %v", pvrdmaOption, opts, err)
	}
}

func firewall(t *testing.T, l *Lab, i int) types.ManagedObjectReference {
	t.Helper()
	return *hostConfig(t, l, i).ConfigManager.FirewallSystem
}

func ruleset(t *testing.T, l *Lab, i int, key string) (fromSystem, fromConfig types.HostFirewallRuleset) {
	t.Helper()
	var fw mo.HostFirewallSystem
	retrieve(t, l.Client(), firewall(t, l, i), []string{"firewallInfo"}, &fw)
	h := hostConfig(t, l, i)
	find := func(info *types.HostFirewallInfo) types.HostFirewallRuleset {
		for _, rs := range info.Ruleset {
			if rs.Key == key {
				return rs
			}
		}
		t.Fatalf("host %d: no ruleset %s", i, key)
		return types.HostFirewallRuleset{}
	}
	return find(fw.FirewallInfo), find(h.Config.Firewall)
}

func TestPVRDMARulesetIsPerHost(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	rs, _ := ruleset(t, l, 0, "pvrdma")
	if rs.Enabled || rs.AllowedHosts == nil || !rs.AllowedHosts.AllIp || len(rs.Rule) != 2 {
		t.Fatalf("pvrdma ruleset %+v, want disabled, all IPs, 2 rules", rs)
	}
	dirs := map[string]bool{}
	for _, r := range rs.Rule {
		if r.Port != 28250 || r.EndPort != 28761 || r.Protocol != "tcp" {
			t.Errorf("rule %+v, want TCP 28250-28761", r)
		}
		dirs[string(r.Direction)] = true
	}
	if !dirs["inbound"] || !dirs["outbound"] {
		t.Errorf("directions %v, want inbound and outbound", dirs)
	}

	c := newClient(t, l).Client
	if _, err := methods.EnableRuleset(ctx, c, &types.EnableRuleset{This: firewall(t, l, 0), Id: "pvrdma"}); err != nil {
		t.Fatal(err)
	}
	sys, cfg := ruleset(t, l, 0, "pvrdma")
	if !sys.Enabled || !cfg.Enabled {
		t.Errorf("host 0 after enable: firewall system %v, config.firewall %v; want both enabled", sys.Enabled, cfg.Enabled)
	}
	if sys, cfg := ruleset(t, l, 1, "pvrdma"); sys.Enabled || cfg.Enabled {
		t.Error("enabling on host 0 enabled host 1")
	}
	// Nor does it leak into another lab of the same process.
	other := startLab(t)
	if rs, _ := ruleset(t, other, 0, "pvrdma"); rs.Enabled {
		t.Error("enabling in one lab enabled another lab")
	}
	if _, err := methods.DisableRuleset(ctx, c, &types.DisableRuleset{This: firewall(t, l, 0), Id: "pvrdma"}); err != nil {
		t.Fatal(err)
	}
	if sys, cfg := ruleset(t, l, 0, "pvrdma"); sys.Enabled || cfg.Enabled {
		t.Error("disable left the ruleset enabled")
	}
	if _, err := methods.EnableRuleset(ctx, c, &types.EnableRuleset{This: firewall(t, l, 0), Id: "nope"}); !fault.Is(err, &types.NotFound{}) {
		t.Errorf("enable an unknown ruleset: %v, want NotFound", err)
	}
}

func TestUpdateRuleset(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l).Client
	fw := firewall(t, l, 0)
	update := func(id string, hosts types.HostFirewallRulesetIpList) error {
		_, err := methods.UpdateRuleset(ctx, c, &types.UpdateRuleset{This: fw, Id: id, Spec: types.HostFirewallRulesetRulesetSpec{AllowedHosts: hosts}})
		return err
	}
	list := types.HostFirewallRulesetIpList{
		IpAddress: []string{"192.0.2.11", "192.0.2.12"},
		IpNetwork: []types.HostFirewallRulesetIpNetwork{{Network: "198.51.100.0", PrefixLength: 24}},
	}
	if err := update("pvrdma", list); err != nil {
		t.Fatal(err)
	}
	sys, cfg := ruleset(t, l, 0, "pvrdma")
	for _, rs := range []types.HostFirewallRuleset{sys, cfg} {
		a := rs.AllowedHosts
		if a == nil || a.AllIp || !slices.Equal(a.IpAddress, list.IpAddress) || len(a.IpNetwork) != 1 || a.IpNetwork[0].PrefixLength != 24 {
			t.Errorf("allowed hosts %+v, want %+v", a, list)
		}
	}
	if rs, _ := ruleset(t, l, 1, "pvrdma"); !rs.AllowedHosts.AllIp {
		t.Error("the update reached another host")
	}
	if err := update("pvrdma", types.HostFirewallRulesetIpList{AllIp: true}); err != nil {
		t.Fatal(err)
	}
	if rs, _ := ruleset(t, l, 0, "pvrdma"); !rs.AllowedHosts.AllIp || len(rs.AllowedHosts.IpAddress) != 0 {
		t.Errorf("allowed hosts %+v, want all IPs again", rs.AllowedHosts)
	}
	if err := update("nope", list); !fault.Is(err, &types.NotFound{}) {
		t.Errorf("unknown ruleset: %v, want NotFound", err)
	}
	if err := update("pvrdma", types.HostFirewallRulesetIpList{IpAddress: []string{"not-an-ip"}}); !fault.Is(err, &types.InvalidArgument{}) {
		t.Errorf("bad address: %v, want InvalidArgument", err)
	}
	if err := update("pvrdma", types.HostFirewallRulesetIpList{IpNetwork: []types.HostFirewallRulesetIpNetwork{{Network: "10.0.0.0", PrefixLength: 33}}}); !fault.Is(err, &types.InvalidArgument{}) {
		t.Errorf("bad prefix: %v, want InvalidArgument", err)
	}
}

func TestRefreshFirewall(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	c := newClient(t, l).Client
	if _, err := methods.RefreshFirewall(context.Background(), c, &types.RefreshFirewall{This: firewall(t, l, 0)}); err != nil {
		t.Errorf("RefreshFirewall: %v", err)
	}
}

func TestPciPassthruSystem(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l).Client
	h := hostConfig(t, l, 0)
	ps := h.ConfigManager.PciPassthruSystem
	if ps == nil {
		t.Fatal("no pciPassthruSystem")
	}
	update := func(id string, on bool) error {
		_, err := methods.UpdatePassthruConfig(ctx, c, &types.UpdatePassthruConfig{This: *ps, Config: []types.BaseHostPciPassthruConfig{
			&types.HostPciPassthruConfig{Id: id, PassthruEnabled: on},
		}})
		return err
	}
	if err := update("0000:af:00.0", true); err != nil {
		t.Fatal(err)
	}
	if err := update("0000:3b:00.0", false); err != nil {
		t.Fatal(err)
	}
	var sys mo.HostPciPassthruSystem
	retrieve(t, l.Client(), *ps, []string{"pciPassthruInfo"}, &sys)
	for _, infos := range [][]types.BaseHostPciPassthruInfo{sys.PciPassthruInfo, hostConfig(t, l, 0).Config.PciPassthruInfo} {
		got := map[string]bool{}
		for _, p := range infos {
			info := p.GetHostPciPassthruInfo()
			got[info.Id] = info.PassthruEnabled && info.PassthruActive
		}
		if !got["0000:af:00.0"] || got["0000:3b:00.0"] || !got["0000:5e:00.0"] {
			t.Errorf("passthrough after update: %v, want af and 5e active, 3b not", got)
		}
	}
	for _, g := range hostConfig(t, l, 0).Config.GraphicsInfo {
		if want := graphicsType(g.PciId != "0000:3b:00.0"); g.GraphicsType != want {
			t.Errorf("graphics type of %s = %s after the update, want %s", g.PciId, g.GraphicsType, want)
		}
	}
	for _, p := range hostConfig(t, l, 1).Config.PciPassthruInfo {
		if info := p.GetHostPciPassthruInfo(); info.Id == "0000:af:00.0" && info.PassthruEnabled {
			t.Error("the update reached another host")
		}
	}
	if err := update("0000:99:00.0", true); !fault.Is(err, &types.NotFound{}) {
		t.Errorf("unknown device: %v, want NotFound", err)
	}
	if _, err := methods.Refresh(ctx, c, &types.Refresh{This: *ps}); err != nil {
		t.Errorf("Refresh: %v", err)
	}
}

// TestPassthruInfoListsNICs: config.pciPassthruInfo and the
// HostPciPassthruSystem list every physical NIC's PCI function, capable and
// not enabled, each a device of hardware.pciDevice, and nothing twice.
func TestPassthruInfoListsNICs(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	for i := range l.HostNames() {
		h := hostConfig(t, l, i)
		var sys mo.HostPciPassthruSystem
		retrieve(t, l.Client(), *h.ConfigManager.PciPassthruSystem, []string{"pciPassthruInfo"}, &sys)
		devices := map[string]bool{}
		for _, d := range h.Hardware.PciDevice {
			devices[d.Id] = true
		}
		for _, infos := range [][]types.BaseHostPciPassthruInfo{h.Config.PciPassthruInfo, sys.PciPassthruInfo} {
			byID := map[string]*types.HostPciPassthruInfo{}
			for _, p := range infos {
				info := p.GetHostPciPassthruInfo()
				if byID[info.Id] != nil {
					t.Errorf("%s: %s listed twice", h.Name, info.Id)
				}
				if !devices[info.Id] {
					t.Errorf("%s: %s listed but not in hardware.pciDevice", h.Name, info.Id)
				}
				byID[info.Id] = info
			}
			if len(h.Config.Network.Pnic) != 4 {
				t.Fatalf("%s: %d physical NICs, want 4", h.Name, len(h.Config.Network.Pnic))
			}
			for _, n := range h.Config.Network.Pnic {
				info := byID[n.Pci]
				if info == nil || !info.PassthruCapable || info.PassthruEnabled || info.PassthruActive {
					t.Errorf("%s %s (%s): passthrough %+v, want capable, not enabled", h.Name, n.Device, n.Pci, info)
				}
			}
			capable := 0
			for _, info := range byID {
				if info.PassthruCapable {
					capable++
				}
			}
			if capable != 9 {
				t.Errorf("%s: %d passthrough capable entries, want 9 (3 GPUs, 4 NICs, 2 InfiniBand PFs)", h.Name, capable)
			}
		}
		var hc mo.HostSystem
		retrieve(t, l.Client(), hostRef(l, i), []string{"capability"}, &hc)
		if c := hc.Capability; c == nil || c.DeviceRebindWithoutRebootSupported == nil || !*c.DeviceRebindWithoutRebootSupported {
			t.Errorf("%s: capability.deviceRebindWithoutRebootSupported not true", h.Name)
		}
	}
	// The simulator's shared capability template is left alone.
	if esx.HostCapability.DeviceRebindWithoutRebootSupported != nil {
		t.Error("deviceRebindWithoutRebootSupported leaked into the simulator's capability template")
	}
}

// TestPassthroughOfHostNICs: enabling passthrough of NICs the host uses,
// vmnic0 (uplink of vSwitch0) and vmnic4 (a ConnectX port), is accepted and
// active at once, as for GPUs; disabling restores them.
func TestPassthroughOfHostNICs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := startLab(t)
	c := l.Client().Client
	h := hostConfig(t, l, 0)
	var vmnic0, vmnic4 string
	for _, n := range h.Config.Network.Pnic {
		switch n.Device {
		case "vmnic0":
			vmnic0 = n.Pci
		case "vmnic4":
			vmnic4 = n.Pci
		}
	}
	if !slices.ContainsFunc(h.Config.Network.Vswitch, func(s types.HostVirtualSwitch) bool {
		return s.Name == "vSwitch0" && slices.Contains(s.Pnic, "key-vim.host.PhysicalNic-vmnic0")
	}) {
		t.Fatal("vmnic0 is not an uplink of vSwitch0")
	}
	set := func(on bool) {
		t.Helper()
		_, err := methods.UpdatePassthruConfig(ctx, c, &types.UpdatePassthruConfig{This: *h.ConfigManager.PciPassthruSystem, Config: []types.BaseHostPciPassthruConfig{
			&types.HostPciPassthruConfig{Id: vmnic0, PassthruEnabled: on},
			&types.HostPciPassthruConfig{Id: vmnic4, PassthruEnabled: on},
		}})
		if err != nil {
			t.Fatalf("UpdatePassthruConfig(%v): %v", on, err)
		}
		for _, p := range hostConfig(t, l, 0).Config.PciPassthruInfo {
			if info := p.GetHostPciPassthruInfo(); (info.Id == vmnic0 || info.Id == vmnic4) && (info.PassthruEnabled != on || info.PassthruActive != on) {
				t.Errorf("%s after UpdatePassthruConfig(%v): %+v", info.Id, on, info)
			}
		}
	}
	set(true)
	set(false)
}

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
	_, err := methods.UpdatePassthruConfig(context.Background(), l.Client().Client, &types.UpdatePassthruConfig{This: ps, Config: []types.BaseHostPciPassthruConfig{cfg}})
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
				want := types.HostSriovInfo{HostPciPassthruInfo: types.HostPciPassthruInfo{Id: pf.id, PassthruCapable: true}, SriovCapable: true, MaxVirtualFunctionSupported: 16}
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
	if err := updateSriov(l, 0, &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id}, SriovEnabled: true, NumVirtualFunction: 9}); err != nil {
		t.Fatal(err)
	}
	nine := []string{"0000:86:00.1", "0000:86:00.2", "0000:86:00.3", "0000:86:00.4", "0000:86:00.5", "0000:86:00.6", "0000:86:00.7", "0000:86:01.0", "0000:86:01.1"}
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
	if _, err := methods.UpdatePassthruConfig(context.Background(), l.Client().Client, &types.UpdatePassthruConfig{This: ps, Config: []types.BaseHostPciPassthruConfig{
		&types.HostPciPassthruConfig{Id: nine[8], PassthruEnabled: true},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := l.AttachGPU(context.Background(), vm, nine[8]); err != nil {
		t.Errorf("attach VF %s to %s: %v", nine[8], vm, err)
	}

	if err := updateSriov(l, 0, &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id}, SriovEnabled: true, NumVirtualFunction: 2}); err != nil {
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
	if info, graphics := a100(); !info.PassthruEnabled || info.PassthruActive || graphics != graphicsType(false) {
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
	if info, graphics := a100(); !info.PassthruEnabled || !info.PassthruActive || graphics != graphicsType(true) {
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
	if err := updateSriov(l, 0, &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id, ApplyNow: types.NewBool(false)}, SriovEnabled: true, NumVirtualFunction: 1}); err != nil {
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
		want := types.HostSriovInfo{HostPciPassthruInfo: types.HostPciPassthruInfo{Id: pf.id, PassthruCapable: true}, SriovCapable: true, MaxVirtualFunctionSupported: 8}
		if sr, ok := h.Config.PciPassthruInfo[j].(*types.HostSriovInfo); !ok || *sr != want {
			t.Errorf("%s: %#v, want %#v", pf.id, h.Config.PciPassthruInfo[j], want)
		}
	}

	if err := l.reconfigure(l.createDVS("uplink"), &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0)}}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"0000:d8:00.0": {"0000:d8:00.2", "0000:d8:00.3", "0000:d8:00.4", "0000:d8:00.5", "0000:d8:00.6", "0000:d8:00.7", "0000:d8:01.0", "0000:d8:01.1"},
		"0000:d8:00.1": {"0000:d8:01.2", "0000:d8:01.3", "0000:d8:01.4", "0000:d8:01.5", "0000:d8:01.6", "0000:d8:01.7", "0000:d8:02.0", "0000:d8:02.1"},
	}
	for _, pf := range pfs {
		if err := updateSriov(l.Lab, 0, &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id}, SriovEnabled: true, NumVirtualFunction: 8}); err != nil {
			t.Fatalf("SR-IOV of %s: %v", pf.id, err)
		}
		sr, devices, infos := sriovState(t, l.Lab, 0, pf)
		if !sr.SriovActive || sr.NumVirtualFunction != 8 || !slices.Equal(devices, want[pf.id]) || !slices.Equal(infos, want[pf.id]) {
			t.Errorf("%s: %+v, VFs %v %v, want active, %v", pf.id, sr, devices, infos, want[pf.id])
		}
	}
	if err := updateSriov(l.Lab, 0, &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pfs[0].id}, SriovEnabled: true, NumVirtualFunction: 9}); !fault.Is(err, &types.HostConfigFault{}) {
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

// sriovPoolsOf reads a host's config.sriovDevicePool and checks that its
// HostPciPassthruSystem lists the same pools.
func (l *lab) sriovPoolsOf(i int) []*types.HostSriovNetworkDevicePoolInfo {
	l.t.Helper()
	h := hostConfig(l.t, l.Lab, i)
	var sys mo.HostPciPassthruSystem
	retrieve(l.t, l.Client(), *h.ConfigManager.PciPassthruSystem, []string{"sriovDevicePoolInfo"}, &sys)
	if !reflect.DeepEqual(sys.SriovDevicePoolInfo, h.Config.SriovDevicePool) {
		l.t.Errorf("the passthrough system's pools %v differ from the host's %v", sys.SriovDevicePoolInfo, h.Config.SriovDevicePool)
	}
	var out []*types.HostSriovNetworkDevicePoolInfo
	for _, p := range h.Config.SriovDevicePool {
		np, ok := p.(*types.HostSriovNetworkDevicePoolInfo)
		if !ok {
			l.t.Fatalf("pool %T", p)
		}
		out = append(out, np)
	}
	return out
}

// wantPools checks a host's pools: switch (a switch UUID or vSwitch key)
// and its NICs, in order.
func (l *lab) wantPools(what string, i int, want ...[]string) {
	l.t.Helper()
	var got [][]string
	for _, p := range l.sriovPoolsOf(i) {
		entry := []string{p.SwitchUuid + p.SwitchKey}
		for _, n := range p.Pnic {
			entry = append(entry, n.Device)
		}
		got = append(got, entry)
	}
	if !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
		l.t.Errorf("%s: pools %v, want %v", what, got, want)
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
	if _, err := methods.UpdatePassthruConfig(context.Background(), l.Client().Client, &types.UpdatePassthruConfig{This: ps, Config: []types.BaseHostPciPassthruConfig{
		&types.HostPciPassthruConfig{Id: pf.id, PassthruEnabled: true},
	}}); err != nil {
		t.Fatal(err)
	}
	err := updateSriov(l, 0, &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pf.id}, SriovEnabled: true, NumVirtualFunction: 2})
	if !fault.Is(err, &types.HostConfigFault{}) {
		t.Fatalf("SR-IOV on a passed-through function: %v, want HostConfigFault", err)
	}
	sr, devices, infos := sriovState(t, l, 0, pf)
	if !sr.PassthruEnabled || sr.SriovEnabled || len(devices)+len(infos) != 0 {
		t.Errorf("after the refusal: %+v, VFs %v %v; want passthrough kept, SR-IOV off, no VFs", sr, devices, infos)
	}
}

// TestPassthruInfoListsEveryDevice: config.pciPassthruInfo and the
// HostPciPassthruSystem have an entry for every device of
// hardware.pciDevice, as ESXi's do; the simulator's stock chipset, bridges
// and controllers are not passthrough capable, and enabling one is refused
// and changes nothing.
func TestPassthruInfoListsEveryDevice(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	h := hostConfig(t, l, 0)
	var sys mo.HostPciPassthruSystem
	retrieve(t, l.Client(), *h.ConfigManager.PciPassthruSystem, []string{"pciPassthruInfo"}, &sys)
	for _, infos := range [][]types.BaseHostPciPassthruInfo{h.Config.PciPassthruInfo, sys.PciPassthruInfo} {
		byID := map[string]*types.HostPciPassthruInfo{}
		for _, p := range infos {
			byID[p.GetHostPciPassthruInfo().Id] = p.GetHostPciPassthruInfo()
		}
		for _, d := range h.Hardware.PciDevice {
			if byID[d.Id] == nil {
				t.Errorf("%s (%s) of hardware.pciDevice has no pciPassthruInfo entry", d.Id, d.DeviceName)
			}
		}
		if bridge := byID["0000:00:00.0"]; bridge == nil || bridge.PassthruCapable || bridge.PassthruEnabled {
			t.Errorf("host bridge 0000:00:00.0: %+v, want listed, not capable, not enabled", bridge)
		}
	}
	_, err := methods.UpdatePassthruConfig(context.Background(), l.Client().Client, &types.UpdatePassthruConfig{This: *h.ConfigManager.PciPassthruSystem,
		Config: []types.BaseHostPciPassthruConfig{&types.HostPciPassthruConfig{Id: "0000:00:00.0", PassthruEnabled: true}}})
	if !fault.Is(err, &types.InvalidArgument{}) {
		t.Errorf("enabling the host bridge: %v, want InvalidArgument", err)
	}
	for _, p := range hostConfig(t, l, 0).Config.PciPassthruInfo {
		if info := p.GetHostPciPassthruInfo(); info.Id == "0000:00:00.0" && info.PassthruEnabled {
			t.Error("the refused update enabled the host bridge")
		}
	}
}
