package vsphere

// The plan-time rules of a VM's GPU passthrough: each GPU and other device
// is on the VM's host, active for passthrough (or turned on by a host
// passthrough resource of the same plan), and used by no other VM; no more
// GPUs of a model than the host has; the MMIO window by the rule; no BIOS
// to EFI switch under an installed guest; the power state. It reports the
// devices the VM takes, for the provider to tell rival claims apart.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25/types"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
)

// GPUMMIOChange is a planned GPU passthrough setup of a VM, to check.
type GPUMMIOChange struct {
	VMID                string // UUID or managed object id, as given
	GPUs                []GPURequest
	Devices             []string // other passthrough devices by PCI id: InfiniBand VFs and PFs
	VGPUs               []string // vGPUs by profile, one entry each
	MMIOSizeGB          *int64   // nil: sized by the rule
	AllowFirmwareChange bool
	PowerOffAllowed     bool
	Existing            bool  // the setup exists and is changed
	CurrentMMIOSizeGB   int64 // the window the existing setup has
	Current64bitMMIO    bool  // the existing setup has pciPassthru.use64bitMMIO on
	// PeerToPeer is whether the setup has peer-to-peer on (GPUDirect RDMA),
	// nil when not managed; NUMANodeAffinity the nodes it keeps the VM on,
	// nil when not managed. Changing either key needs a power cycle, which
	// the plan finds by comparing them with the VM's.
	PeerToPeer       *bool
	NUMANodeAffinity []int
	// Planned is what host resources of the same plan turn on: a device
	// not active yet counts as active when one does and the host applies
	// it without a reboot.
	Planned PlannedHostDevices
	// Releasing is the VM (UUID or managed object id) whose setup this plan
	// replaces, destroyed first: its GPUs are free for this one.
	Releasing string
	// VGPUsOfPlan records, when runs, that the plan gives the running VM
	// vgpus, and returns the other running VMs of its host the plan gives
	// vGPUs, recorded before (nil: none are counted). Recording and reading
	// are one step, so that of two plans at once the later sees the earlier.
	VGPUsOfPlan func(vgpus PlannedVGPUs, runs bool) []PlannedVGPUs
}

// TakenDevice is a host device a planned VM setup takes for itself.
type TakenDevice struct {
	HostID, HostName, PCIID string
	GPU                     bool
	// VFOf is the physical function of a device that is one of its
	// virtual functions, passed through by no VM now: taking it leaves one
	// fewer for the SR-IOV adapters of the function (nil otherwise).
	VFOf *FreeVFs
}

// GPUMMIOPlan is a checked setup: its findings and, once its GPUs passed
// their checks (Sized), their memory and the MMIO window they get.
type GPUMMIOPlan struct {
	VMUUID, VMName string        // the VM, however it was given
	OnHost         VMOnHost      // where the change runs
	Takes          []TakenDevice // the GPUs by PCI id and the other devices
	Findings       []Finding
	Sized          bool
	TotalMemoryGB  float64
	MMIOSizeGB     int64 // 0 when it cannot be sized
}

// The findings of PlanGPUMMIO and PlanMMIOSize. Index is the GPU's (or,
// for Device findings, the device's) position in the request; VM names the
// VM as "name (id as given)".
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
	// TurnedOnAtReboot: a host resource of this plan turns it on (it is not
	// on yet; GPUMMIOChange.Planned), but the host applies that only at its
	// next reboot.
	GPUNotActive struct {
		Index               int
		PCIID, Device, Host string
		Enabled             bool // enabled, waiting for the host's reboot
		TurnedOnAtReboot    bool
		// SharedByVGPU: NVIDIA's vGPU manager drives it (graphics type
		// sharedDirect): it is shared as vGPUs, not passed through whole.
		SharedByVGPU bool
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
	// DeviceNotOnVMHost: the VM's host has no PCI device with this id.
	// OnHost names the host of the VM's cluster that has it, "" when none
	// has; Pending lists the host's SR-IOV physical functions whose change
	// waits for a reboot (their virtual functions appear only then).
	DeviceNotOnVMHost struct {
		Index                   int
		VM, Host, PCIID, OnHost string
		Pending                 []string
	}
	// DeviceNotActive: the device is not active for passthrough on the VM's
	// host; Enabled: it is enabled and waits for the host's reboot;
	// TurnedOnAtReboot: a host resource of this plan turns it on, but the
	// host applies that only at its next reboot.
	DeviceNotActive struct {
		Index             int
		PCIID, Name, Host string
		Enabled           bool
		TurnedOnAtReboot  bool
		UplinkOf          string // the switch whose uplink the device is, "" when none
		ServesVFs         int    // the virtual functions the device serves, 0 when it serves none
	}
	// DeviceInUse: another VM is configured with the device.
	DeviceInUse struct {
		Index       int
		PCIID, Host string
		Other       VMRef
	}
	// DeviceIsGPU: a GPU given as another device, so its memory would not
	// size the MMIO window.
	DeviceIsGPU struct {
		Index       int
		PCIID, Name string
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
	// VGPUMinimum: the rule is NVIDIA's least window for vGPUs, above what
	// the GPUs' memory needs.
	MMIOTooSmall struct {
		Given, Rule int64
		TotalGB     float64
		VGPUMinimum bool
	}
)

func (NoDynamicGPU) finding() {}

func (TooFewGPUs) finding() {}

func (GPUNotActive) finding() {}

func (GPUInUse) finding() {}

func (GPUNotOnHost) finding() {}

func (DeviceNotOnVMHost) finding() {}

func (DeviceNotActive) finding() {}

func (DeviceInUse) finding() {}

func (DeviceIsGPU) finding() {}

func (FirmwareChangeRefused) finding() {}

func (MMIOSizeUnknown) finding() {}

func (NothingToSize) finding() {}

func (MMIOSizeImpossible) finding() {}

func (MMIONotPowerOfTwo) finding() {}

func (MMIOTooSmall) finding() {}

// PlanMMIOSize sizes the MMIO window of GPUs with totalGB of memory (known:
// every GPU's memory is reported), and of vGPUs: the given size if it is a
// power of two and not below the rule's, else the rule's (internal/mmio),
// and with vGPUs at least mmio.VGPUMinSizeGB. It needs no vCenter.
func PlanMMIOSize(given *int64, totalGB float64, known, anyGPU, vgpus bool) (int64, Finding) {
	var rule int64
	if anyGPU && known {
		var err error
		if rule, err = mmio.SizeGB(totalGB); err != nil {
			return 0, MMIOSizeImpossible{Err: err}
		}
	}
	vgpuMinimum := vgpus && rule < mmio.VGPUMinSizeGB
	rule = mmio.WithVGPUs(rule, vgpus)
	if vgpus {
		if !anyGPU {
			anyGPU, known = true, true
		}
	}
	switch {
	case given == nil && anyGPU && !known:
		return 0, MMIOSizeUnknown{}
	case given == nil && !anyGPU:
		return 0, NothingToSize{}
	case given == nil:
		return rule, nil
	case !mmio.IsPowerOfTwo(*given):
		return *given, MMIONotPowerOfTwo{Given: *given, Suggested: max(rule, mmio.DevicesOnlySizeGB)}
	case *given < rule:
		return *given, MMIOTooSmall{Given: *given, Rule: rule, TotalGB: totalGB, VGPUMinimum: vgpuMinimum}
	}
	return *given, nil
}

// PlanGPUMMIO checks a planned setup against the VM and its host's GPUs:
// each GPU, the window's size, the firmware switch and the power state.
func (c *Client) PlanGPUMMIO(ctx context.Context, ch GPUMMIOChange) (*GPUMMIOPlan, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vm, keys, host, err := c.vmAndHost(ctx, ch.VMID)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("%s (%s)", vm.Name, ch.VMID)
	out := &GPUMMIOPlan{VMUUID: vm.ID, VMName: vm.Name, Takes: takenDevices(host, ch), OnHost: VMOnHost{
		VM: label, HostID: vm.HostID, Running: vm.PowerState == PoweredOn, Passthrough: len(ch.GPUs)+len(ch.Devices)+len(ch.VGPUs) > 0,
	}}
	total, known := 0.0, true
	check := deviceCheck{vm: vm, host: host, label: label, planned: ch.Planned, releasing: ch.Releasing}
	pooled, poolFindings, err := c.planPools(ctx, check, ch.GPUs)
	if err != nil {
		return nil, err
	}
	refusedGPUs := slices.ContainsFunc(poolFindings, func(f Finding) bool { _, tooSmall := f.(PoolTooSmall); return tooSmall })
	out.Findings = append(out.Findings, poolFindings...)
	for i, g := range ch.GPUs {
		gb, pooledGPU := pooled[i]
		if !pooledGPU && g.Label == "" {
			check.index = i
			var findings []Finding
			if gb, findings, err = c.planGPU(ctx, check, g); err != nil {
				return nil, err
			}
			out.Findings = append(out.Findings, findings...)
			refusedGPUs = refusedGPUs || len(findings) > 0
		}
		total += gb
		known = known && gb > 0
	}
	counts := planGPUCounts(label, host, ch.GPUs)
	out.Findings = append(out.Findings, counts...)
	refusedGPUs = refusedGPUs || len(counts) > 0
	for i, id := range ch.Devices {
		findings, err := c.planDevice(ctx, deviceCheck{vm: vm, host: host, label: label, index: i, planned: ch.Planned, releasing: ch.Releasing}, id)
		if err != nil {
			return nil, err
		}
		out.Findings = append(out.Findings, findings...)
	}
	if len(ch.VGPUs) > 0 {
		check := vgpuCheck{label: label, moid: vm.MOID, host: host, vgpus: ch.VGPUs, powersOn: vm.PowerState == PoweredOn,
			planned: ch.Planned.Graphics[host.ID], leaving: ch.Planned.LeavingSharedDirect[host.ID], models: hostVGPUModels(host)}
		if ch.VGPUsOfPlan != nil {
			check.others = ch.VGPUsOfPlan(PlannedVGPUs{HostID: host.ID, MOID: vm.MOID, Name: vm.Name, Profiles: ch.VGPUs}, check.powersOn)
		}
		// GPUs of several models in Shared Direct: which offers which is
		// the VM's ConfigTarget's to say, one more call.
		if check.models == nil && !check.planned && len(host.VGPUProfiles) > 0 {
			if check.models, err = c.vgpuModels(ctx, vm); err != nil {
				// Without them the host decides the room at power on.
				c.log.Debug(ctx, "Cannot read which GPU model offers which vGPU profile", map[string]any{"error": err.Error()})
			}
		}
		out.Findings = append(out.Findings, planVGPUs(check)...)
	}
	out.Findings = append(out.Findings, planNUMAAffinity(label, host, ch)...)
	if refusedGPUs {
		return out, nil // nothing to size
	}
	out.Findings = append(out.Findings, planTopology(label, vm, host, ch)...)
	out.Sized, out.TotalMemoryGB = true, total
	size, f := PlanMMIOSize(ch.MMIOSizeGB, total, known, len(ch.GPUs) > 0, len(ch.VGPUs) > 0)
	out.MMIOSizeGB = size
	if f != nil {
		out.Findings = append(out.Findings, f)
	}
	efi := vm.Firmware == string(types.GuestOsDescriptorFirmwareTypeEfi)
	if !efi && (vm.GuestFamily != "" || vm.GuestFullName != "") && !ch.AllowFirmwareChange {
		out.Findings = append(out.Findings, FirmwareChangeRefused{VM: label, Firmware: vm.Firmware,
			Guest: strings.TrimSpace(vm.GuestFullName + " " + vm.GuestFamily)})
	}
	// The managed devices only, as the apply compares: a DVX or plugin
	// device beside them is no change and must not ask for a power-off.
	sameDevices := SameGPUs(PassthroughRequests(ch.GPUs, ch.Devices, ch.VGPUs), keys.Devices)
	var nodes *[]int
	if ch.NUMANodeAffinity != nil {
		nodes = &ch.NUMANodeAffinity
	}
	keysChange := len(peerToPeerChanges(keys, ch.PeerToPeer)) > 0 || len(numaAffinityChanges(keys, nodes)) > 0
	needsOff := !ch.Existing || !efi || !sameDevices || size != ch.CurrentMMIOSizeGB || !ch.Current64bitMMIO || keysChange
	if p := PlanPower(label, vm.PowerState, needsOff, ch.PowerOffAllowed, WhatGPUsNeedOff); p != nil {
		out.Findings = append(out.Findings, p)
	}
	return out, nil
}

// deviceCheck is what the check of one requested device needs: the VM (and
// label, its words in findings) and its host, the device's place in its
// list (index), what host resources of the same plan turn on (planned), and
// the VM whose setup this one replaces (releasing, "" for none).
type deviceCheck struct {
	vm        *VM
	host      *Host
	label     string
	index     int
	planned   PlannedHostDevices
	releasing string
}

// planGPU checks one requested GPU against the VM's host and returns its
// memory, 0 when unknown.
func (c *Client) planGPU(ctx context.Context, in deviceCheck, g GPURequest) (float64, []Finding, error) {
	if g.Dynamic() {
		for _, h := range in.host.GPUs {
			if h.VendorID == g.VendorID && h.DeviceID == g.DeviceID && h.PassthroughActive {
				return h.MemoryGB, nil, nil
			}
		}
		return 0, []Finding{NoDynamicGPU{Index: in.index, VM: in.label, Host: in.host.Name, Vendor: g.VendorID, Device: g.DeviceID}}, nil
	}
	for _, h := range in.host.GPUs {
		if h.PCIID != g.PCIID {
			continue
		}
		var out []Finding
		if !h.PassthroughActive && !in.planned.activeOnceApplied(in.host, g.PCIID) {
			out = append(out, GPUNotActive{Index: in.index, PCIID: g.PCIID, Device: h.DeviceName, Host: in.host.Name, Enabled: h.PassthroughEnabled,
				TurnedOnAtReboot: !h.PassthroughEnabled && in.planned.Passthrough[HostDeviceKey(in.host.ID, g.PCIID)],
				SharedByVGPU:     h.GraphicsType == string(types.HostGraphicsInfoGraphicsTypeSharedDirect)})
		}
		for _, u := range h.VMs {
			if u.MOID != in.vm.MOID && !u.Is(in.releasing) {
				out = append(out, GPUInUse{Index: in.index, PCIID: g.PCIID, Host: in.host.Name, Other: u})
			}
		}
		return h.MemoryGB, out, nil
	}
	onHost := c.hostWith(ctx, in.vm.HostID, func(h *Host) bool {
		return slices.ContainsFunc(h.GPUs, func(o GPU) bool { return o.PCIID == g.PCIID })
	})
	return 0, []Finding{GPUNotOnHost{Index: in.index, VM: in.label, Host: in.host.Name, PCIID: g.PCIID, OnHost: onHost}}, nil
}

// planDevice checks one requested non-GPU device (an InfiniBand VF or PF)
// against the VM's host.
func (c *Client) planDevice(ctx context.Context, in deviceCheck, pciID string) ([]Finding, error) {
	for _, g := range in.host.GPUs {
		if g.PCIID == pciID {
			return []Finding{DeviceIsGPU{Index: in.index, PCIID: pciID, Name: g.DeviceName}}, nil
		}
	}
	for _, d := range in.host.PCIDevices {
		if d.PCIID != pciID {
			continue
		}
		var out []Finding
		if !d.Active && !in.planned.activeOnceApplied(in.host, pciID) {
			f := DeviceNotActive{Index: in.index, PCIID: pciID, Name: strings.TrimSpace(d.DeviceName), Host: in.host.Name, Enabled: d.Enabled,
				TurnedOnAtReboot: !d.Enabled && in.planned.Passthrough[HostDeviceKey(in.host.ID, pciID)], UplinkOf: d.UplinkOf}
			if d.servesVFs() {
				f.ServesVFs = max(d.SRIOV.VFsRequested, 1)
			}
			out = append(out, f)
		}
		for _, u := range d.VMs {
			if u.MOID != in.vm.MOID && !u.Is(in.releasing) {
				out = append(out, DeviceInUse{Index: in.index, PCIID: pciID, Host: in.host.Name, Other: u})
			}
		}
		return out, nil
	}
	var pending []string
	for _, d := range in.host.PCIDevices {
		if d.SRIOV != nil && (d.SRIOV.Enabled != d.SRIOV.Active || d.SRIOV.VFsRequested != d.SRIOV.VFs) {
			pending = append(pending, d.PCIID)
		}
	}
	onHost := c.hostWith(ctx, in.vm.HostID, func(h *Host) bool {
		return slices.ContainsFunc(h.PCIDevices, func(d PassthroughDevice) bool { return d.PCIID == pciID })
	})
	return []Finding{DeviceNotOnVMHost{Index: in.index, VM: in.label, Host: in.host.Name, PCIID: pciID, OnHost: onHost, Pending: pending}}, nil
}

// activeOnceApplied reports whether a host resource of this plan turns the
// device to passthrough and the host applies it at once, or the plan
// reboots the host for it: such a resource is planned and applied first, as
// the VM's resource refers to it. A host that applies changes only at its
// next reboot, and that no resource of the plan reboots, has the device
// only after that reboot.
func (p PlannedHostDevices) activeOnceApplied(host *Host, pciID string) bool {
	return (host.AppliesWithoutReboot || p.Rebooting[host.ID]) && p.Passthrough[HostDeviceKey(host.ID, pciID)]
}

// sriovOnceApplied is activeOnceApplied for a physical function turned to
// SR-IOV.
func (p PlannedHostDevices) sriovOnceApplied(host *Host, pciID string) bool {
	return (host.AppliesWithoutReboot || p.Rebooting[host.ID]) && p.SRIOV[HostDeviceKey(host.ID, pciID)]
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
		m, ok := model{g.VendorID, g.DeviceID}, g.Label == "" // a pool's requests are planPools'
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

// hostWith names another host of the VM's cluster that has is true for,
// to tell the user where a device is; "" when none has, or when the hosts
// cannot be read (only the hint is lost).
func (c *Client) hostWith(ctx context.Context, vmHostID string, has func(*Host) bool) string {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return ""
	}
	hosts, err := c.siblingHosts(ctx, vc, types.ManagedObjectReference{Type: "HostSystem", Value: vmHostID})
	if err != nil {
		return ""
	}
	for _, h := range hosts {
		if h.Self.Value == vmHostID {
			continue
		}
		host, err := c.Host(ctx, h.Self.Value)
		if err != nil {
			return ""
		}
		if has(host) {
			return host.Name
		}
	}
	return ""
}

// takenDevices lists the host devices a planned setup takes: its GPUs by
// PCI id (dynamic DirectPath ones are picked by vSphere at power on) and its
// other devices.
func takenDevices(host *Host, ch GPUMMIOChange) []TakenDevice {
	if host.ID == "" {
		return nil
	}
	var out []TakenDevice
	for _, g := range ch.GPUs {
		if !g.Dynamic() {
			out = append(out, TakenDevice{HostID: host.ID, HostName: host.Name, PCIID: g.PCIID, GPU: true})
		}
	}
	for _, id := range ch.Devices {
		d := TakenDevice{HostID: host.ID, HostName: host.Name, PCIID: id}
		if pf, free := virtualFunctionOf(host, id); pf != "" && free {
			d.VFOf = pfFreeVFs(host, pf, ch.Planned)
		}
		out = append(out, d)
	}
	return out
}

// virtualFunctionOf is the physical function whose virtual function id is,
// and whether no VM has the VF passed through; "" for a device that is no
// VF.
func virtualFunctionOf(host *Host, id string) (pf string, free bool) {
	for _, d := range host.PCIDevices {
		if d.SRIOV != nil && slices.ContainsFunc(d.SRIOV.VFIDs, func(vf string) bool { return strings.EqualFold(vf, id) }) {
			pf = d.PCIID
		}
		if strings.EqualFold(d.PCIID, id) {
			free = len(d.passedThroughBy) == 0
		}
	}
	return pf, free
}
