package vsphere

import (
	"context"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/vim25/types"
)

// SetHostSRIOV turns SR-IOV of a physical function on with vfs virtual
// functions, or off (vfs 0). The function itself is not passed through
// while it serves virtual functions.
func (c *Client) SetHostSRIOV(ctx context.Context, hostID, pciID string, vfs int) error {
	op := fmt.Sprintf("setting SR-IOV of %s on host %s", pciID, hostID)
	err := c.updatePassthru(ctx, op, hostID, func(current map[string]*types.HostPciPassthruInfo) []types.BaseHostPciPassthruConfig {
		cfg := &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pciID}, SriovEnabled: vfs > 0, NumVirtualFunction: int32(vfs)}
		if info := current[pciID]; info != nil {
			cfg.HardwareLabel = info.HardwareLabel
		}
		return []types.BaseHostPciPassthruConfig{cfg}
	})
	if err != nil {
		return err
	}
	c.log.Debug(ctx, "Set SR-IOV", map[string]any{"host_system_id": hostID, "pci_id": pciID, "virtual_functions": vfs})
	return nil
}

// The findings of PlanHostSRIOV.
type (
	// NotSRIOVCapable: the device is no SR-IOV physical function.
	NotSRIOVCapable struct {
		Host, PCIID, Name string
		Capable           []string // the host's SR-IOV capable devices, "id (name, up to N VFs)"
	}
	// TooManyVFs: the function supports fewer virtual functions.
	TooManyVFs struct {
		Host, PCIID string
		Wanted, Max int
	}
	// PassedThroughWhole: the device has passthrough on, as a whole card
	// (VMs, sorted, are configured with it); turning SR-IOV on would take
	// it from them.
	PassedThroughWhole struct {
		Host, PCIID, Name string
		VMs               []string
	}
	// VFsInUse: planned fewer virtual functions than VMs use. Adapters
	// counts VMs' SR-IOV adapters on the function (VMs names their VMs,
	// sorted, once each), each needing a VF of its own at power on. Pinned
	// are the VFs VMs pass through as PCI devices: all are needed, and
	// those numbered Wanted or more would disappear.
	VFsInUse struct {
		Host, PCIID      string
		Wanted, Adapters int
		VMs              []string
		Pinned           []PinnedVF
	}
)

// PinnedVF is a virtual function VMs pass through as a PCI device.
type PinnedVF struct {
	PCIID string
	Index int
	VMs   []string
}

func (NotSRIOVCapable) finding() {}

func (TooManyVFs) finding() {}

func (VFsInUse) finding() {}

func (PassedThroughWhole) finding() {}

// HostSRIOVPlan is a checked SR-IOV function: the device as the host reports
// it now (nil when the host has no such device) and the findings.
type HostSRIOVPlan struct {
	Device   *PassthroughDevice
	Findings []Finding
	// AppliesNow: the host applies the change at once, not at its next
	// reboot.
	AppliesNow bool
}

// PlanHostSRIOV checks planned SR-IOV of a physical function: it is on the
// host, SR-IOV capable, not passed through whole, and supports that many
// virtual functions.
func (c *Client) PlanHostSRIOV(ctx context.Context, hostID, pciID string, vfs int) (*HostSRIOVPlan, error) {
	h, err := c.HostPassthrough(ctx, hostID)
	if err != nil {
		return nil, err
	}
	host := fmt.Sprintf("%s (%s)", h.HostName, h.HostID)
	var capable []string
	for _, d := range h.Devices {
		if d.SRIOV != nil && d.SRIOV.Capable {
			capable = append(capable, fmt.Sprintf("%s (%s, up to %d VFs)", d.PCIID, strings.TrimSpace(d.DeviceName), d.SRIOV.MaxVFs))
		}
	}
	d := h.Device(pciID)
	switch {
	case d == nil:
		return &HostSRIOVPlan{Findings: []Finding{DeviceNotOnHost{Host: host, PCIID: pciID, Capable: capable}}}, nil
	case d.SRIOV == nil || !d.SRIOV.Capable:
		return &HostSRIOVPlan{Device: d, Findings: []Finding{NotSRIOVCapable{Host: host, PCIID: pciID, Name: d.DeviceName, Capable: capable}}}, nil
	case vfs > d.SRIOV.MaxVFs:
		return &HostSRIOVPlan{Device: d, Findings: []Finding{TooManyVFs{Host: host, PCIID: pciID, Wanted: vfs, Max: d.SRIOV.MaxVFs}}}, nil
	case d.Enabled:
		return &HostSRIOVPlan{
			Device:   d,
			Findings: []Finding{PassedThroughWhole{Host: host, PCIID: pciID, Name: strings.TrimSpace(d.DeviceName), VMs: vmNames(d.passedThroughBy)}},
		}, nil
	}
	if f := vfsInUse(h, d, vfs, nil); f != nil {
		return &HostSRIOVPlan{Device: d, Findings: []Finding{f}}, nil
	}
	return &HostSRIOVPlan{Device: d, AppliesNow: h.AppliesWithoutReboot}, nil
}

// vfsInUse refuses fewer virtual functions than VMs use: each SR-IOV
// adapter on the function takes one at power on, and a VM whose adapter finds
// none does not power on; a VF passed through as a PCI device is needed
// itself, and lowering the count removes the highest-numbered VFs.
func vfsInUse(h *HostPassthrough, d *PassthroughDevice, vfs int, leaving Leaving) Finding {
	var pinned []PinnedVF
	lost := false
	if d.SRIOV != nil {
		for k, id := range d.SRIOV.VFIDs {
			vf := h.Device(id)
			if vf == nil {
				continue
			}
			if users := staying(vf.passedThroughBy, leaving.passthrough); len(users) > 0 {
				pinned = append(pinned, PinnedVF{PCIID: id, Index: k, VMs: vmNames(users)})
				lost = lost || k >= vfs
			}
		}
	}
	adapters := staying(d.SRIOVAdapters, func(vm VMRef) bool { return leaving.sriovAdapter(vm, d.PCIID) })
	if !lost && len(adapters)+len(pinned) <= vfs {
		return nil
	}
	return VFsInUse{Host: fmt.Sprintf("%s (%s)", h.HostName, h.HostID), PCIID: d.PCIID, Wanted: vfs,
		Adapters: len(adapters), VMs: vmNames(adapters), Pinned: pinned}
}

// PlanSRIOVRestore checks that putting a function back to vfs virtual
// functions (a destroy's restore) leaves the VMs' SR-IOV adapters on it
// enough of them, once the uses leaving in the same plan are gone.
func (c *Client) PlanSRIOVRestore(ctx context.Context, hostID, pciID string, vfs int, leaving Leaving) (Finding, error) {
	h, err := c.HostPassthrough(ctx, hostID)
	if err != nil {
		return nil, err
	}
	d := h.Device(pciID)
	if d == nil {
		return nil, nil
	}
	return vfsInUse(h, d, vfs, leaving), nil
}
