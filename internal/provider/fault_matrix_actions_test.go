package provider

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// faultAction is an action invoked under faults: before gives it something
// to do (and runs before each invoke), settled says what is wrong with the
// lab after an invoke that succeeded ("" when nothing).
type faultAction struct {
	address string
	config  string
	before  func()
	settled func() string
}

// runActionFaults invokes an action cleanly, then with each of its calls
// lost in turn; after each, an invoke without a fault must succeed and
// leave the lab settled.
func runActionFaults(t *testing.T, opts vcsimlab.Options, prepare func(*vcsimlab.Lab) faultAction) {
	t.Helper()
	if os.Getenv("VSPHEREHPC_TEST_FAULTS") == "" {
		t.Skip("the fault matrix runs in make test-faults (VSPHEREHPC_TEST_FAULTS=1): each subject takes minutes, too long for make test")
	}
	needsTerraform114(t)
	lab := startLab(t, opts)
	simulatedOnly(t, lab, "loses connections to the lab")
	a := prepare(lab)
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + a.config})
	invoke := func(c *faultedCall, answered bool) (string, bool) {
		a.before()
		lab.ResetCalls()
		disarm := func() bool { return false }
		if c != nil {
			disarm = lab.LoseConnection(c.method, c.occurrence, answered)
		}
		out, err := d.try("apply", "-invoke=action."+a.address, "-auto-approve")
		lost := disarm()
		if err != nil {
			return firstError(out), lost
		}
		return "ok", lost
	}
	if said, _ := invoke(nil, false); said != "ok" {
		t.Fatalf("the clean invoke of %s: %s", a.address, said)
	}
	log := lab.CallLog()
	if problem := a.settled(); problem != "" {
		t.Fatalf("the clean invoke of %s: %s", a.address, problem)
	}
	var rows []faultRow
	for _, c := range faultCalls(log, false) {
		for _, answered := range []bool{false, true} {
			if answered && !changes(c.method) {
				continue
			}
			row := faultRow{op: "invoke", call: c, answered: answered}
			row.said, row.lost = invoke(&row.call, answered)
			if said, _ := invoke(nil, false); said != "ok" {
				row.problem = "the next invoke failed: " + said
			} else {
				row.problem = a.settled()
			}
			rows = append(rows, row)
			if row.problem != "" {
				t.Errorf("invoke of %s with %s lost (answered: %t): it said %q; then %s", a.address, c, answered, row.said, row.problem)
			}
		}
	}
	reportFaultMatrix(t, "action."+a.address, rows)
}

// The host reboot action, with a change waiting for the reboot: each call
// of maintenance mode, the reboot, the wait and leaving maintenance mode
// lost in turn. Whatever the invoke said, the next one takes the host
// through and out of maintenance mode with the change active.
func TestAccFaults_hostRebootAction(t *testing.T) {
	t.Parallel()
	runActionFaults(t, vcsimlab.Options{HostsNeedReboot: true}, func(lab *vcsimlab.Lab) faultAction {
		ctx := context.Background()
		host := lab.HostNames()[0]
		vfs := 2
		return faultAction{
			address: "vspherehpc_host_reboot.esx",
			config: fmt.Sprintf(`
action "vspherehpc_host_reboot" "esx" {
  config {
    host_system_id = %q
  }
}
`, lab.HostID(host)),
			before: func() {
				// A change waiting for the reboot: 2, then 4, then 2... (one a
				// faulted invoke left waiting is asked again).
				h, err := labClient(lab).HostPassthrough(ctx, lab.HostID(host))
				acctest.Must(t, err)
				if d := h.Device(ibPF); d != nil && d.SRIOV != nil && d.SRIOV.Active && d.SRIOV.VFs == vfs {
					vfs = 6 - vfs
				}
				acctest.Must(t, lab.SetHostSRIOV(ctx, host, ibPF, vfs))
			},
			settled: func() string {
				for _, w := range lab.MaintenanceWindows() {
					if w.End.IsZero() {
						return "host " + w.Host + " is still in maintenance mode"
					}
				}
				h, err := labClient(lab).HostPassthrough(ctx, lab.HostID(host))
				if err != nil {
					return err.Error()
				}
				if d := h.Device(ibPF); d == nil || d.SRIOV == nil || !d.SRIOV.Active || d.SRIOV.VFs != vfs {
					return fmt.Sprintf("SR-IOV of %s: %+v, want %d virtual functions active", ibPF, d, vfs)
				}
				return ""
			},
		}
	})
}

// The VM power action: each call of powering a VM on, and of powering it
// off, lost in turn; the next invoke gets the VM there.
func TestAccFaults_vmPowerAction(t *testing.T) {
	t.Parallel()
	for _, power := range []vsphere.PowerState{vsphere.PoweredOn, vsphere.PoweredOff} {
		t.Run(string(power), func(t *testing.T) {
			t.Parallel()
			runActionFaults(t, vcsimlab.Options{}, func(lab *vcsimlab.Lab) faultAction {
				ctx := context.Background()
				vm := lab.VMNames()[0]
				if power == vsphere.PoweredOff {
					acctest.Must(t, lab.PowerOnVM(ctx, vm)) // the lab as found: on, and off is asked
				}
				return faultAction{
					address: "vspherehpc_vm_power.p",
					config: fmt.Sprintf(`
action "vspherehpc_vm_power" "p" {
  config {
    virtual_machine_id = %q
    power              = %q
    power_off_allowed  = true
    shutdown_timeout   = "2s"
  }
}
`, lab.VMUUID(vm), power),
					before: func() {
						if vmPowerState(t, lab, vm) == power {
							if power == vsphere.PoweredOn {
								acctest.Must(t, lab.PowerOffVM(ctx, vm))
							} else {
								acctest.Must(t, lab.PowerOnVM(ctx, vm))
							}
						}
					},
					settled: func() string {
						if got := vmPowerState(t, lab, vm); got != power {
							return fmt.Sprintf("virtual machine %s is %s, want %s", vm, got, power)
						}
						return ""
					},
				}
			})
		})
	}
}
