package vcsimlab

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// hostShown is what a connected host shows and a disconnected one does not.
type hostShown struct {
	config     *types.HostConfigInfo
	hardware   *types.HostHardwareInfo
	capability *types.HostCapability
}

// SetHostConnected disconnects a host (false), as Connection > Disconnect
// in the vSphere Client does, or connects it again (true). A disconnected
// host's runtime.connectionState is "disconnected", and vCenter no longer
// returns its configuration, hardware and capabilities: the vSphere API
// reference, HostSystem: config, hardware and capability "might not be
// available for a disconnected host". They come back unchanged.
func (l *Lab) SetHostConnected(ctx context.Context, hostName string, connected bool) error {
	if l.simulatorOnly("SetHostConnected") {
		return ErrNotSimulated
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	id := l.HostID(hostName)
	reg := l.model.Map()
	h, ok := reg.Get(ref("HostSystem", id)).(*simulator.HostSystem)
	if !ok {
		return fmt.Errorf("vcsimlab: no host %q", hostName)
	}
	// The lab's lock is never held with an object's: calls take them the
	// other way round.
	l.mu.Lock()
	hidden, disconnected := l.hiddenHosts[id]
	l.mu.Unlock()
	if connected == !disconnected {
		return fmt.Errorf("vcsimlab: host %q is already %s", hostName, map[bool]string{true: "connected", false: "disconnected"}[connected])
	}
	var shown hostShown
	newContext(reg).WithLock(h, func() {
		if connected {
			h.Config, h.Hardware, h.Capability = hidden.config, hidden.hardware, hidden.capability
			h.Runtime.ConnectionState = types.HostSystemConnectionStateConnected
			return
		}
		shown = hostShown{config: h.Config, hardware: h.Hardware, capability: h.Capability}
		h.Config, h.Hardware, h.Capability = nil, nil, nil
		h.Runtime.ConnectionState = types.HostSystemConnectionStateDisconnected
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if connected {
		delete(l.hiddenHosts, id)
		return nil
	}
	if l.hiddenHosts == nil {
		l.hiddenHosts = map[string]hostShown{}
	}
	l.hiddenHosts[id] = shown
	return nil
}
