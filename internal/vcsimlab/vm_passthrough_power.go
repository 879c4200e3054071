package vcsimlab

import (
	"fmt"
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// Passthrough turned off under a VM. UpdatePassthruConfig does not refuse
// to turn passthrough off for a device a VM is configured with: the API
// reference documents only HostConfigFault ("Thrown if an error occurs")
// for it, no public source documents a refusal, and Ansible's
// vmware_host_passthrough module turns it off without looking at VMs. What
// administrators meet is the VM's next power-on failing, "Module
// 'DevicePowerOn' power on failed. Failed to start the virtual machine.
// Device 6:0.0 is not a passthrough device." (Broadcom KB, "VM with GPU in
// passthrough mode fails to start on HPE server", where the host lost the
// device's passthrough state). The lab does the same: the device stays in
// the VM's configuration, and the VM does not power on while its host has
// the device not active for passthrough. No public source gives the fault
// type; the lab sends GenericVmConfigFault with that message, as for a
// missing VF (noFreeVF).

// inactivePassthrough refuses the power-on of vm, which is locked, when a
// PCI passthrough device it is configured with by id is not active for
// passthrough on its host.
func inactivePassthrough(ctx *simulator.Context, vm *simulator.VirtualMachine) *vimError {
	if vm.Config == nil || vm.Runtime.Host == nil {
		return nil
	}
	var ids []string
	for _, d := range vm.Config.Hardware.Device {
		if p, ok := d.(*types.VirtualPCIPassthrough); ok {
			if b, ok := p.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo); ok && b.Id != "" {
				ids = append(ids, b.Id)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	host, ok := ctx.Map.Get(*vm.Runtime.Host).(*simulator.HostSystem)
	if !ok {
		return nil
	}
	var active []string
	ctx.WithLock(host, func() {
		if host.Config == nil {
			return
		}
		for _, p := range host.Config.PciPassthruInfo {
			if info := p.GetHostPciPassthruInfo(); info.PassthruActive {
				active = append(active, info.Id)
			}
		}
	})
	for _, id := range ids {
		if !slices.Contains(active, id) {
			msg := fmt.Sprintf(
				"Module 'DevicePowerOn' power on failed. Failed to start the virtual machine %s. Device %s is not a passthrough device.",
				vm.Name,
				id,
			)
			return refuse(&types.GenericVmConfigFault{Reason: msg}, "%s", msg)
		}
	}
	return nil
}
