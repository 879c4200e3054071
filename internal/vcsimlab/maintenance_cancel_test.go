package vcsimlab

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A cancelled EnterMaintenanceMode_Task stops: it ends in RequestCanceled,
// the host stays out of maintenance mode even once its VMs could move, and
// cancelling it again, or a finished task, is refused with InvalidState.
func TestEnterMaintenanceModeCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	vm := l.VMNames()[0]
	host := l.VMHostName(vm)
	must(l.SetVMDRSOverride(ctx, vm, true, types.DrsBehaviorManual)) // the task waits for it
	must(l.PowerOnVM(ctx, vm))
	task, err := object.NewHostSystem(l.Client().Client, ref("HostSystem", l.HostID(host))).EnterMaintenanceMode(ctx, 0, false, nil)
	must(err)
	var tm mo.Task
	retrieve(t, l.Client(), task.Reference(), []string{"info"}, &tm)
	if !tm.Info.Cancelable {
		t.Errorf("EnterMaintenanceMode_Task is not cancelable: %+v", tm.Info)
	}
	must(task.Cancel(ctx))
	if err := task.Wait(ctx); !fault.Is(err, &types.RequestCanceled{}) {
		t.Fatalf("cancelled EnterMaintenanceMode_Task: %v, want RequestCanceled", err)
	}
	retrieve(t, l.Client(), task.Reference(), []string{"info"}, &tm)
	if !tm.Info.Cancelled {
		t.Errorf("cancelled task's info.cancelled: %v, want true", tm.Info.Cancelled)
	}
	if err := task.Cancel(ctx); !fault.Is(err, &types.InvalidState{}) {
		t.Errorf("cancelling an ended task: %v, want InvalidState", err)
	}
	// The task has ended: the VM becoming movable puts nothing in motion.
	must(l.SetVMDRSOverride(ctx, vm, true, types.DrsBehaviorFullyAutomated))
	if hostRuntime(t, l, host).InMaintenanceMode || len(l.MaintenanceWindows()) != 0 {
		t.Errorf("%s in maintenance mode after its task was cancelled: %+v", host, l.MaintenanceWindows())
	}
	// A task that has put the host in maintenance mode cannot be cancelled.
	task, err = object.NewHostSystem(l.Client().Client, ref("HostSystem", l.HostID(host))).EnterMaintenanceMode(ctx, 0, false, nil)
	must(err)
	must(task.Wait(ctx))
	if err := task.Cancel(ctx); !fault.Is(err, &types.InvalidState{}) {
		t.Errorf("cancelling a finished task: %v, want InvalidState", err)
	}
	if !hostRuntime(t, l, host).InMaintenanceMode {
		t.Errorf("%s not in maintenance mode after its task succeeded", host)
	}
}

// An EnterMaintenanceMode_Task under way is one of the host's recent tasks
// and of the task manager's, as vCenter lists them, with the host's
// description id, for every session to see: another client can tell that
// the host is entering maintenance mode.
func TestEnterMaintenanceModeTaskIsListed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	vm := l.VMNames()[0]
	host := l.VMHostName(vm)
	must(l.SetVMDRSOverride(ctx, vm, true, types.DrsBehaviorManual)) // the task waits for it
	must(l.PowerOnVM(ctx, vm))
	task, err := object.NewHostSystem(l.Client().Client, ref("HostSystem", l.HostID(host))).EnterMaintenanceMode(ctx, 0, false, nil)
	must(err)
	other, err := l.NewClient(ctx)
	must(err)
	var h mo.HostSystem
	retrieve(t, other, ref("HostSystem", l.HostID(host)), []string{"recentTask"}, &h)
	var tm mo.TaskManager
	retrieve(t, other, *other.ServiceContent.TaskManager, []string{"recentTask"}, &tm)
	for what, list := range map[string][]types.ManagedObjectReference{"the host's": h.RecentTask, "the task manager's": tm.RecentTask} {
		if !slices.Contains(list, task.Reference()) {
			t.Errorf("%s recent tasks %v lack the EnterMaintenanceMode_Task %v", what, list, task.Reference())
		}
	}
	var info mo.Task
	retrieve(t, other, task.Reference(), []string{"info"}, &info)
	if info.Info.DescriptionId != "HostSystem.enterMaintenanceMode" || info.Info.State != types.TaskInfoStateRunning ||
		info.Info.Entity == nil || info.Info.Entity.Value != l.HostID(host) {
		t.Errorf("the task as another session sees it: %+v", info.Info)
	}
	must(task.Cancel(ctx))
	_ = task.Wait(ctx)
}
