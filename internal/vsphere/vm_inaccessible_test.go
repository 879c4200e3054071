package vsphere

import (
	"context"
	"errors"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// TestInaccessibleVM: every read, plan and change (a new adapter's too:
// its change reads the VM as these do) of a VM vCenter returns
// no configuration for fails with ErrVMInaccessible, naming the VM, and
// none panics: the configuration is unset for an inaccessible, invalid or
// orphaned VM (vSphere API reference, VirtualMachineConnectionState).
func TestInaccessibleVM(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	name := lab.VMNames()[0]
	// By managed object id, as a resource's private state has it: vCenter
	// finds a VM by its UUID in its configuration, which it has none of.
	id := lab.VMID(name)
	if err := lab.SetVMAccessible(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	c := labClient(lab)
	for what, call := range map[string]func() error{
		"reading a PVRDMA adapter":   func() error { _, err := c.PVRDMANIC(ctx, id, 4000); return err },
		"removing a PVRDMA adapter":  func() error { return c.DeletePVRDMANIC(ctx, id, 4000, true) },
		"reading an SR-IOV adapter":  func() error { _, err := c.SRIOVNIC(ctx, id, 4000); return err },
		"removing an SR-IOV adapter": func() error { return c.DeleteSRIOVNIC(ctx, id, 4000, true) },
		"planning an SR-IOV adapter": func() error {
			_, err := c.PlanSRIOVNIC(ctx, SRIOVNICChange{VMID: id, PortGroupID: "dvportgroup-1"})
			return err
		},
		"reading a GPU setup":  func() error { _, err := c.GPUMMIO(ctx, id); return err },
		"planning a GPU setup": func() error { _, err := c.PlanGPUMMIO(ctx, GPUMMIOChange{VMID: id}); return err },
		"setting up GPUs":      func() error { return c.ApplyGPUMMIO(ctx, id, GPUMMIOSpec{MMIOSizeGB: 256, PowerOffAllowed: true}) },
		"removing GPUs":        func() error { return c.RemoveGPUMMIO(ctx, id, nil, true) },
	} {
		err := call()
		var e *Error
		if !errors.Is(err, ErrVMInaccessible) || !errors.As(err, &e) || e.Object != ObjectVirtualMachine {
			t.Errorf("%s: %v; want ErrVMInaccessible naming the VM", what, err)
		}
	}
}
