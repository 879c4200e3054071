package vcsimlab

import (
	"slices"
	"strings"
	"testing"

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
		return l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationAdd, pnic, hosts...)}})
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
	err := l.reconfigure(other, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0)}})
	wantFault(t, "pnic of another switch", err, &types.ResourceInUse{})

	// Edit moves the uplink; the MTU follows the switch.
	edit := l.members(types.ConfigSpecOperationEdit, "vmnic5", 0)
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: edit}, MaxMtu: 4000}); err != nil {
		t.Fatal(err)
	}
	if ps := l.proxySwitches(0); !slices.Equal(ps[0].Pnic, []string{"key-vim.host.PhysicalNic-vmnic5"}) || ps[0].Mtu != 4000 {
		t.Errorf("after edit: %+v, want vmnic5 and MTU 4000", ps[0])
	}
	wantFault(t, "edit a non-member", l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationEdit, "vmnic4", 2)}}), &types.NotFound{})
	wantFault(t, "remove a non-member", l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationRemove, "", 2)}}), &types.NotFound{})

	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationRemove, "", 1)}}); err != nil {
		t.Fatal(err)
	}
	got := l.dvs(s)
	if len(got.Config.GetDVSConfigInfo().Host) != 1 || len(got.Summary.HostMember) != 1 || len(l.proxySwitches(1)) != 0 {
		t.Errorf("after remove: %d members, %d in summary, host 1 proxy switches %v", len(got.Config.GetDVSConfigInfo().Host), len(got.Summary.HostMember), l.proxySwitches(1))
	}
}

func TestDVSRemoveHostWithVMsInUse(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s, pg := l.switchWithHosts("pvrdma-dvs")
	l.addVrdma("hpc-node-0", s, pg, "rocev2")
	err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationRemove, "", l.hostOf("hpc-node-0"))}})
	wantFault(t, "remove a host whose VM uses the switch", err, &types.ResourceInUse{})
	// vCenter names the switch, not the VMs: finding them is the client's job.
	if err != nil && !strings.Contains(err.Error(), "The resource 'pvrdma-dvs' is in use.") {
		t.Errorf("message %q, want vCenter's", err)
	}
}
