package vcsimlab

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// TestSetVMAccessible: an inaccessible VM reads with no configuration and
// the connection state saying why, and gets its configuration back as it
// was.
func TestSetVMAccessible(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	name := l.VMNames()[0]
	read := func() mo.VirtualMachine {
		var vm mo.VirtualMachine
		retrieve(t, l.c, vmRef(l.Lab, name), []string{"name", "config", "runtime.connectionState"}, &vm)
		return vm
	}
	before := read()
	if before.Config == nil {
		t.Fatal("the VM has no configuration to begin with")
	}
	if err := l.SetVMAccessible(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	if vm := read(); vm.Config != nil || vm.Runtime.ConnectionState != types.VirtualMachineConnectionStateInaccessible || vm.Name != name {
		t.Fatalf("inaccessible VM reads as name %q, config %v, connection state %q; want its name, no config, inaccessible",
			vm.Name, vm.Config != nil, vm.Runtime.ConnectionState)
	}
	if err := l.SetVMAccessible(ctx, name, false); err == nil {
		t.Error("making an inaccessible VM inaccessible again: no error")
	}
	if err := l.SetVMAccessible(ctx, name, true); err != nil {
		t.Fatal(err)
	}
	after := read()
	if after.Config == nil || after.Config.Uuid != before.Config.Uuid || len(after.Config.Hardware.Device) != len(before.Config.Hardware.Device) ||
		after.Runtime.ConnectionState != types.VirtualMachineConnectionStateConnected {
		t.Fatalf(
			"accessible again: config %v, connection state %q; want the configuration as before, connected",
			after.Config != nil,
			after.Runtime.ConnectionState,
		)
	}
}
