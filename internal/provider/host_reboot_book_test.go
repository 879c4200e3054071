package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// bookWithReboot is an apply walk's book in which a host resource planned a
// reboot of host-1 and, after it, a VM resource planned a change of vm-1
// there; it returns the reboot.
func bookWithReboot(t *testing.T) (*claimBook, *plannedReboot) {
	t.Helper()
	b := newClaimBook()
	var diags diag.Diagnostics
	hr := &vsphere.HostReboot{HostID: "host-1", HostName: "esx-1"}
	if !b.rebootBesideVMChanges(passthroughType, []string{a100}, hr, types.StringValue("1m"), false, &diags) || diags.HasError() {
		t.Fatalf("the reboot was not recorded: %v", diags)
	}
	if before := b.vmChangePlanned(plannedVMChange{token: "vm", vmID: "vm-1", VMOnHost: vsphere.VMOnHost{VM: "hpc-0 (vm-1)", HostID: "host-1"}}); len(
		before,
	) != 1 {
		t.Fatalf("the VM change sees reboots %v, want the one planned before it", before)
	}
	return b, b.plannedRebootOf(rebootKey(passthroughType, "host-1", []string{a100}))
}

// A VM change waits for the reboot planned before it: it goes on once the
// host resource's apply ended well, and fails naming it when it failed.
func TestAwaitReboots_endOfTheHostApply(t *testing.T) {
	for _, failed := range []bool{false, true} {
		b, _ := bookWithReboot(t)
		end := b.applyingReboot(passthroughType, "host-1", []string{a100})
		var hostDiags diag.Diagnostics
		if failed {
			hostDiags.AddError("Cannot reboot host host-1", "the host did not come back.")
		}
		waited := make(chan bool)
		var diags diag.Diagnostics
		go func() { waited <- b.awaitReboots(context.Background(), "VM-1", &diags) }()
		end(hostDiags)
		if ok := <-waited; ok == failed {
			t.Errorf("failed %v: the VM change may go on: %v, diagnostics %v", failed, ok, diags)
		}
		if failed && (len(diags) != 1 || !strings.Contains(diags[0].Detail(), "Virtual machine VM-1 was not changed: its change waits for the "+
			"host reboot planned by the vspherehpc_host_pci_passthrough of host esx-1 (host-1), and that apply failed: Cannot reboot host "+
			"host-1: the host did not come back.")) {
			t.Errorf("diagnostics %v", diags)
		}
	}
}

// The wait ends with the apply's cancellation, and, when the host
// resource's apply never starts (Terraform did not apply it), after its
// reboot_timeout.
func TestAwaitReboots_bounded(t *testing.T) {
	b, r := bookWithReboot(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var diags diag.Diagnostics
	if b.awaitReboots(ctx, "vm-1", &diags) || !strings.Contains(diags[0].Detail(), "the apply was interrupted while its change waited for") {
		t.Errorf("cancelled: diagnostics %v", diags)
	}
	r.bound = time.Millisecond // no host reboots in less than a minute; the test need not wait one
	diags = nil
	if b.awaitReboots(context.Background(), "vm-1", &diags) || !strings.Contains(diags[0].Detail(), "whose apply has not started after 1ms "+
		"(its reboot_timeout): Terraform did not apply that resource") {
		t.Errorf("never applied: diagnostics %v", diags)
	}
	diags = nil
	if !b.awaitReboots(context.Background(), "vm-2", &diags) || diags.HasError() {
		t.Errorf("a VM without a change recorded waits for nothing: %v", diags)
	}
}

// A reboot planned after a VM change on its host is not recorded (the
// plan refuses it), so no VM change waits for it.
func TestRebootBesideVMChanges_afterIsNotRecorded(t *testing.T) {
	b := newClaimBook()
	b.vmChangePlanned(plannedVMChange{token: "vm", vmID: "vm-1", owner: "the vspherehpc_vm_gpu_mmio of virtual machine hpc-0 (vm-1)",
		VMOnHost: vsphere.VMOnHost{VM: "hpc-0 (vm-1)", HostID: "host-1"}})
	var diags diag.Diagnostics
	hr := &vsphere.HostReboot{HostID: "host-1", HostName: "esx-1"}
	if b.rebootBesideVMChanges(sriovType, []string{ibPF}, hr, types.StringValue("30m"), false, &diags) || !diags.HasError() {
		t.Fatalf("recorded, diagnostics %v", diags)
	}
	if len(b.rebootsBefore("vm-1")) != 0 || b.deviceInputs().Rebooting["host-1"] {
		t.Error("a refused reboot is in the book")
	}
	// A destroy's reboot is not refused for it (its VM does not run with
	// passthrough devices), and turns no device on.
	diags = nil
	if !b.rebootBesideVMChanges(sriovType, []string{ibPF}, hr, types.StringValue("30m"), true, &diags) || b.deviceInputs().Rebooting["host-1"] {
		t.Errorf("a destroy's reboot: diagnostics %v, rebooting %v", diags, b.deviceInputs().Rebooting)
	}
}

// A host resource planned twice in a row (a replacement's two halves) is
// one reboot: a VM change planned between the two waits for it, and the
// second is not refused for that change.
func TestRebootBesideVMChanges_plannedTwice(t *testing.T) {
	b, first := bookWithReboot(t)
	var diags diag.Diagnostics
	hr := &vsphere.HostReboot{HostID: "host-1", HostName: "esx-1"}
	if !b.rebootBesideVMChanges(passthroughType, []string{a100}, hr, types.StringValue("1m"), false, &diags) || diags.HasError() {
		t.Fatalf("the second plan was refused: %v", diags)
	}
	if got := b.plannedRebootOf(rebootKey(passthroughType, "host-1", []string{a100})); got != first || len(b.rebootsBefore("vm-1")) != 1 {
		t.Errorf("the second plan made another reboot: %p, want %p", got, first)
	}
}
