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
