package vsphere

// SR-IOV network adapters (VirtualSriovEthernetCard): a VM's NIC backed by
// a virtual function of a physical NIC with SR-IOV on, as vSphere
// Networking's "Assign a Virtual Function as SR-IOV Passthrough Adapter to
// a Virtual Machine" sets it up.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// MinSRIOVHardwareVersion is the first virtual hardware with SR-IOV
// adapters: vSphere Networking's "SR-IOV Support" asks for virtual machine
// compatibility ESXi 5.5 and later, which is vmx-10.
const MinSRIOVHardwareVersion = 10

// automaticPF is the physical function id that asks vCenter to pick one
// from the network's SR-IOV device pool at power on; once it picked, the id
// reads "Automatic-" and the chosen function's id (vSphere API,
// VirtualSriovEthernetCardSriovBackingInfo.physicalFunctionBacking).
const (
	automaticPrefix = "Automatic-"
	automaticPF     = automaticPrefix + "0000:00:00.0"
)

// SRIOVNICSpec is one SR-IOV adapter of a VM.
type SRIOVNICSpec struct {
	PortGroupID      string // distributed port group managed object id
	PhysicalFunction string // the PF's PCI id; "" for vCenter's automatic choice
	MAC              string // "" lets vSphere generate one
	PowerOffAllowed  bool
}

// SRIOVNIC is an SR-IOV adapter as read from vCenter.
type SRIOVNIC struct {
	VM          VMRef
	Key         int32
	PortGroupID string
	MAC         string
	Automatic   bool // the physical function is vCenter's choice
	// PhysicalFunction is the PF's PCI id: the one given, or the one
	// vCenter chose; "" while an automatic choice is not made (before the
	// VM's first power on).
	PhysicalFunction string
	VirtualFunction  string // the VF's PCI id, "" until the VM powers on
	MemoryLocked     bool
}

// sriovNICOf reads the SR-IOV adapter with this key from a VM.
func sriovNICOf(vm *mo.VirtualMachine, key int32, op string) (*SRIOVNIC, error) {
	if vm.Config == nil {
		return nil, vmInaccessible(op, vm.Name, vm.Self.Value)
	}
	for _, dev := range vm.Config.Hardware.Device {
		card, ok := dev.(*types.VirtualSriovEthernetCard)
		if !ok || card.Key != key {
			continue
		}
		out := &SRIOVNIC{VM: vmRefOf(vm), Key: card.Key, MAC: card.MacAddress}
		if b, ok := card.Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo); ok {
			out.PortGroupID = b.Port.PortgroupKey
		}
		if sb := card.SriovBacking; sb != nil {
			if pf := sb.PhysicalFunctionBacking; pf != nil {
				out.PhysicalFunction = pf.Id
				if id, ok := strings.CutPrefix(pf.Id, automaticPrefix); ok {
					out.Automatic, out.PhysicalFunction = true, id
					if id == "0000:00:00.0" {
						out.PhysicalFunction = "" // not chosen yet
					}
				}
			}
			if vf := sb.VirtualFunctionBacking; vf != nil {
				out.VirtualFunction = vf.Id
			}
		}
		if vm.Config.MemoryReservationLockedToMax != nil {
			out.MemoryLocked = *vm.Config.MemoryReservationLockedToMax
		}
		return out, nil
	}
	return nil, notFound(op, "virtual machine %s has no SR-IOV adapter with device key %d", vm.Name, key)
}

// SRIOVNIC reads one SR-IOV adapter of a VM by device key, in one round trip.
func (c *Client) SRIOVNIC(ctx context.Context, vmID string, key int32) (*SRIOVNIC, error) {
	return readAdapter(ctx, c, "SR-IOV", vmID, key, sriovNICOf)
}

// CreateSRIOVNIC adds an adapter, with all guest memory reserved as SR-IOV
// needs, and returns it as read right after. It is returned whenever the
// adapter exists, also when a later step (powering the VM back on) fails.
func (c *Client) CreateSRIOVNIC(ctx context.Context, vmID string, spec SRIOVNICSpec) (*SRIOVNIC, error) {
	op := "adding an SR-IOV adapter to virtual machine " + vmID
	backing, err := c.portGroupBacking(ctx, op, spec.PortGroupID)
	if err != nil {
		return nil, err
	}
	var created *SRIOVNIC
	err = c.changeVM(ctx, vmChange{op: op, vmID: vmID, change: WhatSRIOVNeedsOff, powerOffAllowed: spec.PowerOffAllowed, configTarget: true,
		build: func(vm *mo.VirtualMachine, target *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
			card := &types.VirtualSriovEthernetCard{SriovBacking: &types.VirtualSriovEthernetCardSriovBackingInfo{
				PhysicalFunctionBacking: physicalFunctionBacking(spec.PhysicalFunction, target),
			}}
			e := card.GetVirtualEthernetCard()
			e.Key, e.Backing = -1, backing
			e.Connectable = &types.VirtualDeviceConnectInfo{StartConnected: true, AllowGuestControl: true}
			e.AddressType, e.MacAddress = addressType(spec.MAC), spec.MAC
			return &types.VirtualMachineConfigSpec{
				DeviceChange: []types.BaseVirtualDeviceConfigSpec{
					&types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: card},
				},
				MemoryReservationLockedToMax: lockMemory(vm, true),
			}, true, nil
		},
		after: func(vm *mo.VirtualMachine, before []int32) bool {
			if vm.Config == nil {
				return false
			}
			for _, dev := range vm.Config.Hardware.Device {
				if _, ok := dev.(*types.VirtualSriovEthernetCard); ok && !slices.Contains(before, dev.GetVirtualDevice().Key) {
					created, _ = sriovNICOf(vm, dev.GetVirtualDevice().Key, op)
				}
			}
			return created != nil
		},
	})
	return created, err
}

// UpdateSRIOVNIC edits an adapter in place: its port group, physical
// function and MAC. A new physical function needs the VM off.
func (c *Client) UpdateSRIOVNIC(ctx context.Context, vmID string, key int32, spec SRIOVNICSpec) error {
	op := fmt.Sprintf("changing SR-IOV adapter %d of virtual machine %s", key, vmID)
	backing, err := c.portGroupBacking(ctx, op, spec.PortGroupID)
	if err != nil {
		return err
	}
	return c.changeVM(ctx, vmChange{op: op, vmID: vmID, change: WhatSRIOVNeedsOff, powerOffAllowed: spec.PowerOffAllowed, configTarget: true,
		build: func(vm *mo.VirtualMachine, target *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
			now, err := sriovNICOf(vm, key, op)
			if err != nil {
				return nil, false, err
			}
			var card *types.VirtualSriovEthernetCard
			for _, d := range vm.Config.Hardware.Device {
				if v, ok := d.(*types.VirtualSriovEthernetCard); ok && v.Key == key {
					card = v
				}
			}
			e := card.GetVirtualEthernetCard()
			e.Backing = backing
			if spec.MAC != "" {
				e.MacAddress, e.AddressType = spec.MAC, addressType(spec.MAC)
			}
			newPF := now.Automatic != (spec.PhysicalFunction == "") || (!now.Automatic && now.PhysicalFunction != spec.PhysicalFunction)
			if newPF {
				// A new function: the VF of the old one no longer applies.
				card.SriovBacking = &types.VirtualSriovEthernetCardSriovBackingInfo{
					PhysicalFunctionBacking: physicalFunctionBacking(spec.PhysicalFunction, target),
				}
			}
			return &types.VirtualMachineConfigSpec{
				DeviceChange: []types.BaseVirtualDeviceConfigSpec{
					&types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: card},
				},
				MemoryReservationLockedToMax: lockMemory(vm, true),
			}, newPF, nil
		}})
}

// DeleteSRIOVNIC removes an adapter, as DeletePVRDMANIC does.
func (c *Client) DeleteSRIOVNIC(ctx context.Context, vmID string, key int32, powerOffAllowed bool) error {
	op := fmt.Sprintf("removing SR-IOV adapter %d of virtual machine %s", key, vmID)
	return c.removeDevice(ctx, op, vmID, key, WhatSRIOVNeedsOff, powerOffAllowed, func(dev types.BaseVirtualDevice) bool {
		_, ok := dev.(*types.VirtualSriovEthernetCard)
		return ok
	})
}

// physicalFunctionBacking names the PF: filled from what the VM's host
// offers for SR-IOV (as the vSphere Client does), or the automatic choice.
func physicalFunctionBacking(pciID string, target *types.ConfigTarget) *types.VirtualPCIPassthroughDeviceBackingInfo {
	if pciID == "" {
		return &types.VirtualPCIPassthroughDeviceBackingInfo{Id: automaticPF}
	}
	backing := &types.VirtualPCIPassthroughDeviceBackingInfo{Id: pciID}
	if target != nil {
		for _, s := range target.Sriov {
			if s.PciDevice.Id == pciID {
				backing.DeviceId = fmt.Sprintf("%x", uint16(s.PciDevice.DeviceId))
				backing.VendorId, backing.SystemId = s.PciDevice.VendorId, s.SystemId
				backing.DeviceName = s.PciDevice.DeviceName
			}
		}
	}
	return backing
}

// SRIOVNICChange is a planned SR-IOV adapter, new or changed, to check.
type SRIOVNICChange struct {
	VMID             string // UUID or managed object id, as given
	PortGroupID      string
	PhysicalFunction string // "" for the automatic choice
	Key              int32  // the adapter's device key; 0 for a new adapter
	NewPF            bool   // an existing adapter changes physical function
	MAC              string // a static MAC, new or changed; "" for none
	PowerOffAllowed  bool
	// MovedFrom is the adapter this one replaces on another VM, when it
	// moves: its MAC is free for this one.
	MovedFrom *AdapterAt
	// Planned is what host resources of the same plan turn on: a function
	// not serving VFs yet counts as serving when one turns SR-IOV on and
	// the host applies it without a reboot.
	Planned PlannedHostDevices
}

// The findings of PlanSRIOVNIC, beside HardwareTooOld, StandardNetwork,
// DeviceNotOnHost, NotSRIOVCapable and MACInUse. VM names the VM as "name
// (id as given)"; Host names the VM's host.
type (
	// PFNotNIC: the physical function is not a network adapter of the host
	// (no vmnic), such as an InfiniBand card's.
	PFNotNIC struct {
		Host, PCIID, Name string
		NICs              []string // the host's SR-IOV capable vmnics, "vmnic4 (0000:d8:00.0)"
	}
	// SRIOVNotActive: SR-IOV of the function is off, or (Enabled) on and
	// waiting for the host's reboot, or (TurnedOnAtReboot) turned on by a
	// host resource of this plan on a host that applies it at its next
	// reboot.
	SRIOVNotActive struct {
		Host, PCIID, NIC          string
		Enabled, TurnedOnAtReboot bool
	}
	// PFNotUplink: the function's vmnic is not an uplink of the port
	// group's switch on the VM's host, so the port group's policies do not
	// reach the VF.
	PFNotUplink struct {
		Host, NIC, Switch, UplinkOf string
	}
	// VMHostNotOnSwitch: the VM's host is no member of the port group's
	// switch.
	VMHostNotOnSwitch struct {
		VM, Host, Switch, PortGroup string
	}
	// NoSRIOVPool: the automatic choice has no SR-IOV-active uplink of the
	// port group's switch on the VM's host to pick from.
	NoSRIOVPool struct {
		VM, Host, Switch string
	}
)

func (PFNotNIC) finding()          {}
func (SRIOVNotActive) finding()    {}
func (PFNotUplink) finding()       {}
func (NoSRIOVPool) finding()       {}
func (VMHostNotOnSwitch) finding() {}

// SRIOVNICPlan is a checked SR-IOV adapter: its findings and the free virtual
// functions of a new adapter's physical function (nil when it has none to
// count).
type SRIOVNICPlan struct {
	Findings []Finding
	FreeVFs  *FreeVFs
	OnHost   VMOnHost // where the change runs
}

// PlanSRIOVNIC checks a planned SR-IOV adapter against its VM, the VM's
// host and the port group's switch.
func (c *Client) PlanSRIOVNIC(ctx context.Context, ch SRIOVNICChange) (*SRIOVNICPlan, error) {
	op := "checking an SR-IOV adapter of virtual machine " + ch.VMID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vm, _, host, err := c.vmAndHost(ctx, ch.VMID)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("%s (%s)", vm.Name, ch.VMID)
	var out []Finding
	var free *FreeVFs
	if vm.HardwareVersion < MinSRIOVHardwareVersion {
		out = append(out, HardwareTooOld{VM: label, Version: vm.HardwareVersion, Minimum: MinSRIOVHardwareVersion})
	}
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	pg, err := c.readPortGroup(ctx, vc, op, ch.PortGroupID)
	if err != nil {
		return nil, err
	}
	if pg.standard {
		out = append(out, StandardNetwork{NetworkID: ch.PortGroupID, Name: pg.name})
	} else if host.ID != "" {
		if slices.ContainsFunc(pg.members, func(m types.ManagedObjectReference) bool { return m.Value == host.ID }) {
			out = append(out, planPhysicalFunction(label, host, pg.switchName, ch.PhysicalFunction, ch.Planned)...)
			free = freeVFs(host, ch)
		} else {
			// vCenter refuses the adapter (InvalidArgument): its VF needs a
			// port of the switch on the VM's own host.
			out = append(out, VMHostNotOnSwitch{VM: label, Host: fmt.Sprintf("%s (%s)", host.Name, host.ID), Switch: pg.switchName, PortGroup: pg.name})
		}
	}
	if ch.MAC != "" {
		owner, err := macOwner(ctx, vc, ch.MAC, AdapterAt{VMID: vm.MOID, Key: ch.Key}, ch.MovedFrom)
		if err != nil {
			return nil, translate(op+": looking for MAC address "+ch.MAC, err)
		}
		if owner != "" {
			out = append(out, MACInUse{MAC: ch.MAC, VM: owner})
		}
	}
	if p := PlanPower(label, vm.PowerState, ch.Key == 0 || ch.NewPF, ch.PowerOffAllowed, WhatSRIOVNeedsOff); p != nil {
		out = append(out, p)
	}
	return &SRIOVNICPlan{Findings: out, FreeVFs: free,
		OnHost: VMOnHost{VM: label, HostID: vm.HostID, Running: vm.PowerState == PoweredOn, Passthrough: true}}, nil
}

// FreeVFs is a new adapter's physical function, when it serves virtual
// functions, with the number no VM takes yet (adapters and VFs passed through
// count). Each adapter takes one at power on: the provider refuses more new
// adapters of one plan than there are.
type FreeVFs struct {
	Host, HostID, PCIID, NIC string
	VFs, Free                int
	Planned                  bool // VFs is the count the plan sets, not the host's now
}

// freeVFs counts the virtual functions of a new adapter's physical function
// that no VM takes yet, when it serves some (nil otherwise).
func freeVFs(host *Host, ch SRIOVNICChange) *FreeVFs {
	if ch.PhysicalFunction == "" || (ch.Key != 0 && !ch.NewPF) {
		return nil
	}
	return pfFreeVFs(host, ch.PhysicalFunction, ch.Planned)
}

// pfFreeVFs counts the virtual functions of physical function pfID that no
// VM takes yet (nil when it serves none): as many as a host resource of the
// plan gives it, else as many as it has, less the SR-IOV adapters on it and
// its VFs passed through.
func pfFreeVFs(host *Host, pfID string, planned PlannedHostDevices) *FreeVFs {
	i := slices.IndexFunc(host.PCIDevices, func(d PassthroughDevice) bool { return strings.EqualFold(d.PCIID, pfID) })
	if i < 0 || host.PCIDevices[i].SRIOV == nil {
		return nil
	}
	pf := host.PCIDevices[i]
	vfs, inPlan := planned.VFs[HostDeviceKey(host.ID, pf.PCIID)]
	if !inPlan {
		if !pf.SRIOV.Active || pf.SRIOV.VFs == 0 {
			return nil
		}
		vfs = pf.SRIOV.VFs
	}
	used := len(pf.SRIOVAdapters)
	for _, id := range pf.SRIOV.VFIDs {
		if j := slices.IndexFunc(host.PCIDevices, func(d PassthroughDevice) bool { return d.PCIID == id }); j >= 0 &&
			len(host.PCIDevices[j].passedThroughBy) > 0 {
			used++
		}
	}
	return &FreeVFs{Host: fmt.Sprintf("%s (%s)", host.Name, host.ID), HostID: host.ID, PCIID: pf.PCIID, NIC: pf.NIC,
		VFs: vfs, Free: max(vfs-used, 0), Planned: inPlan}
}

// planPhysicalFunction checks the adapter's PF (or, for the automatic
// choice, the pool it is picked from) on the VM's host.
func planPhysicalFunction(vm string, host *Host, switchName, pciID string, planned PlannedHostDevices) []Finding {
	hostLabel := fmt.Sprintf("%s (%s)", host.Name, host.ID)
	var nics, capable []string
	pool := false
	for _, d := range host.PCIDevices {
		if d.SRIOV == nil || !d.SRIOV.Capable {
			continue
		}
		capable = append(capable, fmt.Sprintf("%s (%s, up to %d VFs)", d.PCIID, strings.TrimSpace(d.DeviceName), d.SRIOV.MaxVFs))
		if d.NIC != "" {
			nics = append(nics, fmt.Sprintf("%s (%s)", d.NIC, d.PCIID))
			pool = pool || (d.SRIOV.Active && d.SRIOV.VFs > 0 && d.UplinkOf == switchName)
		}
	}
	sort.Strings(nics)
	if pciID == "" {
		if !pool {
			return []Finding{NoSRIOVPool{VM: vm, Host: hostLabel, Switch: switchName}}
		}
		return nil
	}
	var pf *PassthroughDevice
	for i := range host.PCIDevices {
		if host.PCIDevices[i].PCIID == pciID {
			pf = &host.PCIDevices[i]
		}
	}
	switch {
	case pf == nil:
		return []Finding{DeviceNotOnHost{Host: hostLabel, PCIID: pciID, Capable: capable}}
	case pf.SRIOV == nil || !pf.SRIOV.Capable:
		return []Finding{NotSRIOVCapable{Host: hostLabel, PCIID: pciID, Name: pf.DeviceName, Capable: capable}}
	case pf.NIC == "":
		return []Finding{PFNotNIC{Host: hostLabel, PCIID: pciID, Name: strings.TrimSpace(pf.DeviceName), NICs: nics}}
	}
	var out []Finding
	if (!pf.SRIOV.Active || pf.SRIOV.VFs == 0) && !planned.sriovOnceApplied(host, pciID) {
		out = append(out, SRIOVNotActive{Host: hostLabel, PCIID: pciID, NIC: pf.NIC, Enabled: pf.SRIOV.Enabled,
			TurnedOnAtReboot: planned.SRIOV[HostDeviceKey(host.ID, pciID)]})
	}
	if pf.UplinkOf != switchName {
		out = append(out, PFNotUplink{Host: hostLabel, NIC: pf.NIC, Switch: switchName, UplinkOf: pf.UplinkOf})
	}
	return out
}
