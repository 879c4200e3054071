package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
)

// GPURequest is one GPU to pass through: a host PCI id, or (dynamic
// DirectPath) a vendor and device id that vSphere picks a device for at
// power on.
type GPURequest struct {
	PCIID    string
	VendorID string // four hex digits
	DeviceID string
}

// Dynamic reports whether the request is by vendor and device id.
func (g GPURequest) Dynamic() bool { return g.PCIID == "" }

// GPUMMIOSpec is the GPU passthrough setup of a VM.
type GPUMMIOSpec struct {
	GPUs            []GPURequest
	MMIOSizeGB      int64
	PowerOffAllowed bool
}

// GPUMMIO is a VM's GPU passthrough setup as read from vCenter.
type GPUMMIO struct {
	VM           VMRef
	Firmware     string
	Use64bitMMIO bool  // pciPassthru.use64bitMMIO is TRUE, in any case
	MMIOSizeGB   int64 // 0 when unset or not a number
	MemoryLocked bool
	GPUs         []PCIPassthrough
	// ExtraConfig holds the two MMIO keys as set now; "" when unset.
	ExtraConfig map[string]string
}

var gpuMMIOProps = []string{"name", "config.uuid", "config.firmware", "config.extraConfig", "config.hardware.device",
	"config.memoryReservationLockedToMax", "runtime.powerState"}

// GPUMMIO reads a VM's GPU passthrough setup in one round trip (by managed
// object id; a UUID adds its search).
func (c *Client) GPUMMIO(ctx context.Context, vmID string) (*GPUMMIO, error) {
	op := "reading the GPU passthrough setup of virtual machine " + vmID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	vm, err := c.readVMProps(ctx, vc, op, vmID, gpuMMIOProps)
	if err != nil {
		return nil, err
	}
	return gpuMMIOFromMO(vm), nil
}

func gpuMMIOFromMO(vm *mo.VirtualMachine) *GPUMMIO {
	out := &GPUMMIO{
		VM:          VMRef{MOID: vm.Self.Value, Name: vm.Name, PoweredOn: vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn},
		ExtraConfig: map[string]string{mmio.Use64bitMMIOKey: "", mmio.SizeGBKey: ""},
	}
	if vm.Config == nil {
		return out
	}
	out.VM.ID, out.Firmware = vm.Config.Uuid, vm.Config.Firmware
	if vm.Config.MemoryReservationLockedToMax != nil {
		out.MemoryLocked = *vm.Config.MemoryReservationLockedToMax
	}
	for _, o := range vm.Config.ExtraConfig {
		v := o.GetOptionValue()
		if _, managed := out.ExtraConfig[v.Key]; managed && v.Value != nil {
			out.ExtraConfig[v.Key] = fmt.Sprint(v.Value)
		}
	}
	out.Use64bitMMIO = strings.EqualFold(out.ExtraConfig[mmio.Use64bitMMIOKey], "TRUE")
	out.MMIOSizeGB, _ = strconv.ParseInt(out.ExtraConfig[mmio.SizeGBKey], 10, 64)
	for _, dev := range sortedDevices(vm.Config.Hardware.Device) {
		if pt, ok := dev.(*types.VirtualPCIPassthrough); ok && managedBacking(pt) {
			out.GPUs = append(out.GPUs, pciPassthrough(pt))
		}
	}
	return out
}

// readVMProps reads a VM by UUID or managed object id.
func (c *Client) readVMProps(ctx context.Context, vc *vim25.Client, op, vmID string, props []string) (*mo.VirtualMachine, error) {
	ref, err := vmRef(ctx, vc, vmID)
	if err != nil {
		return nil, translate(op, err)
	}
	if ref == nil {
		return nil, notFound(op, "no virtual machine has UUID %s", vmID)
	}
	var vm mo.VirtualMachine
	if err := retrieveOne(ctx, vc, *ref, props, &vm); err != nil {
		if errors.Is(translate(op, err), ErrNotFound) {
			return nil, notFound(op, "no virtual machine has id %s", ref.Value)
		}
		return nil, translate(op, err)
	}
	return &vm, nil
}

// GPUPlan is what checking a VM's GPU setup needs: the VM and the GPUs of
// its host, with the VMs using each.
type GPUPlan struct {
	VM       VM
	HostName string
	HostGPUs []GPU
}

// CheckGPUMMIO reads the VM and its host's GPUs.
func (c *Client) CheckGPUMMIO(ctx context.Context, vmID string) (*GPUPlan, error) {
	vm, err := c.VM(ctx, vmID)
	if err != nil {
		return nil, err
	}
	out := &GPUPlan{VM: *vm}
	if vm.HostID == "" {
		return out, nil
	}
	host, err := c.Host(ctx, vm.HostID)
	if err != nil {
		return nil, err
	}
	out.HostName, out.HostGPUs = host.Name, host.GPUs
	return out, nil
}

// HostWithGPU names the host of the VM's cluster that has a GPU with this
// PCI id, for telling the user where it is; "" when none has.
func (c *Client) HostWithGPU(ctx context.Context, vmHostID, pciID string) (string, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return "", err
	}
	hosts, err := siblingHosts(ctx, vc, types.ManagedObjectReference{Type: "HostSystem", Value: vmHostID})
	if err != nil {
		return "", translate("finding GPU "+pciID, err)
	}
	for _, h := range hosts {
		if h.Self.Value == vmHostID {
			continue
		}
		host, err := c.Host(ctx, h.Self.Value)
		if err != nil {
			return "", err
		}
		for _, g := range host.GPUs {
			if g.PCIID == pciID {
				return host.Name, nil
			}
		}
	}
	return "", nil
}

// ApplyGPUMMIO sets EFI firmware, the two MMIO keys, all memory reserved,
// and the VM's passthrough devices to exactly spec.GPUs, in one reconfigure.
func (c *Client) ApplyGPUMMIO(ctx context.Context, vmID string, spec GPUMMIOSpec) error {
	op := "setting up GPU passthrough on virtual machine " + vmID
	return c.changeGPUs(ctx, op, vmID, spec.PowerOffAllowed, func(vm *mo.VirtualMachine, current *GPUMMIO, target *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
		cs := &types.VirtualMachineConfigSpec{}
		needsOff := false
		if current.Firmware != string(types.GuestOsDescriptorFirmwareTypeEfi) {
			cs.Firmware, needsOff = string(types.GuestOsDescriptorFirmwareTypeEfi), true
		}
		size := strconv.FormatInt(spec.MMIOSizeGB, 10)
		if !current.Use64bitMMIO || current.ExtraConfig[mmio.Use64bitMMIOKey] != "TRUE" {
			cs.ExtraConfig = append(cs.ExtraConfig, &types.OptionValue{Key: mmio.Use64bitMMIOKey, Value: "TRUE"})
		}
		if current.ExtraConfig[mmio.SizeGBKey] != size {
			cs.ExtraConfig = append(cs.ExtraConfig, &types.OptionValue{Key: mmio.SizeGBKey, Value: size})
		}
		if !current.MemoryLocked {
			cs.MemoryReservationLockedToMax = types.NewBool(true)
		}
		changes, err := gpuChanges(vm, spec.GPUs, target)
		if err != nil {
			return nil, false, &Error{Op: op, Kind: ErrInvalidArg, Message: err.Error()}
		}
		cs.DeviceChange = changes
		// A new MMIO window applies from the next boot: it needs a power
		// cycle like the firmware and the devices.
		return cs, needsOff || len(changes) > 0 || len(cs.ExtraConfig) > 0, nil
	})
}

// RemoveGPUMMIO detaches the VM's passthrough devices and puts back the MMIO
// keys as they were before (an empty value removes a key). Firmware stays
// EFI: a guest installed under EFI does not boot under BIOS.
func (c *Client) RemoveGPUMMIO(ctx context.Context, vmID string, before map[string]string, powerOffAllowed bool) error {
	op := "removing GPU passthrough from virtual machine " + vmID
	err := c.changeGPUs(ctx, op, vmID, powerOffAllowed, func(vm *mo.VirtualMachine, current *GPUMMIO, _ *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
		cs := &types.VirtualMachineConfigSpec{}
		for _, key := range []string{mmio.Use64bitMMIOKey, mmio.SizeGBKey} {
			if current.ExtraConfig[key] != before[key] {
				cs.ExtraConfig = append(cs.ExtraConfig, &types.OptionValue{Key: key, Value: before[key]})
			}
		}
		for _, dev := range vm.Config.Hardware.Device {
			if pt, ok := dev.(*types.VirtualPCIPassthrough); ok && managedBacking(pt) {
				cs.DeviceChange = append(cs.DeviceChange, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationRemove, Device: dev})
			}
		}
		return cs, len(cs.DeviceChange) > 0, nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// changeGPUs runs a GPU change under the VM's lock, with the VM's host's
// passthrough offer at hand for new devices.
func (c *Client) changeGPUs(ctx context.Context, op, vmID string, powerOffAllowed bool,
	build func(vm *mo.VirtualMachine, current *GPUMMIO, target *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error)) error {
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	first, err := c.readVMProps(ctx, vc, op, vmID, []string{"name"})
	if err != nil {
		return err
	}
	unlock, err := c.vms.lock(ctx, first.Self.Value)
	if err != nil {
		return fmt.Errorf("%s: waiting for another change to %s: %w", op, first.Name, err)
	}
	defer unlock()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vm, err := c.readVMProps(ctx, vc, op, first.Self.Value, append(gpuMMIOProps, "runtime.host"))
	if err != nil {
		return err
	}
	var target *types.ConfigTarget
	if vm.Runtime.Host != nil {
		browser, err := object.NewVirtualMachine(vc, vm.Self).EnvironmentBrowser(ctx)
		if err != nil {
			return translate(op+": reading the VM's environment browser", err)
		}
		if target, err = browser.QueryConfigTarget(ctx, object.NewHostSystem(vc, *vm.Runtime.Host)); err != nil {
			return translate(op+": reading the host's passthrough devices", err)
		}
	}
	cs, needsOff, err := build(vm, gpuMMIOFromMO(vm), target)
	if err != nil {
		return err
	}
	return c.reconfigureVM(ctx, vc, op, WhatGPUsNeedOff, vm, *cs, needsOff, powerOffAllowed)
}

// gpuChanges adds the requested GPUs the VM lacks and removes the
// passthrough devices no longer requested.
func gpuChanges(vm *mo.VirtualMachine, want []GPURequest, target *types.ConfigTarget) ([]types.BaseVirtualDeviceConfigSpec, error) {
	var changes []types.BaseVirtualDeviceConfigSpec
	kept := make([]bool, len(want))
	for _, dev := range vm.Config.Hardware.Device {
		pt, ok := dev.(*types.VirtualPCIPassthrough)
		if !ok || !managedBacking(pt) {
			continue
		}
		have := pciPassthrough(pt)
		match := -1
		for i, w := range want {
			if kept[i] {
				continue
			}
			if (!w.Dynamic() && !have.Dynamic && w.PCIID == have.PCIID) ||
				(w.Dynamic() && have.Dynamic && w.VendorID == have.VendorID && w.DeviceID == have.DeviceID) {
				match = i
				break
			}
		}
		if match < 0 {
			changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationRemove, Device: dev})
			continue
		}
		kept[match] = true
	}
	key := int32(-1) // new devices need distinct temporary keys
	for i, w := range want {
		if kept[i] {
			continue
		}
		dev, err := passthroughDevice(w, target)
		if err != nil {
			return nil, err
		}
		dev.Key, key = key, key-1
		changes = append(changes, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: dev})
	}
	return changes, nil
}

// managedBacking tells the passthrough devices this provider manages (a
// host device, or dynamic DirectPath) from others such as vGPU profiles.
func managedBacking(pt *types.VirtualPCIPassthrough) bool {
	switch pt.Backing.(type) {
	case *types.VirtualPCIPassthroughDeviceBackingInfo, *types.VirtualPCIPassthroughDynamicBackingInfo:
		return true
	}
	return false
}

// passthroughDevice builds a passthrough device: a static one filled from
// what the host offers (as the vSphere Client does), or a dynamic one.
func passthroughDevice(w GPURequest, target *types.ConfigTarget) (*types.VirtualPCIPassthrough, error) {
	dev := &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Key: -1}}
	if w.Dynamic() {
		vendor, err1 := strconv.ParseUint(w.VendorID, 16, 16)
		device, err2 := strconv.ParseUint(w.DeviceID, 16, 16)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("vendor id %q and device id %q must be four hex digits", w.VendorID, w.DeviceID)
		}
		dev.Backing = &types.VirtualPCIPassthroughDynamicBackingInfo{
			AllowedDevice: []types.VirtualPCIPassthroughAllowedDevice{{VendorId: int32(vendor), DeviceId: int32(device)}},
		}
		return dev, nil
	}
	// vSphere needs the device's ids and the host's system id, as the
	// host offers them for passthrough.
	if target != nil {
		for _, p := range target.PciPassthrough {
			if info, ok := p.(*types.VirtualMachinePciPassthroughInfo); ok && info.PciDevice.Id == w.PCIID {
				backing := &types.VirtualPCIPassthroughDeviceBackingInfo{
					Id: w.PCIID, DeviceId: fmt.Sprintf("%x", uint16(info.PciDevice.DeviceId)), VendorId: info.PciDevice.VendorId,
					SystemId: info.SystemId,
				}
				backing.DeviceName = info.PciDevice.DeviceName
				dev.Backing = backing
				return dev, nil
			}
		}
	}
	return nil, fmt.Errorf("the VM's host does not offer device %s for passthrough", w.PCIID)
}
