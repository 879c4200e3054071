package vcsimlab

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// FindByUuid and FindAllByUuid replace vcsim's, which walk every registered
// object and panic on one without an embedded mo type: the esxcli executer
// (ManagedMethodExecuter) a host registers on first use is one, so the first
// esxcli call breaks every later VM look-up by UUID. These walk only VMs or
// hosts, and honour the datacenter scope vcsim ignores (vSphere API
// reference, SearchIndex.FindByUuid: "If specified, restricts the search to
// entities within the specified datacenter").
func (x *extension) FindByUuid( //nolint:revive // the vSphere method name, which vcsim dispatches by
	ctx *simulator.Context,
	req *types.FindByUuid,
) soap.HasFault {
	body := &methods.FindByUuidBody{Res: &types.FindByUuidResponse{}}
	if found := findByUUID(ctx, req.Datacenter, req.Uuid, req.VmSearch, req.InstanceUuid); len(found) > 0 {
		body.Res.Returnval = &found[0]
	}
	return body
}

func (x *extension) FindAllByUuid( //nolint:revive // the vSphere method name, which vcsim dispatches by
	ctx *simulator.Context,
	req *types.FindAllByUuid,
) soap.HasFault {
	return &methods.FindAllByUuidBody{Res: &types.FindAllByUuidResponse{
		Returnval: findByUUID(ctx, req.Datacenter, req.Uuid, req.VmSearch, req.InstanceUuid),
	}}
}

func findByUUID(
	ctx *simulator.Context,
	dc *types.ManagedObjectReference,
	uuid string,
	vmSearch bool,
	instanceUUID *bool,
) []types.ManagedObjectReference {
	var found []types.ManagedObjectReference
	kind := "HostSystem"
	if vmSearch {
		kind = "VirtualMachine"
	}
	for _, obj := range ctx.Map.All(kind) {
		if dc != nil && datacenterOf(ctx, obj.Reference()) != *dc {
			continue
		}
		var match bool
		switch o := obj.(type) {
		case *simulator.VirtualMachine:
			ctx.WithLock(o, func() {
				if o.Config != nil {
					match = o.Config.Uuid == uuid
					if instanceUUID != nil && *instanceUUID {
						match = o.Config.InstanceUuid == uuid
					}
				}
			})
		case *simulator.HostSystem:
			ctx.WithLock(o, func() { match = o.Summary.Hardware != nil && o.Summary.Hardware.Uuid == uuid })
		}
		if match {
			found = append(found, obj.Reference())
		}
	}
	return found
}

// datacenterOf walks up the inventory from ref to its datacenter.
func datacenterOf(ctx *simulator.Context, ref types.ManagedObjectReference) types.ManagedObjectReference {
	for ref.Type != "Datacenter" {
		e, ok := ctx.Map.Get(ref).(interface{ Entity() *mo.ManagedEntity })
		if !ok || e.Entity().Parent == nil {
			return types.ManagedObjectReference{}
		}
		ref = *e.Entity().Parent
	}
	return ref
}
