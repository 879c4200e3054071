package vsphere

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
)

// GPURequest is one GPU to pass through: a host PCI id, or (dynamic
// DirectPath) a vendor and device id that vSphere picks a device for at
// power on, or (NVIDIA vGPU) a vGPU profile that the host places on one of
// its GPUs at power on.
type GPURequest struct {
	PCIID    string
	VendorID string // four hex digits
	DeviceID string
	// Label narrows a dynamic DirectPath request to the host devices with
	// that hardware label (a pool); "" takes any device of the model.
	Label string
	VGPU  string // a vGPU profile, e.g. "grid_a100-20c"
}

// Dynamic reports whether the request is by vendor and device id.
func (g GPURequest) Dynamic() bool { return g.PCIID == "" && g.VGPU == "" }

// Matches reports whether a VM's passthrough device is the one requested.
func (g GPURequest) Matches(have PCIPassthrough) bool {
	if g.VGPU != "" {
		return have.VGPU == g.VGPU
	}
	if g.Dynamic() {
		return have.Dynamic && !have.Narrowed() && have.VendorID == g.VendorID && have.DeviceID == g.DeviceID && have.Label == g.Label
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

// GPUMMIOSpec is the passthrough setup of a VM: its GPUs, its other
// passthrough devices (InfiniBand VFs and PFs) by host PCI id, and its
// vGPUs by profile, one entry each.
type GPUMMIOSpec struct {
	GPUs       []GPURequest
	Devices    []string
	VGPUs      []string
	MMIOSizeGB int64
	// PeerToPeer sets (true) or removes (false) the GPUDirect RDMA keys;
	// nil leaves them as they are.
	PeerToPeer *bool
	// NUMANodeAffinity sets numa.nodeAffinity to these nodes, or removes it
	// when empty; nil leaves it as it is.
	NUMANodeAffinity *[]int
	PowerOffAllowed  bool
}

// The keys that let a VM's passthrough devices and vGPUs reach each other
// over PCIe (GPUDirect RDMA: a GPU and an InfiniBand or RoCE card): NVIDIA's
// GPU Operator documentation, "GPUDirect RDMA and GPUDirect Storage"
// (gpu-operator-rdma.rst, on VMware vSphere VMs), and VMware's Private AI
// Foundation guide, which relaxes Access Control Services in the VM's
// configuration settings for the same purpose. Read at power on, as the
// MMIO keys.
const (
	AllowP2PKey = "pciPassthru.allowP2P"
	RelaxACSKey = "pciPassthru.RelaxACSforP2P"
)

// NUMANodeAffinityKey keeps a VM's virtual CPUs and memory on the NUMA
// nodes it lists, comma-separated: "Constrains the set of NUMA nodes on
// which a virtual machine's virtual CPU and memory can be scheduled"
// (vSphere Resource Management, Advanced NUMA Attributes), read at power
// on. The same guide warns that it may keep ESXi's NUMA scheduler from
// rebalancing the host.
const NUMANodeAffinityKey = "numa.nodeAffinity"

// gpuExtraConfigKeys are the extraConfig keys a GPU setup manages.
var gpuExtraConfigKeys = []string{mmio.Use64bitMMIOKey, mmio.SizeGBKey, AllowP2PKey, RelaxACSKey, NUMANodeAffinityKey}

// peerToPeerKeys are the keys peer-to-peer sets, both TRUE.
var peerToPeerKeys = []string{AllowP2PKey, RelaxACSKey}

// optionalKeys are the keys a setup manages only when asked to (peer to
// peer, NUMA node affinity): destroy leaves one its record lacks.
var optionalKeys = []string{AllowP2PKey, RelaxACSKey, NUMANodeAffinityKey}

// FormatNUMANodes is numa.nodeAffinity's value for nodes: sorted, each
// once, comma-separated; "" for none.
func FormatNUMANodes(nodes []int) string {
	sorted := slices.Compact(slices.Sorted(slices.Values(nodes)))
	parts := make([]string, len(sorted))
	for i, n := range sorted {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// parseNUMANodes reads numa.nodeAffinity's value; false when it is not a
// list of node numbers.
func parseNUMANodes(s string) ([]int, bool) {
	out := []int{}
	if strings.TrimSpace(s) == "" {
		return out, true
	}
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return slices.Compact(slices.Sorted(slices.Values(out))), true
}

// requests lists every passthrough device of the setup, GPUs first.
func (s GPUMMIOSpec) requests() []GPURequest {
	return PassthroughRequests(s.GPUs, s.Devices, s.VGPUs)
}

// PassthroughRequests lists GPUs, other devices given by PCI id and vGPUs
// given by profile as one request, GPUs first.
func PassthroughRequests(gpus []GPURequest, devices, vgpus []string) []GPURequest {
	out := slices.Clone(gpus)
	for _, id := range devices {
		out = append(out, GPURequest{PCIID: id})
	}
	for _, profile := range vgpus {
		out = append(out, GPURequest{VGPU: profile})
	}
	return out
}

// GPUMMIO is a VM's GPU passthrough setup as read from vCenter.
type GPUMMIO struct {
	VM           VMRef
	HostID       string // the VM's host; "" when vCenter does not say
	Firmware     string
	Use64bitMMIO bool  // pciPassthru.use64bitMMIO is TRUE, in any case
	MMIOSizeGB   int64 // 0 when unset or not a number
	MemoryLocked bool
	PeerToPeer   bool // both peer-to-peer keys are TRUE, in any case
	// PeerToPeerMixed: one of the two keys is TRUE, the other not, which is
	// neither on nor off.
	PeerToPeerMixed bool
	// NUMANodeAffinity are the nodes numa.nodeAffinity lists, sorted,
	// empty when it is unset; nil when its value is not node numbers
	// (NUMANodeAffinityUnreadable).
	NUMANodeAffinity           []int
	NUMANodeAffinityUnreadable bool
	// Devices are every passthrough device of the VM, GPUs or not: the
	// VM's reconfigure sees no difference. SortPassthrough tells them apart.
	Devices []PCIPassthrough
	// ExtraConfig holds the keys a setup manages (gpuExtraConfigKeys) as
	// set now; "" when unset.
	ExtraConfig map[string]string
}

var gpuMMIOProps = slices.Concat([]string{"name", "config.uuid", "config.firmware", "config.hardware.device",
	"config.memoryReservationLockedToMax", "runtime.powerState", "runtime.host"}, gpuExtraConfig)

// gpuChangeProps are what a GPU change reads beyond vmChangeProps.
var gpuChangeProps = slices.Concat([]string{"config.firmware"}, gpuExtraConfig)

// gpuExtraConfig reads the keys a GPU setup manages of a VM's extraConfig
// by key, as a host's option is read (see hostPVRDMAProps), not the whole
// of it: a VM's extraConfig can run to tens of KB (cloud-init's
// guestinfo.userdata, for one), read for every VM in a refresh.
var gpuExtraConfig = func() []string {
	out := make([]string, len(gpuExtraConfigKeys))
	for i, key := range gpuExtraConfigKeys {
		out[i] = fmt.Sprintf("config.extraConfig[%q]", key)
	}
	return out
}()

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
	if vm.Config == nil {
		return nil, vmInaccessible(op, vm.Name, vm.Self.Value)
	}
	return gpuMMIOFromMO(vm), nil
}

func gpuMMIOFromMO(vm *mo.VirtualMachine) *GPUMMIO {
	out := &GPUMMIO{
		VM:          vmRefOf(vm),
		HostID:      hostIDOf(vm),
		ExtraConfig: map[string]string{},
	}
	for _, key := range gpuExtraConfigKeys {
		out.ExtraConfig[key] = ""
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
	set := 0
	for _, key := range peerToPeerKeys {
		if strings.EqualFold(out.ExtraConfig[key], "TRUE") {
			set++
		}
	}
	out.PeerToPeer, out.PeerToPeerMixed = set == len(peerToPeerKeys), set > 0 && set < len(peerToPeerKeys)
	nodes, ok := parseNUMANodes(out.ExtraConfig[NUMANodeAffinityKey])
	out.NUMANodeAffinity, out.NUMANodeAffinityUnreadable = nodes, !ok
	for _, dev := range sortedDevices(vm.Config.Hardware.Device) {
		if pt, ok := dev.(*types.VirtualPCIPassthrough); ok && managedBacking(pt) {
			out.Devices = append(out.Devices, pciPassthrough(pt))
		}
	}
	return out
}

// SortedPassthrough is a VM's passthrough devices told apart as its host
// reports them.
type SortedPassthrough struct {
	GPUs        []PCIPassthrough // dynamic DirectPath devices count as GPUs
	Others      []PCIPassthrough
	GPUMemoryGB float64 // the GPUs' memory as the host reports it
}

// SortPassthrough tells a VM's passthrough devices apart: GPUs (with their
// memory, which sizes the MMIO window) and other devices such as
// InfiniBand VFs. It reads the VM's host.
func (c *Client) SortPassthrough(ctx context.Context, vmID string, devices []PCIPassthrough) (*SortedPassthrough, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	_, _, host, err := c.vmAndHost(ctx, vmID)
	if err != nil {
		return nil, err
	}
	return sortPassthrough(host, devices), nil
}

// sortPassthrough tells devices apart as host reports them.
func sortPassthrough(host *Host, devices []PCIPassthrough) *SortedPassthrough {
	out := &SortedPassthrough{}
	for _, d := range devices {
		if d.VGPU != "" {
			continue // a share of a GPU the host places at power on: neither a host GPU nor another device
		}
		gpu := d.Dynamic
		for _, h := range host.GPUs {
			if (!d.Dynamic && h.PCIID == d.PCIID) || (d.Dynamic && h.VendorID == d.VendorID && h.DeviceID == d.DeviceID) {
				gpu = true
				out.GPUMemoryGB += h.MemoryGB
				break
			}
		}
		if gpu {
			out.GPUs = append(out.GPUs, d)
		} else {
			out.Others = append(out.Others, d)
		}
	}
	return out
}

// ApplyGPUMMIO sets EFI firmware, the two MMIO keys, all memory reserved,
// and the VM's passthrough devices to exactly spec's GPUs and devices, in
// one reconfigure.
func (c *Client) ApplyGPUMMIO(ctx context.Context, vmID string, spec GPUMMIOSpec) error {
	op := "setting up GPU passthrough on virtual machine " + vmID
	return c.changeVM(ctx, vmChange{op: op, vmID: vmID, props: gpuChangeProps, change: WhatGPUsNeedOff, powerOffAllowed: spec.PowerOffAllowed,
		configTarget: true, hostLock: true, build: func(vm *mo.VirtualMachine, target *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
			// Under the host's lock: a device another VM took since the plan
			// is refused, not shared.
			if err := c.devicesStillFree(ctx, op, vm, spec.requests()); err != nil {
				return nil, false, err
			}
			current := gpuMMIOFromMO(vm)
			cs := &types.VirtualMachineConfigSpec{}
			needsOff := false
			if current.Firmware != string(types.GuestOsDescriptorFirmwareTypeEfi) {
				cs.Firmware, needsOff = string(types.GuestOsDescriptorFirmwareTypeEfi), true
			}
			// Values that mean what is wanted ("true", "0512") stay as they
			// are: rewriting them would cycle the VM's power for nothing.
			if !current.Use64bitMMIO {
				cs.ExtraConfig = append(cs.ExtraConfig, &types.OptionValue{Key: mmio.Use64bitMMIOKey, Value: "TRUE"})
			}
			if current.MMIOSizeGB != spec.MMIOSizeGB {
				cs.ExtraConfig = append(cs.ExtraConfig, &types.OptionValue{Key: mmio.SizeGBKey, Value: strconv.FormatInt(spec.MMIOSizeGB, 10)})
			}
			if !current.MemoryLocked {
				cs.MemoryReservationLockedToMax = types.NewBool(true)
			}
			cs.ExtraConfig = append(cs.ExtraConfig, peerToPeerChanges(current, spec.PeerToPeer)...)
			cs.ExtraConfig = append(cs.ExtraConfig, numaAffinityChanges(current, spec.NUMANodeAffinity)...)
			changes, err := passthroughChanges(vm, spec.requests(), target)
			if err != nil {
				return nil, false, &Error{Op: op, Kind: ErrInvalidArg, Message: err.Error()}
			}
			cs.DeviceChange = changes
			// A new MMIO window (or peer-to-peer) applies from the next boot:
			// it needs a power cycle like the firmware and the devices.
			return cs, needsOff || len(changes) > 0 || len(cs.ExtraConfig) > 0, nil
		}})
}

// peerToPeerChanges sets both peer-to-peer keys to TRUE (on), or removes
// those that are TRUE (off); nothing when on is nil.
func peerToPeerChanges(current *GPUMMIO, on *bool) []types.BaseOptionValue {
	if on == nil {
		return nil
	}
	var out []types.BaseOptionValue
	for _, key := range peerToPeerKeys {
		if set := strings.EqualFold(current.ExtraConfig[key], "TRUE"); set != *on {
			value := ""
			if *on {
				value = "TRUE"
			}
			out = append(out, &types.OptionValue{Key: key, Value: value})
		}
	}
	return out
}

// numaAffinityChanges sets numa.nodeAffinity to nodes, or removes it for
// none; nothing when nodes is nil or the key lists them already (in any
// order or spacing).
func numaAffinityChanges(current *GPUMMIO, nodes *[]int) []types.BaseOptionValue {
	if nodes == nil {
		return nil
	}
	want := FormatNUMANodes(*nodes)
	if !current.NUMANodeAffinityUnreadable && FormatNUMANodes(current.NUMANodeAffinity) == want {
		return nil
	}
	return []types.BaseOptionValue{&types.OptionValue{Key: NUMANodeAffinityKey, Value: want}}
}

// RemoveGPUMMIO detaches the VM's passthrough devices and puts back the
// keys as before records them (an empty value removes a key). An MMIO key
// before lacks is removed; a peer-to-peer or NUMA key it lacks (a setup
// that never managed them) is left as it is. Firmware stays
// EFI: a guest installed under EFI does not boot under BIOS. A missing VM is
// ErrNotFound, by the id given (see DeletePVRDMANIC).
func (c *Client) RemoveGPUMMIO(ctx context.Context, vmID string, before map[string]string, powerOffAllowed bool) error {
	op := "removing GPU passthrough from virtual machine " + vmID
	return c.changeVM(
		ctx,
		vmChange{
			op:              op,
			vmID:            vmID,
			props:           gpuChangeProps,
			change:          WhatGPUsNeedOff,
			powerOffAllowed: powerOffAllowed,
			build: func(vm *mo.VirtualMachine, _ *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
				current := gpuMMIOFromMO(vm)
				cs := &types.VirtualMachineConfigSpec{}
				for _, key := range gpuExtraConfigKeys {
					was, recorded := before[key]
					if !recorded && slices.Contains(optionalKeys, key) {
						continue
					}
					if current.ExtraConfig[key] != was {
						cs.ExtraConfig = append(cs.ExtraConfig, &types.OptionValue{Key: key, Value: was})
					}
				}
				for _, dev := range vm.Config.Hardware.Device {
					if pt, ok := dev.(*types.VirtualPCIPassthrough); ok && managedBacking(pt) {
						cs.DeviceChange = append(cs.DeviceChange, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationRemove, Device: dev})
					}
				}
				return cs, len(cs.DeviceChange) > 0, nil
			},
		},
	)
}

// passthroughChanges adds the requested devices the VM lacks and removes
// the passthrough devices no longer requested.
func passthroughChanges(vm *mo.VirtualMachine, want []GPURequest, target *types.ConfigTarget) ([]types.BaseVirtualDeviceConfigSpec, error) {
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
// host device, dynamic DirectPath, an NVIDIA vGPU) from others, such as a
// vendor's plugin device.
func managedBacking(pt *types.VirtualPCIPassthrough) bool {
	switch pt.Backing.(type) {
	case *types.VirtualPCIPassthroughDeviceBackingInfo, *types.VirtualPCIPassthroughDynamicBackingInfo,
		*types.VirtualPCIPassthroughVmiopBackingInfo:
		return true
	}
	return false
}

// passthroughDevice builds a passthrough device: a static one filled from
// what the host offers (as the vSphere Client does), or a dynamic one.
func passthroughDevice(w GPURequest, target *types.ConfigTarget) (*types.VirtualPCIPassthrough, error) {
	dev := &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Key: -1}}
	if w.VGPU != "" {
		// The vSphere Client's "Shared PCI device" with an NVIDIA GRID vGPU
		// profile: the host places it on a GPU at power on.
		dev.Backing = &types.VirtualPCIPassthroughVmiopBackingInfo{Vgpu: w.VGPU}
		return dev, nil
	}
	if w.Dynamic() {
		vendor, err1 := strconv.ParseUint(w.VendorID, 16, 16)
		device, err2 := strconv.ParseUint(w.DeviceID, 16, 16)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("vendor id %q and device id %q must be four hex digits", w.VendorID, w.DeviceID)
		}
		dev.Backing = &types.VirtualPCIPassthroughDynamicBackingInfo{
			AllowedDevice: []types.VirtualPCIPassthroughAllowedDevice{{VendorId: int32(vendor), DeviceId: int32(device)}},
			CustomLabel:   w.Label,
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
	return len(g.Devices) == 0 && g.ExtraConfig[mmio.Use64bitMMIOKey] == "" && g.ExtraConfig[mmio.SizeGBKey] == ""
}

// devicesStillFree refuses static devices the VM does not have yet that
// another VM of its host is configured with now: the plan's check may be
// stale.
func (c *Client) devicesStillFree(ctx context.Context, op string, vm *mo.VirtualMachine, want []GPURequest) error {
	if vm.Runtime.Host == nil {
		return nil
	}
	// Fresh under the host's lock, never from the prefetch: an apply-time
	// plan check may have started one before another VM took the device.
	h, cluster, vms, err := c.readHost(ctx, op, vm.Runtime.Host.Value, fresh)
	if err != nil {
		return err
	}
	host := hostFromMO(h, cluster, vms)
	for _, w := range want {
		if w.PCIID == "" { // dynamic DirectPath and vGPUs: placed at power on
			continue
		}
		for _, d := range host.PCIDevices {
			if d.PCIID != w.PCIID {
				continue
			}
			for _, u := range d.VMs {
				if u.MOID != vm.Self.Value {
					return &Error{Op: op, Kind: ErrInUse, Object: ObjectVirtualMachine, ID: u.MOID, Message: fmt.Sprintf(
						"PCI device %s on host %s was given to virtual machine %s after the plan was made; a device passes through to one VM only",
						w.PCIID,
						host.Name,
						u.Name,
					)}
				}
			}
		}
	}
	return nil
}

// vmAndHostProps are what a plan reads of a VM: vmProps and the keys of
// its GPU setup, which a GPU setup's plan compares with the ones it sets.
var vmAndHostProps = sortedUnion(vmProps, gpuExtraConfig)

// vmAndHost reads a VM, the keys of its GPU setup (in the same call) and its
// host; the host is empty when the VM has none.
func (c *Client) vmAndHost(ctx context.Context, vmID string) (*VM, *GPUMMIO, *Host, error) {
	op := "reading virtual machine " + vmID
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	v, err := c.readVMProps(ctx, vc, op, vmID, vmAndHostProps)
	if err != nil {
		return nil, nil, nil, err
	}
	vm := vmFromMO(v)
	if vm.ID == "" { // no configuration, so no UUID
		return nil, nil, nil, vmInaccessible(op, vm.Name, vm.MOID)
	}
	if vm.HostID == "" {
		return vm, gpuMMIOFromMO(v), &Host{}, nil
	}
	host, err := c.Host(ctx, vm.HostID)
	return vm, gpuMMIOFromMO(v), host, err
}
