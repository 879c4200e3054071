package vsphere

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A host's PCI passthrough, as Host > Configure > Hardware > PCI Devices >
// Toggle passthrough sets it (vSphere API: HostPciPassthruSystem's
// UpdatePassthruConfig; the state is the host's config.pciPassthruInfo).

// VendorMellanox is the PCI vendor id of Mellanox (NVIDIA networking):
// ConnectX Ethernet and InfiniBand cards.
const VendorMellanox = "15b3"

// PassthroughDevice is one PCI device of a host and its passthrough state.
type PassthroughDevice struct {
	PCIID      string // 0000:3b:00.0
	VendorID   string // four lower-case hex digits
	DeviceID   string
	DeviceName string
	Capable    bool
	Enabled    bool
	Active     bool    // enabled and in effect; enabled but not active waits for a reboot
	Label      string  // the hardware label (API 7.0.2.0), "" for none
	UplinkOf   string  // the switch that uses the device as a physical NIC, "" when none
	VMs        []VMRef // VMs on the host configured with the device
	NIC        string  // the vmnic the device is, "" when none
	VendorName string
	SRIOV      *SRIOV // nil unless the host reports the device's SR-IOV state
	// SRIOVAdapters are the VMs whose SR-IOV network adapters name this
	// physical function, once per adapter: each takes one of its VFs at
	// power on.
	SRIOVAdapters []VMRef
	// PhysicalFunction is the PF of a virtual function, as
	// virtualFunctions derives it ("" when unknown or not a VF).
	PhysicalFunction string
	// ParentBridge is the bridge the device is under, "" when the host
	// reports none; NUMANode and PCIeSwitch are as GPU's.
	ParentBridge string
	NUMANode     int
	PCIeSwitch   string
	// GraphicsType is how the host drives the device now, as GPU's; "" when
	// it is no graphics device of the host. VGPUs are the VMs whose vGPUs
	// run on it, as the host lists them.
	GraphicsType    string
	VGPUs           []VGPUUser
	passedThroughBy []VMRef // VMs with the device as a PCI passthrough device
}

// SRIOV is a physical function's SR-IOV state (vSphere's HostSriovInfo).
type SRIOV struct {
	Capable, Enabled, Active  bool
	VFsRequested, VFs, MaxVFs int
	// VFIDs are the PCI ids of the VFs present, VF 0 first; empty when the
	// host's PCI layout leaves them ambiguous (see virtualFunctions).
	VFIDs []string
}

// HostPassthrough is a host's PCI devices as passthrough sees them.
type HostPassthrough struct {
	HostID, HostName string
	Devices          []PassthroughDevice // sorted by PCI id
	// AppliesWithoutReboot: the host applies passthrough and SR-IOV changes
	// at once (capability.deviceRebindWithoutRebootSupported).
	AppliesWithoutReboot bool
}

// Device returns the device with this PCI id, or nil.
func (h *HostPassthrough) Device(pciID string) *PassthroughDevice {
	for i := range h.Devices {
		if h.Devices[i].PCIID == pciID {
			return &h.Devices[i]
		}
	}
	return nil
}

// HostPassthrough reads a host's PCI devices, their passthrough state and
// their users, in one property-collector round trip.
func (c *Client) HostPassthrough(ctx context.Context, hostID string) (*HostPassthrough, error) {
	op := "reading the PCI passthrough of host " + hostID
	h, _, vms, err := c.readHost(ctx, op, hostID, fresh)
	if err != nil {
		return nil, err
	}
	if h.Hardware == nil || h.Config == nil {
		return nil, hostDisconnected(op, h)
	}
	return hostPassthroughFromMO(h, vms, topologyFromMO(h.Hardware)), nil
}

func hostPassthroughFromMO(h *mo.HostSystem, vms []mo.VirtualMachine, t pciTopology) *HostPassthrough {
	out := &HostPassthrough{HostID: h.Self.Value, HostName: h.Name}
	if c := h.Capability; c != nil && c.DeviceRebindWithoutRebootSupported != nil {
		out.AppliesWithoutReboot = *c.DeviceRebindWithoutRebootSupported
	}
	if h.Hardware == nil || h.Config == nil {
		return out
	}
	state := map[string]*types.HostPciPassthruInfo{}
	sriov := map[string]*types.HostSriovInfo{}
	for _, p := range h.Config.PciPassthruInfo {
		if info := p.GetHostPciPassthruInfo(); info != nil {
			state[info.Id] = info
		}
		if sr, ok := p.(*types.HostSriovInfo); ok {
			sriov[sr.Id] = sr
		}
	}
	nics := map[string]PhysicalNIC{} // by PCI id
	if h.Config.Network != nil {
		for _, n := range physicalNICs(h.Config.Network) {
			nics[n.PCIID] = n
		}
	}
	// The host's read has its graphics and its VMs' devices already: no
	// further call for how each GPU is shared.
	graphicsType := map[string]string{}
	for _, g := range h.Config.GraphicsInfo {
		graphicsType[g.PciId] = g.GraphicsType
	}
	vgpus := vgpuUsersByGPU(h.Config.GraphicsInfo, vms)
	users := pciUsers(vms)
	pinned := passthroughUsers(vms)
	adapters := sriovAdapterUsers(vms)
	vfs := virtualFunctions(h.Hardware.PciDevice, sriov)
	pfOf := map[string]string{}
	for pf, ids := range vfs {
		for _, id := range ids {
			pfOf[id] = pf
		}
	}
	for _, d := range h.Hardware.PciDevice {
		info, listed := state[d.Id]
		if !listed {
			continue // not a device passthrough knows of
		}
		dev := PassthroughDevice{
			PCIID: d.Id, VendorID: HexID(d.VendorId), DeviceID: HexID(d.DeviceId), DeviceName: d.DeviceName, VendorName: d.VendorName,
			Capable: info.PassthruCapable, Enabled: info.PassthruEnabled, Active: info.PassthruActive, Label: info.HardwareLabel, VMs: users[d.Id],
			SRIOVAdapters: adapters[d.Id], passedThroughBy: pinned[d.Id],
			ParentBridge: d.ParentBridge, NUMANode: t.numaNode(d.Id), PCIeSwitch: t.pcieSwitch(d.Id),
			GraphicsType: graphicsType[d.Id], VGPUs: vgpus[d.Id],
		}
		if sr, ok := sriov[d.Id]; ok {
			dev.SRIOV = &SRIOV{Capable: sr.SriovCapable, Enabled: sr.SriovEnabled, Active: sr.SriovActive,
				VFsRequested: int(sr.NumVirtualFunctionRequested), VFs: int(sr.NumVirtualFunction), MaxVFs: int(sr.MaxVirtualFunctionSupported),
				VFIDs: vfs[d.Id]}
		}
		if pf, ok := pfOf[d.Id]; ok {
			dev.PhysicalFunction = pf
		}
		if n, ok := nics[d.Id]; ok {
			dev.NIC, dev.UplinkOf = n.Name, n.Switch
		}
		out.Devices = append(out.Devices, dev)
	}
	sort.Slice(out.Devices, func(i, j int) bool { return out.Devices[i].PCIID < out.Devices[j].PCIID })
	return out
}

// SetHostPassthrough enables or disables passthrough of the given devices
// (PCI id → enabled) and gives devices the hardware labels labels lists
// (PCI id → label, "" for none), in one UpdatePassthruConfig. A device
// keeps the label it has unless labels gives one, and its passthrough
// unless enabled does.
func (c *Client) SetHostPassthrough(ctx context.Context, hostID string, enabled map[string]bool, labels map[string]string) error {
	if len(enabled)+len(labels) == 0 {
		return nil
	}
	op := "setting PCI passthrough on host " + hostID
	err := c.updatePassthru(ctx, op, hostID, func(current map[string]*types.HostPciPassthruInfo) []types.BaseHostPciPassthruConfig {
		ids := slices.Sorted(maps.Keys(enabled))
		for id := range labels {
			if _, ok := enabled[id]; !ok {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		var cfg []types.BaseHostPciPassthruConfig
		for _, id := range ids {
			one := &types.HostPciPassthruConfig{Id: id}
			if info := current[id]; info != nil {
				one.PassthruEnabled, one.HardwareLabel = info.PassthruEnabled, info.HardwareLabel
			}
			if on, ok := enabled[id]; ok {
				one.PassthruEnabled = on
			}
			if label, ok := labels[id]; ok {
				one.HardwareLabel = label
			}
			cfg = append(cfg, one)
		}
		return cfg
	})
	if err != nil {
		return err
	}
	c.log.Debug(ctx, "Set PCI passthrough", map[string]any{"host_system_id": hostID, "devices": fmt.Sprint(enabled),
		"hardware_labels": fmt.Sprint(labels)})
	return nil
}

// updatePassthru applies the configuration build makes from the host's
// passthrough state as read now (by PCI id) through the host's
// HostPciPassthruSystem. The read lets each device's configuration carry
// what the change leaves as it is: a device's configuration is its whole
// passthrough state, hardware label included (see the lab's
// UpdatePassthruConfig).
func (c *Client) updatePassthru(
	ctx context.Context,
	op, hostID string,
	build func(current map[string]*types.HostPciPassthruInfo) []types.BaseHostPciPassthruConfig,
) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	// The host's managers come in the same read.
	var h mo.HostSystem
	if err := c.readObjectAs(ctx, vc, types.ManagedObjectReference{Type: "HostSystem", Value: hostID},
		[]string{"configManager", "config.pciPassthruInfo"}, &h, fresh); err != nil {
		return translate(op, err)
	}
	c.rememberConfigManager(hostID, &h.ConfigManager)
	if h.ConfigManager.PciPassthruSystem == nil {
		return &Error{Op: op, Kind: ErrNotImplemented, Message: "the host has no PCI passthrough system"}
	}
	current := map[string]*types.HostPciPassthruInfo{}
	if h.Config != nil {
		for _, p := range h.Config.PciPassthruInfo {
			info := p.GetHostPciPassthruInfo()
			current[info.Id] = info
		}
	}
	cfg := build(current)
	_, err = methods.UpdatePassthruConfig(ctx, vc, &types.UpdatePassthruConfig{This: *h.ConfigManager.PciPassthruSystem, Config: cfg})
	if answerLost(err) && c.passthruApplied(ctx, vc, hostID, cfg) {
		// Its answer was lost, and the host has the configuration: done.
		c.log.Debug(ctx, "UpdatePassthruConfig's answer was lost; the host has the configuration", map[string]any{"host_system_id": hostID})
		return nil
	}
	return translate(op, err)
}

// passthruApplied reports whether the host has cfg, as a read now shows it
// (on time of its own: ctx's may be what ran out). UpdatePassthruConfig
// answers once the host has recorded the configuration, so a call whose
// answer was lost has either made it or not.
func (c *Client) passthruApplied(ctx context.Context, vc *vim25.Client, hostID string, cfg []types.BaseHostPciPassthruConfig) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupAfterFailureTimeout)
	defer cancel()
	var h mo.HostSystem
	ref := types.ManagedObjectReference{Type: "HostSystem", Value: hostID}
	if err := c.readObjectAs(ctx, vc, ref, []string{"config.pciPassthruInfo"}, &h, fresh); err != nil ||
		h.Config == nil {
		return false
	}
	for _, want := range cfg {
		w := want.GetHostPciPassthruConfig()
		i := slices.IndexFunc(h.Config.PciPassthruInfo, func(p types.BaseHostPciPassthruInfo) bool { return p.GetHostPciPassthruInfo().Id == w.Id })
		if i < 0 {
			return false
		}
		got := h.Config.PciPassthruInfo[i]
		switch want := want.(type) {
		case *types.HostSriovConfig:
			info, ok := got.(*types.HostSriovInfo)
			if !ok || info.SriovEnabled != want.SriovEnabled || (want.SriovEnabled && info.NumVirtualFunctionRequested != want.NumVirtualFunction) {
				return false
			}
		default:
			if got.GetHostPciPassthruInfo().PassthruEnabled != w.PassthruEnabled {
				return false
			}
		}
		if got.GetHostPciPassthruInfo().HardwareLabel != w.HardwareLabel {
			return false
		}
	}
	return true
}

// The findings of PlanHostPassthrough. Host names the host as "name (id)".
type (
	// DeviceNotOnHost: the host has no PCI device with that id.
	DeviceNotOnHost struct {
		Host, PCIID string
		Capable     []string // the host's passthrough-capable devices, "id (name)"
	}
	// DeviceNotCapable: the device cannot be passed through.
	DeviceNotCapable struct {
		Host, PCIID, Name string
	}
	// DeviceUsedByHost: the device is a physical NIC a switch of the host
	// uses; passing it through takes the host's network away.
	DeviceUsedByHost struct {
		Host, PCIID, NIC, Switch string
	}
	// NoDeviceMatches: no passthrough-capable device of the host has the
	// vendor and device id.
	NoDeviceMatches struct {
		Host, VendorID, DeviceID string
	}
	// DeviceUsedByVMs: passthrough would be turned off for a device VMs
	// are configured with; they would not power on.
	DeviceUsedByVMs struct {
		Host, PCIID string
		VMs         []string
	}
	// DeviceServesVFs: the device is an SR-IOV physical function with
	// SR-IOV on; passing it through whole would take its virtual functions
	// from the VMs (VMs, sorted) whose adapters or passthrough use them.
	DeviceServesVFs struct {
		Host, PCIID, Name string
		VFs               int
		VMs               []string
	}
	// DeviceSharedAsVGPUs: the device is a GPU NVIDIA's vGPU manager drives
	// (graphics type sharedDirect); passed through, it is taken whole from
	// the vGPUs. VMs (sorted) are the VMs whose vGPUs run on it and that the
	// plan does not take them from: they would not power on again.
	DeviceSharedAsVGPUs struct {
		Host, PCIID, Name string
		VMs               []string
	}
)

func (DeviceNotOnHost) finding()     {}
func (DeviceNotCapable) finding()    {}
func (DeviceUsedByHost) finding()    {}
func (NoDeviceMatches) finding()     {}
func (DeviceUsedByVMs) finding()     {}
func (DeviceServesVFs) finding()     {}
func (DeviceSharedAsVGPUs) finding() {}

// VendorDevice selects PCI devices by vendor and device id, four hex digits
// each.
type VendorDevice struct {
	VendorID, DeviceID string
}

// PassthroughPlan is a checked passthrough: the host's devices as they are,
// the devices to enable (sorted by PCI id) and the findings.
type PassthroughPlan struct {
	Host     *HostPassthrough
	Want     []PassthroughDevice
	Findings []Finding
}

// PassthroughChange is a host's planned passthrough: the devices to enable,
// by PCI id or by vendor and device id (every such device of the host), and
// the devices whose passthrough is about to be turned off.
type PassthroughChange struct {
	HostID    string
	PCIIDs    []string
	Match     []VendorDevice
	Disabling []string
	Leaving   Leaving // VMs whose passthrough devices the same plan removes first
}

// PlanHostPassthrough resolves a planned passthrough to the host's devices
// and checks it: each device exists, can be passed through, is not a NIC the
// host's switches use, and a device losing passthrough has no VM.
func (c *Client) PlanHostPassthrough(ctx context.Context, ch PassthroughChange) (*PassthroughPlan, error) {
	h, err := c.HostPassthrough(ctx, ch.HostID)
	if err != nil {
		return nil, err
	}
	host := fmt.Sprintf("%s (%s)", h.HostName, h.HostID)
	var want []PassthroughDevice
	var out []Finding
	// add takes d once, and says once if it is shared as vGPUs.
	add := func(d PassthroughDevice) {
		if !slices.ContainsFunc(want, func(w PassthroughDevice) bool { return w.PCIID == d.PCIID }) {
			want = append(want, d)
			out = append(out, sharedAsVGPUs(host, &d, ch.Leaving)...)
		}
	}
	for _, id := range ch.PCIIDs {
		d := h.Device(id)
		switch {
		case d == nil:
			out = append(out, DeviceNotOnHost{Host: host, PCIID: id, Capable: capableDevices(h)})
		case !d.Capable:
			out = append(out, DeviceNotCapable{Host: host, PCIID: id, Name: d.DeviceName})
		case d.UplinkOf != "":
			out = append(out, DeviceUsedByHost{Host: host, PCIID: id, NIC: d.NIC, Switch: d.UplinkOf})
		case d.servesVFs():
			out = append(out, DeviceServesVFs{Host: host, PCIID: id, Name: strings.TrimSpace(d.DeviceName), VFs: d.SRIOV.VFsRequested,
				VMs: vfUsers(h, d)})
		default:
			add(*d)
		}
	}
	for _, m := range ch.Match {
		found := false
		for _, d := range h.Devices {
			// A match, like a glob, leaves out what the host uses: uplinks
			// and functions serving virtual functions.
			if d.VendorID == m.VendorID && d.DeviceID == m.DeviceID && d.Capable && d.UplinkOf == "" && !d.servesVFs() {
				// A GPU shared as vGPUs is said (add), not left out: the
				// match asks for that model, and leaving it out would hide why.
				add(d)
				found = true
			}
		}
		if !found {
			out = append(out, NoDeviceMatches{Host: host, VendorID: m.VendorID, DeviceID: m.DeviceID})
		}
	}
	for _, id := range ch.Disabling {
		if d := h.Device(id); d != nil && !slices.ContainsFunc(want, func(w PassthroughDevice) bool { return w.PCIID == id }) {
			if users := staying(d.VMs, ch.Leaving.passthrough); len(users) > 0 {
				out = append(out, DeviceUsedByVMs{Host: host, PCIID: id, VMs: vmNames(users)})
			}
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].PCIID < want[j].PCIID })
	return &PassthroughPlan{Host: h, Want: want, Findings: out}, nil
}

// sharedAsVGPUs is the finding for passing through d when it is a GPU in
// Shared Direct, with the VMs whose vGPUs run on it and stay (not powered
// off, not leaving); none otherwise.
func sharedAsVGPUs(host string, d *PassthroughDevice, leaving Leaving) []Finding {
	if d.GraphicsType != string(types.HostGraphicsInfoGraphicsTypeSharedDirect) {
		return nil
	}
	var running []VMRef
	for _, u := range d.VGPUs {
		if u.VM.PowerState != PoweredOff && !leaving.passthrough(u.VM) {
			running = append(running, u.VM)
		}
	}
	return []Finding{DeviceSharedAsVGPUs{Host: host, PCIID: d.PCIID, Name: strings.TrimSpace(d.DeviceName), VMs: vmNames(running)}}
}

// servesVFs reports whether the device is a physical function with SR-IOV
// on (or turned on, waiting for a reboot): a card is passed through whole or
// split into virtual functions, never both.
func (d *PassthroughDevice) servesVFs() bool {
	return d.SRIOV != nil && (d.SRIOV.Enabled || d.SRIOV.VFsRequested > 0)
}

// vfUsers names the VMs using a physical function's virtual functions: its
// SR-IOV adapters and its VFs passed through as PCI devices; sorted, once
// each.
func vfUsers(h *HostPassthrough, d *PassthroughDevice) []string {
	users := slices.Clone(d.SRIOVAdapters)
	if d.SRIOV != nil {
		for _, id := range d.SRIOV.VFIDs {
			if vf := h.Device(id); vf != nil {
				users = append(users, vf.passedThroughBy...)
			}
		}
	}
	return vmNames(users)
}

func capableDevices(h *HostPassthrough) []string {
	var out []string
	for _, d := range h.Devices {
		if d.Capable && d.UplinkOf == "" {
			out = append(out, fmt.Sprintf("%s (%s)", d.PCIID, strings.TrimSpace(d.DeviceName)))
		}
	}
	return out
}

// vmNames are the VMs' names, sorted, once each.
func vmNames(refs []VMRef) []string {
	var names []string
	for _, u := range refs {
		names = append(names, u.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
