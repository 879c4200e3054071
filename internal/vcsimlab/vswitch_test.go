package vcsimlab

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
)

func (l *lab) vswitch(i int, name string) types.HostVirtualSwitch {
	l.t.Helper()
	for _, vs := range hostConfig(l.t, l.Lab, i).Config.Network.Vswitch {
		if vs.Name == name {
			return vs
		}
	}
	l.t.Fatalf("host %d has no %s", i, name)
	return types.HostVirtualSwitch{}
}

// TestUpdateVirtualSwitch: the bond bridge's NICs become the switch's
// uplinks, a NULL bridge leaves none; unknown switches and NICs, NICs of
// another switch and other bridges are refused.
func TestUpdateVirtualSwitch(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	ns, err := object.NewHostSystem(l.c.Client, hostRef(l.Lab, 0)).ConfigManager().NetworkSystem(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bond := func(nics ...string) types.HostVirtualSwitchSpec {
		return types.HostVirtualSwitchSpec{NumPorts: 128, Mtu: 9000, Bridge: &types.HostVirtualSwitchBondBridge{NicDevice: nics}}
	}
	if err := ns.UpdateVirtualSwitch(ctx, "vSwitch1", bond("vmnic4", "vmnic5")); err != nil {
		t.Fatal(err)
	}
	want := []string{"key-vim.host.PhysicalNic-vmnic4", "key-vim.host.PhysicalNic-vmnic5"}
	if vs := l.vswitch(0, "vSwitch1"); !slices.Equal(vs.Pnic, want) || vs.Mtu != 9000 {
		t.Errorf("vSwitch1 uplinks %v MTU %d, want %v, 9000", vs.Pnic, vs.Mtu, want)
	}
	if vs := l.vswitch(1, "vSwitch1"); len(vs.Pnic) != 0 {
		t.Errorf("another host's vSwitch1 has uplinks %v", vs.Pnic)
	}

	for _, bad := range []struct {
		what, vswitch string
		spec          types.HostVirtualSwitchSpec
		fault         types.BaseMethodFault
	}{
		{"unknown switch", "vSwitch9", bond("vmnic4"), &types.NotFound{}},
		{"unknown NIC", "vSwitch1", bond("vmnic9"), &types.HostConfigFault{}},
		{"NIC of vSwitch0", "vSwitch1", bond("vmnic0"), &types.ResourceInUse{}},
		{
			"simple bridge", "vSwitch1",
			types.HostVirtualSwitchSpec{NumPorts: 128, Bridge: &types.HostVirtualSwitchSimpleBridge{NicDevice: "vmnic4"}},
			&types.InvalidArgument{},
		},
	} {
		wantFault(t, bad.what, ns.UpdateVirtualSwitch(ctx, bad.vswitch, bad.spec), bad.fault)
	}
	if vs := l.vswitch(0, "vSwitch1"); !slices.Equal(vs.Pnic, want) {
		t.Errorf("a refused update changed the uplinks: %v", vs.Pnic)
	}

	// A switch's NIC cannot join a distributed switch.
	err = l.reconfigure(
		l.createDVS("taken"),
		&types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0)}},
	)
	wantFault(t, "vmnic4 to a distributed switch", err, &types.ResourceInUse{})

	if err := ns.UpdateVirtualSwitch(ctx, "vSwitch1", types.HostVirtualSwitchSpec{NumPorts: 128}); err != nil {
		t.Fatal(err)
	}
	if vs := l.vswitch(0, "vSwitch1"); len(vs.Pnic) != 0 {
		t.Errorf("uplinks %v after a NULL bridge, want none", vs.Pnic)
	}
}
