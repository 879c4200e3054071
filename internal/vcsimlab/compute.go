package vcsimlab

import (
	"reflect"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
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

// filterSpecs are the property filter specs of a property collector call.
func filterSpecs(body any) []types.PropertyFilterSpec {
	switch req := body.(type) {
	case *types.RetrieveProperties:
		return req.SpecSet
	case *types.RetrievePropertiesEx:
		return req.SpecSet
	case *types.CreateFilter:
		return []types.PropertyFilterSpec{req.Spec}
	}
	return nil
}

// readsThroughSupertype reports whether the property collector call m
// starts from an object named through a supertype (Lab.handle then routes
// it to the extension). The collector may be the session's own
// (CreatePropertyCollector), which the registry does not hold.
func readsThroughSupertype(ctx *simulator.Context, m *simulator.Method) bool {
	for _, spec := range filterSpecs(m.Body) {
		for _, o := range spec.ObjectSet {
			if _, ok := resolve(ctx, o.Obj); ok {
				return collector(ctx, m.This) != nil
			}
		}
	}
	return false
}

// resolveSpecs resolves the objects the filter specs start from. The
// property specs need no change: vcsim applies a property spec of type
// ComputeResource to a cluster, whose type embeds it.
func resolveSpecs(ctx *simulator.Context, specs []types.PropertyFilterSpec) {
	for i := range specs {
		for j := range specs[i].ObjectSet {
			if ref, ok := resolve(ctx, specs[i].ObjectSet[j].Obj); ok {
				specs[i].ObjectSet[j].Obj = ref
			}
		}
	}
}

// collector is the session's property collector named by this, or nil.
func collector(ctx *simulator.Context, this types.ManagedObjectReference) *simulator.PropertyCollector {
	var obj mo.Reference
	if ctx.Session != nil {
		obj = ctx.Session.Get(this)
	} else {
		obj = ctx.Map.Get(this)
	}
	pc, _ := obj.(*simulator.PropertyCollector)
	return pc
}

// RetrieveProperties reads objects named through a supertype as vCenter
// does: vcsim's property collector reads the objects they name.
func (x *extension) RetrieveProperties(ctx *simulator.Context, req *types.RetrieveProperties) soap.HasFault {
	pc := collector(ctx, req.This)
	if pc == nil {
		return &methods.RetrievePropertiesBody{Fault_: notFoundFault(req.This)}
	}
	resolveSpecs(ctx, req.SpecSet)
	var res soap.HasFault
	ctx.WithLock(pc, func() { res = pc.RetrieveProperties(ctx, req) })
	return res
}

// RetrievePropertiesEx is RetrieveProperties with options.
func (x *extension) RetrievePropertiesEx(ctx *simulator.Context, req *types.RetrievePropertiesEx) soap.HasFault {
	pc := collector(ctx, req.This)
	if pc == nil {
		return &methods.RetrievePropertiesExBody{Fault_: notFoundFault(req.This)}
	}
	resolveSpecs(ctx, req.SpecSet)
	var res soap.HasFault
	ctx.WithLock(pc, func() { res = pc.RetrievePropertiesEx(ctx, req) })
	return res
}

// CreateFilter watches objects named through a supertype (WaitForUpdates).
func (x *extension) CreateFilter(ctx *simulator.Context, req *types.CreateFilter) soap.HasFault {
	pc := collector(ctx, req.This)
	if pc == nil {
		return &methods.CreateFilterBody{Fault_: notFoundFault(req.This)}
	}
	specs := []types.PropertyFilterSpec{req.Spec}
	resolveSpecs(ctx, specs)
	req.Spec = specs[0]
	var res soap.HasFault
	ctx.WithLock(pc, func() { res = pc.CreateFilter(ctx, req) })
	return res
}
