package vcsimlab

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// SetVMAccessible makes a VM inaccessible (false) or accessible again
// (true), as losing and regaining the datastore that holds its files does.
// vCenter then reports runtime.connectionState "inaccessible" and no
// configuration: the vSphere API reference, VirtualMachineConnectionState,
// "inaccessible: One or more of the virtual machine configuration files are
// inaccessible ... In this case, no configuration can be returned for a
// virtual machine." The configuration comes back unchanged.
func (l *Lab) SetVMAccessible(ctx context.Context, vmName string, accessible bool) error {
	if l.simulatorOnly("SetVMAccessible") {
		return ErrNotSimulated
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	id := l.VMID(vmName)
	reg := l.model.Map()
	vm, ok := reg.Get(ref("VirtualMachine", id)).(*simulator.VirtualMachine)
	if !ok {
		return fmt.Errorf("vcsimlab: no VM %q", vmName)
	}
	// The lab's lock is never held with an object's: calls take them the
	// other way round.
	l.mu.Lock()
	hidden, isHidden := l.hiddenConfigs[id]
	l.mu.Unlock()
	if accessible == !isHidden {
		return fmt.Errorf("vcsimlab: VM %q is already %s", vmName, map[bool]string{true: "accessible", false: "inaccessible"}[accessible])
	}
	var shown *types.VirtualMachineConfigInfo
	newContext(reg).WithLock(vm, func() {
		if accessible {
			vm.Config, vm.Runtime.ConnectionState = hidden, types.VirtualMachineConnectionStateConnected
			return
		}
		shown = vm.Config
		vm.Config, vm.Runtime.ConnectionState = nil, types.VirtualMachineConnectionStateInaccessible
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if accessible {
		delete(l.hiddenConfigs, id)
		return nil
	}
	if l.hiddenConfigs == nil {
		l.hiddenConfigs = map[string]*types.VirtualMachineConfigInfo{}
	}
	l.hiddenConfigs[id] = shown
	return nil
}
