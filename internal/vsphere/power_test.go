package vsphere

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A guest shutdown vCenter refuses at once (no VMware Tools in the guest) is
// said as vCenter says it, not as a shutdown that ran out of time, and the
// VM is not powered off hard unless that is allowed.
func TestSetVMPowerShutdownRefused(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	name := lab.VMNames()[0]
	if err := lab.PowerOnVM(ctx, name); err != nil {
		t.Fatal(err)
	}
	lab.FailCall("ShutdownGuest", name, &types.ToolsUnavailable{}, 1)
	_, err := labClient(lab).SetVMPower(ctx, lab.VMID(name), PowerActionOff, time.Minute, false, func(string) {})
	var e *Error
	if !errors.Is(err, ErrGuestDidNotShutDown) || !errors.As(err, &e) ||
		!strings.Contains(e.Message, "the guest of "+name+" could not be shut down: vCenter refused the request (ToolsUnavailable)") {
		t.Fatalf("%v; want the guest's shutdown refused, as vCenter said it", err)
	}
	if calls := lab.Calls()["PowerOffVM_Task"]; calls != 0 {
		t.Errorf("%d hard power-offs; want none without hardOffAllowed", calls)
	}
}

// A power call lost on its way, or whose answer is lost, and a lost wait
// for the guest's shutdown, still get the VM where it was asked: a lost
// shutdown is waited for (it may have started; a hard power-off then found
// the VM off already and failed with InvalidPowerState), a lost power-on or
// power-off is checked against the VM's power state, and the wait is
// waited again. Only a power-on lost on its way, which vCenter never ran,
// fails (the next invoke does it).
func TestSetVMPowerCallLost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		action     PowerAction
		method     string
		occurrence int
		answered   bool
		fails      bool
	}{
		{PowerActionOff, "ShutdownGuest", 1, false, false}, {PowerActionOff, "ShutdownGuest", 1, true, false},
		{PowerActionOff, "CreateFilter", 1, false, false}, {PowerActionOff, "WaitForUpdatesEx", 1, false, false},
		{PowerActionOn, "PowerOnVM_Task", 1, false, true}, {PowerActionOn, "PowerOnVM_Task", 1, true, false},
	} {
		t.Run(fmt.Sprintf("%s %s#%d answered=%t", c.action, c.method, c.occurrence, c.answered), func(t *testing.T) {
			t.Parallel()
			lab := acctest.StartLab(t, vcsimlab.Options{})
			ctx := context.Background()
			name := lab.VMNames()[0]
			want := PoweredOn
			if c.action == PowerActionOff {
				want = PoweredOff
				if err := lab.PowerOnVM(ctx, name); err != nil {
					t.Fatal(err)
				}
			}
			cl := labClient(lab)
			disarm := lab.LoseConnection(c.method, c.occurrence, c.answered)
			_, err := cl.SetVMPower(ctx, lab.VMID(name), c.action, 2*time.Second, true, func(string) {})
			if !disarm() {
				t.Fatalf("no %s #%d call", c.method, c.occurrence)
			}
			vm, verr := cl.VM(ctx, lab.VMID(name))
			if verr != nil {
				t.Fatal(verr)
			}
			switch {
			case c.fails && (err == nil || vm.PowerState == want):
				t.Errorf("power %s: %v, the VM is %s; want an error, the VM not %s", c.action, err, vm.PowerState, want)
			case !c.fails && (err != nil || vm.PowerState != want):
				t.Errorf("power %s: %v, the VM is %s; want it %s, without an error", c.action, err, vm.PowerState, want)
			}
		})
	}
}

// What a power action does not do, by the VM's power state: a restart never
// starts a VM that is off or suspended, and an off of a suspended VM needs
// leave to power it off hard; everything else runs.
func TestPlanPowerAction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		state   PowerState
		action  PowerAction
		allowed bool
		want    Finding
	}{
		{PoweredOn, PowerActionOn, false, nil},
		{PoweredOn, PowerActionOff, false, nil},
		{PoweredOn, PowerActionRestart, false, nil},
		{PoweredOff, PowerActionOn, false, nil},
		{PoweredOff, PowerActionOff, false, nil},
		{PoweredOff, PowerActionRestart, true, &NotRestarted{VM: "vm", State: PoweredOff}},
		{Suspended, PowerActionOn, false, nil},
		{Suspended, PowerActionOff, false, &NotShutDownSuspended{VM: "vm"}},
		{Suspended, PowerActionOff, true, nil},
		{Suspended, PowerActionRestart, true, &NotRestarted{VM: "vm", State: Suspended}},
	} {
		if got := PlanPowerAction("vm", c.state, c.action, c.allowed); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s of a VM %s (power off allowed: %t): %#v, want %#v", c.action, c.state, c.allowed, got, c.want)
		}
	}
}
