package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// Matches reports whether a VM's passthrough device is the one requested.
func (g GPURequest) Matches(have PCIPassthrough) bool {
	if g.Dynamic() {
		return have.Dynamic && have.VendorID == g.VendorID && have.DeviceID == g.DeviceID
	}
	return !have.Dynamic && have.PCIID == g.PCIID
}

// SameGPUs reports whether the requested GPUs are exactly those the VM has.
func SameGPUs(want []GPURequest, have []PCIPassthrough) bool {
	if len(want) != len(have) {
		return false
	}
	used := make([]bool, len(have))
	for _, w := range want {
		found := false
		for i, h := range have {
			if !used[i] && w.Matches(h) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

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

// gpuChangeProps are what a GPU change reads beyond vmChangeProps.
var gpuChangeProps = []string{"config.firmware", "config.extraConfig"}

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
		VM:          vmRefOf(vm),
		ExtraConfig: map[string]string{mmio.Use64bitMMIOKey: "", mmio.SizeGBKey: ""},
	}
	if vm.Config == nil {
		return out
	}
	out.Firmware = vm.Config.Firmware
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

// GPUMMIOChange is a planned GPU passthrough setup of a VM, to check.
type GPUMMIOChange struct {
	VMID                string // UUID or managed object id, as given
	GPUs                []GPURequest
	MMIOSizeGB          *int64 // nil: sized by the rule
	AllowFirmwareChange bool
	PowerOffAllowed     bool
	Existing            bool  // the setup exists and is changed
	CurrentMMIOSizeGB   int64 // the window the existing setup has
}

// GPUMMIOPlan is a checked setup: its findings and, once its GPUs passed
// their checks (Sized), their memory and the MMIO window they get.
type GPUMMIOPlan struct {
	Findings      []Finding
	Sized         bool
	TotalMemoryGB float64
	MMIOSizeGB    int64 // 0 when it cannot be sized
}

// The findings of PlanGPUMMIO and PlanMMIOSize. Index is the GPU's position
// in the request; VM names the VM as "name (id as given)".
type (
	// NoDynamicGPU: the VM's host has no passthrough-active GPU of the
	// requested vendor and device id.
	NoDynamicGPU struct {
		Index                    int
		VM, Host, Vendor, Device string
	}
	// TooFewGPUs: the request asks for more GPUs of one model than the
	// VM's host has active for passthrough. Index is the first dynamic
	// request past what the host has.
	TooFewGPUs struct {
		Index                                int
		VM, Host, Vendor, Device, DeviceName string
		Active, Asked                        int
	}
	// GPUNotActive: the GPU is not active for passthrough on its host.
	GPUNotActive struct {
		Index               int
		PCIID, Device, Host string
	}
	// GPUInUse: another VM is configured with the GPU; the second of two
	// VMs with one GPU does not boot.
	GPUInUse struct {
		Index       int
		PCIID, Host string
		Other       VMRef
	}
	// GPUNotOnHost: the VM's host has no such GPU; OnHost names the host
	// of the VM's cluster that has it, "" when none has.
	GPUNotOnHost struct {
		Index                   int
		VM, Host, PCIID, OnHost string
	}
	// FirmwareChangeRefused: the VM has BIOS firmware and a guest OS, which
	// would not boot after the switch to EFI.
	FirmwareChangeRefused struct {
		VM, Firmware, Guest string
	}
	// MMIOSizeUnknown: a GPU's memory is not reported, so the rule cannot
	// size the window.
	MMIOSizeUnknown struct{}
	// NothingToSize: no GPU and no size given.
	NothingToSize struct{}
	// MMIOSizeImpossible: the GPUs' memory is beyond any window.
	MMIOSizeImpossible struct {
		Err error
	}
	// MMIONotPowerOfTwo: vSphere needs a power of two.
	MMIONotPowerOfTwo struct {
		Given, Suggested int64
	}
	// MMIOTooSmall: below the rule's size the VM does not boot, silently.
	MMIOTooSmall struct {
		Given, Rule int64
		TotalGB     float64
	}
)

func (NoDynamicGPU) finding()          {}
func (TooFewGPUs) finding()            {}
func (GPUNotActive) finding()          {}
func (GPUInUse) finding()              {}
func (GPUNotOnHost) finding()          {}
func (FirmwareChangeRefused) finding() {}
func (MMIOSizeUnknown) finding()       {}
func (NothingToSize) finding()         {}
func (MMIOSizeImpossible) finding()    {}
func (MMIONotPowerOfTwo) finding()     {}
func (MMIOTooSmall) finding()          {}

// PlanMMIOSize sizes the MMIO window of GPUs with totalGB of memory (known:
// every GPU's memory is reported): the given size if it is a power of two
// and not below the rule's, else the rule's (internal/mmio). It needs no
// vCenter.
func PlanMMIOSize(given *int64, totalGB float64, known, anyGPU bool) (int64, Finding) {
	var rule int64
	if anyGPU && known {
		var err error
		if rule, err = mmio.SizeGB(totalGB); err != nil {
			return 0, MMIOSizeImpossible{Err: err}
		}
	}
	switch {
	case given == nil && rule == 0 && anyGPU:
		return 0, MMIOSizeUnknown{}
	case given == nil && !anyGPU:
		return 0, NothingToSize{}
	case given == nil:
		return rule, nil
	case !mmio.IsPowerOfTwo(*given):
		return *given, MMIONotPowerOfTwo{Given: *given, Suggested: max(rule, 64)}
	case *given < rule:
		return *given, MMIOTooSmall{Given: *given, Rule: rule, TotalGB: totalGB}
	}
	return *given, nil
}

// PlanGPUMMIO checks a planned setup against the VM and its host's GPUs:
// each GPU, the window's size, the firmware switch and the power state.
func (c *Client) PlanGPUMMIO(ctx context.Context, ch GPUMMIOChange) (*GPUMMIOPlan, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vm, host, err := c.vmAndHost(ctx, ch.VMID)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("%s (%s)", vm.Name, ch.VMID)
	out := &GPUMMIOPlan{Findings: c.claimGPUs(vm, host, label, ch)}
	total, known := 0.0, true
	for i, g := range ch.GPUs {
		gb, findings, err := c.planGPU(ctx, vm, host, label, i, g)
		if err != nil {
			return nil, err
		}
		out.Findings = append(out.Findings, findings...)
		total += gb
		known = known && gb > 0
	}
	out.Findings = append(out.Findings, planGPUCounts(label, host, ch.GPUs)...)
	if len(out.Findings) > 0 {
		return out, nil // refused GPUs: nothing to size
	}
	out.Sized, out.TotalMemoryGB = true, total
	size, f := PlanMMIOSize(ch.MMIOSizeGB, total, known, len(ch.GPUs) > 0)
	out.MMIOSizeGB = size
	if f != nil {
		out.Findings = append(out.Findings, f)
	}
	efi := vm.Firmware == string(types.GuestOsDescriptorFirmwareTypeEfi)
	if !efi && (vm.GuestFamily != "" || vm.GuestFullName != "") && !ch.AllowFirmwareChange {
		out.Findings = append(out.Findings, FirmwareChangeRefused{VM: label, Firmware: vm.Firmware,
			Guest: strings.TrimSpace(vm.GuestFullName + " " + vm.GuestFamily)})
	}
	needsOff := !ch.Existing || !efi || !SameGPUs(ch.GPUs, vm.PCIPassthroughs) || size != ch.CurrentMMIOSizeGB
	if p := PlanPower(label, vm.PowerState, needsOff, ch.PowerOffAllowed, WhatGPUsNeedOff); p != nil {
		out.Findings = append(out.Findings, p)
	}
	return out, nil
}

// planGPU checks one requested GPU against the VM's host and returns its
// memory, 0 when unknown.
func (c *Client) planGPU(ctx context.Context, vm *VM, host *Host, label string, index int, g GPURequest) (float64, []Finding, error) {
	if g.Dynamic() {
		for _, h := range host.GPUs {
			if h.VendorID == g.VendorID && h.DeviceID == g.DeviceID && h.PassthroughActive {
				return h.MemoryGB, nil, nil
			}
		}
		return 0, []Finding{NoDynamicGPU{Index: index, VM: label, Host: host.Name, Vendor: g.VendorID, Device: g.DeviceID}}, nil
	}
	for _, h := range host.GPUs {
		if h.PCIID != g.PCIID {
			continue
		}
		var out []Finding
		// A device a host passthrough resource of this plan turns on is
		// active once that resource is applied: it is planned first, as the
		// VM's resource refers to it.
		if !h.PassthroughActive && !c.claims.claimed(ClaimPCIDevice, host.ID+" "+g.PCIID) {
			out = append(out, GPUNotActive{Index: index, PCIID: g.PCIID, Device: h.DeviceName, Host: host.Name})
		}
		for _, u := range h.VMs {
			if u.MOID != vm.MOID {
				out = append(out, GPUInUse{Index: index, PCIID: g.PCIID, Host: host.Name, Other: u})
			}
		}
		return h.MemoryGB, out, nil
	}
	onHost, err := c.hostWithGPU(ctx, vm.HostID, g.PCIID)
	if err != nil {
		onHost = "" // only the hint is lost
	}
	return 0, []Finding{GPUNotOnHost{Index: index, VM: label, Host: host.Name, PCIID: g.PCIID, OnHost: onHost}}, nil
}

// planGPUCounts refuses asking for more GPUs of a model than the VM's host
// has active for passthrough: each dynamic DirectPath device is assigned one
// physical device of its model when the VM powers on (vSphere API,
// VirtualPCIPassthroughDynamicBackingInfo.assignedId), so a VM asking for
// more than the host has does not power on. A GPU requested by PCI id takes
// one device of its model too. A model the host lacks altogether is
// NoDynamicGPU's, per GPU.
func planGPUCounts(label string, host *Host, gpus []GPURequest) []Finding {
	type model struct{ vendor, device string }
	active := map[model]int{}
	names := map[model]string{}
	modelOf := map[string]model{} // PCI id -> model
	for _, h := range host.GPUs {
		m := model{h.VendorID, h.DeviceID}
		modelOf[h.PCIID] = m
		names[m] = h.DeviceName
		if h.PassthroughActive {
			active[m]++
		}
	}
	asked := map[model]int{}
	var order []model
	first := map[model]int{} // the first dynamic request past what the host has
	for i, g := range gpus {
		m, ok := model{g.VendorID, g.DeviceID}, true
		if !g.Dynamic() {
			m, ok = modelOf[g.PCIID]
		}
		if !ok {
			continue
		}
		if asked[m] == 0 {
			order = append(order, m)
		}
		asked[m]++
		if _, seen := first[m]; !seen && g.Dynamic() && asked[m] > active[m] {
			first[m] = i
		}
	}
	var out []Finding
	for _, m := range order {
		index, over := first[m]
		if !over || active[m] == 0 {
			continue
		}
		out = append(out, TooFewGPUs{Index: index, VM: label, Host: host.Name, Vendor: m.vendor, Device: m.device,
			DeviceName: names[m], Active: active[m], Asked: asked[m]})
	}
	return out
}

// GPUMemoryGB adds up the memory of a VM's passthrough GPUs as its host
// reports them.
func (c *Client) GPUMemoryGB(ctx context.Context, vmID string, gpus []PCIPassthrough) (float64, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	_, host, err := c.vmAndHost(ctx, vmID)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, g := range gpus {
		for _, h := range host.GPUs {
			if (!g.Dynamic && h.PCIID == g.PCIID) || (g.Dynamic && h.VendorID == g.VendorID && h.DeviceID == g.DeviceID) {
				total += h.MemoryGB
				break
			}
		}
	}
	return total, nil
}

// vmAndHost reads a VM and its host; the host is empty when the VM has none.
func (c *Client) vmAndHost(ctx context.Context, vmID string) (*VM, *Host, error) {
	vm, err := c.VM(ctx, vmID)
	if err != nil {
		return nil, nil, err
	}
	if vm.HostID == "" {
		return vm, &Host{}, nil
	}
	host, err := c.Host(ctx, vm.HostID)
	return vm, host, err
}

// hostWithGPU names the host of the VM's cluster that has a GPU with this
// PCI id, for telling the user where it is; "" when none has.
func (c *Client) hostWithGPU(ctx context.Context, vmHostID, pciID string) (string, error) {
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
	return c.changeVM(ctx, vmChange{op: op, vmID: vmID, props: gpuChangeProps, change: WhatGPUsNeedOff, powerOffAllowed: spec.PowerOffAllowed,
		configTarget: true, hostLock: true, build: func(vm *mo.VirtualMachine, target *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
			// Under the host's lock: a GPU another VM took since the plan is
			// refused, not shared.
			if err := c.gpusStillFree(ctx, op, vm, spec.GPUs); err != nil {
				return nil, false, err
			}
			current := gpuMMIOFromMO(vm)
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
		}})
}

// RemoveGPUMMIO detaches the VM's passthrough devices and puts back the MMIO
// keys as they were before (an empty value removes a key). Firmware stays
// EFI: a guest installed under EFI does not boot under BIOS.
func (c *Client) RemoveGPUMMIO(ctx context.Context, vmID string, before map[string]string, powerOffAllowed bool) error {
	op := "removing GPU passthrough from virtual machine " + vmID
	err := c.changeVM(ctx, vmChange{op: op, vmID: vmID, props: gpuChangeProps, change: WhatGPUsNeedOff, powerOffAllowed: powerOffAllowed, build: func(vm *mo.VirtualMachine, _ *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
		current := gpuMMIOFromMO(vm)
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
	}})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
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
			if !kept[i] && w.Matches(have) {
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

// Empty reports whether nothing of a GPU passthrough setup is left: no
// passthrough device this provider manages and neither MMIO key. Firmware
// and the memory reservation do not count: they outlive a setup.
func (g *GPUMMIO) Empty() bool {
	return len(g.GPUs) == 0 && g.ExtraConfig[mmio.Use64bitMMIOKey] == "" && g.ExtraConfig[mmio.SizeGBKey] == ""
}

// ClaimGPUSetup claims a VM's GPU setup, given by UUID or managed object id,
// for a planned resource, and returns the rival claim of another one. The
// planner claims by UUID too, so two resources naming one VM differently
// still meet.
func (c *Client) ClaimGPUSetup(vmID, vmName string, gpus []GPURequest, mmioSizeGB *int64) Finding {
	size := "by the rule"
	if mmioSizeGB != nil {
		size = strconv.FormatInt(*mmioSizeGB, 10)
	}
	return c.Claim(Claim{Kind: ClaimGPUSetup, Key: strings.ToLower(vmID), What: "the GPU setup of virtual machine " + vmName,
		Owner: "a setup with GPUs " + gpuList(gpus), Plan: fmt.Sprintf("%v %s", gpus, size)})
}

// claimGPUs claims the VM's GPU setup and each static GPU on its host for
// this plan, and returns the rival claims of other resources.
func (c *Client) claimGPUs(vm *VM, host *Host, label string, ch GPUMMIOChange) []Finding {
	var out []Finding
	if f := c.ClaimGPUSetup(vm.ID, vm.Name, ch.GPUs, ch.MMIOSizeGB); f != nil {
		out = append(out, f)
	}
	for _, g := range ch.GPUs {
		if g.Dynamic() || host.ID == "" {
			continue // dynamic DirectPath: vSphere picks a free device at power on
		}
		gpu := Claim{Kind: ClaimGPU, Key: host.ID + " " + g.PCIID, What: fmt.Sprintf("GPU %s on host %s", g.PCIID, host.Name),
			Owner: "virtual machine " + label, Plan: strings.ToLower(vm.ID)}
		if f := c.Claim(gpu); f != nil {
			out = append(out, f)
		}
	}
	return out
}

func gpuList(gpus []GPURequest) string {
	if len(gpus) == 0 {
		return "none"
	}
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = g.PCIID
		if g.Dynamic() {
			names[i] = g.VendorID + ":" + g.DeviceID
		}
	}
	return strings.Join(names, ", ")
}

// gpusStillFree refuses static GPUs the VM does not have yet that another
// VM of its host is configured with now: the plan's check may be stale.
func (c *Client) gpusStillFree(ctx context.Context, op string, vm *mo.VirtualMachine, want []GPURequest) error {
	if vm.Runtime.Host == nil {
		return nil
	}
	host, err := c.Host(ctx, vm.Runtime.Host.Value)
	if err != nil {
		return err
	}
	for _, w := range want {
		if w.Dynamic() {
			continue
		}
		for _, g := range host.GPUs {
			if g.PCIID != w.PCIID {
				continue
			}
			for _, u := range g.VMs {
				if u.MOID != vm.Self.Value {
					return &Error{Op: op, Kind: ErrInUse, Object: ObjectVirtualMachine, ID: u.MOID, Message: fmt.Sprintf(
						"GPU %s on host %s was given to virtual machine %s after the plan was made; a GPU passes through to one VM only", w.PCIID, host.Name, u.Name)}
				}
			}
		}
	}
	return nil
}
