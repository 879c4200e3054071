package vsphere

import (
	"context"
	"fmt"
	"sort"
	"strings"

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

// retrieveOne reads properties of one object into dst, in one round trip.
func retrieveOne(ctx context.Context, vc *vim25.Client, ref types.ManagedObjectReference, props []string, dst any) error {
	return property.DefaultCollector(vc).RetrieveOne(ctx, ref, props, dst)
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
// through the given traversal. It is the cheap first step of a look-up by
// name: names only, one round trip.
func byName(ctx context.Context, vc *vim25.Client, root types.ManagedObjectReference, kind, name string, selectSet ...types.BaseSelectionSpec) ([]types.ManagedObjectReference, error) {
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: root, Skip: types.NewBool(true), SelectSet: selectSet}},
		PropSet:   []types.PropertySpec{{Type: kind, PathSet: []string{"name"}}},
	})
	if err != nil {
		return nil, err
	}
	var refs []types.ManagedObjectReference
	for _, o := range objs {
		if e, ok := entityOf(o); ok && e.Name == name && e.Self.Type == kind {
			refs = append(refs, e.Self)
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Value < refs[j].Value })
	return refs, nil
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
