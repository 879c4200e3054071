package vsphere

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// HostGraphicsSettings are the graphics settings of a host that
// vspherehpc_host_graphics manages: HostGraphicsConfig.
type HostGraphicsSettings struct {
	DefaultType      string            // "shared" or "sharedDirect"
	AssignmentPolicy string            // "performance" or "consolidation"
	Devices          map[string]string // PCI id -> graphics type, for the GPUs with a type of their own
}

// HostGraphicsState is a host's graphics as a read finds them.
type HostGraphicsState struct {
	HostID, HostName string
	Settings         HostGraphicsSettings
	GPUs             []GPU
	// Pending are the GPUs, by PCI id, that the host does not drive as
	// configured: it applies graphics settings when its graphics restart
	// (a reboot), and drives a GPU as Shared Direct only with NVIDIA's vGPU
	// manager installed.
	Pending []string
	// BootTime is when the host last booted; nil when vCenter does not say.
	BootTime *time.Time
}

// TypeOf is the graphics type settings s give GPU id: its own, or the
// default.
func (s HostGraphicsSettings) TypeOf(id string) string {
	if t, ok := s.Devices[id]; ok {
		return t
	}
	return s.DefaultType
}

// Pending lists the GPUs, by PCI id, whose graphics type would change at
// the host's next reboot with settings s: those not passed through, driven
// by NVIDIA's vGPU manager ("sharedDirect") where s gives them another type,
// or not where s gives them sharedDirect. Shared (vSGA) and no host driver
// ("basic") are alike here: neither offers vGPUs.
func (s HostGraphicsSettings) Pending(gpus []GPU) []string {
	var out []string
	for _, g := range gpus {
		if g.GraphicsType == "" || g.GraphicsType == string(types.HostGraphicsInfoGraphicsTypeDirect) {
			continue
		}
		wantShared := s.TypeOf(g.PCIID) == string(types.HostGraphicsConfigGraphicsTypeSharedDirect)
		if wantShared != (g.GraphicsType == string(types.HostGraphicsInfoGraphicsTypeSharedDirect)) {
			out = append(out, g.PCIID)
		}
	}
	return out
}

// hostGraphicsSettingsFromMO are h's graphics settings; ok false when the
// host reports none (before ESXi 6.5, or disconnected).
func hostGraphicsSettingsFromMO(h *mo.HostSystem) (HostGraphicsSettings, bool) {
	if h.Config == nil || h.Config.GraphicsConfig == nil {
		return HostGraphicsSettings{}, false
	}
	c := h.Config.GraphicsConfig
	s := HostGraphicsSettings{DefaultType: c.HostDefaultGraphicsType, AssignmentPolicy: c.SharedPassthruAssignmentPolicy, Devices: map[string]string{}}
	for _, d := range c.DeviceType {
		s.Devices[d.DeviceId] = d.GraphicsType
	}
	return s, true
}

// pendingGraphics lists h's GPUs whose graphics change waits for a reboot.
func pendingGraphics(h *mo.HostSystem) []string {
	s, ok := hostGraphicsSettingsFromMO(h)
	if !ok {
		return nil
	}
	return s.Pending(gpus(h, nil, topologyFromMO(h.Hardware)))
}

// HostGraphics reads a host's graphics settings and its GPUs: a refresh
// read, which the command's prefetch of every host may answer.
func (c *Client) HostGraphics(ctx context.Context, hostID string) (*HostGraphicsState, error) {
	op := "reading the graphics settings of host " + hostID
	h, _, vms, err := c.readHost(ctx, op, hostID, refresh)
	if err != nil {
		return nil, err
	}
	if h.Config == nil {
		return nil, hostDisconnected(op, h)
	}
	if h.Config.GraphicsConfig == nil {
		return nil, &Error{Op: op, Kind: ErrNotImplemented, Object: ObjectHost, ID: hostID, Message: fmt.Sprintf(
			"host %s reports no graphics configuration: it needs ESXi 6.5 or later", h.Name)}
	}
	c.rememberConfigManager(hostID, &h.ConfigManager)
	return hostGraphicsFromMOs(h, vms), nil
}

// hostGraphicsFromMOs is HostGraphicsState of a host with graphics
// settings and the VMs registered on it.
func hostGraphicsFromMOs(h *mo.HostSystem, vms []mo.VirtualMachine) *HostGraphicsState {
	s, _ := hostGraphicsSettingsFromMO(h)
	out := &HostGraphicsState{HostID: h.Self.Value, HostName: h.Name, Settings: s, GPUs: gpus(h, vms, topologyFromMO(h.Hardware)),
		BootTime: h.Runtime.BootTime}
	out.Pending = s.Pending(out.GPUs)
	return out
}

// SetHostGraphics sets a host's graphics settings
// (HostGraphicsManager.UpdateGraphicsConfig). They take effect when the
// host's graphics restart: the caller reboots the host when it may.
func (c *Client) SetHostGraphics(ctx context.Context, hostID string, s HostGraphicsSettings) error {
	op := "setting the graphics of host " + hostID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	managers, err := c.hostConfigManager(ctx, vc, op, hostID)
	if err != nil {
		return err
	}
	if managers.GraphicsManager == nil {
		return &Error{Op: op, Kind: ErrNotImplemented, Object: ObjectHost, ID: hostID, Message: "the host has no graphics manager"}
	}
	cfg := types.HostGraphicsConfig{HostDefaultGraphicsType: s.DefaultType, SharedPassthruAssignmentPolicy: s.AssignmentPolicy}
	for _, id := range slices.Sorted(maps.Keys(s.Devices)) {
		cfg.DeviceType = append(cfg.DeviceType, types.HostGraphicsConfigDeviceType{DeviceId: id, GraphicsType: s.Devices[id]})
	}
	_, err = methods.UpdateGraphicsConfig(ctx, vc, &types.UpdateGraphicsConfig{This: *managers.GraphicsManager, Config: cfg})
	return translate(op, err)
}

// GraphicsDeviceNotGPU is a device setting for a PCI id that is not a GPU
// of the host.
type GraphicsDeviceNotGPU struct {
	Host  string
	PCIID string
	GPUs  []string // the host's GPUs, by PCI id
}

// GraphicsDevicePassedThrough is a GPU given a graphics type of its own
// that has passthrough on (VMs, sorted, are configured with it): the host's
// graphics do not drive a GPU passed through, and one GPU cannot be both.
type GraphicsDevicePassedThrough struct {
	Host, PCIID, Name string
	VMs               []string
}

func (GraphicsDeviceNotGPU) finding()        {}
func (GraphicsDevicePassedThrough) finding() {}

// PlanHostGraphics checks settings s for a host's graphics st: every
// device given a type of its own must be a GPU of the host, and not passed
// through. A GPU a host resource of the same plan passes through is the
// provider's claims' to refuse.
func PlanHostGraphics(st *HostGraphicsState, s HostGraphicsSettings) []Finding {
	var out []Finding
	gpus := make([]string, 0, len(st.GPUs))
	for _, g := range st.GPUs {
		gpus = append(gpus, g.PCIID)
	}
	for _, id := range slices.Sorted(maps.Keys(s.Devices)) {
		i := slices.IndexFunc(st.GPUs, func(g GPU) bool { return g.PCIID == id })
		switch {
		case i < 0:
			out = append(out, GraphicsDeviceNotGPU{Host: st.HostName, PCIID: id, GPUs: gpus})
		case st.GPUs[i].PassthroughEnabled:
			out = append(out, GraphicsDevicePassedThrough{Host: st.HostName, PCIID: id, Name: st.GPUs[i].DeviceName, VMs: vmNames(st.GPUs[i].VMs)})
		}
	}
	return out
}

// ListedHostGraphics is a host's graphics, as a list finds them.
type ListedHostGraphics struct {
	*HostGraphicsState
	// Unreadable, when set, says why the host's graphics cannot be read:
	// the list leaves it out and says so.
	Unreadable string
}

// ListHostGraphics lists the hosts of a scope whose graphics settings are
// not ESXi's defaults (Shared, performance, no GPU with a type of its own),
// in one round trip.
func (c *Client) ListHostGraphics(ctx context.Context, scope Scope) ([]ListedHostGraphics, error) {
	inv, err := c.readInventory(ctx, "listing the graphics of hosts in "+scope.String(), scope, hostProps, nil, false)
	if err != nil {
		return nil, err
	}
	var out []ListedHostGraphics
	for i := range inv.hosts {
		h := &inv.hosts[i]
		if why := hostUnreadable(h, true); why != "" {
			out = append(out, ListedHostGraphics{HostGraphicsState: &HostGraphicsState{HostID: h.Self.Value, HostName: h.Name}, Unreadable: why})
			continue
		}
		s, ok := hostGraphicsSettingsFromMO(h)
		if ok && (s.DefaultType != string(types.HostGraphicsConfigGraphicsTypeShared) ||
			s.AssignmentPolicy != string(types.HostGraphicsConfigSharedPassthruAssignmentPolicyPerformance) || len(s.Devices) > 0) {
			out = append(out, ListedHostGraphics{HostGraphicsState: hostGraphicsFromMOs(h, nil)})
		}
	}
	return out, nil
}
