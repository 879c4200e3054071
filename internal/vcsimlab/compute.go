package vcsimlab

import (
	"reflect"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// References through a supertype. vCenter finds a managed object by its id
// and accepts a reference whose type is the object's type or one it
// extends: ClusterComputeResource extends ComputeResource (vSphere Web
// Services API, ClusterComputeResource: "Extends ComputeResource"), and
// ComputeResource:domain-c7 names the cluster domain-c7. HashiCorp's
// vSphere provider relies on it: computeresource.BaseFromReference turns a
// ClusterComputeResource reference into ComputeResource (StandaloneFromID)
// before reading the cluster's properties and environment browser
// (terraform-provider-vsphere,
// vsphere/internal/helper/computeresource/compute_resource_helper.go), and
// govmomi's mo.LoadObjectContent loads a ClusterComputeResource result into
// a ComputeResource ("dst is ComputeResource, res is ClusterComputeResource").
// vcsim keys its objects by type and id, so it answers such a reference with
// ManagedObjectNotFound; the lab resolves the reference to the object before
// vcsim sees it.

// subtypes lists the subtypes of a managed object type that vcsim keeps
// objects of, for the types whose references the lab resolves.
var subtypes = map[string][]string{
	"ComputeResource": {"ClusterComputeResource"},
}

// resolve returns the reference, with the object's own type, to the object
// that ref names through a supertype, and true; or ref and false when ref
// names an object as it is, or nothing.
func resolve(ctx *simulator.Context, ref types.ManagedObjectReference) (types.ManagedObjectReference, bool) {
	subs := subtypes[ref.Type]
	if len(subs) == 0 || ctx.Map.Get(ref) != nil {
		return ref, false
	}
	for _, sub := range subs {
		r := types.ManagedObjectReference{Type: sub, Value: ref.Value}
		if ctx.Map.Get(r) != nil {
			return r, true
		}
	}
	return ref, false
}

// retarget points the call m at the object ref: the call's This and the
// request body's.
func retarget(m *simulator.Method, ref types.ManagedObjectReference) {
	m.This = ref
	if body := reflect.ValueOf(m.Body); body.Kind() == reflect.Pointer && body.Elem().Kind() == reflect.Struct {
		if this := body.Elem().FieldByName("This"); this.CanSet() && this.Type() == reflect.TypeOf(ref) {
			this.Set(reflect.ValueOf(ref))
		}
	}
}

// resolveTarget is the pre-hook of the methods a cluster has as a
// ComputeResource (ReconfigureComputeResource_Task, and those of
// ManagedEntity): a call on the cluster through a ComputeResource
// reference goes to the cluster.
func resolveTarget(_ *extension, ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	if ref, ok := resolve(ctx, m.This); ok {
		retarget(m, ref)
	}
	return nil
}

// resolveReads is the pre-hook of the property collector's reads: the
// objects a filter spec starts from, named through a supertype, become the
// objects they name. The property specs need no change: vcsim applies a
// property spec of type ComputeResource to a cluster, whose type embeds it.
func resolveReads(_ *extension, ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	var specs []types.PropertyFilterSpec
	switch req := m.Body.(type) {
	case *types.RetrieveProperties:
		specs = req.SpecSet
	case *types.RetrievePropertiesEx:
		specs = req.SpecSet
	case *types.CreateFilter:
		specs = []types.PropertyFilterSpec{req.Spec}
		defer func() { req.Spec = specs[0] }()
	}
	for i := range specs {
		for j := range specs[i].ObjectSet {
			if ref, ok := resolve(ctx, specs[i].ObjectSet[j].Obj); ok {
				specs[i].ObjectSet[j].Obj = ref
			}
		}
	}
	return nil
}
