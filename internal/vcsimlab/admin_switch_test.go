package vcsimlab

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/types"
)

func TestSetSwitchMTU(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("rdma")
	before := l.configVersion(s)
	if err := l.SetSwitchMTU(context.Background(), "rdma", 1500); err != nil {
		t.Fatal(err)
	}
	got := l.dvs(s).Config.(*types.VMwareDVSConfigInfo)
	if got.MaxMtu != 1500 || got.ConfigVersion == before {
		t.Fatalf("after SetSwitchMTU: MTU %d, config version %s (was %s); want 1500 and a new version", got.MaxMtu, got.ConfigVersion, before)
	}
	if err := l.SetSwitchMTU(context.Background(), "no-such-switch", 1500); err == nil {
		t.Fatal("an unknown switch: no error")
	}
}

func TestAdminSwitchChanges(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	h0, h1 := l.HostNames()[0], l.HostNames()[1]
	count := func(pattern string) int {
		t.Helper()
		n, err := l.CountNetworks(ctx, pattern)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("storage*"); n != 0 {
		t.Fatalf("%d networks named storage* before any was made", n)
	}

	// CreateSwitch: one host, one uplink; the switch and its uplink port group.
	if err := l.CreateSwitch(ctx, "storage", h0, "vmnic5"); err != nil {
		t.Fatal(err)
	}
	if got := adminUplinks(l, adminSwitchConfig(t, l, "storage")); len(got) != 1 || !slices.Equal(got[h0], []string{"vmnic5"}) {
		t.Fatalf("after CreateSwitch: uplinks %v, want %s on vmnic5 only", got, h0)
	}
	if n := count("storage*"); n != 2 {
		t.Fatalf("%d networks named storage*, want the switch and its uplink port group", n)
	}
	// vSphere's own check: the NIC is taken now.
	if err := l.CreateSwitch(ctx, "storage-2", h0, "vmnic5"); err == nil {
		t.Fatal("a second switch took the same NIC")
	}

	// AddPortGroup, SetPortGroupVLAN, SetPortGroupPorts.
	if err := l.AddPortGroup(ctx, "storage", "storage-vms", 8); err != nil {
		t.Fatal(err)
	}
	pg := adminPortGroupConfig(t, l, "storage-vms")
	if pg.NumPorts != 8 || pg.Type != string(types.DistributedVirtualPortgroupPortgroupTypeEarlyBinding) {
		t.Fatalf("after AddPortGroup: %d ports, type %s", pg.NumPorts, pg.Type)
	}
	if id, err := l.PortGroupID(ctx, "storage-vms"); err != nil || !strings.HasPrefix(id, "dvportgroup-") {
		t.Fatalf("PortGroupID: %q, %v", id, err)
	}
	if _, err := l.PortGroupID(ctx, "storage"); err == nil {
		t.Fatal("PortGroupID of a switch: no error")
	}
	if err := l.SetPortGroupVLAN(ctx, "storage-vms", 42); err != nil {
		t.Fatal(err)
	}
	if err := l.SetPortGroupPorts(ctx, "storage-vms", 24); err != nil {
		t.Fatal(err)
	}
	pg = adminPortGroupConfig(t, l, "storage-vms")
	var vlan *types.VmwareDistributedVirtualSwitchVlanIdSpec
	if setting, ok := pg.DefaultPortConfig.(*types.VMwareDVSPortSetting); ok {
		vlan, _ = setting.Vlan.(*types.VmwareDistributedVirtualSwitchVlanIdSpec)
	}
	if vlan == nil || vlan.VlanId != 42 || pg.NumPorts != 24 {
		t.Fatalf("after SetPortGroupVLAN and SetPortGroupPorts: VLAN %+v, %d ports; want 42 and 24", vlan, pg.NumPorts)
	}
	if err := l.SetPortGroupPorts(ctx, "storage", 8); err == nil {
		t.Fatal("SetPortGroupPorts on a switch: no error")
	}
	// DestroyPortGroup: gone from the inventory; a switch is refused.
	if err := l.AddPortGroup(ctx, "storage", "storage-old", 8); err != nil {
		t.Fatal(err)
	}
	if err := l.DestroyPortGroup(ctx, "storage-old"); err != nil {
		t.Fatal(err)
	}
	if n := count("storage-old"); n != 0 {
		t.Fatalf("after DestroyPortGroup: %d networks named storage-old", n)
	}
	if err := l.DestroyPortGroup(ctx, "storage"); err == nil {
		t.Fatal("DestroyPortGroup of a switch: no error")
	}

	// SetSwitchNIOC, AddSwitchHost, SetSwitchUplink, RemoveSwitchHost.
	if err := l.SetSwitchNIOC(ctx, "storage", true); err != nil {
		t.Fatal(err)
	}
	if !adminSwitchConfig(t, l, "storage").NetworkResourceManagementEnabled {
		t.Fatal("after SetSwitchNIOC: NIOC off")
	}
	if err := l.SetSwitchUplink(ctx, "storage", h0, "vmnic4"); err != nil {
		t.Fatal(err)
	}
	if got := adminUplinks(l, adminSwitchConfig(t, l, "storage")); !slices.Equal(got[h0], []string{"vmnic4"}) {
		t.Fatalf("after SetSwitchUplink: uplinks %v, want %s on vmnic4", got, h0)
	}
	if err := l.SetSwitchUplink(ctx, "storage", h1, "vmnic4"); err == nil {
		t.Fatal("SetSwitchUplink on a host that is not a member: no error")
	}
	if err := l.AddSwitchHost(ctx, "storage", h1, "vmnic5"); err != nil {
		t.Fatal(err)
	}
	if err := l.AddSwitchHost(ctx, "storage", h1, "vmnic4"); err == nil {
		t.Fatal("adding a member again: no error")
	}
	if err := l.RemoveSwitchHost(ctx, "storage", h0); err != nil {
		t.Fatal(err)
	}
	if got := adminUplinks(l, adminSwitchConfig(t, l, "storage")); len(got) != 1 || !slices.Equal(got[h1], []string{"vmnic5"}) {
		t.Fatalf("after AddSwitchHost and RemoveSwitchHost: uplinks %v, want %s on vmnic5 only", got, h1)
	}
	if err := l.RemoveSwitchHost(ctx, "storage", h0); err == nil {
		t.Fatal("removing a host that is not a member: no error")
	}
	if err := l.SetSwitchNIOC(ctx, "storage-vms", false); err == nil {
		t.Fatal("SetSwitchNIOC on a port group: no error")
	}

	// CreateSwitchAtVersion, then UpgradeSwitch.
	if err := l.CreateSwitchAtVersion(ctx, "storage-old", l.HostNames()[2], "vmnic4", "7.0.3"); err != nil {
		t.Fatal(err)
	}
	if v := adminSwitchConfig(t, l, "storage-old").ProductInfo.Version; v != "7.0.3" {
		t.Fatalf("after CreateSwitchAtVersion: version %s", v)
	}
	if err := l.UpgradeSwitch(ctx, "storage-old", "8.0.0"); err != nil {
		t.Fatal(err)
	}
	if v := adminSwitchConfig(t, l, "storage-old").ProductInfo.Version; v != "8.0.0" {
		t.Fatalf("after UpgradeSwitch: version %s", v)
	}
	if err := l.UpgradeSwitch(ctx, "storage-old", "7.0.3"); err == nil {
		t.Fatal("a downgrade: no error")
	}
	if err := l.DestroySwitch(ctx, "storage-old"); err != nil {
		t.Fatal(err)
	}

	// DestroySwitch takes its port groups along.
	if err := l.DestroySwitch(ctx, "storage"); err != nil {
		t.Fatal(err)
	}
	if n := count("storage*"); n != 0 {
		t.Fatalf("%d networks named storage* after DestroySwitch", n)
	}
	if err := l.DestroySwitch(ctx, "storage"); err == nil {
		t.Fatal("destroying a switch that is gone: no error")
	}
}
