package vcsimlab

import (
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// extension is the lab's addition to the simulator's registry. vcsim
// dispatches to it the methods the lab adds or overrides (Lab.handle points
// the call at it; the request body still names the real target), and it
// listens to changes of managed objects to keep derived state current, as
// vCenter does (handler.go routes both). It holds the state the handlers
// share beyond vcsim's objects.
//
// Routing calls to one registered object, rather than replacing objects,
// keeps the simulator's own type assertions on its objects working.
type extension struct {
	// An embedded mo type, as vcsim expects of every registered object:
	// code that walks the whole registry (SearchIndex.FindByUuid) digs it out.
	mo.ExtensibleManagedObject
	reg *simulator.Registry // the lab's inventory, for changes outside of a call

	// Set before the server starts, read-only after.
	fwHost      map[types.ManagedObjectReference]types.ManagedObjectReference // firewall system -> host
	hostOptions map[types.ManagedObjectReference]bool                         // hosts' advanced option managers

	fabric *fabric // the network between the hosts, for esxcli ping

	mu           sync.Mutex
	pendingHosts map[string][]types.DistributedVirtualSwitchHostMemberConfigSpec // by switch name, see CreateDVSTask
	nextMAC      uint16                                                          // the last MAC address assigned, see assignMACs

	sriovMu sync.Mutex // serializes power-ons, see powerOn

	vgpus map[types.ManagedObjectReference][]vgpuSlot // powered-on VMs' vGPUs, under mu, see vm_vgpu.go

	hosts hostStates // maintenance mode and reboots, see maintenance.go

	closing chan struct{} // closed when the lab closes: ends waits, see property_wait.go
}

func newExtension(reg *simulator.Registry) *extension {
	return &extension{
		ExtensibleManagedObject: mo.ExtensibleManagedObject{Self: types.ManagedObjectReference{Type: "VcsimLabExtension", Value: "extension"}},
		reg:                     reg,
		fwHost:                  map[types.ManagedObjectReference]types.ManagedObjectReference{},
		hostOptions:             map[types.ManagedObjectReference]bool{},
		fabric:                  newFabric(),
		pendingHosts:            map[string][]types.DistributedVirtualSwitchHostMemberConfigSpec{},
		hosts:                   hostStates{keptDown: map[types.ManagedObjectReference]bool{}},
		closing:                 make(chan struct{}),
	}
}

// Lock and Unlock opt out of the per-object lock vcsim takes around a call:
// every method locks the object it works on.
func (*extension) Lock()   {}
func (*extension) Unlock() {}
