package vcsimlab

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// MigrateVM moves a VM to another host of the lab, as DRS placing it at
// power-on, or a cold migration, does: runtime.host and both hosts' vm lists
// change, and its devices stay as they are (a passthrough device's PCI id
// then names the new host's device at that address). A powered-on VM with a
// PCI passthrough or SR-IOV device is refused: vMotion is not supported for
// a VM with DirectPath I/O (vSphere Networking, "DirectPath I/O": vMotion is
// among the features not available to such a VM). A powered-on VM with
// vGPUs moves as vMotion moves it (vm_vgpu_migrate.go): with vCenter's
// vgpu.hotmigrate.enabled, its vGPUs placed on the destination's GPUs.
func (l *Lab) MigrateVM(ctx context.Context, vmName, hostName string) error {
	if l.simulatorOnly("MigrateVM") {
		return ErrNotSimulated
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	reg := l.model.Map()
	vm, ok := reg.Get(ref("VirtualMachine", l.VMID(vmName))).(*simulator.VirtualMachine)
	if !ok {
		return fmt.Errorf("vcsimlab: no VM %q", vmName)
	}
	to := ref("HostSystem", l.HostID(hostName))
	if _, ok := reg.Get(to).(*simulator.HostSystem); !ok {
		return fmt.Errorf("vcsimlab: no host %q", hostName)
	}
	sctx := newContext(reg)
	var from *types.ManagedObjectReference
	var pinned, vgpu bool
	sctx.WithLock(vm, func() {
		from = vm.Runtime.Host
		on := vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn && vm.Config != nil
		pinned = on && pinnedToHost(vm.Config.Hardware.Device)
		vgpu = on && hasVGPU(vm.Config.Hardware.Device)
	})
	switch {
	case from == nil:
		return fmt.Errorf("vcsimlab: VM %q has no host", vmName)
	case pinned:
		return fmt.Errorf("vcsimlab: VM %q runs with a passthrough device, which vMotion does not move", vmName)
	case vgpu:
		if err := l.ext.migrateVGPUVM(sctx, vm, *from, to); err != nil {
			return fmt.Errorf("vcsimlab: VM %q: %w", vmName, err)
		}
		return nil
	}
	moveVM(sctx, vm, *from, to)
	return nil
}
