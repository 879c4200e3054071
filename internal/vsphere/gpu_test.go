package vsphere

import (
	"context"
	"errors"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestGPUMMIOLifecycle(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vmID := lab.VMUUID("hpc-node-0")

	before, err := c.GPUMMIO(ctx, vmID)
	if err != nil {
		t.Fatal(err)
	}
	if before.Firmware != "bios" || before.Use64bitMMIO || len(before.GPUs) != 0 || before.ExtraConfig[mmio.SizeGBKey] != "" {
		t.Fatalf("fresh VM = %+v", before)
	}

	spec := GPUMMIOSpec{GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}, {PCIID: "0000:5e:00.0"}}, MMIOSizeGB: 512}
	if err := c.ApplyGPUMMIO(ctx, vmID, spec); err != nil {
		t.Fatal(err)
	}
	got, err := c.GPUMMIO(ctx, vmID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Firmware != "efi" || !got.Use64bitMMIO || got.MMIOSizeGB != 512 || !got.MemoryLocked || len(got.GPUs) != 2 ||
		got.GPUs[0].PCIID != "0000:3b:00.0" || got.GPUs[0].VendorID != "10de" || got.GPUs[0].DeviceID != "2330" {
		t.Fatalf("after apply = %+v", got)
	}

	// One static GPU less, one dynamic one more: only the difference changes.
	spec.GPUs = []GPURequest{{PCIID: "0000:5e:00.0"}, {VendorID: "10de", DeviceID: "2330"}}
	spec.MMIOSizeGB = 1024
	if err := c.ApplyGPUMMIO(ctx, vmID, spec); err != nil {
		t.Fatal(err)
	}
	got, _ = c.GPUMMIO(ctx, vmID)
	static, dynamic := 0, 0
	for _, g := range got.GPUs {
		switch {
		case g.Dynamic && g.VendorID == "10de" && g.DeviceID == "2330":
			dynamic++
		case !g.Dynamic && g.PCIID == "0000:5e:00.0":
			static++
		}
	}
	if len(got.GPUs) != 2 || static != 1 || dynamic != 1 || got.MMIOSizeGB != 1024 {
		t.Fatalf("after change = %+v", got)
	}

	if err := c.RemoveGPUMMIO(ctx, vmID, before.ExtraConfig, false); err != nil {
		t.Fatal(err)
	}
	got, _ = c.GPUMMIO(ctx, vmID)
	if len(got.GPUs) != 0 || got.ExtraConfig[mmio.SizeGBKey] != "" || got.ExtraConfig[mmio.Use64bitMMIOKey] != "" || got.Firmware != "efi" {
		t.Fatalf("after remove = %+v; want no GPUs, keys restored, firmware still EFI", got)
	}
}

func TestGPUMMIOOnARunningVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vmID := lab.VMUUID("hpc-node-1")
	if err := lab.AttachGPU(ctx, "hpc-node-1", "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	task, err := vmObject(lab, "hpc-node-1").PowerOn(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	err = c.ApplyGPUMMIO(ctx, vmID, GPUMMIOSpec{GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}}, MMIOSizeGB: 256})
	if !errors.Is(err, ErrInvalidState) {
		t.Fatalf("switching a running VM to EFI: %v, want a refusal", err)
	}
	plan, err := c.CheckGPUMMIO(ctx, vmID)
	if err != nil || plan.HostName == "" || len(plan.HostGPUs) != 3 || len(plan.HostGPUs[0].VMs) != 1 {
		t.Fatalf("plan = %+v, %v; want the host's GPUs with the user of 0000:3b:00.0", plan, err)
	}
}

func vmObject(lab *vcsimlab.Lab, name string) *object.VirtualMachine {
	return object.NewVirtualMachine(lab.Client().Client, types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(name)})
}
