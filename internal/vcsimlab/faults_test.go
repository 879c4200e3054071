package vcsimlab

import (
	"context"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

func TestFailTaskOnce(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.FailTaskOnce("ReconfigVM_Task", "hpc-node-0", &types.GenericVmConfigFault{Reason: "boom"})

	// Another VM is not affected.
	if err := l.reconfig("hpc-node-1", types.VirtualMachineConfigSpec{Annotation: "x"}); err != nil {
		t.Fatalf("other VM: %v", err)
	}
	err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Annotation: "first"})
	wantFault(t, "first reconfigure", err, &types.GenericVmConfigFault{})
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l.Lab, "hpc-node-0"), []string{"config"}, &vm)
	if vm.Config.Annotation != "" {
		t.Errorf("the failed task changed the VM: annotation %q", vm.Config.Annotation)
	}
	if err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Annotation: "second"}); err != nil {
		t.Errorf("second reconfigure: %v", err)
	}

	// It works for any task method, such as creating a switch in a folder.
	l.FailTaskOnce("CreateDVS_Task", "network", &types.DvsFault{})
	task, err := l.networkFolder().
		CreateDVS(context.Background(), types.DVSCreateSpec{ConfigSpec: &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Name: "x"}}})
	if err != nil {
		t.Fatalf("CreateDVS_Task call: %v", err)
	}
	wantFault(t, "CreateDVS_Task", task.Wait(context.Background()), &types.DvsFault{})
}

func TestFailCall(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	l.FailCall("ReconfigVM_Task", "", &types.InvalidState{}, 2)
	for range 2 {
		_, err := l.vm("hpc-node-0").Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "x"})
		wantFault(t, "call", err, &types.InvalidState{})
	}
	if err := l.reconfig("hpc-node-1", types.VirtualMachineConfigSpec{Annotation: "x"}); err != nil {
		t.Errorf("third call: %v", err)
	}

	// Scoped to one object, and never applied to the lab's own client.
	l.FailCall("ReconfigVM_Task", "hpc-node-1", &types.InvalidState{}, 1)
	own := object.NewVirtualMachine(l.Client().Client, vmRef(l.Lab, "hpc-node-1"))
	if _, err := own.Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "own"}); err != nil {
		t.Errorf("lab client: %v", err)
	}
	if err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Annotation: "y"}); err != nil {
		t.Errorf("other object: %v", err)
	}
	_, err := l.vm("hpc-node-1").Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "y"})
	wantFault(t, "named object", err, &types.InvalidState{})
}

// FailRead fails the reads that ask for properties of one type, and no
// other.
func TestFailRead(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	read := func(typ, id string) error {
		var dst []mo.ManagedEntity
		return property.DefaultCollector(l.c.Client).Retrieve(ctx, []types.ManagedObjectReference{{Type: typ, Value: id}}, []string{"name"}, &dst)
	}
	host := l.HostID(l.HostNames()[0])
	l.FailRead("HostSystem", &types.HostNotConnected{}, 1)
	if err := read("VirtualMachine", l.VMID(l.VMNames()[0])); err != nil {
		t.Errorf("read of a VM: %v", err)
	}
	wantFault(t, "read of a host", read("HostSystem", host), &types.HostNotConnected{})
	if err := read("HostSystem", host); err != nil {
		t.Errorf("second read of a host: %v", err)
	}
}

// TestFailTaskEndRead: every read of the next task read fails; reads of
// other objects, and of a later task, go through.
func TestFailTaskEndRead(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	vm := l.vm(l.VMNames()[0])
	l.FailTaskEndRead(&types.HostNotConnected{})
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil { // through the collector's updates, not a read
		t.Fatal(err)
	}
	var mv mo.VirtualMachine
	if err := tryRetrieve(l.c, vm.Reference(), []string{"name"}, &mv); err != nil {
		t.Errorf("read of a VM: %v", err)
	}
	readTask := func() error {
		var mt mo.Task
		return tryRetrieve(l.c, task.Reference(), []string{"info"}, &mt)
	}
	wantFault(t, "read of an ended task", readTask(), &types.HostNotConnected{})
	wantFault(t, "second read of the ended task", readTask(), &types.HostNotConnected{})
	later, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "lab again"})
	if err != nil {
		t.Fatal(err)
	}
	if err := later.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	var mt mo.Task
	if err := tryRetrieve(l.c, later.Reference(), []string{"info"}, &mt); err != nil {
		t.Errorf("read of a task that ended later: %v", err)
	}
}

func TestDelayIsPerLab(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	other := newLab(t)
	const d = 300 * time.Millisecond
	l.Delay("ReconfigVM_Task", d)
	timed := func(l *lab) time.Duration {
		start := time.Now()
		if _, err := l.vm("hpc-node-0").Reconfigure(context.Background(), types.VirtualMachineConfigSpec{Annotation: "x"}); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	if got := timed(l); got < d {
		t.Errorf("delayed call took %v, want at least %v", got, d)
	}
	if got := timed(other); got >= d {
		t.Errorf("another lab's call took %v", got)
	}
	l.Delay("ReconfigVM_Task", 0)
	if got := timed(l); got >= d {
		t.Errorf("call after removing the delay took %v", got)
	}
}

// Hold keeps the calls of one method waiting, once counted, until release;
// other calls, and the lab's own client, go through meanwhile.
func TestHold(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.ResetCalls()
	release := l.Hold("ReconfigVM_Task")
	defer release()
	done := make(chan error, 1)
	go func() {
		_, err := l.vm("hpc-node-0").Reconfigure(context.Background(), types.VirtualMachineConfigSpec{Annotation: "held"})
		done <- err
	}()
	for l.Calls()["ReconfigVM_Task"] == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	var vm mo.VirtualMachine
	retrieve(t, l.c, vmRef(l.Lab, "hpc-node-0"), []string{"config.annotation"}, &vm)
	if vm.Config != nil && vm.Config.Annotation == "held" {
		t.Fatal("the held reconfiguration ran before its release")
	}
	select {
	case err := <-done:
		t.Fatalf("the held call returned before its release: %v", err)
	default:
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	release() // a second release does nothing
	if _, err := l.vm("hpc-node-1").Reconfigure(context.Background(), types.VirtualMachineConfigSpec{Annotation: "x"}); err != nil {
		t.Fatalf("a call after the release: %v", err)
	}
}

// AnswerTimes has one entry per request of other clients, longest first,
// each at least the latency the lab adds; ResetCalls clears them.
func TestAnswerTimes(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	const d = 30 * time.Millisecond
	l.ResetCalls()
	l.SetLatency(d)
	l.Delay("RetrievePropertiesEx", d) // the second read waits twice as long
	var vm mo.VirtualMachine
	retrieve(t, l.c, vmRef(l.Lab, "hpc-node-0"), []string{"name"}, &vm)
	l.Delay("RetrievePropertiesEx", 0)
	retrieve(t, l.c, vmRef(l.Lab, "hpc-node-1"), []string{"name"}, &vm)
	retrieve(t, l.Client(), vmRef(l.Lab, "hpc-node-1"), []string{"name"}, &vm) // the lab's own: not there
	got := l.AnswerTimes()
	if len(got) != 2 || got[0] < 2*d || got[1] < d || got[0] < got[1] {
		t.Fatalf("AnswerTimes = %v, want two, longest first, at least %v and %v", got, 2*d, d)
	}
	l.ResetCalls()
	if got := l.AnswerTimes(); len(got) != 0 {
		t.Fatalf("AnswerTimes after ResetCalls = %v", got)
	}
}

// SetLatency delays every client call from then on, as Options.Latency does.
func TestSetLatency(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	const d = 200 * time.Millisecond
	l.SetLatency(d)
	start := time.Now()
	if _, err := l.vm("hpc-node-0").Reconfigure(context.Background(), types.VirtualMachineConfigSpec{Annotation: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got < d {
		t.Errorf("a call after SetLatency(%v) took %v", d, got)
	}
}

func TestTerminateSessions(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	if err := l.TerminateSessions(ctx); err != nil {
		t.Fatal(err)
	}
	var vm mo.VirtualMachine
	err := tryRetrieve(l.c, vmRef(l.Lab, "hpc-node-0"), []string{"name"}, &vm)
	if !fault.Is(err, &types.NotAuthenticated{}) || !soap.IsSoapFault(err) {
		t.Errorf("provider session after TerminateSessions: %v, want a NotAuthenticated SOAP fault, as vCenter sends", err)
	}

	if err := tryRetrieve(l.Client(), vmRef(l.Lab, "hpc-node-0"), []string{"name"}, &vm); err != nil {
		t.Errorf("lab client after TerminateSessions: %v", err)
	}
	// A new login works, as after a vCenter restart.
	if _, err := l.NewClient(ctx); err != nil {
		t.Errorf("login after TerminateSessions: %v", err)
	}
}

func TestSessions(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	own, err := l.c.SessionManager.UserSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := l.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The provider-like client's session, not the lab's own.
	if len(keys) != 1 || keys[0] != own.Key {
		t.Fatalf("Sessions = %v, want only the client's %s", keys, own.Key)
	}
	if err := l.c.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, err := l.Sessions(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("Sessions after logout = %v, %v; want none", keys, err)
	}
}

func TestCalls(t *testing.T) {
	t.Parallel()
	l := newLab(t) // the provider-like client logged in: counted
	if n := l.Calls()["Login"]; n != 1 {
		t.Errorf("Login calls = %d, want 1 (the lab's own login is not counted)", n)
	}
	l.ResetCalls()
	var vm mo.VirtualMachine
	retrieve(t, l.c, vmRef(l.Lab, "hpc-node-0"), []string{"name"}, &vm)
	retrieve(t, l.c, vmRef(l.Lab, "hpc-node-1"), []string{"name"}, &vm)
	retrieve(t, l.Client(), vmRef(l.Lab, "hpc-node-1"), []string{"name"}, &vm) // the lab's client: not counted
	calls := l.Calls()
	if calls["RetrievePropertiesEx"] != 2 || len(calls) != 1 {
		t.Errorf("calls = %v, want 2 RetrievePropertiesEx", calls)
	}
	l.ResetCalls()
	if calls := l.Calls(); len(calls) != 0 {
		t.Errorf("after reset: %v", calls)
	}
}

// A session keep-alive (CurrentTime, which govmomi's keepalive and the
// provider send) is counted apart from the other calls: how many a client
// sends depends on how long it sits idle, so on the machine's speed, and a
// count of calls that compares two runs must not change with it.
func TestKeepAlivesAreCountedApart(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.ResetCalls()
	ctx := context.Background()
	if _, err := methods.GetCurrentTime(ctx, l.c.Client); err != nil {
		t.Fatal(err)
	}
	var vm mo.VirtualMachine
	retrieve(t, l.c, vmRef(l.Lab, "hpc-node-0"), []string{"name"}, &vm)
	if _, err := methods.GetCurrentTime(ctx, l.Client().Client); err != nil { // the lab's client: not counted
		t.Fatal(err)
	}
	if calls, n := l.Calls(), l.KeepAlives(); len(calls) != 1 || calls["RetrievePropertiesEx"] != 1 || n != 1 {
		t.Errorf("calls = %v, keep-alives %d; want one RetrievePropertiesEx, one keep-alive", calls, n)
	}
	l.ResetCalls()
	if n := l.KeepAlives(); n != 0 {
		t.Errorf("keep-alives after reset: %d", n)
	}
}

// Options.Latency delays every call of other clients, not the lab's own.
func TestLatencyDelaysEveryCall(t *testing.T) {
	t.Parallel()
	const latency = 200 * time.Millisecond
	l, err := Start(context.Background(), Options{Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	c := newClient(t, l)
	timed := func(c *govmomi.Client) time.Duration {
		start := time.Now()
		var vm mo.VirtualMachine
		retrieve(t, c, vmRef(l, "hpc-node-0"), []string{"name"}, &vm)
		return time.Since(start)
	}
	if got := timed(c); got < latency {
		t.Errorf("a client's read took %v, want at least %v", got, latency)
	}
	if got := timed(l.client); got >= latency {
		t.Errorf("the lab's own read took %v, want no latency", got)
	}
}

// LoseConnection loses the answer of one call of a method, counted from
// now: before vCenter runs the call, or after; CallLog lists the calls, the
// lost ones among them, and never the lab's own.
func TestLoseConnection(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	annotation := func(name string) string {
		var vm mo.VirtualMachine
		retrieve(t, l.Client(), vmRef(l.Lab, name), []string{"config"}, &vm)
		return vm.Config.Annotation
	}
	l.ResetCalls()

	disarm := l.LoseConnection("ReconfigVM_Task", 2, false)
	if err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Annotation: "first"}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if _, err := l.vm("hpc-node-0").Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "lost on its way"}); err == nil {
		t.Fatal("second call: no error, want its connection lost")
	}
	if got := annotation("hpc-node-0"); got != "first" {
		t.Errorf("a call lost on its way changed the VM: annotation %q", got)
	}
	if !disarm() {
		t.Error("disarm says the fault did not hit")
	}

	_ = l.LoseConnection("ReconfigVM_Task", 1, true)
	if _, err := l.vm("hpc-node-0").Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "answer lost"}); err == nil {
		t.Fatal("call whose answer is lost: no error")
	}
	// vCenter ran it: its task ends, unseen by the client.
	deadline := time.Now().Add(30 * time.Second)
	for annotation("hpc-node-0") != "answer lost" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := annotation("hpc-node-0"); got != "answer lost" {
		t.Errorf("a call whose answer was lost did not run: annotation %q", got)
	}
	if err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Annotation: "after"}); err != nil {
		t.Errorf("the next call: %v", err)
	}

	// The lab's own client is never lost, nor logged.
	disarm = l.LoseConnection("ReconfigVM_Task", 1, false)
	own := object.NewVirtualMachine(l.Client().Client, vmRef(l.Lab, "hpc-node-1"))
	if _, err := own.Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "own"}); err != nil {
		t.Errorf("lab client: %v", err)
	}
	log := l.CallLog()
	var reconfigures int
	for _, m := range log {
		if m == "ReconfigVM_Task" {
			reconfigures++
		}
	}
	if reconfigures != 4 {
		t.Errorf("the log has %d ReconfigVM_Task calls, want the client's 4 (lost ones too): %v", reconfigures, log)
	}
	if disarm() {
		t.Error("disarm says a fault hit that only the lab's own client met")
	}
	if err := l.reconfig("hpc-node-1", types.VirtualMachineConfigSpec{Annotation: "disarmed"}); err != nil {
		t.Errorf("a call after the fault was taken back: %v", err)
	}
}
