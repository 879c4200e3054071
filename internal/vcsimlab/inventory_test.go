package vcsimlab

import (
	"context"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestInventory(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	c := l.Client()

	var about = c.ServiceContent.About
	if about.Version != "8.0.3" || about.ApiVersion != "8.0.3.0" {
		t.Errorf("about = %s/%s, want 8.0.3/8.0.3.0", about.Version, about.ApiVersion)
	}
	if l.DatacenterName() != "DC0" || !strings.HasPrefix(l.DatacenterID(), "datacenter-") {
		t.Errorf("datacenter = %q %q", l.DatacenterName(), l.DatacenterID())
	}
	var dc mo.Datacenter
	retrieve(t, c, types.ManagedObjectReference{Type: "Datacenter", Value: l.DatacenterID()}, []string{"name", "hostFolder"}, &dc)
	if dc.Name != l.DatacenterName() {
		t.Errorf("datacenter name = %q, want %q", dc.Name, l.DatacenterName())
	}

	hosts := l.HostNames()
	if len(hosts) != 3 || l.ClusterName() == "" {
		t.Fatalf("hosts = %v in cluster %q, want 3", hosts, l.ClusterName())
	}
	for _, name := range hosts {
		var h mo.HostSystem
		retrieve(t, c, types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(name)}, []string{"name", "parent"}, &h)
		var parent mo.ClusterComputeResource
		retrieve(t, c, *h.Parent, []string{"name"}, &parent)
		if h.Name != name || parent.Name != l.ClusterName() {
			t.Errorf("host %s: name %q in %q", name, h.Name, parent.Name)
		}
	}
	var hostFolder mo.Folder
	retrieve(t, c, dc.HostFolder, []string{"childEntity"}, &hostFolder)
	if len(hostFolder.ChildEntity) != 1 || hostFolder.ChildEntity[0].Type != "ClusterComputeResource" {
		t.Errorf("host folder holds %v, want only the cluster", hostFolder.ChildEntity)
	}

	uuids := map[string]bool{}
	for _, name := range l.VMNames() {
		var vm mo.VirtualMachine
		retrieve(t, c, vmRef(l, name), []string{"name", "config", "runtime", "guest"}, &vm)
		if vm.Name != name || vm.Config.Uuid != l.VMUUID(name) || uuids[vm.Config.Uuid] {
			t.Errorf("VM %s: name %q uuid %q (lab says %q), want distinct uuids", name, vm.Name, vm.Config.Uuid, l.VMUUID(name))
		}
		uuids[vm.Config.Uuid] = true
		// Code that walks the whole registry, as FindByUuid does, must cope
		// with the lab's own registered objects.
		found, err := object.NewSearchIndex(c.Client).FindByUuid(context.Background(), nil, vm.Config.Uuid, true, nil)
		if err != nil || found == nil || found.Reference() != vmRef(l, name) {
			t.Errorf("VM %s: FindByUuid = %v, %v", name, found, err)
		}
		if h := l.VMHostName(name); l.HostID(h) != vm.Runtime.Host.Value {
			t.Errorf("VM %s: VMHostName = %q, but it runs on %v", name, h, vm.Runtime.Host)
		}
		if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
			t.Errorf("VM %s is %s, want powered off", name, vm.Runtime.PowerState)
		}
		nics := 0
		for _, d := range vm.Config.Hardware.Device {
			if _, ok := d.(*types.VirtualVmxnet3); ok {
				nics++
			}
		}
		wantVersion, wantNICs, wantFamily := "vmx-19", 1, ""
		switch name {
		case "bare-node":
			wantNICs = 0
		case "legacy-node":
			wantVersion = "vmx-11"
		case "installed-node":
			wantFamily = "linuxGuest"
		}
		if vm.Config.Version != wantVersion || nics != wantNICs || vm.Config.Firmware != "bios" {
			t.Errorf("VM %s: %s with %d vmxnet3, firmware %s; want %s with %d, bios", name, vm.Config.Version, nics, vm.Config.Firmware, wantVersion, wantNICs)
		}
		if vm.Config.Hardware.MemoryMB != 8192 || vm.Config.Hardware.NumCPU != 4 {
			t.Errorf("VM %s: %d MB, %d vCPU", name, vm.Config.Hardware.MemoryMB, vm.Config.Hardware.NumCPU)
		}
		if vm.Guest.GuestFamily != wantFamily || (wantFamily != "") != (vm.Guest.GuestFullName != "") {
			t.Errorf("VM %s: guest family %q full name %q, want family %q", name, vm.Guest.GuestFamily, vm.Guest.GuestFullName, wantFamily)
		}
	}
}
