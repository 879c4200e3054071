package vcsimlab

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// TestSetHostConnected: a disconnected host reads with no configuration,
// hardware or capabilities and says so in its connection state; connected
// again, it has them back as they were.
func TestSetHostConnected(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	name := l.HostNames()[0]
	read := func() mo.HostSystem {
		var h mo.HostSystem
		retrieve(t, l.c, hostRef(l.Lab, 0), []string{"name", "config", "hardware", "capability", "runtime.connectionState"}, &h)
		return h
	}
	before := read()
	if before.Config == nil || before.Hardware == nil {
		t.Fatal("the host has no configuration or hardware to begin with")
	}
	if err := l.SetHostConnected(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	if h := read(); h.Config != nil || h.Hardware != nil || h.Capability != nil || h.Name != name ||
		h.Runtime.ConnectionState != types.HostSystemConnectionStateDisconnected {
		t.Fatalf("disconnected host reads as name %q, config %v, hardware %v, capability %v, connection state %q",
			h.Name, h.Config != nil, h.Hardware != nil, h.Capability != nil, h.Runtime.ConnectionState)
	}
	if err := l.SetHostConnected(ctx, name, false); err == nil {
		t.Error("disconnecting a disconnected host: no error")
	}
	if err := l.SetHostConnected(ctx, name, true); err != nil {
		t.Fatal(err)
	}
	after := read()
	if after.Config == nil || after.Hardware == nil || len(after.Hardware.PciDevice) != len(before.Hardware.PciDevice) ||
		after.Runtime.ConnectionState != types.HostSystemConnectionStateConnected {
		t.Fatalf("connected again: config %v, hardware %v, connection state %q; want them as before",
			after.Config != nil, after.Hardware != nil, after.Runtime.ConnectionState)
	}
}

// TestDisconnectedHostRefusesPassthroughChanges: a change of a disconnected
// host's passthrough or SR-IOV fails with HostNotConnected.
func TestDisconnectedHostRefusesPassthroughChanges(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	name := l.HostNames()[0]
	var h mo.HostSystem
	retrieve(t, l.c, hostRef(l.Lab, 0), []string{"configManager.pciPassthruSystem"}, &h)
	change := func() error {
		_, err := methods.UpdatePassthruConfig(ctx, l.c.Client, &types.UpdatePassthruConfig{This: *h.ConfigManager.PciPassthruSystem,
			Config: []types.BaseHostPciPassthruConfig{&types.HostPciPassthruConfig{Id: "0000:af:00.0", PassthruEnabled: true}}})
		return err
	}
	if err := l.SetHostConnected(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	wantFault(t, "a passthrough change of a disconnected host", change(), &types.HostNotConnected{})
	if err := l.SetHostConnected(ctx, name, true); err != nil {
		t.Fatal(err)
	}
	if err := change(); err != nil {
		t.Fatalf("connected again: %v", err)
	}
}
