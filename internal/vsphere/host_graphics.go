package vsphere

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/vmware/govmomi/vim25/methods"
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
	HostName string
	Settings HostGraphicsSettings
	GPUs     []GPU
	// RebootRequired: a GPU that is not passed through is not driven as
	// configured; the host applies its graphics settings when its graphics
	// restart (a reboot).
	RebootRequired bool
}

// HostGraphics reads a host's graphics settings and its GPUs: a refresh
// read, which the command's prefetch of every host may answer.
func (c *Client) HostGraphics(ctx context.Context, hostID string) (*HostGraphicsState, error) {
	op := "reading the graphics settings of host " + hostID
	h, cluster, vms, err := c.readHost(ctx, op, hostID, refresh)
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
	host := hostFromMO(h, cluster, vms)
	out := &HostGraphicsState{HostName: h.Name, GPUs: host.GPUs, Settings: HostGraphicsSettings{
		DefaultType: host.Graphics.DefaultType, AssignmentPolicy: host.Graphics.AssignmentPolicy, Devices: map[string]string{},
	}}
	for _, d := range h.Config.GraphicsConfig.DeviceType {
		out.Settings.Devices[d.DeviceId] = d.GraphicsType
	}
	for _, g := range host.GPUs {
		if g.GraphicsType == "" || g.GraphicsType == string(types.HostGraphicsInfoGraphicsTypeDirect) {
			continue
		}
		wantShared := g.ConfiguredGraphicsType == string(types.HostGraphicsConfigGraphicsTypeSharedDirect)
		if wantShared != (g.GraphicsType == string(types.HostGraphicsInfoGraphicsTypeSharedDirect)) {
			out.RebootRequired = true
		}
	}
	return out, nil
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

// GraphicsDevicePassedThrough is a GPU set to sharedDirect that is
// passthrough enabled, or turned on by a host resource of the same plan:
// one GPU cannot be both.
type GraphicsDevicePassedThrough struct {
	Host    string
	PCIID   string
	Planned bool // turned on by a host resource of the plan, not now
}

func (GraphicsDeviceNotGPU) finding()        {}
func (GraphicsDevicePassedThrough) finding() {}

// PlanHostGraphics checks settings s for host h: every device must be a
// GPU of the host, and a GPU given sharedDirect of its own must not be in
// passthrough, now or by planned (PlannedHostDevices.Passthrough).
func PlanHostGraphics(h *Host, s HostGraphicsSettings, planned PlannedHostDevices) []Finding {
	var out []Finding
	gpus := make([]string, 0, len(h.GPUs))
	for _, g := range h.GPUs {
		gpus = append(gpus, g.PCIID)
	}
	for _, id := range slices.Sorted(maps.Keys(s.Devices)) {
		i := slices.IndexFunc(h.GPUs, func(g GPU) bool { return g.PCIID == id })
		if i < 0 {
			out = append(out, GraphicsDeviceNotGPU{Host: h.Name, PCIID: id, GPUs: gpus})
			continue
		}
		if s.Devices[id] != string(types.HostGraphicsConfigGraphicsTypeSharedDirect) {
			continue
		}
		switch {
		case h.GPUs[i].PassthroughEnabled:
			out = append(out, GraphicsDevicePassedThrough{Host: h.Name, PCIID: id})
		case planned.Passthrough[HostDeviceKey(h.ID, id)]:
			out = append(out, GraphicsDevicePassedThrough{Host: h.Name, PCIID: id, Planned: true})
		}
	}
	return out
}
