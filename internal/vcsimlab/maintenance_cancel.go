package vcsimlab

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Cancelling a host's EnterMaintenanceMode_Task, as the vSphere API
// reference documents it (vcsim's own Task.CancelTask marks a task failed
// but lets its work go on, so a cancelled maintenance mode would still be
// entered):
//
//   - HostSystem.EnterMaintenanceMode_Task: "The task is cancellable", and
//     it fails with RequestCanceled "if the operation is canceled"; the
//     lab's task has info.cancelable set.
//   - Task.CancelTask: "Cancels a running or queued task. ... Multiple
//     cancel requests will be treated as a single cancelation request.
//     Canceling a completed or already canceled task will throw an
//     InvalidState exception. If a task is canceled, its runtime state will
//     be set to error and its error state will be set to RequestCanceled. A
//     cancel operation is asynchronous. The operation may return before the
//     task is canceled." So the call sets info.cancelled and returns; the
//     task stops at its next round, leaving the host out of maintenance
//     mode, and only then is in state error. A task that got the host into
//     maintenance mode before seeing the request succeeds.

// enterMaintenanceTask is the description id of EnterMaintenanceMode_Task,
// as vCenter names it (TaskInfo.descriptionId, "an identifier for this
// operation": a key of TaskManager.description.methodInfo, which govmomi's
// simulator/vpx/task_manager.go records from a vCenter).
// The lab's task has it, though it runs on the extension (see
// EnterMaintenanceModeTask), and every host's is the lab's.
const enterMaintenanceTask = "HostSystem.enterMaintenanceMode"

// cancelsMaintenance reports whether a CancelTask call is for one of the
// lab's EnterMaintenanceMode_Task tasks. DescriptionId is set before the
// task is registered and never changes, so it is read without the task's
// lock.
func cancelsMaintenance(obj any) bool {
	t, ok := obj.(*simulator.Task)
	return ok && t.Info.DescriptionId == enterMaintenanceTask
}

func (x *extension) CancelTask(ctx *simulator.Context, req *types.CancelTask) soap.HasFault {
	body := new(methods.CancelTaskBody)
	t, ok := target[*simulator.Task](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	ctx.WithLock(t, func() {
		done := t.Info.State == types.TaskInfoStateSuccess || t.Info.State == types.TaskInfoStateError
		if done || t.Info.Cancelled {
			body.Fault_ = simulator.Fault("The operation is not allowed in the current state.", &types.InvalidState{})
			return
		}
		x.hosts.mu.Lock()
		if x.hosts.cancels == nil {
			x.hosts.cancels = map[types.ManagedObjectReference]bool{}
		}
		x.hosts.cancels[t.Self] = true
		x.hosts.mu.Unlock()
		ctx.Update(t, []types.PropertyChange{{Name: "info.cancelled", Val: true}})
		body.Res = new(types.CancelTaskResponse)
	})
	return body
}

// cancelRequested reports, once, whether the task was asked to stop.
func (x *extension) cancelRequested(task types.ManagedObjectReference) bool {
	x.hosts.mu.Lock()
	defer x.hosts.mu.Unlock()
	requested := x.hosts.cancels[task]
	delete(x.hosts.cancels, task)
	return requested
}
