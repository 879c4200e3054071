package vcsimlab

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// A VM's name is unique in its folder: CreateVM_Task faults with
// DuplicateName, "thrown because a name already exists in the same name
// space", naming the object that holds it (vSphere Web Services API,
// vim.fault.DuplicateName, thrown by CreateVM_Task). vcsim checks this for
// CloneVM_Task only (govmomi issue #2983) and creates a second VM of the
// same name in the folder.

// requestVMCreation is the pre-hook of CreateVM_Task: the name check, then
// requestSwapPlacement.
func requestVMCreation(x *extension, ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	if req, ok := m.Body.(*types.CreateVM_Task); ok {
		if held := vmNamed(ctx, req.This, req.Config.Name); held != nil {
			return &types.DuplicateName{Name: req.Config.Name, Object: *held}
		}
	}
	return requestSwapPlacement(x, ctx, m)
}

// vmNamed is the VM of the folder named name, or nil.
func vmNamed(ctx *simulator.Context, folder types.ManagedObjectReference, name string) *types.ManagedObjectReference {
	f, ok := ctx.Map.Get(folder).(*simulator.Folder)
	if !ok {
		return nil // vcsim answers for a folder that is not there
	}
	var children []types.ManagedObjectReference
	ctx.WithLock(f, func() { children = append(children, f.ChildEntity...) })
	for _, child := range children {
		vm, ok := ctx.Map.Get(child).(*simulator.VirtualMachine)
		if !ok {
			continue
		}
		var held string
		ctx.WithLock(vm, func() { held = vm.Name })
		if held == name {
			return &child
		}
	}
	return nil
}
