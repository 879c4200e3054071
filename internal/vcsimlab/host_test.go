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
			if g.MemorySizeInKB != w.memKB || g.GraphicsType != passthroughGraphics(w.enabled) || g.VendorName == "" || g.DeviceName == "" || len(g.Vm) != 0 {
				t.Errorf("%s graphics %+v, want %d KB, %s, no VM", h.Name, g, w.memKB, passthroughGraphics(w.enabled))
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
	if err := update("pvrdma", types.HostFirewallRulesetIpList{
		IpNetwork: []types.HostFirewallRulesetIpNetwork{{Network: "10.0.0.0", PrefixLength: 33}},
	}); !fault.Is(err, &types.InvalidArgument{}) {
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
		if want := passthroughGraphics(g.PciId != "0000:3b:00.0"); g.GraphicsType != want {
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
		_, err := methods.UpdatePassthruConfig(
			ctx,
			c,
			&types.UpdatePassthruConfig{This: *h.ConfigManager.PciPassthruSystem, Config: []types.BaseHostPciPassthruConfig{
				&types.HostPciPassthruConfig{Id: vmnic0, PassthruEnabled: on},
				&types.HostPciPassthruConfig{Id: vmnic4, PassthruEnabled: on},
			}},
		)
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

// passthroughGraphics is a lab GPU's graphics type with the host's default
// graphics configuration: "direct" when passed through, "basic" otherwise.
func passthroughGraphics(passthrough bool) string {
	if passthrough {
		return "direct"
	}
	return "basic"
}
