package vsphere

import (
	"context"
	"errors"
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
	err := labClient(lab).SetVMPower(ctx, lab.VMID(name), PowerActionOff, time.Minute, false, func(string) {})
	var e *Error
	if !errors.Is(err, ErrGuestDidNotShutDown) || !errors.As(err, &e) ||
		!strings.Contains(e.Message, "the guest of "+name+" could not be shut down: vCenter refused the request (ToolsUnavailable)") {
		t.Fatalf("%v; want the guest's shutdown refused, as vCenter said it", err)
	}
	if calls := lab.Calls()["PowerOffVM_Task"]; calls != 0 {
		t.Errorf("%d hard power-offs; want none without hardOffAllowed", calls)
	}
}
