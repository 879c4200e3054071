package vcsimlab

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

const (
	rocev1 = string(types.VirtualVmxnet3VrdmaOptionDeviceProtocolsRocev1)
	rocev2 = string(types.VirtualVmxnet3VrdmaOptionDeviceProtocolsRocev2)
)

// vrdmaProtocols lists the PVRDMA device protocols a hardware version
// offers: PVRDMA needs vmx-13, which has RoCE v1 only (vSphere 6.5); RoCE v2
// came with vmx-14 (vSphere 6.7).
func vrdmaProtocols(hw int) []string {
	switch {
	case hw < 13:
		return nil
	case hw == 13:
		return []string{rocev1}
	default:
		return []string{rocev1, rocev2}
	}
}

// hwVersion parses "vmx-19" into 19; 0 when it does not parse.
func hwVersion(v string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(v, "vmx-"))
	return n
}

// ReconfigVMTask refuses what real vSphere refuses, with a failed task, and
// otherwise lets vcsim reconfigure the VM.
func (x *extension) ReconfigVMTask(ctx *simulator.Context, req *types.ReconfigVM_Task) soap.HasFault {
	body := new(methods.ReconfigVM_TaskBody)
	vm, ok := target[*simulator.VirtualMachine](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	var res soap.HasFault
	ctx.WithLock(vm, func() {
		if err := checkReconfig(ctx, vm, &req.Spec); err != nil {
			body.Res = &types.ReconfigVM_TaskResponse{Returnval: finishTask(ctx, vm, "ReconfigVM_Task", nil, err)}
			res = body
			return
		}
		if vm.Config != nil {
			keepSriovBacking(vm, &req.Spec)
		}
		res = vm.ReconfigVMTask(ctx, req)
	})
	return res
}

// checkReconfig returns what real vSphere fails the reconfigure task with,
// or nil. It runs with vm locked.
func checkReconfig(ctx *simulator.Context, vm *simulator.VirtualMachine, spec *types.VirtualMachineConfigSpec) *vimError {
	if vm.Config == nil {
		return nil
	}
	// notOff refuses a change that needs the VM powered off; nil when it is.
	var notOff *vimError
	if state := vm.Runtime.PowerState; state != types.VirtualMachinePowerStatePoweredOff {
		notOff = refuse(&types.InvalidPowerState{RequestedState: types.VirtualMachinePowerStatePoweredOff, ExistingState: state},
			"The attempted operation cannot be performed in the current state (%s).", state)
	}

	if spec.Firmware != "" && spec.Firmware != vm.Config.Firmware {
		switch types.GuestOsDescriptorFirmwareType(spec.Firmware) {
		case types.GuestOsDescriptorFirmwareTypeBios, types.GuestOsDescriptorFirmwareTypeEfi:
		default:
			return invalidArgument("configSpec.firmware")
		}
		if notOff != nil {
			return notOff
		}
	}

	for i, change := range spec.DeviceChange {
		if change == nil {
			continue
		}
		if ds := change.GetVirtualDeviceConfigSpec(); ds != nil {
			if err := checkDeviceChange(ctx, vm, i, ds, notOff); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDeviceChange returns what real vSphere fails the reconfigure task
// with for its device change i, or nil; notOff as in checkReconfig.
func checkDeviceChange(ctx *simulator.Context, vm *simulator.VirtualMachine, i int, ds *types.VirtualDeviceConfigSpec, notOff *vimError) *vimError {
	op := ds.Operation
	remove := op == types.VirtualDeviceConfigSpecOperationRemove
	addOrRemove := op == types.VirtualDeviceConfigSpecOperationAdd || remove
	switch d := ds.Device.(type) {
	case *types.VirtualVmxnet3Vrdma:
		hw := hwVersion(vm.Config.Version)
		if !remove && hw < 13 {
			f := &types.DeviceUnsupportedForVmVersion{CurrentVersion: vm.Config.Version, ExpectedVersion: "vmx-13"}
			f.DeviceIndex = int32(i)
			return refuse(f, "Device 'vmxnet3vrdma' is not supported for virtual machine hardware version '%s'. A minimum version of 'vmx-13' is required for this operation to succeed.", vm.Config.Version)
		}
		// PVRDMA adapters are not hot-pluggable.
		if addOrRemove && notOff != nil {
			return notOff
		}
		if !remove && d.DeviceProtocol != "" && !slices.Contains(vrdmaProtocols(hw), d.DeviceProtocol) {
			return invalidArgument(fmt.Sprintf("spec.deviceChange[%d].device.deviceProtocol", i))
		}
	case *types.VirtualPCIPassthrough:
		// Passthrough devices cannot be hot-added or hot-removed.
		if addOrRemove && notOff != nil {
			return notOff
		}
		if remove {
			return nil
		}
		if msg := checkPassthrough(ctx, vm, d); msg != "" {
			f := &types.InvalidDeviceBacking{}
			f.DeviceIndex = int32(i)
			return refuse(f, "%s", msg)
		}
	case *types.VirtualSriovEthernetCard:
		// SR-IOV adapters cannot be hot-added or hot-removed: "Hot addition
		// and removal of virtual devices" is not available to VMs with
		// SR-IOV (vSphere Networking 6.5, "SR-IOV Support").
		if addOrRemove && notOff != nil {
			return notOff
		}
		if remove {
			return nil
		}
		return checkSriovCard(ctx, vm.Runtime.Host, i, d, op == types.VirtualDeviceConfigSpecOperationAdd)
	}
	return nil
}

// checkPassthrough returns why the VM's host cannot back the passthrough
// device d, or "": the device must be passthrough-active on that host.
func checkPassthrough(ctx *simulator.Context, vm *simulator.VirtualMachine, d *types.VirtualPCIPassthrough) string {
	if vm.Runtime.Host == nil {
		return "the virtual machine has no host"
	}
	host, ok := ctx.Map.Get(*vm.Runtime.Host).(*simulator.HostSystem)
	if !ok {
		return "the virtual machine's host was not found"
	}
	var active []types.HostPciDevice
	var hostName string
	ctx.WithLock(host, func() {
		hostName = host.Name
		active = activeDevices(&host.HostSystem)
	})
	switch b := d.Backing.(type) {
	case *types.VirtualPCIPassthroughDeviceBackingInfo:
		for _, dev := range active {
			if dev.Id == b.Id {
				return ""
			}
		}
		return fmt.Sprintf("PCI device %s is not available for passthrough on host %s.", b.Id, hostName)
	case *types.VirtualPCIPassthroughDynamicBackingInfo:
		for _, a := range b.AllowedDevice {
			for _, dev := range active {
				if a.VendorId == int32(uint16(dev.VendorId)) && a.DeviceId == int32(uint16(dev.DeviceId)) {
					return ""
				}
			}
		}
		return fmt.Sprintf("No PCI device allowed by the dynamic DirectPath backing is available for passthrough on host %s.", hostName)
	}
	return ""
}

// activeDevices lists the host's passthrough-active PCI devices. The host
// must be locked.
func activeDevices(h *mo.HostSystem) []types.HostPciDevice {
	if h.Config == nil || h.Hardware == nil {
		return nil
	}
	var out []types.HostPciDevice
	for _, p := range h.Config.PciPassthruInfo {
		info := p.GetHostPciPassthruInfo()
		if !info.PassthruActive {
			continue
		}
		for _, dev := range h.Hardware.PciDevice {
			if dev.Id == info.Id {
				out = append(out, dev)
			}
		}
	}
	return out
}

// syncGraphics records in the host's graphicsInfo which of its GPUs the VM
// has attached, as ESXi does. vm is locked.
func (x *extension) syncGraphics(ctx *simulator.Context, vm *mo.VirtualMachine) {
	if vm.Runtime.Host == nil || vm.Config == nil {
		return
	}
	ids := map[string]bool{}
	for _, d := range vm.Config.Hardware.Device {
		if p, ok := d.(*types.VirtualPCIPassthrough); ok {
			if b, ok := p.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo); ok {
				ids[b.Id] = true
			}
		}
	}
	x.setGraphicsVM(ctx, *vm.Runtime.Host, vm.Self, ids)
}

// setGraphicsVM lists vm in the graphicsInfo entries of the host's GPUs in
// ids, and removes it from the others.
func (x *extension) setGraphicsVM(ctx *simulator.Context, hostRef, vm types.ManagedObjectReference, ids map[string]bool) {
	host, ok := ctx.Map.Get(hostRef).(*simulator.HostSystem)
	if !ok {
		return
	}
	ctx.WithLock(host, func() {
		if host.Config == nil {
			return
		}
		changed := false
		next := slices.Clone(host.Config.GraphicsInfo)
		for i := range next {
			g := &next[i]
			has := slices.Contains(g.Vm, vm)
			switch {
			case ids[g.PciId] && !has:
				g.Vm = append(slices.Clone(g.Vm), vm)
				changed = true
			case !ids[g.PciId] && has:
				g.Vm = slices.DeleteFunc(slices.Clone(g.Vm), func(r types.ManagedObjectReference) bool { return r == vm })
				changed = true
			}
		}
		if changed {
			ctx.Update(host, []types.PropertyChange{{Name: "config.graphicsInfo", Val: next}})
		}
	})
}
