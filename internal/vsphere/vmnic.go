package vsphere

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// MinPVRDMAHardwareVersion is the first virtual hardware with PVRDMA.
const MinPVRDMAHardwareVersion = 13

// GuestShutdownTimeout bounds the wait for a guest OS to shut down before
// the VM is powered off hard.
var GuestShutdownTimeout = 3 * time.Minute

// PVRDMANICSpec is one PVRDMA adapter of a VM.
type PVRDMANICSpec struct {
	PortGroupID      string // distributed port group managed object id
	DeviceProtocol   string // rocev1 or rocev2
	StartConnected   bool
	MAC              string // "" lets vSphere generate one
	ReserveAllMemory bool
	PowerOffAllowed  bool // may shut the guest down and power it back on
}

// PVRDMANIC is a PVRDMA adapter as read from vCenter.
type PVRDMANIC struct {
	VM             VMRef
	Key            int32
	PortGroupID    string // the port group's key, equal to its managed object id
	DeviceProtocol string
	StartConnected bool
	MAC            string
	AdapterIndex   int // position among the VM's PVRDMA adapters by device key, from 0: the N in pvrdmaDevices/<world>_<N>
	MemoryLocked   bool
}

// PVRDMAPlan is what checking a planned adapter needs to know about its VM
// and port group.
type PVRDMAPlan struct {
	VM                 VM
	Protocols          []string // device protocols the VM's hardware version offers; nil when it offers no PVRDMA
	PortGroupName      string
	SwitchName         string
	NotOnSwitch        []string // hosts of the VM's cluster that are not members of the switch
	StandardNetwork    bool     // the id names a standard network, not a distributed port group
	OtherPVRDMAOnGroup bool     // another PVRDMA adapter of the VM uses the same port group
	RegularAdapters    int      // the VM's network adapters that are not PVRDMA
}

// vmLocks serializes the changes a provider instance makes to one VM, so
// resources sharing a VM never race on its configuration or power state.
type vmLocks struct {
	mu    sync.Mutex
	locks map[string]chan struct{}
}

// lock waits for the VM's lock, or for ctx to end.
func (l *vmLocks) lock(ctx context.Context, moid string) (func(), error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]chan struct{}{}
	}
	ch, ok := l.locks[moid]
	if !ok {
		ch = make(chan struct{}, 1)
		l.locks[moid] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// CheckPVRDMANIC gathers what the plan of an adapter must be checked
// against. key is the adapter's device key when it exists, else 0.
func (c *Client) CheckPVRDMANIC(ctx context.Context, vmID, portGroupID string, key int32) (*PVRDMAPlan, error) {
	op := "checking a PVRDMA adapter of virtual machine " + vmID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	vm, err := c.readVMProps(ctx, vc, op, vmID, append(slices.Clone(vmProps), "environmentBrowser"))
	if err != nil {
		return nil, err
	}
	out := &PVRDMAPlan{VM: *vmFromMO(vm)}
	for _, n := range out.VM.NetworkAdapters {
		if n.Type != "vmxnet3vrdma" {
			out.RegularAdapters++
		} else if int32(n.Key) != key && n.NetworkID == portGroupID {
			out.OtherPVRDMAOnGroup = true
		}
	}
	if out.VM.HardwareVersion >= MinPVRDMAHardwareVersion && vm.EnvironmentBrowser.Value != "" && vm.Config != nil {
		if out.Protocols, err = pvrdmaProtocols(ctx, vc, vm.EnvironmentBrowser, vm.Config.Version); err != nil {
			return nil, translate(op+": reading the VM's configuration options", err)
		}
	}

	// The port group, its switch, and the hosts of the VM's cluster.
	var pg mo.DistributedVirtualPortgroup
	err = retrieveOne(ctx, vc, types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: portGroupID}, []string{"name", "key", "config.distributedVirtualSwitch"}, &pg)
	if errors.Is(translate(op, err), ErrNotFound) {
		var n mo.Network
		if nerr := retrieveOne(ctx, vc, types.ManagedObjectReference{Type: "Network", Value: portGroupID}, []string{"name"}, &n); nerr == nil {
			out.StandardNetwork, out.PortGroupName = true, n.Name
			return out, nil
		}
		return nil, notFound(op, "no distributed port group has id %s", portGroupID)
	}
	if err != nil {
		return nil, translate(op, err)
	}
	out.PortGroupName = pg.Name
	if pg.Config.DistributedVirtualSwitch == nil {
		return out, nil
	}
	var s mo.DistributedVirtualSwitch
	if err := retrieveOne(ctx, vc, *pg.Config.DistributedVirtualSwitch, []string{"name", "uuid", "summary.hostMember"}, &s); err != nil {
		return nil, translate(op, err)
	}
	out.SwitchName = s.Name
	if vm.Runtime.Host == nil {
		return out, nil
	}
	clusterHosts, err := siblingHosts(ctx, vc, *vm.Runtime.Host)
	if err != nil {
		return nil, translate(op, err)
	}
	for _, h := range clusterHosts {
		if !slices.Contains(s.Summary.HostMember, h.Self) {
			out.NotOnSwitch = append(out.NotOnSwitch, h.Name)
		}
	}
	sort.Strings(out.NotOnSwitch)
	return out, nil
}

// siblingHosts lists the hosts of a host's cluster (or the host alone).
func siblingHosts(ctx context.Context, vc *vim25.Client, host types.ManagedObjectReference) ([]mo.HostSystem, error) {
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: host, Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "HostSystem", Path: "parent", SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{Type: "ComputeResource", Path: "host"},
			}},
		}}},
		PropSet: []types.PropertySpec{{Type: "HostSystem", PathSet: []string{"name"}}},
	})
	if err != nil {
		return nil, err
	}
	var hosts []mo.HostSystem
	for _, o := range objs {
		if h, ok := o.(mo.HostSystem); ok {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// pvrdmaProtocols reads the device protocols the VM's hardware version
// offers for PVRDMA adapters from its config option, never from a table.
func pvrdmaProtocols(ctx context.Context, vc *vim25.Client, browser types.ManagedObjectReference, version string) ([]string, error) {
	opt, err := object.NewEnvironmentBrowser(vc, browser).QueryConfigOption(ctx, &types.EnvironmentBrowserConfigOptionQuerySpec{Key: version})
	if err != nil || opt == nil {
		return nil, err
	}
	for _, d := range opt.HardwareOptions.VirtualDeviceOption {
		o, ok := d.(*types.VirtualVmxnet3VrdmaOption)
		if !ok || o.DeviceProtocol == nil {
			continue
		}
		var protocols []string
		for _, e := range o.DeviceProtocol.ChoiceInfo {
			protocols = append(protocols, e.GetElementDescription().Key)
		}
		return protocols, nil
	}
	return nil, nil
}

// PVRDMANIC reads one adapter of a VM by device key, in one round trip.
func (c *Client) PVRDMANIC(ctx context.Context, vmID string, key int32) (*PVRDMANIC, error) {
	op := fmt.Sprintf("reading PVRDMA adapter %d of virtual machine %s", key, vmID)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	vm, err := c.vmForChange(ctx, vc, op, vmID)
	if err != nil {
		return nil, err
	}
	return pvrdmaNIC(vm, key, op)
}

func pvrdmaNIC(vm *mo.VirtualMachine, key int32, op string) (*PVRDMANIC, error) {
	ref := VMRef{MOID: vm.Self.Value, Name: vm.Name, PoweredOn: vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn}
	if vm.Config == nil {
		return nil, notFound(op, "virtual machine %s has no configuration", vm.Name)
	}
	ref.ID = vm.Config.Uuid
	index := 0
	for _, dev := range sortedDevices(vm.Config.Hardware.Device) {
		nic, ok := dev.(*types.VirtualVmxnet3Vrdma)
		if !ok {
			continue
		}
		if nic.Key != key {
			index++
			continue
		}
		out := &PVRDMANIC{VM: ref, Key: nic.Key, DeviceProtocol: nic.DeviceProtocol, MAC: nic.MacAddress, AdapterIndex: index}
		if nic.Connectable != nil {
			out.StartConnected = nic.Connectable.StartConnected
		}
		if b, ok := nic.Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo); ok {
			out.PortGroupID = b.Port.PortgroupKey
		}
		if vm.Config.MemoryReservationLockedToMax != nil {
			out.MemoryLocked = *vm.Config.MemoryReservationLockedToMax
		}
		return out, nil
	}
	return nil, notFound(op, "virtual machine %s has no PVRDMA adapter with device key %d", vm.Name, key)
}

func sortedDevices(devs []types.BaseVirtualDevice) []types.BaseVirtualDevice {
	out := slices.Clone(devs)
	sort.Slice(out, func(i, j int) bool { return out[i].GetVirtualDevice().Key < out[j].GetVirtualDevice().Key })
	return out
}

var vmChangeProps = []string{"name", "config.uuid", "config.hardware.device", "config.memoryReservationLockedToMax", "runtime.powerState"}

// vmForChange reads what an adapter change needs.
func (c *Client) vmForChange(ctx context.Context, vc *vim25.Client, op, vmID string) (*mo.VirtualMachine, error) {
	return c.readVMProps(ctx, vc, op, vmID, vmChangeProps)
}

// CreatePVRDMANIC adds an adapter and returns its device key. The key is
// returned whenever the adapter exists, also when a later step (powering
// the VM back on) fails, so the caller keeps track of it.
func (c *Client) CreatePVRDMANIC(ctx context.Context, vmID string, spec PVRDMANICSpec) (int32, error) {
	op := "adding a PVRDMA adapter to virtual machine " + vmID
	nic, err := c.newPVRDMADevice(ctx, op, spec)
	if err != nil {
		return 0, err
	}
	var key int32
	err = c.changeVM(ctx, op, vmID, true, spec.PowerOffAllowed, func(vm *mo.VirtualMachine) (*types.VirtualMachineConfigSpec, error) {
		return &types.VirtualMachineConfigSpec{
			DeviceChange: []types.BaseVirtualDeviceConfigSpec{&types.VirtualDeviceConfigSpec{
				Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: nic,
			}},
			MemoryReservationLockedToMax: lockMemory(vm, spec.ReserveAllMemory),
		}, nil
	}, func(vm *mo.VirtualMachine, before []int32) {
		// The new adapter is the PVRDMA device whose key did not exist before.
		for _, dev := range vm.Config.Hardware.Device {
			if _, ok := dev.(*types.VirtualVmxnet3Vrdma); ok && !slices.Contains(before, dev.GetVirtualDevice().Key) {
				key = dev.GetVirtualDevice().Key
			}
		}
	})
	return key, err
}

// UpdatePVRDMANIC edits an adapter in place.
func (c *Client) UpdatePVRDMANIC(ctx context.Context, vmID string, key int32, spec PVRDMANICSpec, needsPowerOff bool) error {
	op := fmt.Sprintf("changing PVRDMA adapter %d of virtual machine %s", key, vmID)
	nic, err := c.newPVRDMADevice(ctx, op, spec)
	if err != nil {
		return err
	}
	return c.changeVM(ctx, op, vmID, needsPowerOff, spec.PowerOffAllowed, func(vm *mo.VirtualMachine) (*types.VirtualMachineConfigSpec, error) {
		// Edit the device as it is, changing only what this resource
		// manages: a device rebuilt from scratch would disconnect a running
		// adapter and drop settings made elsewhere.
		var dev *types.VirtualVmxnet3Vrdma
		for _, d := range vm.Config.Hardware.Device {
			if v, ok := d.(*types.VirtualVmxnet3Vrdma); ok && v.Key == key {
				dev = v
			}
		}
		if dev == nil {
			return nil, notFound(op, "virtual machine %s has no PVRDMA adapter with device key %d", vm.Name, key)
		}
		card := dev.GetVirtualEthernetCard()
		card.Backing = nic.Backing
		dev.DeviceProtocol = spec.DeviceProtocol
		if card.Connectable == nil {
			card.Connectable = &types.VirtualDeviceConnectInfo{AllowGuestControl: true}
		}
		card.Connectable.StartConnected = spec.StartConnected
		if spec.MAC != "" {
			card.MacAddress, card.AddressType = spec.MAC, addressType(spec.MAC)
		}
		return &types.VirtualMachineConfigSpec{
			DeviceChange: []types.BaseVirtualDeviceConfigSpec{&types.VirtualDeviceConfigSpec{
				Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: dev,
			}},
			MemoryReservationLockedToMax: lockMemory(vm, spec.ReserveAllMemory),
		}, nil
	}, nil)
}

// DeletePVRDMANIC removes an adapter. A missing VM or adapter is no error.
func (c *Client) DeletePVRDMANIC(ctx context.Context, vmID string, key int32, powerOffAllowed bool) error {
	op := fmt.Sprintf("removing PVRDMA adapter %d of virtual machine %s", key, vmID)
	err := c.changeVM(ctx, op, vmID, true, powerOffAllowed, func(vm *mo.VirtualMachine) (*types.VirtualMachineConfigSpec, error) {
		for _, dev := range vm.Config.Hardware.Device {
			if _, ok := dev.(*types.VirtualVmxnet3Vrdma); ok && dev.GetVirtualDevice().Key == key {
				return &types.VirtualMachineConfigSpec{DeviceChange: []types.BaseVirtualDeviceConfigSpec{&types.VirtualDeviceConfigSpec{
					Operation: types.VirtualDeviceConfigSpecOperationRemove, Device: dev,
				}}}, nil
			}
		}
		return nil, nil // already gone
	}, nil)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func addressType(mac string) string {
	if mac == "" {
		return string(types.VirtualEthernetCardMacTypeGenerated)
	}
	return string(types.VirtualEthernetCardMacTypeManual)
}

// lockMemory asks to reserve all guest memory when wanted and not yet so.
// It never unlocks: other resources (GPU passthrough) need it too.
func lockMemory(vm *mo.VirtualMachine, want bool) *bool {
	if !want || (vm.Config.MemoryReservationLockedToMax != nil && *vm.Config.MemoryReservationLockedToMax) {
		return nil
	}
	return types.NewBool(true)
}

// newPVRDMADevice builds the adapter, backed by the port group's switch.
func (c *Client) newPVRDMADevice(ctx context.Context, op string, spec PVRDMANICSpec) (*types.VirtualVmxnet3Vrdma, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	var pg mo.DistributedVirtualPortgroup
	err = retrieveOne(ctx, vc, types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: spec.PortGroupID}, []string{"key", "config.distributedVirtualSwitch"}, &pg)
	if err != nil {
		return nil, translate(op+": reading port group "+spec.PortGroupID, err)
	}
	if pg.Config.DistributedVirtualSwitch == nil {
		return nil, &Error{Op: op, Kind: ErrInvalidArg, Message: "port group " + spec.PortGroupID + " has no distributed switch"}
	}
	var s mo.DistributedVirtualSwitch
	if err := retrieveOne(ctx, vc, *pg.Config.DistributedVirtualSwitch, []string{"uuid"}, &s); err != nil {
		return nil, translate(op, err)
	}
	nic := &types.VirtualVmxnet3Vrdma{DeviceProtocol: spec.DeviceProtocol}
	card := nic.GetVirtualEthernetCard()
	card.Key = -1
	card.Backing = &types.VirtualEthernetCardDistributedVirtualPortBackingInfo{
		Port: types.DistributedVirtualSwitchPortConnection{SwitchUuid: s.Uuid, PortgroupKey: pg.Key},
	}
	card.Connectable = &types.VirtualDeviceConnectInfo{StartConnected: spec.StartConnected, AllowGuestControl: true}
	card.AddressType, card.MacAddress = addressType(spec.MAC), spec.MAC
	return nic, nil
}

// changeVM reconfigures a VM with the spec build returns, serialized with
// every other change this client makes to the VM. When needsPowerOff and
// the VM runs, it refuses unless powerOffAllowed; then it shuts the guest
// down (bounded, then a hard power-off), reconfigures and powers back on.
// after, when set, sees the VM as reconfigured, with the device keys from
// before.
func (c *Client) changeVM(ctx context.Context, op, vmID string, needsPowerOff, powerOffAllowed bool,
	build func(*mo.VirtualMachine) (*types.VirtualMachineConfigSpec, error), after func(vm *mo.VirtualMachine, before []int32)) error {
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	vm, err := c.vmForChange(ctx, vc, op, vmID)
	if err != nil {
		return err
	}
	// Waiting for another resource's change to the VM does not count against
	// this change's timeout; the caller's own context still bounds it.
	unlock, err := c.vms.lock(ctx, vm.Self.Value)
	if err != nil {
		return fmt.Errorf("%s: waiting for another change to %s: %w", op, vm.Name, err)
	}
	defer unlock()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	// Read again under the lock: another resource may just have changed it.
	if vm, err = c.vmForChange(ctx, vc, op, vm.Self.Value); err != nil {
		return err
	}
	spec, err := build(vm)
	if err != nil || spec == nil {
		return err
	}
	var before []int32
	for _, dev := range vm.Config.Hardware.Device {
		before = append(before, dev.GetVirtualDevice().Key)
	}
	err = c.reconfigureVM(ctx, vc, op, WhatPVRDMANeedsOff, vm, *spec, needsPowerOff, powerOffAllowed)
	if err != nil && !errors.Is(err, ErrNotPoweredBackOn) {
		return err
	}
	// The change is made, even when the VM did not come back on: report it.
	if after != nil {
		var done mo.VirtualMachine
		if rerr := retrieveOne(ctx, vc, vm.Self, []string{"config.hardware.device"}, &done); rerr != nil {
			return errors.Join(err, translate(op, rerr))
		}
		after(&done, before)
	}
	return err
}

// reconfigureVM applies spec to a VM read under its lock. When needsPowerOff
// and the VM runs, it refuses unless powerOffAllowed; then it shuts the
// guest down (bounded, then a hard power-off), reconfigures and powers the
// VM back on, also when the reconfigure failed.
func (c *Client) reconfigureVM(ctx context.Context, vc *vim25.Client, op, what string, vm *mo.VirtualMachine, spec types.VirtualMachineConfigSpec, needsPowerOff, powerOffAllowed bool) error {
	obj := object.NewVirtualMachine(vc, vm.Self)
	poweredOn := vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
	if needsPowerOff && vm.Runtime.PowerState == types.VirtualMachinePowerStateSuspended {
		return &Error{Op: op, Kind: ErrInvalidState, Message: fmt.Sprintf("virtual machine %s is suspended; resume it or power it off first", vm.Name)}
	}
	if needsPowerOff && poweredOn {
		if !powerOffAllowed {
			return &Error{Op: op, Kind: ErrInvalidState, Message: PowerOffNeeded(vm.Name, what)}
		}
		if err := c.powerOff(ctx, op, obj, vm.Name); err != nil {
			return err
		}
	}
	if reflect.ValueOf(spec).IsZero() {
		return nil // nothing to change: no task, no power cycle
	}
	task, err := obj.Reconfigure(ctx, spec)
	if err == nil {
		_, err = c.waitTask(ctx, op, task)
	} else {
		err = translate(op, err)
	}
	if needsPowerOff && poweredOn {
		// Power back on whatever happened, even past this change's deadline:
		// the VM was running before.
		pctx, pcancel := c.withTimeout(context.WithoutCancel(ctx))
		defer pcancel()
		c.log.Debug(pctx, "Powering the VM back on", map[string]any{"vm": vm.Name})
		task, perr := obj.PowerOn(pctx)
		if perr == nil {
			_, perr = c.waitTask(pctx, op+": powering "+vm.Name+" back on", task)
		}
		if perr != nil {
			if err == nil { // the change is made; only the VM is off
				return fmt.Errorf("%w: %w", ErrNotPoweredBackOn, translate(op+": powering "+vm.Name+" back on", perr))
			}
			return errors.Join(err, translate(op+": powering "+vm.Name+" back on", perr))
		}
	}
	return err
}

// ErrNotPoweredBackOn: the change was made, but the VM, powered off for
// it, did not power back on. Callers record the change and report the error.
var ErrNotPoweredBackOn = errors.New("the change is made, but the virtual machine did not power back on")

// PowerOffNeeded says why a change was refused on a running VM.
// what says what needs the VM off, e.g. WhatPVRDMANeedsOff.
func PowerOffNeeded(vmName, what string) string {
	return fmt.Sprintf("virtual machine %s is powered on, and %s needs it powered off. Power it off first, or set "+
		"power_off_allowed = true to let the provider shut the guest down, make the change and power it back on", vmName, what)
}

// What needs a VM powered off, for PowerOffNeeded.
const (
	WhatPVRDMANeedsOff = "adding, removing or changing the protocol of a PVRDMA adapter"
	WhatGPUsNeedOff    = "attaching or detaching GPUs, or switching the firmware to EFI"
)

// powerOff shuts the guest down and waits, bounded; then powers off hard.
func (c *Client) powerOff(ctx context.Context, op string, vm *object.VirtualMachine, name string) error {
	c.log.Debug(ctx, "Shutting the guest down for a change that needs the VM off", map[string]any{"vm": name})
	err := vm.ShutdownGuest(ctx)
	if err == nil {
		wait, cancel := context.WithTimeout(ctx, GuestShutdownTimeout)
		err = vm.WaitForPowerState(wait, types.VirtualMachinePowerStatePoweredOff)
		cancel()
	}
	if err == nil {
		return nil
	}
	c.log.Debug(ctx, "Guest shutdown failed or timed out; powering off hard", map[string]any{"vm": name, "reason": err.Error()})
	task, err := vm.PowerOff(ctx)
	if err == nil {
		_, err = c.waitTask(ctx, op+": powering "+name+" off", task)
	}
	if err != nil && !fault.IsAlreadyPoweredOffError(err) {
		return err
	}
	return nil
}

// VMUUID resolves a VM's UUID or managed object id to its UUID.
func (c *Client) VMUUID(ctx context.Context, vmID string) (string, error) {
	vm, err := c.VM(ctx, vmID)
	if err != nil {
		return "", err
	}
	return strings.ToLower(vm.ID), nil
}
