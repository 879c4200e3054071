package vsphere

import (
	"context"
	"strings"
	"sync"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
)

// Resources name VMs by BIOS UUID, and vSphere reads them by managed object
// id. SearchIndex.FindAllByUuid answers one UUID a call, so a plan and an
// apply of N VMs' resources would spend N calls each on it; the first UUID
// a command does not know instead reads every VM's config.uuid in one call
// (the same traversal as a prefetch), bounded at vmUUIDIndexMax VMs; in a
// refresh, the command's first prefetch (prefetch_all.go) holds them already.
// What keeps this honest:
//   - a VM's managed object id never changes while it is registered, and a
//     vCenter never gives a managed object id to a second object, so a hit
//     is either right or names a VM that is gone: the read that follows then
//     fails and refound searches the UUID again, with FindAllByUuid;
//   - a UUID the index lacks (a VM created since, say by another provider
//     in the same apply) is searched with FindAllByUuid, never reported gone on
//     the index's word;
//   - a UUID two VMs share is left to FindAllByUuid, which finds both: the
//     look-up refuses it as ambiguous;
//   - a vCenter with more VMs than the bound gets FindAllByUuid, as before,
//     after one page of the bound.

// vmUUIDIndexMax bounds the VMs the index reads: about 100 bytes each.
const vmUUIDIndexMax = 4096

type vmUUIDIndex struct {
	mu     sync.Mutex
	load   *vmUUIDLoad // nil: not read yet, or the last read failed
	forgot map[string]bool
}

type vmUUIDLoad struct {
	ready chan struct{}
	refs  map[string]types.ManagedObjectReference // lower-case UUID -> VM; nil when the read failed or was too large
}

// lookup answers a lower-case UUID from the index, reading it the first
// time; false when the index cannot say (not there, shared, too large, a
// failed read, or forgotten), and the caller searches with FindAllByUuid.
func (x *vmUUIDIndex) lookup(ctx context.Context, c *Client, vc *vim25.Client, uuid string) (types.ManagedObjectReference, bool) {
	x.mu.Lock()
	l := x.load
	if l == nil {
		l = &vmUUIDLoad{ready: make(chan struct{})}
		x.load = l
		go x.read(context.WithoutCancel(ctx), c, vc, l)
	}
	forgot := x.forgot[uuid]
	x.mu.Unlock()
	if forgot {
		return types.ManagedObjectReference{}, false
	}
	select {
	case <-l.ready:
	case <-ctx.Done():
		return types.ManagedObjectReference{}, false
	}
	ref, ok := l.refs[uuid]
	return ref, ok
}

// read fills l with every VM's UUID in one call. A failed read is not kept:
// the next lookup tries again. A vCenter larger than the bound is kept as
// an empty index, so the command does not pay for finding out twice.
func (x *vmUUIDIndex) read(ctx context.Context, c *Client, vc *vim25.Client, l *vmUUIDLoad) {
	defer close(l.ready)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.APITimeout)
	defer cancel()
	var (
		objs map[types.ManagedObjectReference]types.ObjectContent
		err  error
	)
	if all := c.prefetchAllFor(ctx, vc, types.PropertySpec{Type: "VirtualMachine", PathSet: []string{"config.uuid"}}); all != nil {
		objs = all.objs
	} else {
		objs, err = retrieveBounded(ctx, vc, populationSpec(vc.ServiceContent.RootFolder, "VirtualMachine", []string{"config.uuid"}), vmUUIDIndexMax)
	}
	c.log.Debug(ctx, "Read the VM UUID index", map[string]any{"objects": len(objs), "error": errText(err)})
	if err != nil {
		if err != errPopulationTooLarge {
			x.mu.Lock()
			if x.load == l {
				x.load = nil
			}
			x.mu.Unlock()
		}
		return
	}
	refs := make(map[string]types.ManagedObjectReference, len(objs))
	shared := map[string]bool{}
	for ref, oc := range objs {
		// The property alone: a prefetch of every kind (prefetch_all.go)
		// holds each VM's devices too, and other kinds.
		uuid, _ := prop(oc, "config.uuid").(string)
		if ref.Type != "VirtualMachine" || uuid == "" {
			continue
		}
		uuid = strings.ToLower(uuid)
		if _, seen := refs[uuid]; seen {
			shared[uuid] = true
		}
		refs[uuid] = oc.Obj
	}
	for uuid := range shared {
		delete(refs, uuid)
	}
	l.refs = refs
}

// forget stops answering uuid from the index: the VM it named is gone.
func (x *vmUUIDIndex) forget(uuid string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.forgot == nil {
		x.forgot = map[string]bool{}
	}
	x.forgot[uuid] = true
}
