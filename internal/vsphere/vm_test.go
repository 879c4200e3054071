package vsphere

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestVM(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	name := lab.VMNames()[0]

	byUUID, err := c.VM(ctx, lab.VMUUID(name))
	if err != nil {
		t.Fatal(err)
	}
	byMOID, err := c.VM(ctx, lab.VMID(name))
	if err != nil {
		t.Fatal(err)
	}
	byName, err := c.VMByName(ctx, lab.DatacenterID(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range []*VM{byUUID, byMOID, byName} {
		if vm.ID != lab.VMUUID(name) || vm.MOID != lab.VMID(name) || vm.Name != name {
			t.Fatalf("vm identity = %+v", vm)
		}
	}
	if byUUID.HardwareVersion < 13 || byUUID.PowerState != PoweredOff || byUUID.HostID == "" {
		t.Errorf("vm = %+v", byUUID)
	}
	if len(byUUID.NetworkAdapters) != 1 || byUUID.NetworkAdapters[0].Type != "vmxnet3" || byUUID.NetworkAdapters[0].NetworkID == "" {
		t.Errorf("adapters = %+v, want one vmxnet3 on a network", byUUID.NetworkAdapters)
	}

	legacy, err := c.VMByName(ctx, lab.DatacenterID(), "legacy-node")
	if err != nil {
		t.Fatal(err)
	}
	if legacy.HardwareVersion != 11 {
		t.Errorf("legacy-node hardware version = %d, want 11", legacy.HardwareVersion)
	}

	if _, err := c.VM(ctx, "42000000-0000-0000-0000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing UUID error = %v, want ErrNotFound", err)
	}
	if _, err := c.VMByName(ctx, "DC0", name); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `no datacenter has id "DC0"`) {
		t.Fatalf("datacenter name as id: error = %v", err)
	}
	if _, err := c.VM(ctx, "vm-99999"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no virtual machine has id vm-99999") {
		t.Fatalf("missing moid error = %v, want ErrNotFound", err)
	}
	if _, err := c.VMByName(ctx, lab.DatacenterID(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing name error = %v, want ErrNotFound", err)
	}
}

// Within one run (one Terraform command, one client) a VM found by UUID is
// remembered; once it is re-registered the remembered id is stale, and the
// service layer searches the UUID again (vsphere.Client's refound). The old
// managed object id names no VM any more. (The command's prefetch is kept
// out of the way: a refresh read may report the VMs as the command first
// found them, see prefetch.go.)
func TestReregisteredVMFoundAgainInOneRun(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	client := labClient(lab)
	client.prefetch.limit = 1
	before, err := client.VM(ctx, uuid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.GPUMMIO(ctx, uuid); err != nil {
		t.Fatal(err)
	}
	if err := lab.ReregisterVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	after, err := client.VM(ctx, uuid)
	if err != nil {
		t.Fatalf("reading %s by UUID after its re-registration: %v", vm, err)
	}
	if after.MOID == before.MOID || after.MOID != lab.VMID(vm) || after.ID != before.ID || after.HardwareVersion != before.HardwareVersion {
		t.Errorf("after: %s %s vmx-%d, want %s %s vmx-%d", after.MOID, after.ID, after.HardwareVersion, lab.VMID(vm), before.ID, before.HardwareVersion)
	}
	// The properties reads (readVMProps) find it again too.
	if err := lab.ReregisterVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if got, err := client.GPUMMIO(ctx, uuid); err != nil || got.VM.MOID != lab.VMID(vm) {
		t.Errorf("GPUMMIO by UUID after a second re-registration: %+v, %v; want %s", got, err, lab.VMID(vm))
	}
	if _, err := client.VM(ctx, before.MOID); !errors.Is(err, ErrNotFound) {
		t.Errorf("reading the old managed object id %s: %v, want ErrNotFound", before.MOID, err)
	}
	if got, err := client.VMUUID(ctx, lab.VMID(vm)); err != nil || got != uuid {
		t.Errorf("VMUUID(%s) = %s, %v; want %s", lab.VMID(vm), got, err, uuid)
	}
}
