package vcsimlab

import (
	"context"
	"strings"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/types"
)

// Passthrough turned off for a GPU a powered-off VM has is accepted; the
// VM keeps the device and its power-on fails, naming the device, until
// passthrough is on again.
func TestPowerOnWithPassthroughTurnedOff(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	vm := l.VMNames()[0]
	gpu := l.GPUs()[0]
	if err := l.AttachGPU(ctx, vm, gpu); err != nil {
		t.Fatal(err)
	}
	setPassthrough := func(on bool) {
		t.Helper()
		ps := types.ManagedObjectReference{Type: "HostPciPassthruSystem", Value: "pcipassthrusystem-" + l.HostID(l.VMHostName(vm))}
		if _, err := methods.UpdatePassthruConfig(ctx, l.Client().Client, &types.UpdatePassthruConfig{This: ps, Config: []types.BaseHostPciPassthruConfig{
			&types.HostPciPassthruConfig{Id: gpu, PassthruEnabled: on},
		}}); err != nil {
			t.Fatalf("passthrough %v for %s, which %s has: %v", on, gpu, vm, err)
		}
	}
	powerOn := func() error {
		task, err := object.NewVirtualMachine(l.Client().Client, vmRef(l, vm)).PowerOn(ctx)
		if err != nil {
			return err
		}
		return task.Wait(ctx)
	}

	setPassthrough(false)
	err := powerOn()
	if !fault.Is(err, &types.GenericVmConfigFault{}) || !strings.Contains(err.Error(), "Device "+gpu+" is not a passthrough device") {
		t.Fatalf("power-on with passthrough off for its GPU: %v, want the DevicePowerOn failure naming %s", err, gpu)
	}
	if s, err := l.VMSettings(ctx, vm); err != nil || len(s.GPUs) != 1 || s.GPUs[0] != gpu {
		t.Fatalf("%s's passthrough devices after the failed power-on: %v (%v), want %s", vm, s.GPUs, err, gpu)
	}
	setPassthrough(true)
	if err := powerOn(); err != nil {
		t.Fatalf("power-on with passthrough on again: %v", err)
	}
}
