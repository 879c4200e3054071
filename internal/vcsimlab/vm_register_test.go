package vcsimlab

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// registerProps are the properties a re-registered VM is compared on.
var registerProps = []string{"name", "config", "summary.config", "runtime.host", "resourcePool", "parent", "network"}

// unregisterAndRegister removes the VM from the inventory and registers its
// .vmx again into the same folder, pool and host with the client c, as an
// administrator does (govc vm.unregister, govc vm.register); name is the
// name asked for, "" for the .vmx's display name. It returns the new
// reference.
func unregisterAndRegister(t *testing.T, l *lab, ref types.ManagedObjectReference, name string) types.ManagedObjectReference {
	t.Helper()
	ctx := context.Background()
	var before mo.VirtualMachine
	retrieve(t, l.c, ref, []string{"parent", "resourcePool", "runtime.host", "config.files.vmPathName"}, &before)
	vm := object.NewVirtualMachine(l.c.Client, ref)
	if err := vm.Unregister(ctx); err != nil {
		t.Fatalf("unregister: %v", err)
	}
	folder := object.NewFolder(l.c.Client, *before.Parent)
	task, err := folder.RegisterVM(ctx, before.Config.Files.VmPathName, name, false,
		object.NewResourcePool(l.c.Client, *before.ResourcePool), object.NewHostSystem(l.c.Client, *before.Runtime.Host))
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	next, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		t.Fatalf("register: result %#v, want a VM reference", info.Result)
	}
	return next
}

// A VM unregistered and registered again from its .vmx comes back with the
// configuration the .vmx holds, under a new managed object id.
func TestRegisterVMKeepsTheVMXConfiguration(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	name := l.VMNames()[0]
	ref := vmRef(l.Lab, name)

	// Change what a .vmx keeps: firmware, extraConfig, memory reservation,
	// swap placement, a GPU.
	for _, err := range []error{
		l.SetVMFirmware(ctx, name, "efi"),
		l.SetVMExtraConfig(ctx, name, "pciPassthru.use64bitMMIO", "TRUE"),
		l.SetVMMemoryReservationLocked(ctx, name, true),
		l.adminReconfigureVM(ctx, name, types.VirtualMachineConfigSpec{SwapPlacement: "vmDirectory"}),
		l.AttachGPU(ctx, name, "0000:3b:00.0"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var before mo.VirtualMachine
	retrieve(t, l.c, ref, registerProps, &before)

	next := unregisterAndRegister(t, l, ref, "")
	if next == ref {
		t.Fatalf("registered again as %s, the old managed object id", next)
	}
	if err := tryRetrieve(l.c, ref, []string{"name"}, &mo.VirtualMachine{}); err == nil {
		t.Errorf("the old reference %s still answers", ref)
	}
	var after mo.VirtualMachine
	retrieve(t, l.c, next, registerProps, &after)

	if after.Name != before.Name {
		t.Errorf("name = %q, want the .vmx's display name %q", after.Name, before.Name)
	}
	b, a := before.Config, after.Config
	if a.Version != b.Version || a.Firmware != b.Firmware || a.Uuid != b.Uuid || a.InstanceUuid != b.InstanceUuid ||
		a.GuestId != b.GuestId || a.Hardware.NumCPU != b.Hardware.NumCPU || a.Hardware.MemoryMB != b.Hardware.MemoryMB {
		t.Errorf("config after = version %s firmware %s uuid %s instance %s guest %s cpu %d mem %d; want %s %s %s %s %s %d %d",
			a.Version, a.Firmware, a.Uuid, a.InstanceUuid, a.GuestId, a.Hardware.NumCPU, a.Hardware.MemoryMB,
			b.Version, b.Firmware, b.Uuid, b.InstanceUuid, b.GuestId, b.Hardware.NumCPU, b.Hardware.MemoryMB)
	}
	if a.MemoryReservationLockedToMax == nil || !*a.MemoryReservationLockedToMax {
		t.Error("memoryReservationLockedToMax lost")
	}
	if got := extraConfig(a); got["pciPassthru.use64bitMMIO"] != "TRUE" || !maps.Equal(got, extraConfig(b)) {
		t.Errorf("extraConfig = %v, want %v", got, extraConfig(b))
	}
	if a.SwapPlacement != "vmDirectory" {
		t.Errorf("swapPlacement = %q, want vmDirectory", a.SwapPlacement)
	}
	if !sameDevices(b.Hardware.Device, a.Hardware.Device) {
		t.Errorf("devices after = %v, want %v", deviceSummary(a.Hardware.Device), deviceSummary(b.Hardware.Device))
	}
	if after.Runtime.Host == nil || *after.Runtime.Host != *before.Runtime.Host || *after.ResourcePool != *before.ResourcePool ||
		*after.Parent != *before.Parent {
		t.Errorf(
			"placed on %v %v %v, want %v %v %v",
			after.Runtime.Host,
			after.ResourcePool,
			after.Parent,
			before.Runtime.Host,
			before.ResourcePool,
			before.Parent,
		)
	}
	if !slices.Equal(after.Network, before.Network) {
		t.Errorf("network = %v, want %v", after.Network, before.Network)
	}
	s := after.Summary.Config
	if s.HwVersion != b.Version || s.Uuid != b.Uuid || s.NumEthernetCards != before.Summary.Config.NumEthernetCards ||
		s.NumVirtualDisks != before.Summary.Config.NumVirtualDisks || s.MemorySizeMB != b.Hardware.MemoryMB || s.NumCpu != b.Hardware.NumCPU {
		t.Errorf("summary.config = %+v, want it to match the config", s)
	}

	// The VM is found by its BIOS UUID, and is the GPU's user on its host.
	found, err := object.NewSearchIndex(l.c.Client).FindByUuid(ctx, nil, b.Uuid, true, types.NewBool(false))
	if err != nil || found == nil || found.Reference() != next {
		t.Errorf("FindByUuid(%s) = %v, %v; want %s", b.Uuid, found, err, next)
	}
	var host mo.HostSystem
	retrieve(t, l.c, *after.Runtime.Host, []string{"config.graphicsInfo"}, &host)
	for _, g := range host.Config.GraphicsInfo {
		if g.PciId == "0000:3b:00.0" && !slices.Equal(g.Vm, []types.ManagedObjectReference{next}) {
			t.Errorf("graphicsInfo of 0000:3b:00.0 lists %v, want %s", g.Vm, next)
		}
	}
	var network mo.Network
	retrieve(t, l.c, before.Network[0], []string{"vm"}, &network)
	if slices.Contains(network.Vm, ref) || !slices.Contains(network.Vm, next) {
		t.Errorf("network %s lists %v, want %s and not %s", before.Network[0], network.Vm, next, ref)
	}

	// Still a working VM: vSphere's checks apply to it as to any other.
	vm := object.NewVirtualMachine(l.c.Client, next)
	if err := adminWait(ctx)(vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{Firmware: "bios"})); err != nil {
		t.Errorf("reconfigure after registration: %v", err)
	}
}

// The name given to RegisterVM_Task wins over the .vmx's display name, and
// a .vmx that is registered is refused.
func TestRegisterVMNameAndAlreadyRegistered(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	name := l.VMNames()[1]
	ref := vmRef(l.Lab, name)
	next := unregisterAndRegister(t, l, ref, "renamed")
	var after mo.VirtualMachine
	retrieve(t, l.c, next, []string{"name", "config.name", "config.files.vmPathName", "parent", "resourcePool"}, &after)
	if after.Name != "renamed" {
		t.Errorf("name = %q, want renamed", after.Name)
	}
	folder := object.NewFolder(l.c.Client, *after.Parent)
	task, err := folder.RegisterVM(ctx, after.Config.Files.VmPathName, "", false, object.NewResourcePool(l.c.Client, *after.ResourcePool), nil)
	if err == nil {
		_, err = task.WaitForResult(ctx, nil)
	}
	wantFault(t, "registering a registered .vmx", err, &types.AlreadyExists{})
}

// A copy of a registered VM's .vmx registered beside it keeps the BIOS UUID
// (until its first power-on asks whether it was moved or copied) but gets
// a new instance UUID: vCenter keeps instance UUIDs unique.
func TestRegisterVMInstanceUUIDConflict(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	name := l.VMNames()[0]
	orig := unregisterAndRegister(t, l, vmRef(l.Lab, name), "")
	var before mo.VirtualMachine
	retrieve(t, l.c, orig, []string{"config.uuid", "config.instanceUuid", "config.files.vmPathName", "parent", "resourcePool"}, &before)

	dc := object.NewDatacenter(l.c.Client, ref("Datacenter", l.DatacenterID()))
	const copyPath = "[LocalDS_0] copy/copy.vmx"
	fm := object.NewFileManager(l.c.Client)
	if err := fm.MakeDirectory(ctx, "[LocalDS_0] copy", dc, true); err != nil {
		t.Fatal(err)
	}
	if err := adminWait(ctx)(fm.CopyDatastoreFile(ctx, before.Config.Files.VmPathName, dc, copyPath, dc, false)); err != nil {
		t.Fatal(err)
	}
	task, err := object.NewFolder(l.c.Client, *before.Parent).
		RegisterVM(ctx, copyPath, "copy", false, object.NewResourcePool(l.c.Client, *before.ResourcePool), nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cp mo.VirtualMachine
	retrieve(t, l.c, info.Result.(types.ManagedObjectReference), []string{"config.uuid", "config.instanceUuid"}, &cp)
	if cp.Config.Uuid != before.Config.Uuid {
		t.Errorf("copy's BIOS UUID = %s, want the .vmx's %s", cp.Config.Uuid, before.Config.Uuid)
	}
	if cp.Config.InstanceUuid == "" || cp.Config.InstanceUuid == before.Config.InstanceUuid {
		t.Errorf("copy's instance UUID = %q, want a new one beside %s", cp.Config.InstanceUuid, before.Config.InstanceUuid)
	}
	var again mo.VirtualMachine
	retrieve(t, l.c, orig, []string{"config.instanceUuid"}, &again)
	if again.Config.InstanceUuid != before.Config.InstanceUuid {
		t.Errorf("the original's instance UUID changed to %s", again.Config.InstanceUuid)
	}
}

func extraConfig(c *types.VirtualMachineConfigInfo) map[string]string {
	out := map[string]string{}
	for _, o := range c.ExtraConfig {
		if v := o.GetOptionValue(); v != nil {
			if s, ok := v.Value.(string); ok {
				out[v.Key] = s
			}
		}
	}
	return out
}

// deviceSummary names each device by key and type.
func deviceSummary(devices []types.BaseVirtualDevice) []string {
	var out []string
	for _, d := range devices {
		out = append(out, object.VirtualDeviceList{d}.Name(d)+"/"+object.VirtualDeviceList{d}.TypeName(d))
	}
	return out
}

// sameDevices compares two device lists by key, type, backing and MAC.
func sameDevices(a, b []types.BaseVirtualDevice) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		da, db := a[i].GetVirtualDevice(), b[i].GetVirtualDevice()
		if da.Key != db.Key || object.VirtualDeviceList(a).TypeName(a[i]) != object.VirtualDeviceList(b).TypeName(b[i]) {
			return false
		}
		if ea, ok := a[i].(types.BaseVirtualEthernetCard); ok {
			eb, ok := b[i].(types.BaseVirtualEthernetCard)
			if !ok || ea.GetVirtualEthernetCard().MacAddress != eb.GetVirtualEthernetCard().MacAddress {
				return false
			}
		}
		if pa, ok := a[i].(*types.VirtualPCIPassthrough); ok {
			pb, ok := b[i].(*types.VirtualPCIPassthrough)
			ba, _ := pa.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo)
			bb, _ := pb.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo)
			if !ok || ba == nil || bb == nil || ba.Id != bb.Id {
				return false
			}
		}
	}
	return true
}
