package vsphere

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A reboot is one maintenance mode, one reboot and one exit, whatever the
// waits; hosts of one cluster rebooted at once take turns.
func TestRebootHostCallsAndTurns(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 200 * time.Millisecond})
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
			errs[i] = c.RebootHost(ctx, lab.HostID(h), time.Minute, nil, func(string) {})
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
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true})
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
	immediate := acctest.StartLab(t, vcsimlab.Options{})
	r, err = labClient(immediate).PlanHostReboot(ctx, immediate.HostID(immediate.HostNames()[0]))
	if err != nil || r.Needed {
		t.Errorf("a host that applies changes at once: %+v, %v; want no reboot needed", r, err)
	}
}

// The reboot's timeout starts at its turn: a host that waited longer than
// the timeout for another reboot of its cluster is still rebooted.
func TestRebootTimeoutStartsAtItsTurn(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	c := labClient(lab)
	ctx := context.Background()
	host, err := c.Host(ctx, lab.HostID(lab.HostNames()[0]))
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := c.reboots.lock(ctx, host.ClusterID) // another reboot of the cluster
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 5 * time.Second
	done := make(chan error, 1)
	go func() { done <- c.RebootHost(ctx, host.ID, timeout, nil, func(string) {}) }()
	time.Sleep(timeout + time.Second)
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("a reboot that waited %s for its turn: %v", timeout+time.Second, err)
	}
}

// A reboot that fails after the host entered maintenance mode takes it out
// again; one of a host an administrator put in maintenance mode leaves it
// there.
func TestRebootMaintenanceMode(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	c := labClient(lab)
	ctx := context.Background()
	failing, administered := lab.HostNames()[0], lab.HostNames()[1]
	lab.FailTaskOnce("RebootHost_Task", failing, &types.HostConfigFault{})
	if err := c.RebootHost(ctx, lab.HostID(failing), time.Minute, nil, func(string) {}); err == nil {
		t.Fatal("a reboot whose task failed succeeded")
	}
	refusing := lab.HostNames()[2]
	lab.FailTaskOnce("EnterMaintenanceMode_Task", refusing, &types.HostConfigFault{})
	err := c.RebootHost(ctx, lab.HostID(refusing), time.Minute, nil, func(string) {})
	if err == nil || strings.Contains(err.Error(), "still in maintenance mode") {
		t.Fatalf("a host that did not enter maintenance mode: %v; want the failure, not said to be in maintenance mode", err)
	}
	vc, err := c.vimClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	host := object.NewHostSystem(vc, types.ManagedObjectReference{Type: "HostSystem", Value: lab.HostID(administered)})
	task, err := host.EnterMaintenanceMode(ctx, 0, false, nil)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RebootHost(ctx, lab.HostID(administered), time.Minute, nil, func(string) {}); err != nil {
		t.Fatal(err)
	}
	for _, w := range lab.MaintenanceWindows() {
		switch {
		case w.Host == failing && w.End.IsZero():
			t.Errorf("host %s stays in maintenance mode after its reboot failed", failing)
		case w.Host == administered && !w.End.IsZero():
			t.Errorf("host %s, in maintenance mode before the reboot, was taken out of it", administered)
		}
	}
}

// The VMs that would keep a host from entering maintenance mode are checked
// again once its turn has come, since the plan checked: a VM with a GPU
// started since, or one whose DRS override is manual, fails the reboot
// before maintenance mode, naming the VM, rather than after the timeout.
// The plan's check counts a VM's DRS override as the lab's evacuation does,
// and no agent VM (vCLS), which vCenter stops for maintenance mode.
func TestRebootRefusedForVMsThatCannotMove(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	c := labClient(lab)
	ctx := context.Background()
	vms := lab.VMNames()
	gpuVM, manualVM := vms[0], vms[1]
	if lab.VMHostName(manualVM) == lab.VMHostName(gpuVM) {
		t.Fatalf("the lab's first two VMs share host %s", lab.VMHostName(gpuVM))
	}
	if err := lab.AttachGPU(ctx, gpuVM, lab.GPUs()[0]); err != nil {
		t.Fatal(err)
	}
	if err := lab.PowerOnVM(ctx, gpuVM); err != nil {
		t.Fatal(err)
	}
	if err := lab.SetVMDRSOverride(ctx, manualVM, true, types.DrsBehaviorManual); err != nil {
		t.Fatal(err)
	}
	if err := lab.PowerOnVM(ctx, manualVM); err != nil {
		t.Fatal(err)
	}
	lab.ResetCalls()
	for vm, why := range map[string]string{
		gpuVM:    "a VM with a PCI passthrough or SR-IOV device cannot be migrated",
		manualVM: "DRS moves no VM whose automation level is not fully automated",
	} {
		host := lab.VMHostName(vm)
		r, err := c.PlanHostReboot(ctx, lab.HostID(host))
		if err != nil || len(r.Stuck) != 1 || r.Stuck[0].Name != vm || !strings.Contains(r.Why, why) {
			t.Errorf("plan of a reboot of %s: %+v, %v; want %s stuck: %s", host, r, err, vm, why)
		}
		err = c.RebootHost(ctx, lab.HostID(host), time.Minute, nil, func(string) {})
		want := fmt.Sprintf("host %s was not rebooted: its running virtual machines %s would keep it from entering maintenance mode (%s",
			host, vm, why)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reboot of %s: %v; want %q", host, err, want)
		}
	}
	if n := lab.Calls()["EnterMaintenanceMode_Task"]; n != 0 {
		t.Errorf("%d EnterMaintenanceMode_Task calls, want none", n)
	}
	// An agent VM (vCLS), even excluded from DRS as it may be, holds
	// nothing up: vCenter stops it for maintenance mode.
	agent := vms[2]
	for _, step := range []func() error{
		func() error { return lab.MakeAgentVM(ctx, agent) },
		func() error { return lab.SetVMDRSOverride(ctx, agent, false, "") },
		func() error { return lab.PowerOnVM(ctx, agent) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if h := lab.VMHostName(agent); h != lab.VMHostName(gpuVM) && h != lab.VMHostName(manualVM) {
		if r, err := c.PlanHostReboot(ctx, lab.HostID(h)); err != nil || len(r.Stuck) != 0 {
			t.Errorf("plan of a reboot of %s with agent VM %s running: %+v, %v; want nothing stuck", h, agent, r, err)
		}
		if err := c.RebootHost(ctx, lab.HostID(h), time.Minute, nil, func(string) {}); err != nil {
			t.Errorf("reboot of %s with agent VM %s running: %v", h, agent, err)
		}
		if vm, err := c.VM(ForChange(ctx), lab.VMUUID(agent)); err != nil || vm.PowerState != PoweredOn {
			t.Errorf("agent VM %s after its host's reboot: %+v, %v; want on again", agent, vm, err)
		}
	} else {
		t.Fatalf("the lab's third VM %s shares a host with the first two", agent)
	}
	if err := lab.SetVMDRSOverride(ctx, manualVM, true, types.DrsBehaviorFullyAutomated); err != nil {
		t.Fatal(err)
	}
	if err := c.RebootHost(ctx, lab.HostID(lab.VMHostName(manualVM)), time.Minute, nil, func(string) {}); err != nil {
		t.Errorf("reboot once the override is fully automated: %v", err)
	}
}

// Two changes on one host waiting for its reboot reboot it once: the second
// finds the first's reboot has made its devices active.
func TestRebootOncePerHostChange(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	c := labClient(lab)
	ctx := context.Background()
	host := lab.HostID(lab.HostNames()[0])
	gpus := lab.GPUs()[:2]
	for _, gpu := range gpus {
		if err := c.SetHostPassthrough(ctx, host, map[string]bool{gpu: false}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if pending, err := c.PendingDeviceChanges(ctx, host); err != nil || len(pending) != 2 {
		t.Fatalf("pending changes %v (%v), want both GPUs'", pending, err)
	}
	for _, gpu := range gpus {
		if err := c.RebootHost(ctx, host, time.Minute, []string{gpu}, func(string) {}); err != nil {
			t.Fatal(err)
		}
	}
	if calls := lab.Calls(); calls["RebootHost_Task"] != 1 {
		t.Fatalf("calls = %v, want one reboot for both changes", calls)
	}
}

// enterWithStuckVM starts a reboot of vm's host whose maintenance mode
// cannot finish: at "entering maintenance mode", after the reboot's checks,
// vm's DRS override turns manual (as when DRS is slow to move it), and then
// during runs. The VM is made movable again once the reboot has returned.
func enterWithStuckVM(t *testing.T, lab *vcsimlab.Lab, ctx context.Context, timeout time.Duration, during func()) (host string, err error) {
	t.Helper()
	bg := context.Background()
	vm := lab.VMNames()[1]
	host = lab.VMHostName(vm)
	if err := lab.PowerOnVM(bg, vm); err != nil {
		t.Fatal(err)
	}
	progress := func(step string) {
		if step == "entering maintenance mode" {
			if err := lab.SetVMDRSOverride(bg, vm, true, types.DrsBehaviorManual); err != nil {
				t.Error(err)
			}
			during()
		}
	}
	err = labClient(lab).RebootHost(ctx, lab.HostID(host), timeout, nil, progress)
	if err := lab.SetVMDRSOverride(bg, vm, true, types.DrsBehaviorFullyAutomated); err != nil {
		t.Fatal(err)
	}
	return host, err
}

// notInMaintenance fails the test if the host entered maintenance mode.
func notInMaintenance(t *testing.T, lab *vcsimlab.Lab, host string) {
	t.Helper()
	for _, w := range lab.MaintenanceWindows() {
		if w.Host == host {
			t.Errorf("host %s entered maintenance mode: %+v", host, lab.MaintenanceWindows())
		}
	}
}

// An apply cancelled (Ctrl-C) while DRS still evacuates the host cancels
// the EnterMaintenanceMode task and waits for it to end, so the host does
// not enter maintenance mode later with nobody to take it out; the error
// says the reboot was interrupted.
func TestRebootInterruptedWhileEnteringMaintenance(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host, err := enterWithStuckVM(t, lab, ctx, 10*time.Minute, func() {
		// The first read of the task is held; the apply is cancelled
		// while it is in flight, with the task running.
		base := lab.Calls()["RetrievePropertiesEx"]
		release := lab.Hold("RetrievePropertiesEx")
		go func() {
			for lab.Calls()["RetrievePropertiesEx"] == base {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			release()
		}()
	})
	want := fmt.Sprintf("the reboot of host %s was interrupted after", host)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "while entering maintenance mode") ||
		!errors.Is(err, context.Canceled) {
		t.Errorf("reboot cancelled while entering maintenance mode: %v; want %q", err, want)
	}
	if n := lab.Calls()["CancelTask"]; n != 1 {
		t.Errorf("%d CancelTask calls, want 1", n)
	}
	notInMaintenance(t, lab, host)
}

// A read of the EnterMaintenanceMode task that fails cancels the task too.
// (The first read of tasks after the task is queued is the look at the
// cluster's other hosts, which goes on when it fails: the look before
// found none; the second is the task's own.)
func TestRebootTaskReadFailsWhileEnteringMaintenance(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	host, err := enterWithStuckVM(t, lab, context.Background(), 10*time.Minute, func() {
		lab.FailRead("Task", &types.HostCommunication{}, 2)
	})
	if err == nil || strings.Contains(err.Error(), "maintenance mode:") {
		t.Errorf("reboot whose task read failed: %v; want the failure, the host not said to be left in maintenance mode", err)
	}
	if n := lab.Calls()["CancelTask"]; n != 1 {
		t.Errorf("%d CancelTask calls, want 1", n)
	}
	notInMaintenance(t, lab, host)
}

// When the task cannot be cancelled nor seen to end, the error says plainly
// that the host may be left in maintenance mode, and how to take it out.
func TestRebootMaintenanceModeNotConfirmedCancelled(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	host, err := enterWithStuckVM(t, lab, context.Background(), 10*time.Minute, func() {
		lab.FailCall("CancelTask", "", &types.HostCommunication{}, 1)
		lab.FailRead("Task", &types.HostCommunication{}, 3) // the look at the cluster, the task's, the cancelled task's
	})
	want := fmt.Sprintf("host %s may be left in maintenance mode", host)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Exit Maintenance Mode") {
		t.Errorf("reboot whose maintenance mode could not be cancelled: %v; want %q and how to take it out", err, want)
	}
}

// A reboot whose time runs out while entering maintenance mode says so,
// naming the host and the time, not a vCenter timeout or a URL; the host is
// left out of maintenance mode.
func TestRebootTimeoutWhileEnteringMaintenance(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	host, err := enterWithStuckVM(t, lab, context.Background(), 2*time.Second, func() {})
	want := fmt.Sprintf("host %s did not finish entering maintenance mode within the reboot's time of 2s", host)
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrRebootTimedOut) {
		t.Errorf("reboot out of time while entering maintenance mode: %v; want %q", err, want)
	}
	notInMaintenance(t, lab, host)
	// No time at all: vCenter is not asked, and no URL shows.
	err = labClient(lab).RebootHost(context.Background(), lab.HostID(host), time.Nanosecond, nil, func(string) {})
	if err == nil || !errors.Is(err, ErrRebootTimedOut) || strings.Contains(err.Error(), "https://") {
		t.Errorf("reboot with 1ns: %v; want the reboot's time run out", err)
	}
}

// Ctrl-C while waiting for the host to come back says the wait was
// interrupted, not that the host is not back after the whole timeout.
func TestRebootInterruptedWhileWaitingForHost(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 50 * time.Millisecond})
	host := lab.HostNames()[0]
	lab.KeepHostDown(host)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := labClient(lab).RebootHost(ctx, lab.HostID(host), 30*time.Minute, nil, func(step string) {
		if step == "waiting for the host to be back" {
			cancel()
		}
	})
	want := fmt.Sprintf("the wait for host %s to come back from its reboot was interrupted after", host)
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "30m") {
		t.Errorf("reboot interrupted while waiting for the host: %v; want %q", err, want)
	}
}

// A reboot whose call is lost on its way fails, and the host leaves
// maintenance mode; one whose answer is lost has started: the reboot waits
// for the host to be back (taking it out of maintenance mode while it is
// down would fail) and ends as one that was answered. Leaving maintenance
// mode, lost either way, is done all the same: the call is made again when
// the host is still in maintenance mode once its tasks have ended.
func TestRebootCallLost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		method           string
		answered, reboot bool
	}{
		{"RebootHost_Task", false, false}, {"RebootHost_Task", true, true},
		{"ExitMaintenanceMode_Task", false, true}, {"ExitMaintenanceMode_Task", true, true},
	} {
		t.Run(fmt.Sprintf("%s answered=%t", c.method, c.answered), func(t *testing.T) {
			t.Parallel()
			lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true, RebootTime: 100 * time.Millisecond})
			host := lab.HostNames()[0]
			cl := labClient(lab)
			ctx := context.Background()
			booted, err := cl.PlanHostReboot(ctx, lab.HostID(host))
			if err != nil {
				t.Fatal(err)
			}
			disarm := lab.LoseConnection(c.method, 1, c.answered)
			err = cl.RebootHost(ctx, lab.HostID(host), time.Minute, nil, func(string) {})
			if !disarm() {
				t.Fatalf("the reboot made no %s call", c.method)
			}
			now, perr := cl.PlanHostReboot(ctx, lab.HostID(host))
			if perr != nil {
				t.Fatal(perr)
			}
			rebooted := now.BootTime != nil && booted.BootTime != nil && now.BootTime.After(*booted.BootTime)
			switch {
			case c.reboot && (err != nil || !rebooted):
				t.Errorf("reboot: %v, rebooted %t; want it done", err, rebooted)
			case !c.reboot && (err == nil || rebooted):
				t.Errorf("reboot: %v, rebooted %t; want an error, no reboot", err, rebooted)
			}
			if now.InMaintenanceMode {
				t.Errorf("host %s left in maintenance mode (the reboot said %v)", host, err)
			}
		})
	}
}

// vCenter's bound on maintenance mode fits its int32, and is never zero
// (no bound).
func TestMaintenanceTimeout(t *testing.T) {
	for left, want := range map[time.Duration]int32{
		90 * time.Second: 90, 0: 1, -time.Second: 1, time.Duration(math.MaxInt64): math.MaxInt32, 1 << 62: math.MaxInt32,
	} {
		if got := maintenanceTimeout(left); got != want {
			t.Errorf("maintenanceTimeout(%s) = %d, want %d", left, got, want)
		}
	}
}
