package vsphere

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A reboot is one maintenance mode, one reboot and one exit, whatever the
// waits; hosts of one cluster rebooted at once take turns.
func TestRebootHostCallsAndTurns(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 200 * time.Millisecond})
	c := labClient(lab)
	ctx := context.Background()
	hosts := lab.HostNames()[:2]
	if _, err := c.PlanHostReboot(ctx, lab.HostID(hosts[0])); err != nil { // logs in: not the reboot's cost
		t.Fatal(err)
	}
	lab.ResetCalls()
	var wg sync.WaitGroup
	errs := make([]error, len(hosts))
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.RebootHost(ctx, lab.HostID(h), time.Minute, func(string) {})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	calls := lab.Calls()
	t.Logf("calls for two reboots of %s: %v", lab.ClusterName(), calls)
	for method, want := range map[string]int{"EnterMaintenanceMode_Task": 2, "RebootHost_Task": 2, "ExitMaintenanceMode_Task": 2} {
		if calls[method] != want {
			t.Errorf("%s: %d calls for two reboots, want %d (all calls: %v)", method, calls[method], want, calls)
		}
	}
	windows := lab.MaintenanceWindows()
	if len(windows) != 2 || windows[1].Start.Before(windows[0].End) {
		t.Errorf("two hosts of one cluster in maintenance mode at once: %+v", windows)
	}
}

// A host with a running VM that cannot move is named, with why; a host that
// applies changes at once needs no reboot.
func TestPlanHostReboot(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	c := labClient(lab)
	ctx := context.Background()
	vm := lab.VMNames()[0]
	if err := lab.AttachGPU(ctx, vm, lab.GPUs()[0]); err != nil {
		t.Fatal(err)
	}
	if err := lab.PowerOnVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	r, err := c.PlanHostReboot(ctx, lab.HostID(lab.VMHostName(vm)))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Needed || len(r.Stuck) != 1 || r.Stuck[0].Name != vm || r.Why == "" {
		t.Errorf("reboot of %s's host: %+v, want needed, %s stuck", vm, r, vm)
	}
	immediate := startLab(t, vcsimlab.Options{})
	r, err = labClient(immediate).PlanHostReboot(ctx, immediate.HostID(immediate.HostNames()[0]))
	if err != nil || r.Needed {
		t.Errorf("a host that applies changes at once: %+v, %v; want no reboot needed", r, err)
	}
}
