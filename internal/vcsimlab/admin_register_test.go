package vcsimlab

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestReregisterVM(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	vm := l.VMNames()[0]
	hosts := l.HostNames()
	if err := l.CreateSwitch(ctx, "rdma", hosts[0], "vmnic4"); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts[1:] {
		if err := l.AddSwitchHost(ctx, "rdma", h, "vmnic4"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AddPortGroup(ctx, "rdma", "pvrdma", 8); err != nil {
		t.Fatal(err)
	}
	uuid, key := adminSwitchConfig(t, l, "rdma").Uuid, adminPortGroupConfig(t, l, "pvrdma").Key
	for _, err := range []error{
		l.AddPVRDMAAdapter(ctx, vm, uuid, key),
		l.SetVMFirmware(ctx, vm, "efi"),
		l.SetVMExtraConfig(ctx, vm, "pciPassthru.64bitMMIOSizeGB", "512"),
		l.SetVMMemoryReservationLocked(ctx, vm, true),
		l.AttachGPU(ctx, vm, "0000:5e:00.0"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	id, biosUUID, host := l.VMID(vm), l.VMUUID(vm), l.VMHostName(vm)
	settings, err := l.VMSettings(ctx, vm)
	if err != nil {
		t.Fatal(err)
	}
	var before mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, vm), []string{"config.hardware.device", "config.version"}, &before)

	if err := l.ReregisterVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if l.VMID(vm) == id || l.VMID(vm) == "" {
		t.Fatalf("VMID after = %q, want a new id beside %s", l.VMID(vm), id)
	}
	if l.VMUUID(vm) != biosUUID || l.VMHostName(vm) != host {
		t.Errorf("after: UUID %s host %s, want %s %s", l.VMUUID(vm), l.VMHostName(vm), biosUUID, host)
	}
	after, err := l.VMSettings(ctx, vm)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, settings) {
		t.Errorf("settings after = %+v, want %+v", after, settings)
	}
	var v mo.VirtualMachine
	retrieve(
		t,
		l.Client(),
		vmRef(l, vm),
		[]string{"name", "config.uuid", "config.hardware.device", "config.version", "config.memoryReservationLockedToMax"},
		&v,
	)
	if v.Name != vm || v.Config.Uuid != biosUUID || v.Config.Version != before.Config.Version ||
		v.Config.MemoryReservationLockedToMax == nil || !*v.Config.MemoryReservationLockedToMax {
		t.Errorf("after: name %s uuid %s version %s locked %v", v.Name, v.Config.Uuid, v.Config.Version, v.Config.MemoryReservationLockedToMax)
	}
	if !sameDevices(before.Config.Hardware.Device, v.Config.Hardware.Device) {
		t.Errorf("devices after = %v, want %v", deviceSummary(v.Config.Hardware.Device), deviceSummary(before.Config.Hardware.Device))
	}
	i := slices.IndexFunc(v.Config.Hardware.Device, func(d types.BaseVirtualDevice) bool {
		_, ok := d.(*types.VirtualVmxnet3Vrdma)
		return ok
	})
	if i < 0 || v.Config.Hardware.Device[i].(*types.VirtualVmxnet3Vrdma).DeviceProtocol != "rocev2" {
		t.Fatalf("the PVRDMA adapter is gone or changed: %v", deviceSummary(v.Config.Hardware.Device))
	}
	var pg mo.DistributedVirtualPortgroup
	retrieve(t, l.Client(), types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: key}, []string{"vm"}, &pg)
	if !slices.Equal(pg.Vm, []types.ManagedObjectReference{vmRef(l, vm)}) {
		t.Errorf("port group %s lists %v, want only %s", key, pg.Vm, vmRef(l, vm))
	}

	// A running VM cannot leave the inventory, as vSphere says.
	if err := l.PowerOnVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	err = l.ReregisterVM(ctx, vm)
	wantFault(t, "re-registering a running VM", err, &types.InvalidPowerState{})
	if err := l.ReregisterVM(ctx, "no-such-vm"); err == nil {
		t.Error("re-registering an unknown VM: no error")
	}
}
