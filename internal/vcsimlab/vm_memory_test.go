package vcsimlab

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A VM locked to its maximum reports all its memory reserved, after the
// lock and after a change of memory size; unlocking keeps the reservation,
// and the allocation's shares survive.
func TestMemoryLockedToMaxReservesAllMemory(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l)
	vm := object.NewVirtualMachine(c.Client, vmRef(l, l.VMNames()[0]))
	reconfigure := func(spec types.VirtualMachineConfigSpec) {
		t.Helper()
		task, err := vm.Reconfigure(ctx, spec)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func() mo.VirtualMachine {
		t.Helper()
		var v mo.VirtualMachine
		retrieve(t, c, vm.Reference(), []string{"config.hardware.memoryMB", "config.memoryAllocation"}, &v)
		return v
	}
	before := read()

	reconfigure(types.VirtualMachineConfigSpec{MemoryReservationLockedToMax: types.NewBool(true)})
	v := read()
	if r := v.Config.MemoryAllocation.Reservation; r == nil || *r != int64(v.Config.Hardware.MemoryMB) {
		t.Fatalf("locked: reservation %v, want the memory size %d", r, v.Config.Hardware.MemoryMB)
	}
	if before.Config.MemoryAllocation.Shares != nil && v.Config.MemoryAllocation.Shares == nil {
		t.Fatal("locking the reservation dropped the allocation's shares")
	}

	reconfigure(types.VirtualMachineConfigSpec{MemoryMB: int64(v.Config.Hardware.MemoryMB) * 2})
	v = read()
	if r := v.Config.MemoryAllocation.Reservation; r == nil || *r != int64(v.Config.Hardware.MemoryMB) {
		t.Fatalf("locked, memory doubled: reservation %v, want %d", r, v.Config.Hardware.MemoryMB)
	}

	reconfigure(types.VirtualMachineConfigSpec{MemoryReservationLockedToMax: types.NewBool(false)})
	if r := read().Config.MemoryAllocation.Reservation; r == nil || *r != int64(v.Config.Hardware.MemoryMB) {
		t.Fatalf("unlocked: reservation %v, want it kept at %d", r, v.Config.Hardware.MemoryMB)
	}
}
