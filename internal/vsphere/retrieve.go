package vsphere

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// retrieve makes exactly one property-collector round trip and loads every
// returned object into its mo type (mo.HostSystem, mo.VirtualMachine, ...).
func retrieve(ctx context.Context, vc *vim25.Client, specs ...types.PropertyFilterSpec) ([]any, error) {
	res, err := property.DefaultCollector(vc).RetrieveProperties(ctx, types.RetrieveProperties{SpecSet: specs})
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(res.Returnval))
	for _, oc := range res.Returnval {
		obj, err := mo.ObjectContentToType(oc)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// folderTree selects everything below a folder, through nested folders.
func folderTree() *types.TraversalSpec {
	return &types.TraversalSpec{
		SelectionSpec: types.SelectionSpec{Name: "folderTree"},
		Type:          "Folder",
		Path:          "childEntity",
		SelectSet:     []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderTree"}},
	}
}

// byName collects the entities of one type called name below root, reached
// through the given traversal: the first step of a look-up by name. The
// names come from an index of every entity of that type below root, read
// once per client (one Terraform command) in one round trip and shared by
// all look-ups; a name the index lacks reads the index again once, in case
// the entity was created since.
func (c *Client) byName(ctx context.Context, vc *vim25.Client, root types.ManagedObjectReference, kind, name string, selectSet ...types.BaseSelectionSpec) ([]types.ManagedObjectReference, error) {
	asked := time.Now()
	names, err := c.names.get(ctx, vc, c.cfg.APITimeout, root, kind, selectSet, time.Time{})
	if err != nil {
		return nil, err
	}
	if refs, ok := names[name]; ok {
		return refs, nil
	}
	if names, err = c.names.get(ctx, vc, c.cfg.APITimeout, root, kind, selectSet, asked); err != nil {
		return nil, err
	}
	return names[name], nil
}

// nameIndexes holds, per root and entity type, the entities' names.
type nameIndexes struct {
	mu sync.Mutex
	m  map[nameIndexKey]*nameIndex
}

type nameIndexKey struct {
	root types.ManagedObjectReference
	kind string
}

type nameIndex struct {
	ready chan struct{} // closed once names and err are set
	read  time.Time     // when the read began
	names map[string][]types.ManagedObjectReference
	err   error
}

// get returns the index of root's entities of kind, read at notBefore or
// later: a read in flight or done since then serves, else a new one starts.
func (x *nameIndexes) get(ctx context.Context, vc *vim25.Client, timeout time.Duration, root types.ManagedObjectReference, kind string, selectSet []types.BaseSelectionSpec, notBefore time.Time) (map[string][]types.ManagedObjectReference, error) {
	key := nameIndexKey{root, kind}
	x.mu.Lock()
	idx := x.m[key]
	if idx == nil || idx.read.Before(notBefore) {
		idx = &nameIndex{ready: make(chan struct{}), read: time.Now()}
		if x.m == nil {
			x.m = map[nameIndexKey]*nameIndex{}
		}
		x.m[key] = idx
		go idx.load(context.WithoutCancel(ctx), vc, timeout, root, kind, selectSet, x, key)
	}
	x.mu.Unlock()
	select {
	case <-idx.ready:
		return idx.names, idx.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load reads the names in one round trip. A failed read is not kept: the
// next look-up tries again.
func (idx *nameIndex) load(ctx context.Context, vc *vim25.Client, timeout time.Duration, root types.ManagedObjectReference, kind string, selectSet []types.BaseSelectionSpec, x *nameIndexes, key nameIndexKey) {
	defer close(idx.ready)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: root, Skip: types.NewBool(true), SelectSet: selectSet}},
		PropSet:   []types.PropertySpec{{Type: kind, PathSet: []string{"name"}}},
	})
	if err != nil {
		idx.err = err
		x.mu.Lock()
		if x.m[key] == idx {
			delete(x.m, key)
		}
		x.mu.Unlock()
		return
	}
	idx.names = map[string][]types.ManagedObjectReference{}
	for _, o := range objs {
		if e, ok := entityOf(o); ok && e.Self.Type == kind {
			idx.names[e.Name] = append(idx.names[e.Name], e.Self)
		}
	}
	for _, refs := range idx.names {
		sort.Slice(refs, func(i, j int) bool { return refs[i].Value < refs[j].Value })
	}
}

func entityOf(o any) (mo.ManagedEntity, bool) {
	switch v := o.(type) {
	case mo.Datacenter:
		return v.ManagedEntity, true
	case mo.HostSystem:
		return v.ManagedEntity, true
	case mo.VirtualMachine:
		return v.ManagedEntity, true
	case mo.ClusterComputeResource:
		return v.ManagedEntity, true
	case mo.ComputeResource:
		return v.ManagedEntity, true
	}
	return mo.ManagedEntity{}, false
}

func refValues(refs []types.ManagedObjectReference) string {
	vals := make([]string, len(refs))
	for i, r := range refs {
		vals[i] = r.Value
	}
	return strings.Join(vals, ", ")
}

// namesAndIDs lists entities for an error message: `"name" (id), ...`, or "none".
func namesAndIDs[T any](items []T, nameID func(T) (string, string)) string {
	if len(items) == 0 {
		return "none"
	}
	parts := make([]string, len(items))
	for i, item := range items {
		name, id := nameID(item)
		parts[i] = fmt.Sprintf("%q (%s)", name, id)
	}
	return strings.Join(parts, ", ")
}
