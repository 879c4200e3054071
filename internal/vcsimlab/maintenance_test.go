package vcsimlab

import (
	"context"
	"testing"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func hostRuntime(t *testing.T, l *Lab, name string) types.HostRuntimeInfo {
	t.Helper()
	var h mo.HostSystem
	retrieve(t, l.Client(), ref("HostSystem", l.HostID(name)), []string{"runtime"}, &h)
	return h.Runtime
}

func rebootHost(ctx context.Context, l *Lab, name string, force bool) error {
	res, err := methods.RebootHost_Task(ctx, l.Client().Client, &types.RebootHost_Task{This: ref("HostSystem", l.HostID(name)), Force: force})
	if err != nil {
		return err
	}
	return object.NewTask(l.Client().Client, res.Returnval).Wait(ctx)
}

func enterMaintenance(ctx context.Context, l *Lab, name string, timeout int32) error {
	task, err := object.NewHostSystem(l.Client().Client, ref("HostSystem", l.HostID(name))).EnterMaintenanceMode(ctx, timeout, false, nil)
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

func exitMaintenance(ctx context.Context, l *Lab, name string) error {
	task, err := object.NewHostSystem(l.Client().Client, ref("HostSystem", l.HostID(name))).ExitMaintenanceMode(ctx, 0)
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

// Maintenance mode with DRS fully automated moves a running VM away; a VM
// with a passthrough device cannot move, and the task times out; the
// windows are recorded.
func TestMaintenanceModeEvacuates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	plain, gpu := l.VMNames()[0], l.VMNames()[1]
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	from := l.VMHostName(plain)
	must(l.PowerOnVM(ctx, plain))
	must(enterMaintenance(ctx, l, from, 0))
	if !hostRuntime(t, l, from).InMaintenanceMode {
		t.Fatalf("%s not in maintenance mode", from)
	}
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), ref("VirtualMachine", l.VMID(plain)), []string{"runtime.host"}, &vm)
	if vm.Runtime.Host == nil || vm.Runtime.Host.Value == l.HostID(from) {
		t.Errorf("%s still on %s after its host entered maintenance mode", plain, from)
	}
	if err := enterMaintenance(ctx, l, from, 0); !fault.Is(err, &types.InvalidState{}) {
		t.Errorf("entering maintenance mode twice: %v, want InvalidState", err)
	}
	must(exitMaintenance(ctx, l, from))

	// A VM with a GPU cannot be migrated: the task waits, then times out.
	host := l.VMHostName(gpu)
	must(l.AttachGPU(ctx, gpu, l.GPUs()[0]))
	must(l.PowerOnVM(ctx, gpu))
	if err := enterMaintenance(ctx, l, host, 1); !fault.Is(err, &types.Timedout{}) {
		t.Fatalf("maintenance mode with a passthrough VM running: %v, want Timedout", err)
	}
	if hostRuntime(t, l, host).InMaintenanceMode {
		t.Errorf("%s entered maintenance mode with %s running on it", host, gpu)
	}
	windows := l.MaintenanceWindows()
	if len(windows) != 1 || windows[0].Host != from || windows[0].End.Before(windows[0].Start) || windows[0].End.IsZero() {
		t.Errorf("maintenance windows %+v, want one closed window of %s", windows, from)
	}
}

// A reboot needs maintenance mode unless forced; the host is not
// responding until it is back, then its pending passthrough is active and
// its boot time new. A host kept down refuses calls.
func TestRebootHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{HostsNeedReboot: true, RebootTime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	host := l.HostWithoutVMs()
	if host == "" {
		host = l.HostNames()[len(l.HostNames())-1]
	}
	if err := rebootHost(ctx, l, host, false); !fault.Is(err, &types.InvalidState{}) {
		t.Fatalf("reboot outside maintenance mode: %v, want InvalidState", err)
	}
	before := hostRuntime(t, l, host).BootTime
	// A change the host applies at its next reboot.
	if err := l.SetHostSRIOV(ctx, host, "0000:d8:00.1", 2); err != nil {
		t.Fatal(err)
	}
	if err := enterMaintenance(ctx, l, host, 0); err != nil {
		t.Fatal(err)
	}
	if err := rebootHost(ctx, l, host, false); err != nil {
		t.Fatal(err)
	}
	if s := hostRuntime(t, l, host).ConnectionState; s != types.HostSystemConnectionStateNotResponding {
		t.Errorf("right after the reboot: %s, want notResponding", s)
	}
	if err := exitMaintenance(ctx, l, host); !fault.Is(err, &types.HostNotConnected{}) {
		t.Errorf("exit maintenance mode while rebooting: %v, want HostNotConnected", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for hostRuntime(t, l, host).ConnectionState != types.HostSystemConnectionStateConnected {
		if time.Now().After(deadline) {
			t.Fatal("the host did not come back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after := hostRuntime(t, l, host).BootTime; after == nil || (before != nil && !after.After(*before)) {
		t.Errorf("boot time %v after the reboot, was %v", after, before)
	}
	var h mo.HostSystem
	retrieve(t, l.Client(), ref("HostSystem", l.HostID(host)), []string{"config.pciPassthruInfo"}, &h)
	for _, p := range h.Config.PciPassthruInfo {
		if s, ok := p.(*types.HostSriovInfo); ok && s.Id == "0000:d8:00.1" && (!s.SriovActive || s.NumVirtualFunction != 2) {
			t.Errorf("SR-IOV after the reboot: active %v, %d VFs; want active, 2", s.SriovActive, s.NumVirtualFunction)
		}
	}
	if err := exitMaintenance(ctx, l, host); err != nil {
		t.Fatal(err)
	}

	l.KeepHostDown(host)
	if err := rebootHost(ctx, l, host, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if s := hostRuntime(t, l, host).ConnectionState; s != types.HostSystemConnectionStateNotResponding {
		t.Errorf("a host kept down: %s, want notResponding", s)
	}
	if err := enterMaintenance(ctx, l, host, 0); !fault.Is(err, &types.HostNotConnected{}) {
		t.Errorf("maintenance mode of a host that is down: %v, want HostNotConnected", err)
	}
	downSince := hostRuntime(t, l, host).BootTime
	if err := l.BringHostUp(host); err != nil {
		t.Fatal(err)
	}
	if r := hostRuntime(t, l, host); r.ConnectionState != types.HostSystemConnectionStateConnected || r.BootTime == nil ||
		(downSince != nil && !r.BootTime.After(*downSince)) {
		t.Errorf("a host brought up: %s, booted %v (before %v); want connected with a new boot time", r.ConnectionState, r.BootTime, downSince)
	}
}

// With DRS only recommending (manual), nothing moves: maintenance mode
// waits for the running VM and times out.
func TestMaintenanceModeWithoutAutomaticDRS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetClusterDRS(ctx, true, types.DrsBehaviorManual); err != nil {
		t.Fatal(err)
	}
	vm := l.VMNames()[0]
	if err := l.PowerOnVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if err := enterMaintenance(ctx, l, l.VMHostName(vm), 1); !fault.Is(err, &types.Timedout{}) {
		t.Fatalf("maintenance mode under manual DRS with %s running: %v, want Timedout", vm, err)
	}
}

// A VM's DRS override wins over the cluster's level: under fully automated
// DRS, a VM overridden to manual (or excluded from DRS) stays and maintenance
// mode times out; under manual DRS, one overridden to fully automated moves.
func TestMaintenanceModeHonorsVMOverrides(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := startLab(t)
	vm := l.VMNames()[0]
	host := l.VMHostName(vm)
	if err := l.PowerOnVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		enabled  bool
		behavior types.DrsBehavior
	}{{true, types.DrsBehaviorManual}, {true, types.DrsBehaviorPartiallyAutomated}, {false, ""}} {
		if err := l.SetVMDRSOverride(ctx, vm, o.enabled, o.behavior); err != nil {
			t.Fatal(err)
		}
		if err := enterMaintenance(ctx, l, host, 1); !fault.Is(err, &types.Timedout{}) {
			t.Fatalf("maintenance mode with %s running, overridden to %+v: %v, want Timedout", vm, o, err)
		}
	}

	if err := l.SetClusterDRS(ctx, true, types.DrsBehaviorManual); err != nil {
		t.Fatal(err)
	}
	if err := l.SetVMDRSOverride(ctx, vm, true, types.DrsBehaviorFullyAutomated); err != nil {
		t.Fatal(err)
	}
	if err := enterMaintenance(ctx, l, host, 0); err != nil {
		t.Fatalf("maintenance mode under manual DRS, %s overridden to fully automated: %v", vm, err)
	}
	var v mo.VirtualMachine
	retrieve(t, l.Client(), ref("VirtualMachine", l.VMID(vm)), []string{"runtime.host"}, &v)
	if v.Runtime.Host.Value == l.HostID(host) {
		t.Errorf("%s is still on %s", vm, host)
	}
}

// An agent VM of ESX Agent Manager (vCLS) does not hold maintenance mode
// up, even where DRS moves nothing: it is powered off on entry and on again
// on exit, or when the entry times out.
func TestMaintenanceModeStopsAgentVMs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := startLab(t)
	if err := l.SetClusterDRS(ctx, true, types.DrsBehaviorManual); err != nil {
		t.Fatal(err)
	}
	vm := l.VMNames()[0]
	host := l.VMHostName(vm)
	for _, step := range []func() error{func() error { return l.MakeAgentVM(ctx, vm) }, func() error { return l.PowerOnVM(ctx, vm) }} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	power := func() types.VirtualMachinePowerState {
		var v mo.VirtualMachine
		retrieve(t, l.Client(), ref("VirtualMachine", l.VMID(vm)), []string{"runtime.powerState", "runtime.host"}, &v)
		if v.Runtime.Host.Value != l.HostID(host) {
			t.Fatalf("agent VM %s moved to %s", vm, v.Runtime.Host.Value)
		}
		return v.Runtime.PowerState
	}
	// A maintenance mode that times out (a second, ordinary VM runs under
	// manual DRS) leaves the agent VM on.
	other := ""
	for _, v := range l.VMNames() {
		if v != vm && l.VMHostName(v) == host {
			other = v
		}
	}
	if other == "" {
		t.Fatalf("no second VM on %s", host)
	}
	if err := l.PowerOnVM(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := enterMaintenance(ctx, l, host, 1); !fault.Is(err, &types.Timedout{}) {
		t.Fatalf("maintenance mode with %s running under manual DRS: %v, want Timedout", other, err)
	}
	if p := power(); p != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("agent VM after a maintenance mode that timed out: %s, want poweredOn", p)
	}
	if err := l.PowerOffVM(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := enterMaintenance(ctx, l, host, 1); err != nil {
		t.Fatalf("maintenance mode with agent VM %s running: %v", vm, err)
	}
	if p := power(); p != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("agent VM in maintenance mode: %s, want poweredOff", p)
	}
	task, err := object.NewHostSystem(l.Client().Client, ref("HostSystem", l.HostID(host))).ExitMaintenanceMode(ctx, 0)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if p := power(); p != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("agent VM after maintenance mode: %s, want poweredOn", p)
	}

	// A forced reboot outside maintenance mode takes it down with the host;
	// it is on again once the host is back.
	if err := rebootHost(ctx, l, host, true); err != nil {
		t.Fatal(err)
	}
	// The VM's power is read between two reads of the host's state: the host
	// may be back already on a slow machine, and only while it is down, as
	// both reads say, must the VM be off.
	var h mo.HostSystem
	var v mo.VirtualMachine
	retrieve(t, l.Client(), ref("HostSystem", l.HostID(host)), []string{"runtime.connectionState"}, &h)
	retrieve(t, l.Client(), ref("VirtualMachine", l.VMID(vm)), []string{"runtime.powerState"}, &v)
	var again mo.HostSystem
	retrieve(t, l.Client(), ref("HostSystem", l.HostID(host)), []string{"runtime.connectionState"}, &again)
	if h.Runtime.ConnectionState == types.HostSystemConnectionStateNotResponding && again.Runtime.ConnectionState == h.Runtime.ConnectionState &&
		v.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("agent VM while its host reboots: %s, want poweredOff", v.Runtime.PowerState)
	}
	deadline := time.Now().Add(30 * time.Second)
	for power() != types.VirtualMachinePowerStatePoweredOn {
		if time.Now().After(deadline) {
			t.Fatal("the agent VM is not on again after its host's reboot")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// evacuatePoweredOffVms moves the powered-off VMs too, under fully
// automated DRS; without it they stay on the host.
func TestMaintenanceModeEvacuatesPoweredOffVMs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := startLab(t)
	vm := l.VMNames()[0]
	host := l.VMHostName(vm)
	hostOf := func() string {
		var v mo.VirtualMachine
		retrieve(t, l.Client(), ref("VirtualMachine", l.VMID(vm)), []string{"runtime.host"}, &v)
		return v.Runtime.Host.Value
	}
	if err := enterMaintenance(ctx, l, host, 0); err != nil {
		t.Fatal(err)
	}
	if got := hostOf(); got != l.HostID(host) {
		t.Errorf("powered-off %s moved to %s without evacuatePoweredOffVms", vm, got)
	}
	if err := exitMaintenance(ctx, l, host); err != nil {
		t.Fatal(err)
	}
	task, err := object.NewHostSystem(l.Client().Client, ref("HostSystem", l.HostID(host))).EnterMaintenanceMode(ctx, 0, true, nil)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := hostOf(); got == l.HostID(host) {
		t.Errorf("powered-off %s stayed on %s with evacuatePoweredOffVms", vm, host)
	}
}
