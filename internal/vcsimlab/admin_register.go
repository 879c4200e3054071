package vcsimlab

import (
	"context"
	"errors"
	"fmt"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// ReregisterVM removes a powered-off VM from the inventory and registers it
// again from its .vmx into the same folder, resource pool and host, as an
// administrator does after storage maintenance (vSphere Client: Remove from
// Inventory, then the datastore browser's Register VM; govc vm.unregister,
// then govc vm.register). The VM keeps its name, configuration and BIOS
// UUID, and gets a new managed object id (vm_register.go), which VMID
// reports from then on.
func (l *Lab) ReregisterVM(ctx context.Context, vmName string) error {
	if l.simulatorOnly("ReregisterVM") {
		return ErrNotSimulated
	}
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	var v mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"parent", "resourcePool", "runtime.host", "config.files.vmPathName"}, &v); err != nil {
		return err
	}
	if v.Parent == nil || v.ResourcePool == nil || v.Runtime.Host == nil || v.Config == nil {
		return fmt.Errorf("vcsimlab: VM %q has no folder, resource pool, host or configuration", vmName)
	}
	if err := vm.Unregister(ctx); err != nil {
		return err
	}
	c := l.client.Client
	// No name: vCenter names the VM after the .vmx's display name.
	task, err := object.NewFolder(c, *v.Parent).RegisterVM(ctx, v.Config.Files.VmPathName, "", false,
		object.NewResourcePool(c, *v.ResourcePool), object.NewHostSystem(c, *v.Runtime.Host))
	if err != nil {
		return fmt.Errorf("vcsimlab: registering %s again: %w", v.Config.Files.VmPathName, err)
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return fmt.Errorf("vcsimlab: registering %s again: %w", v.Config.Files.VmPathName, err)
	}
	next, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return errors.New("vcsimlab: no VM reference in the registration's result")
	}
	for i := range l.vms {
		if l.vms[i].name == vmName {
			l.vms[i].id = next.Value
		}
	}
	return nil
}
