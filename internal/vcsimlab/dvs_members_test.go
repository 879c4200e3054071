package vcsimlab

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// members is a host membership spec with one uplink per host.
func (l *lab) members(op types.ConfigSpecOperation, pnic string, hosts ...int) []types.DistributedVirtualSwitchHostMemberConfigSpec {
	var out []types.DistributedVirtualSwitchHostMemberConfigSpec
	for _, i := range hosts {
		m := types.DistributedVirtualSwitchHostMemberConfigSpec{Operation: string(op), Host: hostRef(l.Lab, i)}
		if pnic != "" {
			m.Backing = &types.DistributedVirtualSwitchHostMemberPnicBacking{PnicSpec: []types.DistributedVirtualSwitchHostMemberPnicSpec{{PnicDevice: pnic}}}
		}
		out = append(out, m)
	}
	return out
}

func (l *lab) allHosts() []int {
	var out []int
	for i := range l.HostNames() {
		out = append(out, i)
	}
	return out
}

func (l *lab) proxySwitches(i int) []types.HostProxySwitch {
	var h mo.HostSystem
	retrieve(l.t, l.Client(), hostRef(l.Lab, i), []string{"config.network"}, &h)
	return h.Config.Network.ProxySwitch
}

func TestDVSHostMembership(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("pvrdma-dvs")
	uuid := l.dvs(s).Config.GetDVSConfigInfo().Uuid
	add := func(pnic string, hosts ...int) error {
		return l.reconfigure(
			s,
			&types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationAdd, pnic, hosts...)}},
		)
	}
	wantFault(t, "unknown pnic", add("vmnic99", 0), &types.InvalidArgument{})
	wantFault(t, "pnic of vSwitch0", add("vmnic0", 0), &types.ResourceInUse{})
	if err := add("vmnic4", 0, 1); err != nil {
		t.Fatal(err)
	}
	wantFault(t, "add a member again", add("vmnic4", 0), &types.AlreadyExists{})

	cfg := l.dvs(s).Config.GetDVSConfigInfo()
	if len(cfg.Host) != 2 {
		t.Fatalf("config.host has %d members, want 2", len(cfg.Host))
	}
	b := cfg.Host[0].Config.Backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking)
	if b.PnicSpec[0].PnicDevice != "vmnic4" {
		t.Errorf("member backing %+v, want vmnic4", b.PnicSpec)
	}
	ps := l.proxySwitches(0)
	if len(ps) != 1 || ps[0].DvsUuid != uuid || !slices.Equal(ps[0].Pnic, []string{"key-vim.host.PhysicalNic-vmnic4"}) || ps[0].Mtu != 9000 {
		t.Fatalf("host 0 proxy switches %+v, want the switch on vmnic4 with MTU 9000", ps)
	}

	// Another switch cannot take the same uplink.
	other := l.createDVS("other")
	err := l.reconfigure(
		other,
		&types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0)}},
	)
	wantFault(t, "pnic of another switch", err, &types.ResourceInUse{})

	// Edit moves the uplink; the MTU follows the switch.
	edit := l.members(types.ConfigSpecOperationEdit, "vmnic5", 0)
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: edit}, MaxMtu: 4000}); err != nil {
		t.Fatal(err)
	}
	if ps := l.proxySwitches(0); !slices.Equal(ps[0].Pnic, []string{"key-vim.host.PhysicalNic-vmnic5"}) || ps[0].Mtu != 4000 {
		t.Errorf("after edit: %+v, want vmnic5 and MTU 4000", ps[0])
	}
	wantFault(
		t,
		"edit a non-member",
		l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationEdit, "vmnic4", 2)}}),
		&types.NotFound{},
	)
	wantFault(
		t,
		"remove a non-member",
		l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationRemove, "", 2)}}),
		&types.NotFound{},
	)

	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Host: l.members(types.ConfigSpecOperationRemove, "", 1),
	}}); err != nil {
		t.Fatal(err)
	}
	got := l.dvs(s)
	if len(got.Config.GetDVSConfigInfo().Host) != 1 || len(got.Summary.HostMember) != 1 || len(l.proxySwitches(1)) != 0 {
		t.Errorf(
			"after remove: %d members, %d in summary, host 1 proxy switches %v",
			len(got.Config.GetDVSConfigInfo().Host),
			len(got.Summary.HostMember),
			l.proxySwitches(1),
		)
	}
}

func TestDVSRemoveHostWithVMsInUse(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s, pg := l.switchWithHosts("pvrdma-dvs")
	l.addVrdma("hpc-node-0", s, pg, "rocev2")
	err := l.reconfigure(
		s,
		&types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationRemove, "", l.hostOf("hpc-node-0"))}},
	)
	wantFault(t, "remove a host whose VM uses the switch", err, &types.ResourceInUse{})
	// vCenter names the switch, not the VMs: finding them is the client's job.
	if err != nil && !strings.Contains(err.Error(), "The resource 'pvrdma-dvs' is in use.") {
		t.Errorf("message %q, want vCenter's", err)
	}
}

// uplinks is a member's uplink ports and its NICs' ports (pnic -> port key).
func (l *lab) uplinks(s *object.DistributedVirtualSwitch, i int) ([]string, map[string]string) {
	l.t.Helper()
	for _, h := range l.dvs(s).Config.GetDVSConfigInfo().Host {
		if *h.Config.Host != hostRef(l.Lab, i) {
			continue
		}
		nics := map[string]string{}
		for _, p := range h.Config.Backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking).PnicSpec {
			nics[p.PnicDevice] = p.UplinkPortKey
		}
		return h.UplinkPortKey, nics
	}
	l.t.Fatalf("host %d is not a member", i)
	return nil, nil
}

func pnicBacking(specs ...types.DistributedVirtualSwitchHostMemberPnicSpec) *types.DistributedVirtualSwitchHostMemberPnicBacking {
	return &types.DistributedVirtualSwitchHostMemberPnicBacking{PnicSpec: specs}
}

// Each member gets one uplink port per uplink name in the uplink port group,
// and its NICs are connected to them; the ports stay as NICs move and as the
// uplink names change, and leave with the host.
func TestDVSUplinkPorts(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("pvrdma-dvs") // uplink1 … uplink4
	uplinkPG := l.dvs(s).Config.GetDVSConfigInfo().UplinkPortgroup[0]
	uplinkPorts := func() []string {
		var pg mo.DistributedVirtualPortgroup
		retrieve(t, l.Client(), uplinkPG, []string{"portKeys", "config.numPorts"}, &pg)
		if int(pg.Config.NumPorts) != len(pg.PortKeys) {
			t.Errorf("uplink port group: numPorts %d, %d keys", pg.Config.NumPorts, len(pg.PortKeys))
		}
		return pg.PortKeys
	}
	if keys := uplinkPorts(); len(keys) != 0 {
		t.Fatalf("a switch without hosts has uplink ports %v", keys)
	}
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0, 1),
	}}); err != nil {
		t.Fatal(err)
	}
	ports0, nics0 := l.uplinks(s, 0)
	ports1, nics1 := l.uplinks(s, 1)
	all := append(slices.Clone(ports0), ports1...)
	if len(ports0) != 4 || len(ports1) != 4 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 8 {
		t.Fatalf("uplink ports %v and %v; want 4 per host, all different", ports0, ports1)
	}
	if !slices.Equal(uplinkPorts(), all) {
		t.Errorf("uplink port group ports %v, want the members' %v", uplinkPorts(), all)
	}
	if nics0["vmnic4"] != ports0[0] || nics1["vmnic4"] != ports1[0] {
		t.Errorf("vmnic4 on ports %s and %s, want each host's first (%s, %s)", nics0["vmnic4"], nics1["vmnic4"], ports0[0], ports1[0])
	}
	b := l.dvs(s).Config.GetDVSConfigInfo().Host[0].Config.Backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking)
	if b.PnicSpec[0].UplinkPortgroupKey != uplinkPG.Value {
		t.Errorf("uplinkPortgroupKey %q, want %q", b.PnicSpec[0].UplinkPortgroupKey, uplinkPG.Value)
	}
	ps := l.proxySwitches(0)[0]
	if len(ps.UplinkPort) != 4 || ps.UplinkPort[0] != (types.KeyValue{Key: ports0[0], Value: "uplink1"}) || ps.UplinkPort[3].Value != "uplink4" {
		t.Errorf("proxy switch uplink ports %+v", ps.UplinkPort)
	}
	if pb := ps.Spec.Backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking); pb.PnicSpec[0].UplinkPortKey != ports0[0] {
		t.Errorf("proxy switch backing %+v, want vmnic4 on %s", pb.PnicSpec, ports0[0])
	}

	edit := func(i int, b *types.DistributedVirtualSwitchHostMemberPnicBacking) error {
		return l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: []types.DistributedVirtualSwitchHostMemberConfigSpec{
			{Operation: string(types.ConfigSpecOperationEdit), Host: hostRef(l.Lab, i), Backing: b},
		}}})
	}
	// A NIC named without a port takes the host's first free one.
	if err := edit(0, pnicBacking(types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic5"})); err != nil {
		t.Fatal(err)
	}
	if ports, nics := l.uplinks(s, 0); !slices.Equal(ports, ports0) || nics["vmnic5"] != ports0[0] {
		t.Errorf("after moving to vmnic5: ports %v, NICs %v; want vmnic5 on %s", ports, nics, ports0[0])
	}
	// A NIC named with a port takes it; one that stays keeps its port.
	if err := edit(0, pnicBacking(types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic5", UplinkPortKey: ports0[2]})); err != nil {
		t.Fatal(err)
	}
	if err := edit(0, pnicBacking(
		types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic4"},
		types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic5"},
	)); err != nil {
		t.Fatal(err)
	}
	if _, nics := l.uplinks(s, 0); nics["vmnic5"] != ports0[2] || nics["vmnic4"] != ports0[0] {
		t.Errorf("NICs %v; want vmnic5 kept on %s and vmnic4 on %s", nics, ports0[2], ports0[0])
	}
	wantFault(
		t,
		"another host's port",
		edit(0, pnicBacking(types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic5", UplinkPortKey: ports1[1]})),
		&types.InvalidArgument{},
	)
	wantFault(t, "a port twice", edit(0, pnicBacking(
		types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic4", UplinkPortKey: ports0[1]},
		types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic5", UplinkPortKey: ports0[1]})), &types.InvalidArgument{})
	wantFault(
		t,
		"another uplink port group",
		edit(0, pnicBacking(types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic5", UplinkPortgroupKey: "dvportgroup-1"})),
		&types.InvalidArgument{},
	)

	// Fewer uplink names delete unused ports; the rest are renamed in order.
	names := func(n ...string) error {
		return l.reconfigure(
			s,
			&types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{UplinkPortPolicy: &types.DVSNameArrayUplinkPortPolicy{UplinkPortName: n}}},
		)
	}
	if err := names("a", "b"); err != nil {
		t.Fatal(err)
	}
	if ports, nics := l.uplinks(s, 0); !slices.Equal(ports, []string{ports0[0], ports0[2]}) || nics["vmnic5"] != ports0[2] {
		t.Errorf("host 0 with two uplinks: ports %v NICs %v; want %v with its NICs", ports, nics, []string{ports0[0], ports0[2]})
	}
	if ports, _ := l.uplinks(s, 1); !slices.Equal(ports, ports1[:2]) {
		t.Errorf("host 1 with two uplinks: %v, want %v", ports, ports1[:2])
	}
	if ps := l.proxySwitches(0)[0]; !slices.Equal(ps.UplinkPort, []types.KeyValue{{Key: ports0[0], Value: "a"}, {Key: ports0[2], Value: "b"}}) {
		t.Errorf("proxy switch uplink ports %+v after renaming", ps.UplinkPort)
	}
	wantFault(t, "fewer uplinks than NICs", names("a"), &types.ResourceInUse{})
	if ports, _ := l.uplinks(s, 0); len(ports) != 2 {
		t.Errorf("a refused change left host 0 with ports %v", ports)
	}
	if err := names("a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	ports0, _ = l.uplinks(s, 0)
	ports1, _ = l.uplinks(s, 1)
	all = append(slices.Clone(ports0), ports1...)
	if len(ports0) != 3 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 6 {
		t.Errorf("three uplinks: %v and %v, want 3 per host, all different", ports0, ports1)
	}

	// The ports leave with their host.
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Host: l.members(types.ConfigSpecOperationRemove, "", 1),
	}}); err != nil {
		t.Fatal(err)
	}
	if got := uplinkPorts(); !slices.Equal(got, ports0) {
		t.Errorf("uplink port group after host 1 left: %v, want %v", got, ports0)
	}
}

// FetchDVPorts reports each uplink port with its host, its uplink name and
// the NIC connected to it.
func TestFetchUplinkPorts(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s, pg := l.switchWithHosts("pvrdma-dvs")
	ports0, _ := l.uplinks(s, 0)
	host0 := hostRef(l.Lab, 0)
	got, err := s.FetchDVPorts(
		context.Background(),
		&types.DistributedVirtualSwitchPortCriteria{UplinkPort: types.NewBool(true), Host: []types.ManagedObjectReference{host0}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("host 0's uplink ports: %+v, want 4", got)
	}
	for i, p := range got {
		if p.Key != ports0[i] || p.ProxyHost == nil || *p.ProxyHost != host0 || p.Config.Name != fmt.Sprintf("uplink%d", i+1) {
			t.Errorf("port %d: key %s host %v name %q; want %s on host 0 named uplink%d", i, p.Key, p.ProxyHost, p.Config.Name, ports0[i], i+1)
		}
	}
	if c := got[0].Connectee; c == nil || c.Type != "pnic" || c.NicKey != "vmnic4" || *c.ConnectedEntity != host0 {
		t.Errorf("uplink1's connectee %+v, want vmnic4 of host 0", c)
	}
	connected, err := s.FetchDVPorts(
		context.Background(),
		&types.DistributedVirtualSwitchPortCriteria{UplinkPort: types.NewBool(true), Connected: types.NewBool(true)},
	)
	if err != nil || len(connected) != 3 {
		t.Errorf("connected uplink ports: %d, %v; want one per host", len(connected), err)
	}
	var pgObj mo.DistributedVirtualPortgroup
	retrieve(t, l.Client(), pg, []string{"key"}, &pgObj)
	vmPorts, err := s.FetchDVPorts(
		context.Background(),
		&types.DistributedVirtualSwitchPortCriteria{PortgroupKey: []string{pgObj.Key}, Inside: types.NewBool(true)},
	)
	if err != nil || len(vmPorts) != 8 || vmPorts[0].ProxyHost != nil {
		t.Errorf("the VM port group's ports: %d, %v", len(vmPorts), err)
	}
}

// A create spec cannot name an uplink port: none exists before the switch.
func TestCreateDVSNamingAnUplinkPort(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	task, err := l.networkFolder().CreateDVS(ctx, types.DVSCreateSpec{ConfigSpec: &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Name: "named-port",
		Host: []types.DistributedVirtualSwitchHostMemberConfigSpec{{
			Operation: string(types.ConfigSpecOperationAdd), Host: hostRef(l.Lab, 0),
			Backing: pnicBacking(types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: "vmnic4", UplinkPortKey: "0"}),
		}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	wantFault(t, "create naming a port", task.Wait(ctx), &types.InvalidArgument{})
}
