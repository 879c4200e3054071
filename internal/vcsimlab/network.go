package vcsimlab

import (
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// networkKinds are the managed object types whose vm property vCenter
// keeps ("Virtual machines using this network"): standard networks and
// distributed port groups. vcsim keeps only the other direction,
// VirtualMachine.network.
var networkKinds = []string{"Network", "DistributedVirtualPortgroup"}

// syncNetworkVMs lists vm in the vm property of the networks in nets and
// removes it from every other network. nets is the VM's network property;
// nil for a VM that left the inventory.
//
// The caller may hold the VM's lock. Each network is locked on its own,
// after the VM: the lab never locks a VM while holding a network's lock
// (destroyPortgroup reads the port group's vm list instead), so this order
// cannot deadlock.
func syncNetworkVMs(ctx *simulator.Context, vm types.ManagedObjectReference, nets []types.ManagedObjectReference) {
	for _, kind := range networkKinds {
		for _, e := range ctx.Map.All(kind) {
			n := e.Reference()
			setMember(ctx, n, "vm", vm, slices.Contains(nets, n))
		}
	}
}

// syncAllNetworkVMs fills the networks' vm lists from the VMs already in
// the inventory, for those created before the lab listened to changes.
func syncAllNetworkVMs(ctx *simulator.Context) {
	for _, ref := range allVMs(ctx) {
		vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
		if !ok {
			continue
		}
		ctx.WithLock(vm, func() { syncNetworkVMs(ctx, vm.Self, vm.Network) })
	}
}
