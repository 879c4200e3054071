package vsphere

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A host's gate keeps its reboot and the client's VM changes on it apart:
// a reboot waits for the changes under way, and once it waits, and while
// it runs, no new change starts; when it ends they do.
func TestHostGates(t *testing.T) {
	var g hostGates
	ctx := context.Background()
	releaseChange, waited, err := g.share(ctx, "host-1")
	if err != nil || waited {
		t.Fatalf("a change on a host no reboot holds: waited %v, %v", waited, err)
	}
	rebooting := make(chan func())
	go func() {
		release, err := g.hold(ctx, "host-1")
		if err != nil {
			t.Error(err)
		}
		rebooting <- release
	}()
	queued := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.gate("host-1").queued == 1
	}
	for !queued() {
		runtime.Gosched()
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := g.share(cancelled, "host-1"); err == nil {
		t.Error("a new change started while a reboot waited")
	}
	if release, waited, err := g.share(ctx, "host-2"); err != nil || waited {
		t.Errorf("a change on another host waited: %v %v", waited, err)
	} else {
		release()
	}
	releaseChange()
	releaseReboot := <-rebooting
	if _, _, err := g.share(cancelled, "host-1"); err == nil {
		t.Error("a change started while the host rebooted")
	}
	if _, err := g.hold(cancelled, "host-1"); err == nil {
		t.Error("a second reboot of the host held the gate")
	}
	releaseReboot()
	if release, waited, err := g.share(cancelled, "host-1"); err != nil || waited {
		t.Errorf("a change after the reboot: waited %v, %v", waited, err)
	} else {
		release()
	}
}

// A change to a VM of a host the client is rebooting waits for the reboot
// to end (the host back and out of maintenance mode), then is made.
func TestRebootKeepsVMChangesOut(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true})
	c := labClient(lab)
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	releaseReboot := lab.Hold("RebootHost_Task")
	defer releaseReboot()
	rebooted := make(chan error, 1)
	go func() { rebooted <- c.RebootHost(ctx, lab.HostID(host), time.Minute, nil, func(string) {}) }()
	for len(lab.MaintenanceWindows()) == 0 {
		time.Sleep(10 * time.Millisecond) // until the host is in maintenance mode, however long that takes
	}
	changed := make(chan error, 1)
	go func() {
		changed <- c.ApplyGPUMMIO(ctx, lab.VMUUID(vm), GPUMMIOSpec{GPUs: []GPURequest{{PCIID: lab.GPUs()[0]}}, MMIOSizeGB: 256})
	}()
	releaseReboot()
	if err := <-rebooted; err != nil {
		t.Fatal(err)
	}
	if err := <-changed; err != nil {
		t.Fatal(err)
	}
	windows := lab.MaintenanceWindows()
	vc, err := c.vimClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var v mo.VirtualMachine
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(vm)}
	if err := c.readObjectAs(ctx, vc, ref, []string{"recentTask"}, &v, fresh); err != nil {
		t.Fatal(err)
	}
	var tasks []mo.Task
	if err := property.DefaultCollector(vc).Retrieve(ctx, v.RecentTask, []string{"info"}, &tasks); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if strings.Contains(strings.ToLower(task.Info.DescriptionId), "reconfig") && task.Info.QueueTime.Before(windows[0].End) {
			t.Errorf("the VM was reconfigured at %s, before its host left maintenance mode at %s", task.Info.QueueTime, windows[0].End)
		}
	}
}

// progressTo sends a reboot's steps to a channel the test reads.
func progressTo(steps chan<- string) func(string) {
	return func(step string) { steps <- step }
}

// awaitStep reads steps until one contains want, and fails the test if the
// reboot ends first.
func awaitStep(t *testing.T, steps <-chan string, done <-chan error, want string) {
	t.Helper()
	for {
		select {
		case step := <-steps:
			if strings.Contains(step, want) {
				return
			}
		case err := <-done:
			t.Fatalf("the reboot ended (%v) before the step %q", err, want)
		}
	}
}

// drain keeps reading a reboot's steps until it ends.
func drain(steps <-chan string) {
	go func() {
		for range steps {
		}
	}()
}

// A host of the cluster in maintenance mode by another client (another
// Terraform run, an alias, an administrator) holds a reboot before
// maintenance mode until it leaves it: the reboot says which host it waits
// for, and the two hosts are never in maintenance mode at once.
func TestRebootWaitsForTheClusterAsVCenterShowsIt(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true})
	ctx := context.Background()
	a, b := lab.HostNames()[0], lab.HostNames()[1]
	lab.KeepHostDown(a)
	otherDone := make(chan error, 1)
	go func() { otherDone <- labClient(lab).RebootHost(ctx, lab.HostID(a), time.Minute, nil, func(string) {}) }()
	for len(lab.MaintenanceWindows()) == 0 {
		time.Sleep(10 * time.Millisecond) // until a is in maintenance mode, however long that takes
	}
	steps, done := make(chan string), make(chan error, 1)
	go func() { done <- labClient(lab).RebootHost(ctx, lab.HostID(b), time.Minute, nil, progressTo(steps)) }()
	awaitStep(t, steps, done, fmt.Sprintf("waiting for host %s (%s) of its cluster to leave maintenance mode", a, lab.HostID(a)))
	drain(steps)
	if windows := lab.MaintenanceWindows(); len(windows) != 1 {
		t.Errorf("host %s entered maintenance mode while %s was in it: %+v", b, a, windows)
	}
	if err := lab.BringHostUp(a); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(<-otherDone, <-done); err != nil {
		t.Fatal(err)
	}
	windows := lab.MaintenanceWindows()
	if len(windows) != 2 || windows[0].Host != a || windows[1].Host != b || windows[1].Start.Before(windows[0].End) {
		t.Errorf("maintenance windows %+v, want %s's, then %s's", windows, a, b)
	}
}

// The wait for the cluster's other hosts is bounded by the reboot's time:
// a host left in maintenance mode fails the reboot, naming it, before the
// reboot's own host is touched.
func TestRebootTurnTimesOut(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true})
	ctx := context.Background()
	a, b := lab.HostNames()[0], lab.HostNames()[1]
	task, err := object.NewHostSystem(lab.Client().Client, types.ManagedObjectReference{Type: "HostSystem", Value: lab.HostID(a)}).
		EnterMaintenanceMode(ctx, 0, false, nil)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	err = labClient(lab).RebootHost(ctx, lab.HostID(b), time.Second, nil, func(string) {})
	want := fmt.Sprintf("host %s was not rebooted: host %s (%s) of its cluster was in maintenance mode, or entering it, for the 1s", b, a, lab.HostID(a))
	if !errors.Is(err, ErrRebootTurnTimedOut) || !strings.Contains(err.Error(), want) {
		t.Errorf("reboot while %s stays in maintenance mode: %v; want %q", a, err, want)
	}
	if windows := lab.MaintenanceWindows(); len(windows) != 1 {
		t.Errorf("maintenance windows %+v, want only %s's", windows, a)
	}
}

// Two clients that look at the cluster at once, find it clear, and both
// queue maintenance mode: the later task gives way (cancelled, its host out
// of maintenance mode again) and waits for the earlier host's reboot.
func TestRebootGivesWayToAnEarlierTask(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true})
	ctx := context.Background()
	hosts := lab.HostNames()[:2]
	for _, h := range hosts {
		lab.KeepHostDown(h) // each stays down until the test has seen who gave way
	}
	release := lab.Hold("EnterMaintenanceMode_Task")
	defer release()
	steps := []chan string{make(chan string), make(chan string)}
	done := []chan error{make(chan error, 1), make(chan error, 1)}
	for i, h := range hosts {
		go func() {
			done[i] <- labClient(lab).RebootHost(ctx, lab.HostID(h), time.Minute, nil, progressTo(steps[i]))
		}()
		go func() {
			for step := range steps[i] {
				if strings.Contains(step, "started entering maintenance mode first") {
					done[i] <- errGaveWay
				}
			}
		}()
	}
	for lab.Calls()["EnterMaintenanceMode_Task"] < 2 {
		time.Sleep(10 * time.Millisecond) // until both have queued maintenance mode, however long that takes
	}
	release()
	var loser, winner int
	select {
	case err := <-done[0]:
		loser, winner = 0, 1
		if err != errGaveWay {
			t.Fatalf("%s: %v, want it to give way", hosts[0], err)
		}
	case err := <-done[1]:
		loser, winner = 1, 0
		if err != errGaveWay {
			t.Fatalf("%s: %v, want it to give way", hosts[1], err)
		}
	}
	for _, i := range []int{loser, winner} {
		if err := lab.BringHostUp(hosts[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(<-done[winner], <-done[loser]); err != nil {
		t.Fatal(err)
	}
	var won, lost []vcsimlab.MaintenanceWindow
	for _, w := range lab.MaintenanceWindows() {
		if w.Host == hosts[winner] {
			won = append(won, w)
		} else {
			lost = append(lost, w)
		}
	}
	if len(won) != 1 || len(lost) == 0 || lost[len(lost)-1].Start.Before(won[0].End) || (len(lost) == 2 && won[0].End.Before(lost[0].End)) {
		t.Errorf("maintenance windows of %s, which went first: %+v; of %s, which gave way: %+v", hosts[winner], won, hosts[loser], lost)
	}
}

// The same for a power operation (the vspherehpc_vm_power action, which
// Terraform plans in the plan walk only): powering on a VM of a host the
// client is rebooting waits for the host to be out of maintenance mode,
// where vCenter would refuse it.
func TestRebootKeepsPowerOperationsOut(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostsNeedReboot: true})
	c := labClient(lab)
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	releaseReboot := lab.Hold("RebootHost_Task")
	defer releaseReboot()
	rebooted := make(chan error, 1)
	go func() { rebooted <- c.RebootHost(ctx, lab.HostID(host), time.Minute, nil, func(string) {}) }()
	for len(lab.MaintenanceWindows()) == 0 {
		time.Sleep(10 * time.Millisecond) // until the host is in maintenance mode, however long that takes
	}
	powered := make(chan error, 1)
	go func() {
		_, err := c.SetVMPower(ctx, lab.VMUUID(vm), PowerActionOn, time.Minute, false, func(string) {})
		powered <- err
	}()
	releaseReboot()
	if err := errors.Join(<-rebooted, <-powered); err != nil {
		t.Fatal(err)
	}
}
