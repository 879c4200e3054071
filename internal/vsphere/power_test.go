package vsphere

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A guest shutdown vCenter refuses at once (no VMware Tools in the guest) is
// said as vCenter says it, not as a shutdown that ran out of time, and the
// VM is not powered off hard unless that is allowed.
func TestSetVMPowerShutdownRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
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
