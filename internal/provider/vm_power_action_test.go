package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// powerActions is one vspherehpc_vm_power action per name, on the VM vmID:
// "on", "off", "restart" as their names say, and "off_hard" with
// power_off_allowed.
func powerActions(vmID string) map[string]string {
	actions := ""
	for _, a := range []struct{ name, power, allowed string }{
		{"on", "on", "false"}, {"off", "off", "false"}, {"restart", "restart", "true"}, {"off_hard", "off", "true"},
	} {
		actions += fmt.Sprintf(`
action "vspherehpc_vm_power" %q {
  config {
    virtual_machine_id = %q
    power              = %q
    power_off_allowed  = %s
    shutdown_timeout   = "2s"
  }
}
`, a.name, vmID, a.power, a.allowed)
	}
	return map[string]string{"main.tf": acctest.RequiredProviders + actions}
}

// vmPowerState is the lab VM's power state, as the service layer reads it.
func vmPowerState(t *testing.T, lab *vcsimlab.Lab, vm string) vsphere.PowerState {
	t.Helper()
	v, err := labClient(lab).VM(context.Background(), lab.VMUUID(vm))
	acctest.Must(t, err)
	return v.PowerState
}

// powerCalls is how many power operations the lab saw since its last reset.
func powerCalls(lab *vcsimlab.Lab) int {
	c := lab.Calls()
	return c["PowerOnVM_Task"] + c["PowerOffVM_Task"] + c["ShutdownGuest"] + c["SuspendVM_Task"] + c["ResetVM_Task"] + c["RebootGuest"]
}

// The VM power action: on, restart, off, each through -invoke; a VM
// already on is left alone.
func TestAccVMPower_invoke(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	d := newTFDir(t, lab, powerActions(lab.VMUUID(vm)))
	if out := d.run("apply", "-invoke=action.vspherehpc_vm_power.on", "-auto-approve"); !strings.Contains(out, "powering "+vm+" on") ||
		vmPowerState(t, lab, vm) != vsphere.PoweredOn {
		t.Errorf("power on: %s\n%s", vmPowerState(t, lab, vm), out)
	}
	if out := d.run("apply", "-invoke=action.vspherehpc_vm_power.on", "-auto-approve"); !strings.Contains(out, vm+" is already on") {
		t.Errorf("power on of a running VM:\n%s", out)
	}
	if out := d.run("apply", "-invoke=action.vspherehpc_vm_power.restart", "-auto-approve"); !strings.Contains(out, "powering "+vm+" on") ||
		vmPowerState(t, lab, vm) != vsphere.PoweredOn {
		t.Errorf("restart: %s\n%s", vmPowerState(t, lab, vm), out)
	}
	if out := d.run("apply", "-invoke=action.vspherehpc_vm_power.off_hard", "-auto-approve"); vmPowerState(t, lab, vm) != vsphere.PoweredOff {
		t.Errorf("power off: %s\n%s", vmPowerState(t, lab, vm), out)
	}
	if out := d.run("apply", "-invoke=action.vspherehpc_vm_power.off", "-auto-approve"); !strings.Contains(out, vm+" is already off") {
		t.Errorf("power off of a VM that is off:\n%s", out)
	}
}

// The VM the action names is checked at plan: a VM that does not exist,
// and an id of another kind of object (a host's, a datacenter's, a
// cluster's, a name), are refused before anything runs, naming the argument,
// what the id is and what a VM's id looks like.
func TestAccVMPower_checkedAtPlan(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	host := lab.HostID(lab.HostNames()[0])
	vmIDs := "a virtual machine's id is its BIOS UUID (8-4-4-4-12 hex digits, such as 4223b7a1-5b2c-8d3e-1f40-9c1e2a3b4c5d) " +
		"or its managed object id (such as vm-42)"
	for _, c := range []struct{ id, summary, detail string }{
		{"4200aaaa-0000-0000-0000-000000000000", "No such virtual machine", "no virtual machine has UUID 4200aaaa-0000-0000-0000-000000000000"},
		{"vm-99999", "No such virtual machine", "no virtual machine has id vm-99999"},
		{host, "Not a virtual machine id", fmt.Sprintf("%q is a host's managed object id, not a virtual machine's: %s", host, vmIDs)},
		{lab.DatacenterID(), "Not a virtual machine id",
			fmt.Sprintf("%q is a datacenter's managed object id, not a virtual machine's", lab.DatacenterID())},
		{"domain-c7", "Not a virtual machine id", `"domain-c7" is a cluster's managed object id, not a virtual machine's`},
		{"not-a-vm", "Not a virtual machine id", `"not-a-vm" is neither a virtual machine's BIOS UUID (8-4-4-4-12 hex digits, such as ` +
			"4223b7a1-5b2c-8d3e-1f40-9c1e2a3b4c5d) nor its managed object id (such as vm-42): it looks like a name; use " +
			"vsphere_virtual_machine's id, or data.vspherehpc_virtual_machine to look one up by name"},
	} {
		d := newTFDir(t, lab, powerActions(c.id))
		lab.ResetCalls()
		out, err := d.try("plan", "-invoke=action.vspherehpc_vm_power.on")
		if err == nil || !acctest.Wording(c.summary).MatchString(out) || !acctest.Wording(c.detail).MatchString(out) ||
			!strings.Contains(out, "virtual_machine_id") {
			t.Errorf("a power action on %q planned (%v), want %q: %q naming virtual_machine_id:\n%s", c.id, err, c.summary, c.detail, out)
		}
		if n := powerCalls(lab); n != 0 {
			t.Errorf("planning a power action on %q made %d power calls", c.id, n)
		}
	}
}

// A restart of a VM that is off leaves it off and says so, at plan and
// when invoked: a restart restarts a running guest, it never powers a VM on.
func TestAccVMPower_restartOfAnOffVM(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	d := newTFDir(t, lab, powerActions(lab.VMUUID(vm)))
	if out := d.run("plan", "-invoke=action.vspherehpc_vm_power.restart"); !acctest.Wording("Virtual machine is off").MatchString(out) ||
		!acctest.Wording(`a restart leaves it off. power = "on" powers it on.`).MatchString(out) {
		t.Errorf("the plan of a restart of %s, which is off, does not warn:\n%s", vm, out)
	}
	lab.ResetCalls()
	out := d.run("apply", "-invoke=action.vspherehpc_vm_power.restart", "-auto-approve")
	if !acctest.Wording(vm + " is off: not restarted, left off").MatchString(out) {
		t.Errorf("the restart of %s, which is off, does not say it left it off:\n%s", vm, out)
	}
	if s, n := vmPowerState(t, lab, vm), powerCalls(lab); s != vsphere.PoweredOff || n != 0 {
		t.Errorf("after a restart of %s, which was off: %s, %d power calls; want off, none", vm, s, n)
	}
}

// Suspended is a power state of its own: a restart leaves a suspended VM
// suspended and says so; off refuses it without power_off_allowed (its guest
// cannot shut down, and powering it off discards what its suspend kept),
// and with it powers it off, saying so; on resumes it, saying so. None says
// a suspended VM "is off".
func TestAccVMPower_suspended(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	vm := lab.VMNames()[0]
	suspend := func() {
		t.Helper()
		acctest.Must(t, lab.PowerOnVM(ctx, vm))
		acctest.Must(t, lab.SuspendVM(ctx, vm))
		lab.ResetCalls()
	}
	d := newTFDir(t, lab, powerActions(lab.VMUUID(vm)))
	suspend()

	if out := d.run("plan", "-invoke=action.vspherehpc_vm_power.restart"); !acctest.Wording("Virtual machine is suspended").MatchString(out) ||
		!acctest.Wording(`a restart leaves it suspended. power = "on" resumes it`).MatchString(out) {
		t.Errorf("the plan of a restart of %s, which is suspended, does not warn:\n%s", vm, out)
	}
	out := d.run("apply", "-invoke=action.vspherehpc_vm_power.restart", "-auto-approve")
	if !acctest.Wording(vm+" is suspended: not restarted, left suspended").MatchString(out) || strings.Contains(out, "is off") {
		t.Errorf("the restart of %s, which is suspended, does not say it left it suspended:\n%s", vm, out)
	}
	if s, n := vmPowerState(t, lab, vm), powerCalls(lab); s != vsphere.Suspended || n != 0 {
		t.Errorf("after a restart of %s, which was suspended: %s, %d power calls; want suspended, none", vm, s, n)
	}

	if out := d.run("plan", "-invoke=action.vspherehpc_vm_power.off"); !acctest.Wording("Virtual machine is suspended").MatchString(out) ||
		!acctest.Wording("unless power_off_allowed = true").MatchString(out) {
		t.Errorf("the plan of an off of %s, which is suspended, does not warn:\n%s", vm, out)
	}
	out, err := d.try("apply", "-invoke=action.vspherehpc_vm_power.off", "-auto-approve")
	if err == nil ||
		!acctest.Wording("is suspended: its guest cannot shut down, and powering it off discards the state its suspend kept").MatchString(out) ||
		strings.Contains(out, "is off") {
		t.Errorf("an off of %s, which is suspended, without power_off_allowed was not refused (%v):\n%s", vm, err, out)
	}
	if s, n := vmPowerState(t, lab, vm), powerCalls(lab); s != vsphere.Suspended || n != 0 {
		t.Errorf("after a refused off of %s: %s, %d power calls; want suspended, none", vm, s, n)
	}

	out = d.run("apply", "-invoke=action.vspherehpc_vm_power.off_hard", "-auto-approve")
	if !acctest.Wording("powering "+vm+" off; it was suspended, and the state its suspend kept is discarded").MatchString(out) ||
		vmPowerState(t, lab, vm) != vsphere.PoweredOff {
		t.Errorf("off with power_off_allowed of %s, which is suspended: %s\n%s", vm, vmPowerState(t, lab, vm), out)
	}
	if c := lab.Calls(); c["PowerOffVM_Task"] != 1 || c["ShutdownGuest"] != 0 {
		t.Errorf("off of a suspended VM made %v; want one PowerOffVM_Task and no guest shutdown", c)
	}

	suspend()
	out = d.run("apply", "-invoke=action.vspherehpc_vm_power.on", "-auto-approve")
	if !acctest.Wording("resuming "+vm+", which is suspended").MatchString(out) || vmPowerState(t, lab, vm) != vsphere.PoweredOn {
		t.Errorf("on of %s, which is suspended: %s\n%s", vm, vmPowerState(t, lab, vm), out)
	}
}
