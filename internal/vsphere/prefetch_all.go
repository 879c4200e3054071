package vsphere

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// The first refresh read of a command reads, in one call, what every
// refresh read of the command will ask for: the datacenters, the folders,
// compute resources and parents that place hosts and VMs in their
// datacenter (the name indexes and the datacenter of a switch or cluster),
// the hosts' names and the refresh properties of every VM, switch and port
// group. Terraform walks a configuration's graph one level after another
// (datacenter, look-ups, hosts and VMs, the switch and host settings,
// adapters), and a read per level put as many calls in sequence; the
// provider cannot see the configuration ahead of its reads (each Terraform
// walk starts the provider anew, and the validation walk's process is not
// the plan's), so it reads every kind it refreshes.
//
// Every kind but the hosts' own properties: a host's PCI devices,
// passthrough and firewall rule sets are some tens of KB each, more than a
// VM's whole refresh, and a configuration of VMs alone (adapters and GPU
// setups on VMs given by id) would pay for them on every plan. The first
// host read starts the hosts' prefetch instead (hostRefreshProps, with
// their clusters' names), which every host read of the command shares: a
// refresh is the session's calls and this one, and one more when the
// configuration reads hosts, whatever its depth.
//
// The same rules as the prefetch of a kind (prefetch.go) keep it honest: a
// refresh read only, before the provider changed anything, an object it
// lacks is read from vCenter, never reported gone on its word. It is
// bounded as a kind's prefetch is, at prefetchMax objects in all: a larger
// vCenter costs one page of that many objects once per command, after
// which each kind is prefetched on its own, as before.

// prefetchAllProps are what a refresh reads of each kind (subtypes
// included: a cluster is a ComputeResource, a VMware switch a
// DistributedVirtualSwitch), sorted.
var prefetchAllProps = map[string][]string{
	"Folder":                      {"parent"},
	"Datacenter":                  {"name", "parent"},
	"ComputeResource":             {"host", "name", "parent"},
	"HostSystem":                  {"name", "parent"},
	"VirtualMachine":              sortedUnion(vmRefreshProps, hostVMProps, []string{"parent"}),
	"DistributedVirtualSwitch":    sortedUnion(dvsProps, []string{"portgroup"}),
	"DistributedVirtualPortgroup": {"config", "key", "name"},
}

// prefetchAllKind is the kind of prefetchAllProps a managed object type
// falls under; "" for none.
func prefetchAllKind(typ string) string {
	switch typ {
	case "ClusterComputeResource":
		return "ComputeResource"
	case "VmwareDistributedVirtualSwitch":
		return "DistributedVirtualSwitch"
	}
	if _, ok := prefetchAllProps[typ]; ok {
		return typ
	}
	return ""
}

func sortedUnion(sets ...[]string) []string {
	return slices.Compact(slices.Sorted(slices.Values(slices.Concat(sets...))))
}

// prefetchAll is the command's first prefetch, started if this is the
// first read; nil once the provider has changed anything. Callers wait for
// it, and read from vCenter when it failed (too large a vCenter).
func (c *Client) prefetchAll(ctx context.Context, vc *vim25.Client) *prefetch {
	return c.prefetch.start(ctx, prefetchKey{kind: "all"}, func(ctx context.Context, f *prefetch, limit int) {
		spec := populationSpec(vc.ServiceContent.RootFolder, "HostSystem", nil)
		spec.PropSet = spec.PropSet[:0]
		for _, kind := range slices.Sorted(maps.Keys(prefetchAllProps)) {
			spec.PropSet = append(spec.PropSet, types.PropertySpec{Type: kind, PathSet: prefetchAllProps[kind]})
		}
		f.load(ctx, c, vc, "every kind", spec, limit)
	})
}

// prefetchAllFor is the command's first prefetch when it holds every
// property of specs and a refresh read with ctx may use it, waited for;
// nil otherwise (not covered, a change, or the prefetch failed).
func (c *Client) prefetchAllFor(ctx context.Context, vc *vim25.Client, specs ...types.PropertySpec) *prefetch {
	if !prefetchMayAnswer(ctx, refresh) {
		return nil
	}
	for _, s := range specs {
		have, ok := prefetchAllProps[prefetchAllKind(s.Type)]
		if !ok || !subset(slices.Sorted(slices.Values(s.PathSet)), have) {
			return nil
		}
	}
	if all := c.prefetchAll(ctx, vc); all.wait(ctx) {
		return all
	}
	return nil
}

// objectsOf loads the prefetched objects of kind (subtypes included) into
// their mo types, ordered by managed object id.
func (f *prefetch) objectsOf(kind string) []any {
	var refs []types.ManagedObjectReference
	for ref := range f.objs {
		if prefetchAllKind(ref.Type) == kind {
			refs = append(refs, ref)
		}
	}
	sortRefs(refs)
	out := make([]any, 0, len(refs))
	for _, ref := range refs {
		if o, err := mo.ObjectContentToType(f.objs[ref]); err == nil {
			out = append(out, o)
		}
	}
	return out
}

// sortRefs orders references by type, then by the number in their id
// (host-9 before host-10), then by id.
func sortRefs(refs []types.ManagedObjectReference) {
	num := func(v string) int {
		n := 0
		for _, r := range v[strings.LastIndexByte(v, '-')+1:] {
			if r < '0' || r > '9' {
				return -1
			}
			n = n*10 + int(r-'0')
		}
		return n
	}
	sort.Slice(refs, func(i, j int) bool {
		a, b := refs[i], refs[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if na, nb := num(a.Value), num(b.Value); na != nb {
			return na < nb
		}
		return a.Value < b.Value
	})
}

// prop is the value of the property called name in oc; nil when absent.
func prop(oc types.ObjectContent, name string) any {
	for _, p := range oc.PropSet {
		if p.Name == name {
			return p.Val
		}
	}
	return nil
}

// datacenterOf follows parents from ref to its datacenter; false when the
// chain leaves the prefetch before one (a VM of a vApp has no parent).
func (f *prefetch) datacenterOf(ref types.ManagedObjectReference) (types.ManagedObjectReference, bool) {
	for range 64 { // folders nest; a cycle would be a broken inventory
		oc, ok := f.objs[ref]
		if !ok {
			return types.ManagedObjectReference{}, false
		}
		if ref.Type == "Datacenter" {
			return ref, true
		}
		parent, ok := prop(oc, "parent").(types.ManagedObjectReference)
		if !ok {
			return types.ManagedObjectReference{}, false
		}
		ref = parent
	}
	return types.ManagedObjectReference{}, false
}

// prefetchNames are the name indexes of every datacenter, derived once
// from the first prefetch.
type prefetchNames struct {
	once  sync.Once
	names map[types.ManagedObjectReference]map[namedEntity][]types.ManagedObjectReference
}

// named is what the name index of datacenter says of key, from the first
// prefetch: the hosts under its host folder (through folders and compute
// resources) and the VMs under its VM folder (through folders), as
// nameIndex.load reads them.
func (f *prefetch) named(datacenter types.ManagedObjectReference, key namedEntity) []types.ManagedObjectReference {
	f.names.once.Do(func() {
		f.names.names = map[types.ManagedObjectReference]map[namedEntity][]types.ManagedObjectReference{}
		for ref, oc := range f.objs {
			if ref.Type != "HostSystem" && ref.Type != "VirtualMachine" {
				continue
			}
			name, _ := prop(oc, "name").(string)
			dc, ok := f.datacenterOf(ref)
			if !ok || name == "" {
				continue
			}
			if f.names.names[dc] == nil {
				f.names.names[dc] = map[namedEntity][]types.ManagedObjectReference{}
			}
			k := namedEntity{ref.Type, EntityName(name)}
			f.names.names[dc][k] = append(f.names.names[dc][k], ref)
		}
		for _, idx := range f.names.names {
			for _, refs := range idx {
				sortRefs(refs)
			}
		}
	})
	return f.names.names[datacenter][key]
}

// prefetchedDVS is readDVS answered from the first prefetch; false when the
// switch or one of its port groups is not there, and it is read from
// vCenter.
func (f *prefetch) prefetchedDVS(ref types.ManagedObjectReference) (*mo.DistributedVirtualSwitch, []mo.DistributedVirtualPortgroup, string, bool) {
	oc, ok := f.objs[ref]
	if !ok {
		return nil, nil, "", false
	}
	o, err := mo.ObjectContentToType(oc)
	if err != nil {
		return nil, nil, "", false
	}
	var s mo.DistributedVirtualSwitch
	switch v := o.(type) {
	case mo.VmwareDistributedVirtualSwitch:
		s = v.DistributedVirtualSwitch
	case mo.DistributedVirtualSwitch:
		s = v
	default:
		return nil, nil, "", false
	}
	pgs := make([]mo.DistributedVirtualPortgroup, 0, len(s.Portgroup))
	for _, pgRef := range s.Portgroup {
		var pg mo.DistributedVirtualPortgroup
		if !f.object(pgRef, &pg) {
			return nil, nil, "", false
		}
		pgs = append(pgs, pg)
	}
	dc, ok := f.datacenterOf(ref)
	if !ok {
		return nil, nil, "", false
	}
	return &s, pgs, dc.Value, true
}

// clustersOf is what ClusterByName reads of datacenter, from the first
// prefetch: its clusters and their hosts; false when the datacenter is not
// there, and it is read from vCenter.
func (f *prefetch) clustersOf(datacenter types.ManagedObjectReference) ([]any, bool) {
	if _, ok := f.objs[datacenter]; !ok {
		return nil, false
	}
	var out []any
	for _, o := range f.objectsOf("ComputeResource") {
		cr, ok := o.(mo.ClusterComputeResource)
		if !ok {
			continue
		}
		if dc, in := f.datacenterOf(cr.Self); !in || dc != datacenter {
			continue
		}
		out = append(out, cr)
		for _, h := range cr.Host {
			if name, ok := prop(f.objs[h], "name").(string); ok {
				out = append(out, mo.HostSystem{ManagedEntity: mo.ManagedEntity{ExtensibleManagedObject: mo.ExtensibleManagedObject{Self: h}, Name: name}})
			}
		}
	}
	return out, true
}
