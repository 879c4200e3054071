package vcsimlab

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestAttachGPU(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	vmName := l.VMNames()[0]
	if err := l.AttachGPU(ctx, vmName, "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, vmName), []string{"config.hardware.device"}, &vm)
	attached := false
	for _, d := range vm.Config.Hardware.Device {
		if pt, ok := d.(*types.VirtualPCIPassthrough); ok {
			b, _ := pt.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo)
			attached = attached || (b != nil && b.Id == "0000:3b:00.0")
		}
	}
	if !attached {
		t.Fatal("the GPU is not attached")
	}
	// The A100 is not passthrough-enabled: vSphere refuses it.
	if err := l.AttachGPU(ctx, vmName, "0000:af:00.0"); err == nil {
		t.Fatal("attaching a GPU that is not passthrough-active succeeded")
	}
}

func TestAdminHostChanges(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{Hosts: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	ctx := context.Background()
	name := l.HostNames()[0]
	if err := l.SetHostOption(ctx, name, "Net.PVRDMAVmknic", "vmk1"); err != nil {
		t.Fatal(err)
	}
	if err := l.SetRuleset(ctx, name, "pvrdma", true); err != nil {
		t.Fatal(err)
	}
	var h mo.HostSystem
	retrieve(t, l.Client(), types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(name)}, []string{"config.option", "config.firewall"}, &h)
	vmknic, enabled := "", false
	for _, o := range h.Config.Option {
		if v := o.GetOptionValue(); v.Key == "Net.PVRDMAVmknic" {
			vmknic, _ = v.Value.(string)
		}
	}
	for _, rs := range h.Config.Firewall.Ruleset {
		if rs.Key == "pvrdma" {
			enabled = rs.Enabled
		}
	}
	if vmknic != "vmk1" || !enabled {
		t.Fatalf("after the admin changes: vmknic %q, ruleset enabled %v", vmknic, enabled)
	}
	if err := l.SetHostOption(ctx, name, "Net.NoSuchOption", "1"); err == nil {
		t.Fatal("an unknown option was accepted")
	}

	empty := l.HostWithoutVMs()
	if empty == "" {
		t.Fatal("with 8 hosts and 5 VMs, some host runs no VM")
	}
	if err := l.RemoveHost(ctx, empty); err != nil {
		t.Fatal(err)
	}
	err = l.Client().RetrieveOne(ctx, types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(empty)}, []string{"name"}, &h)
	if err == nil {
		t.Fatal("the removed host can still be read")
	}
}

func TestSetSwitchMTU(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("rdma")
	before := l.configVersion(s)
	if err := l.SetSwitchMTU(context.Background(), "rdma", 1500); err != nil {
		t.Fatal(err)
	}
	got := l.dvs(s).Config.(*types.VMwareDVSConfigInfo)
	if got.MaxMtu != 1500 || got.ConfigVersion == before {
		t.Fatalf("after SetSwitchMTU: MTU %d, config version %s (was %s); want 1500 and a new version", got.MaxMtu, got.ConfigVersion, before)
	}
	if err := l.SetSwitchMTU(context.Background(), "no-such-switch", 1500); err == nil {
		t.Fatal("an unknown switch: no error")
	}
}
