package vsphere

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/task"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// taskPolls are the waits between two reads of a task's state: short at
// first, as most tasks end within a second, then every second.
var taskPolls = []time.Duration{10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second}

// waitTask waits for a vSphere task, logging its progress, and translates a
// task failure like any other fault. It honours ctx's deadline.
//
// It reads the task's info through the client's shared reads, so every task
// the provider waits for at a moment is followed by one RetrievePropertiesEx
// per round: a task costs no collector of its own (govmomi's WaitForResult
// makes five calls per task: a collector, a filter, the wait and their
// removal), and reads stay valid across a new session.
func (c *Client) waitTask(ctx context.Context, op string, t *object.Task) (*types.TaskInfo, error) {
	return c.waitTaskReading(ctx, op, t, nil)
}

// waitTaskReading is waitTask, with also read in the same call as each
// read of the task's state (inOneCall): what the caller needs once the task
// has ended comes with the read that sees it end, not in a call after it.
// Within that call the object may have been read a moment before the task
// ended, so a caller that does not find the change there reads again.
func (c *Client) waitTaskReading(ctx context.Context, op string, t *object.Task, also func(context.Context) error) (*types.TaskInfo, error) {
	fields := map[string]any{"operation": op, "task": t.Reference().Value}
	c.log.Debug(ctx, "Waiting for vSphere task", fields)
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	percent := int32(-1)
	for i := 0; ; i++ {
		var tm mo.Task
		readTask := func(ctx context.Context) error { return c.readObject(ctx, vc, t.Reference(), []string{"info"}, &tm) }
		var err error
		if also == nil {
			err = readTask(ctx)
		} else {
			err = c.inOneCall(ctx, readTask, also)
		}
		if answerLost(err) && ctx.Err() == nil {
			// The task goes on in vCenter: read it again at the next poll.
			c.log.Debug(ctx, "Reading a vSphere task failed; reading it again", withField(fields, "error", err.Error()))
			err = nil
			tm.Info.State = types.TaskInfoStateRunning
			tm.Info.Progress = percent
		}
		if err != nil {
			return nil, translate(op, err)
		}
		info := &tm.Info
		switch info.State {
		case types.TaskInfoStateSuccess:
			c.log.Debug(ctx, "vSphere task done", fields)
			return info, nil
		case types.TaskInfoStateError:
			if info.Error == nil {
				info.Error = &types.LocalizedMethodFault{Fault: &types.SystemError{Reason: "the task failed"}, LocalizedMessage: "the task failed"}
			}
			return info, translate(op, task.Error{LocalizedMethodFault: info.Error, Description: info.Description})
		}
		if info.Progress != percent {
			percent = info.Progress
			c.log.Debug(ctx, "vSphere task progress", withField(fields, "percent", percent))
		}
		select {
		case <-time.After(taskPolls[min(i, len(taskPolls)-1)]):
		case <-ctx.Done():
			return nil, translate(op, ctx.Err())
		}
	}
}

// withField is fields with one more.
func withField(fields map[string]any, key string, value any) map[string]any {
	out := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		out[k] = v
	}
	out[key] = value
	return out
}

// answerLost reports the error of a call that got no answer from vCenter:
// the connection failed or closed before one came. It is no fault vCenter
// sent, nor the caller's cancellation: vCenter may have run the call, and
// only a read tells.
func answerLost(err error) bool {
	if err == nil || soap.IsSoapFault(err) || soap.IsVimFault(err) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// startedTask finds the task that a call which lost its answer (answerLost)
// started on entity: a task in the entity's recentTask ("the set of recent
// tasks operating on this managed entity", the vSphere API reference,
// ManagedEntity) that was not among before, read just before the call. nil
// when there is none: vCenter did not run the call. The read has time of
// its own, as the call's may be what ran out.
func (c *Client) startedTask(
	ctx context.Context,
	vc *vim25.Client,
	entity types.ManagedObjectReference,
	before []types.ManagedObjectReference,
) (*object.Task, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupAfterFailureTimeout)
	defer cancel()
	var e mo.ManagedEntity
	if err := c.readObjectAs(ctx, vc, entity, []string{"recentTask"}, &e, fresh); err != nil {
		return nil, err
	}
	var started *object.Task
	for _, t := range e.RecentTask {
		if !slices.Contains(before, t) {
			started = object.NewTask(vc, t) // the newest, as vCenter lists them oldest first
		}
	}
	return started, nil
}

// settle waits for the tasks on entity that have not ended, on time of its
// own: after a call whose answer was lost (answerLost), whatever it started
// ends before the caller looks for what it made. It reads the entity's
// recentTask and their state in one call per round.
func (c *Client) settle(ctx context.Context, vc *vim25.Client, entity types.ManagedObjectReference) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupAfterFailureTimeout)
	defer cancel()
	for i := 0; ; i++ {
		objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
			ObjectSet: []types.ObjectSpec{{Obj: entity, Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{Type: entity.Type, Path: "recentTask"},
			}}},
			PropSet: []types.PropertySpec{{Type: "Task", PathSet: []string{"info.state"}}},
		})
		if err != nil {
			c.log.Debug(ctx, "Reading the tasks of a call whose answer was lost failed", map[string]any{"entity": entity.Value, "error": err.Error()})
			return
		}
		running := false
		for _, o := range objs {
			if t, ok := o.(mo.Task); ok && (t.Info.State == types.TaskInfoStateQueued || t.Info.State == types.TaskInfoStateRunning) {
				running = true
			}
		}
		if !running {
			return
		}
		select {
		case <-time.After(taskPolls[min(i, len(taskPolls)-1)]):
		case <-ctx.Done():
			return
		}
	}
}
