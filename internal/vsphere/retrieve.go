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
		obj, err := mo.ObjectContentToType(withoutAbsentKeys(oc))
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// withoutAbsentKeys drops from oc's missing properties the keyed paths the
// provider reads (absentKeyPaths) that vCenter may report as
// InvalidProperty when the object has no element of that key, where vcsim
// leaves them out: either way the key reads as unset, not as a failed read.
func withoutAbsentKeys(oc types.ObjectContent) types.ObjectContent {
	if len(oc.MissingSet) == 0 {
		return oc
	}
	kept := oc.MissingSet[:0:0]
	for _, m := range oc.MissingSet {
		if _, invalid := m.Fault.Fault.(*types.InvalidProperty); invalid && absentKeyPaths[m.Path] {
			continue
		}
		kept = append(kept, m)
	}
	oc.MissingSet = kept
	return oc
}

// absentKeyPaths are the keyed paths whose element an object may lack: the
// keys of a VM's GPU setup, a host's PVRDMA option and ruleset (before ESXi
// 6.5).
var absentKeyPaths = func() map[string]bool {
	out := map[string]bool{pvrdmaVmknicPath: true, pvrdmaRulesetPath: true}
	for _, p := range gpuExtraConfig {
		out[p] = true
	}
	return out
}()

// folderTree selects everything below a folder, through nested folders.
func folderTree() *types.TraversalSpec {
	return &types.TraversalSpec{
		SelectionSpec: types.SelectionSpec{Name: "folderTree"},
		Type:          "Folder",
		Path:          "childEntity",
		SelectSet:     []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderTree"}},
	}
}

// byName collects the hosts or VMs (kind) called name in a datacenter: the
// first step of a look-up by name. The names come from an index of every
// host and VM in the datacenter, read once per client (one Terraform
// command) in one round trip and shared by all look-ups of either kind, so
// a configuration that looks up hosts and VMs pays one call for both; a
// name the index lacks reads the index again once, in case the entity was
// created since.
func (c *Client) byName(
	ctx context.Context,
	vc *vim25.Client,
	datacenter types.ManagedObjectReference,
	kind, name string,
) ([]types.ManagedObjectReference, error) {
	asked := time.Now()
	key := namedEntity{kind, name}
	if all := c.prefetchAllFor(ctx, vc, types.PropertySpec{Type: kind, PathSet: []string{"name", "parent"}}); all != nil {
		if refs := all.named(datacenter, key); len(refs) > 0 {
			return refs, nil
		}
	}
	names, err := c.names.get(ctx, vc, c.cfg.APITimeout, datacenter, time.Time{})
	if err != nil {
		return nil, err
	}
	if refs, ok := names[key]; ok {
		return refs, nil
	}
	if names, err = c.names.get(ctx, vc, c.cfg.APITimeout, datacenter, asked); err != nil {
		return nil, err
	}
	return names[key], nil
}

// vCenter stores '%', '/' and '\' in an entity's name escaped, as "%25",
// "%2f" or "%2F" and "%5c" or "%5C" (vSphere API reference,
// ManagedEntity.name): a name read is unescaped, to be compared with a name
// given as a person reads it, and to be shown.
var nameUnescaper = strings.NewReplacer(`%25`, `%`, `%2f`, `/`, `%2F`, `/`, `%5c`, `\`, `%5C`, `\`)

// EntityName is the name of an entity as vCenter returns it, unescaped.
func EntityName(stored string) string { return nameUnescaper.Replace(stored) }

// nameEscaper escapes a name as vCenter stores it. vCenter escapes '/' and
// '\' itself, and '%' unless it starts an escape sequence (ManagedEntity.name),
// so a name given as "a%2fb" would be stored as is and read back as "a/b":
// escaping every '%' first makes every name read back as given.
var nameEscaper = strings.NewReplacer(`%`, `%25`, `/`, `%2f`, `\`, `%5c`)

// storedName is a name as sent to vCenter for an entity a person calls
// name: EntityName(storedName(name)) == name.
func storedName(name string) string { return nameEscaper.Replace(name) }

// nameIndexes holds, per datacenter, its hosts' and VMs' names.
type nameIndexes struct {
	mu sync.Mutex
	m  map[types.ManagedObjectReference]*nameIndex
}

type namedEntity struct {
	kind, name string
}

type nameIndex struct {
	ready chan struct{} // closed once names and err are set
	read  time.Time     // when the read began
	names map[namedEntity][]types.ManagedObjectReference
	err   error
}

// get returns the index of datacenter, read at notBefore or later: a read
// in flight or done since then serves, else a new one starts.
func (x *nameIndexes) get(
	ctx context.Context,
	vc *vim25.Client,
	timeout time.Duration,
	datacenter types.ManagedObjectReference,
	notBefore time.Time,
) (map[namedEntity][]types.ManagedObjectReference, error) {
	x.mu.Lock()
	idx := x.m[datacenter]
	if idx == nil || idx.read.Before(notBefore) {
		idx = &nameIndex{ready: make(chan struct{}), read: time.Now()}
		if x.m == nil {
			x.m = map[types.ManagedObjectReference]*nameIndex{}
		}
		x.m[datacenter] = idx
		go idx.load(context.WithoutCancel(ctx), vc, timeout, datacenter, x)
	}
	x.mu.Unlock()
	select {
	case <-idx.ready:
		return idx.names, idx.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load reads the names in one round trip: the hosts through the host
// folder's folders and compute resources, the VMs through the VM folder's
// folders. A failed read is not kept: the next look-up tries again.
func (idx *nameIndex) load(ctx context.Context, vc *vim25.Client, timeout time.Duration, datacenter types.ManagedObjectReference, x *nameIndexes) {
	defer close(idx.ready)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	computeHosts := &types.SelectionSpec{Name: "computeHosts"}
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: datacenter, Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{
				Type:      "Datacenter",
				Path:      "hostFolder",
				SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderTree"}, computeHosts},
			},
			&types.TraversalSpec{Type: "Datacenter", Path: "vmFolder", SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderTree"}}},
			folderTreeWith(computeHosts),
			&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "computeHosts"}, Type: "ComputeResource", Path: "host"},
		}}},
		PropSet: []types.PropertySpec{{Type: "HostSystem", PathSet: []string{"name"}}, {Type: "VirtualMachine", PathSet: []string{"name"}}},
	})
	if err != nil {
		idx.err = err
		x.mu.Lock()
		if x.m[datacenter] == idx {
			delete(x.m, datacenter)
		}
		x.mu.Unlock()
		return
	}
	idx.names = map[namedEntity][]types.ManagedObjectReference{}
	for _, o := range objs {
		if e, ok := entityOf(o); ok {
			key := namedEntity{e.Self.Type, EntityName(e.Name)}
			idx.names[key] = append(idx.names[key], e.Self)
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
