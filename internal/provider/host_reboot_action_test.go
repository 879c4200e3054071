package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/types"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// The host reboot action through terraform apply -invoke (Terraform 1.14):
// a host whose SR-IOV change waits for a reboot goes through maintenance
// mode and comes back with it active, the steps shown as they happen; with
// nothing pending it does nothing and says so.
func TestAccHostReboot_invoke(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots a host")
	ctx := context.Background()
	host := lab.HostNames()[0]
	acctest.Must(t, lab.SetHostSRIOV(ctx, host, ibPF, 4))
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + fmt.Sprintf(`
action "vspherehpc_host_reboot" "esx" {
  config {
    host_system_id = %q
  }
}
`, lab.HostID(host))})
	out := d.run("apply", "-invoke=action.vspherehpc_host_reboot.esx", "-auto-approve")
	for _, step := range []string{"0000:86:00.0 wait for a reboot", "entering maintenance mode", "rebooting", "leaving maintenance mode",
		"is back and out of maintenance mode"} {
		if !strings.Contains(out, step) {
			t.Errorf("the action's output lacks %q:\n%s", step, out)
		}
	}
	if err := rebootWindows(lab, host)(nil); err != nil {
		t.Error(err)
	}
	if err := sriovIs(lab, host, ibPF, 4)(nil); err != nil {
		t.Error(err)
	}
	h, err := labClient(lab).HostPassthrough(ctx, lab.HostID(host))
	acctest.Must(t, err)
	if d := h.Device(ibPF); d == nil || d.SRIOV == nil || !d.SRIOV.Active || d.SRIOV.VFs != 4 {
		t.Errorf("SR-IOV of %s after the reboot: %+v, want active with 4 virtual functions", ibPF, d)
	}
	out = d.run("apply", "-invoke=action.vspherehpc_host_reboot.esx", "-auto-approve")
	if !acctest.Wording("has no passthrough, SR-IOV or graphics change waiting for a reboot: not rebooted").MatchString(out) ||
		len(lab.MaintenanceWindows()) != 1 {
		t.Errorf("with nothing pending the action must do nothing and say so; windows %+v:\n%s", lab.MaintenanceWindows(), out)
	}
}

// The host reboot action is checked at plan: a host that does not exist is
// an error before anything runs; running VMs that would keep the host from
// maintenance mode are a warning (the apply may move them first), and the
// invoke refuses them.
func TestAccHostReboot_checkedAtPlan(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "passes a GPU through and powers a VM on")
	ctx := context.Background()
	host := lab.HostNames()[0]
	var vm string
	for _, n := range lab.VMNames() {
		if lab.VMHostName(n) == host {
			vm = n
			break
		}
	}
	action := func(hostID string) map[string]string {
		return map[string]string{"main.tf": acctest.RequiredProviders + fmt.Sprintf(`
action "vspherehpc_host_reboot" "esx" {
  config {
    host_system_id = %q
    force          = true
  }
}
`, hostID)}
	}
	d := newTFDir(t, lab, action("host-9999"))
	if out, err := d.try("plan", "-invoke=action.vspherehpc_host_reboot.esx"); err == nil ||
		!acctest.Wording("no host has id host-9999").MatchString(out) {
		t.Errorf("a reboot of a host that does not exist planned (%v):\n%s", err, out)
	}
	acctest.Must(t, lab.AttachGPU(ctx, vm, lab.GPUs()[0]))
	acctest.Must(t, lab.PowerOnVM(ctx, vm))
	d.write(action(lab.HostID(host)))
	out := d.run("plan", "-invoke=action.vspherehpc_host_reboot.esx")
	if !acctest.Wording("Host cannot enter maintenance mode now").MatchString(out) || !strings.Contains(out, vm) {
		t.Errorf("the plan does not warn of %s, which keeps %s from maintenance mode:\n%s", vm, host, out)
	}
	if out, err := d.try("apply", "-invoke=action.vspherehpc_host_reboot.esx", "-auto-approve"); err == nil ||
		!acctest.Wording("Host cannot enter maintenance mode").MatchString(out) {
		t.Errorf("the reboot was not refused (%v):\n%s", err, out)
	}
	if w := lab.MaintenanceWindows(); len(w) != 0 {
		t.Errorf("maintenance windows %+v, want none", w)
	}
}

// The reboot action from an action_trigger: a passthrough change without
// the opt-in triggers it after create, and the device is active once the
// apply is done.
func TestAccHostReboot_triggeredByAChange(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots a host")
	host := lab.HostNames()[0]
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + fmt.Sprintf(`
action "vspherehpc_host_reboot" "esx" {
  config {
    host_system_id = vspherehpc_host_pci_passthrough.a100.host_system_id
  }
}

resource "vspherehpc_host_pci_passthrough" "a100" {
  host_system_id = %q
  pci_ids        = [%q]
  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.vspherehpc_host_reboot.esx]
    }
  }
}
`, lab.HostID(host), a100)})
	d.run("apply", "-auto-approve")
	if err := rebootWindows(lab, host)(nil); err != nil {
		t.Error(err)
	}
	if err := passthroughActive(lab, host, a100, true)(nil); err != nil {
		t.Error(err)
	}
}

// rebootTriggered is a passthrough resource for a100 on host whose change
// triggers the reboot action on events with on_failure, and a dependent
// standing for what needs the device active (a VM's GPU setup).
func rebootTriggered(lab *vcsimlab.Lab, host, events, onFailure string) string {
	return acctest.RequiredProviders + fmt.Sprintf(`
action "vspherehpc_host_reboot" "esx" {
  config {
    host_system_id = %[1]q
  }
}

resource "vspherehpc_host_pci_passthrough" "a100" {
  host_system_id = %[1]q
  pci_ids        = [%[2]q]
  lifecycle {
    action_trigger {
      events     = [%[3]s]
      actions    = [action.vspherehpc_host_reboot.esx]
      on_failure = %[4]s
    }
  }
}

resource "terraform_data" "gpu_node" {
  input = vspherehpc_host_pci_passthrough.a100.id
}
`, lab.HostID(host), a100, events, onFailure)
}

// A reboot triggered after a passthrough change that fails, with on_failure
// = halt (Terraform 1.16): the apply stops there, the passthrough resource
// stays in state untainted (taint would replace it: passthrough off and on
// again, two more reboots), and what depends on it is not applied; invoking
// the action then reboots the host, and the next apply goes on.
func TestAccHostReboot_triggerHaltsOnFailure(t *testing.T) {
	t.Parallel()
	needsTerraform116(t)
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots a host")
	host := lab.HostNames()[0]
	d := newTFDir(t, lab, map[string]string{"main.tf": rebootTriggered(lab, host, "after_create, after_update", "halt")})
	lab.FailTaskOnce("RebootHost_Task", host, &types.HostConfigFault{})
	out, err := d.try("apply", "-auto-approve")
	if err == nil || !acctest.Wording("Cannot reboot host").MatchString(out) {
		t.Fatalf("the apply whose triggered reboot fails: %v, want it to fail on the reboot:\n%s", err, out)
	}
	if strings.Contains(d.run("state", "list"), "terraform_data.gpu_node") {
		t.Error("what depends on the passthrough resource was applied after its reboot failed")
	}
	if show := d.run("state", "show", "vspherehpc_host_pci_passthrough.a100"); strings.Contains(show, "tainted") ||
		!strings.Contains(show, "reboot_required") {
		t.Errorf("the passthrough resource after the failed reboot must be in state, untainted:\n%s", show)
	}
	if err := passthroughActive(lab, host, a100, false)(nil); err != nil {
		t.Error(err)
	}
	d.run("apply", "-invoke=action.vspherehpc_host_reboot.esx", "-auto-approve")
	if err := passthroughActive(lab, host, a100, true)(nil); err != nil {
		t.Error(err)
	}
	changes := d.plan()
	if len(changes) != 1 || changes[0].Address != "terraform_data.gpu_node" || !slices.Equal(changes[0].Actions, []string{"create"}) {
		t.Errorf("the plan after the invoked reboot: %v, want only terraform_data.gpu_node created", changes)
	}
	d.run("apply", "tfplan")
}

// The reboot action after a destroy (Terraform 1.16): passthrough turned off
// on a host that applies it at its next reboot is given back to the host by
// the reboot the destroy triggers, as a person would reboot it after
// removing the setting.
func TestAccHostReboot_afterDestroy(t *testing.T) {
	t.Parallel()
	needsTerraform116(t)
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots a host")
	host := lab.HostNames()[0]
	d := newTFDir(t, lab, map[string]string{"main.tf": rebootTriggered(lab, host, "after_create, after_destroy", "halt")})
	d.run("apply", "-auto-approve")
	if err := passthroughActive(lab, host, a100, true)(nil); err != nil {
		t.Fatal(err)
	}
	d.run("destroy", "-auto-approve")
	if err := passthroughActive(lab, host, a100, false)(nil); err != nil {
		t.Error(err)
	}
	if err := rebootWindows(lab, host, host)(nil); err != nil {
		t.Error(err)
	}
}
