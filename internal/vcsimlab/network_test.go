package vcsimlab

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// networkVMs reads the vm property of a network or port group through the
// property collector.
func (l *lab) networkVMs(ref types.ManagedObjectReference) []types.ManagedObjectReference {
	l.t.Helper()
	if ref.Type == "DistributedVirtualPortgroup" {
		var pg mo.DistributedVirtualPortgroup
		retrieve(l.t, l.Client(), ref, []string{"vm"}, &pg)
		return pg.Vm
	}
	var n mo.Network
	retrieve(l.t, l.Client(), ref, []string{"vm"}, &n)
	return n.Vm
}

func (l *lab) wantNetworkVMs(what string, ref types.ManagedObjectReference, names ...string) {
	l.t.Helper()
	var want []string
	for _, name := range names {
		want = append(want, l.VMID(name))
	}
	var got []string
	for _, r := range l.networkVMs(ref) {
		got = append(got, r.Value)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		l.t.Errorf("%s: vm = %v, want %v (%v)", what, got, want, names)
	}
}

func TestNetworkListsVMsUsingIt(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()

	// At start, "VM Network" lists every VM with an adapter on it.
	var dc mo.Datacenter
	retrieve(t, l.Client(), ref("Datacenter", l.DatacenterID()), []string{"network"}, &dc)
	var std types.ManagedObjectReference
	for _, r := range dc.Network {
		var n mo.Network
		retrieve(t, l.Client(), r, []string{"name"}, &n)
		if r.Type == "Network" && n.Name == "VM Network" {
			std = r
		}
	}
	if std.Value == "" {
		t.Fatalf("no VM Network among %v", dc.Network)
	}
	var withNIC []string
	for _, name := range l.VMNames() {
		if name != "bare-node" {
			withNIC = append(withNIC, name)
		}
	}
	if !slices.ContainsFunc(withNIC, func(n string) bool { return strings.HasPrefix(n, "hpc-node-") }) {
		t.Fatalf("no hpc-node VM in %v", withNIC)
	}
	l.wantNetworkVMs("VM Network at start", std, withNIC...)

	// Adding an adapter lists the VM on its port group.
	s, pg := l.switchWithHosts("pvrdma-dvs")
	other := l.createPortgroup(s, "other-pg")
	l.wantNetworkVMs("new port group", pg)
	l.addVrdma("hpc-node-0", s, pg, "rocev2")
	l.wantNetworkVMs("port group after add", pg, "hpc-node-0")
	l.wantNetworkVMs("VM Network after add", std, withNIC...)

	// Re-backing it moves the VM to the other port group.
	nic := l.vrdma("hpc-node-0")
	nic.Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo).Port.PortgroupKey = other.Value
	if err := l.reconfig("hpc-node-0", vrdmaSpec(types.VirtualDeviceConfigSpecOperationEdit, nic)); err != nil {
		t.Fatal(err)
	}
	l.wantNetworkVMs("port group after move", pg)
	l.wantNetworkVMs("other port group after move", other, "hpc-node-0")

	// Removing it takes the VM off.
	l.removeVrdma("hpc-node-0")
	l.wantNetworkVMs("other port group after remove", other)
	l.wantNetworkVMs("VM Network after remove", std, withNIC...)

	// A destroyed VM leaves every network it used.
	l.addVrdma("hpc-node-1", s, pg, "rocev2")
	l.wantNetworkVMs("port group before destroy", pg, "hpc-node-1")
	task, err := l.vm("hpc-node-1").Destroy(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	l.wantNetworkVMs("port group after destroy", pg)
	l.wantNetworkVMs("VM Network after destroy", std, slices.DeleteFunc(withNIC, func(n string) bool { return n == "hpc-node-1" })...)
}
