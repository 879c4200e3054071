package vsphere

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// A host reboot inside an apply: maintenance mode (the cluster's DRS moves
// the running VMs it can), reboot, wait for the host to be back, leave
// maintenance mode. Hosts of one cluster reboot one at a time, so parallel
// resources never take a whole cluster down.

// ErrRebootTimedOut is the Cause of a reboot that did not finish, at any
// step, within the time it was given.
var ErrRebootTimedOut = errors.New("the reboot ran out of time")

// RebootHost puts a host in maintenance mode, reboots it, waits up to
// timeout for it to be connected again with a new boot time, and takes it
// out of maintenance mode unless it was in it already. Reboots of one
// cluster's hosts wait for each other: this client's, and, through what
// vCenter shows, every other's (see clusterMaintenance); the wait for its
// turn is bounded by timeout too, and the reboot's timeout starts once its
// turn has come. With pending set (the PCI ids of a change waiting for the
// reboot), a host whose reboot by another resource of the apply has made
// them active already is not rebooted again. progress is told each step.
func (c *Client) RebootHost(ctx context.Context, hostID string, timeout time.Duration, pending []string, progress func(string)) error {
	op := "rebooting host " + hostID
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	ref := types.ManagedObjectReference{Type: "HostSystem", Value: hostID}
	var h mo.HostSystem
	if err := c.readHostForReboot(ctx, vc, ref, &h); err != nil {
		return translate(op, err)
	}
	group := hostID
	var cluster *types.ManagedObjectReference
	if h.Parent != nil && h.Parent.Type == "ClusterComputeResource" {
		group, cluster = h.Parent.Value, h.Parent
	}
	progress(fmt.Sprintf("waiting for the other reboots of %s", group))
	unlock, err := c.reboots.lock(ctx, group)
	if err != nil {
		return translate(op, err)
	}
	defer unlock()
	req := rebootRequest{vc: vc, op: op, name: h.Name, ref: ref, cluster: cluster, timeout: timeout, pending: pending, progress: progress}
	for {
		if cluster != nil {
			if err := c.waitClusterTurn(ctx, req); err != nil {
				return err
			}
		}
		err := c.rebootInTurn(ctx, req)
		if err != errGaveWay { // itself: one wrapped in a failure to leave maintenance mode is a failure
			return err
		}
		progress("another host of its cluster started entering maintenance mode first: out of maintenance mode, waiting for it")
	}
}

// rebootRequest is one RebootHost call, as its steps take it.
type rebootRequest struct {
	vc       *vim25.Client
	op       string
	name     string // the host's
	ref      types.ManagedObjectReference
	cluster  *types.ManagedObjectReference // nil for a host outside a cluster
	timeout  time.Duration
	pending  []string
	progress func(string)
}

// rebootInTurn is RebootHost once the host's turn in its cluster has come.
func (c *Client) rebootInTurn(ctx context.Context, req rebootRequest) error {
	hostID := req.ref.Value
	// From here until the host is out of maintenance mode, no change of
	// this client to the host's VMs runs.
	releaseGate, err := c.hostGates.hold(ctx, hostID)
	if err != nil {
		return translate(req.op, err)
	}
	defer releaseGate()
	if req.pending != nil {
		still, err := c.PendingDeviceChanges(ForChange(ctx), hostID)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(req.pending, func(id string) bool { return slices.Contains(still, id) }) {
			req.progress("not rebooted: another reboot of this apply has made the change active")
			return nil
		}
	}
	// The host as the reboots before this one left it, read again with the
	// VMs started or moved onto it, and DRS settings changed, since the plan
	// checked: maintenance mode would wait the whole timeout for a VM that
	// cannot move, and fail with the host half-drained.
	current, err := c.PlanHostReboot(ForChange(ctx), hostID)
	if err != nil {
		return err
	}
	if !current.InMaintenanceMode && len(current.Stuck) > 0 {
		return &Error{Op: req.op, Kind: ErrInvalidState, Object: ObjectHost, ID: hostID, Message: fmt.Sprintf(
			"host %s was not rebooted: its running virtual machines %s would keep it from entering maintenance mode (%s)",
			req.name, strings.Join(vmNames(current.Stuck), ", "), current.Why)}
	}
	r := &reboot{
		c:       c,
		ctx:     ctx,
		op:      req.op,
		name:    req.name,
		timeout: req.timeout,
		start:   time.Now(),
		host:    object.NewHostSystem(req.vc, req.ref),
		cluster: req.cluster,
	}
	rctx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()
	entered := false
	if !current.InMaintenanceMode {
		req.progress("entering maintenance mode")
		if err := r.enterMaintenance(rctx); err != nil {
			return err
		}
		entered = true
	} else {
		req.progress("the host is in maintenance mode already, and stays in it")
	}
	booted := time.Now()
	if current.BootTime != nil {
		booted = *current.BootTime
	}
	req.progress("rebooting")
	// The host's tasks before the call: one whose answer is lost finds the
	// reboot it started, if it did, among those not listed here.
	var before mo.ManagedEntity
	err = c.readObjectAs(rctx, req.vc, req.ref, []string{"recentTask"}, &before, fresh)
	var task *object.Task
	if err == nil {
		var res *types.RebootHost_TaskResponse
		if res, err = methods.RebootHost_Task(rctx, req.vc, &types.RebootHost_Task{This: req.ref}); err == nil {
			task = object.NewTask(req.vc, res.Returnval)
		} else if answerLost(err) {
			// The host may be going down, and would refuse to leave
			// maintenance mode: the reboot's task says.
			if started, ferr := c.startedTask(rctx, req.vc, req.ref, before.RecentTask); ferr == nil && started != nil {
				task, err = started, nil
			}
		}
	}
	if err == nil {
		_, err = c.waitTask(rctx, "rebooting host "+req.name, task)
	}
	if err != nil {
		cause := r.failed(rctx, "rebooting", err)
		if entered {
			return r.leaveMaintenance(cause, false)
		}
		return cause
	}
	req.progress("waiting for the host to be back")
	for i := 0; ; i++ {
		var now mo.HostSystem
		err := c.readObjectAs(rctx, req.vc, req.ref, []string{"runtime"}, &now, fresh)
		if err == nil && now.Runtime.ConnectionState == types.HostSystemConnectionStateConnected &&
			now.Runtime.BootTime != nil && now.Runtime.BootTime.After(booted) {
			break
		}
		select {
		case <-time.After(min(100*time.Millisecond<<min(i, 6), 5*time.Second)):
		case <-rctx.Done():
			state := string(now.Runtime.ConnectionState)
			if state == "" {
				state = "not read"
			}
			if ctx.Err() != nil { // the apply was cancelled, not out of time
				return &Error{Op: req.op, Kind: ErrInvalidState, Cause: ctx.Err(), Message: fmt.Sprintf(
					"the wait for host %s to come back from its reboot was interrupted after %s (connection state: %s); it stays in "+
						"maintenance mode", req.name, r.elapsed(), state)}
			}
			return &Error{Op: req.op, Kind: ErrInvalidState, Cause: ErrRebootTimedOut, Message: fmt.Sprintf(
				"host %s was rebooted and is not back after %s (connection state: %s); it stays in maintenance mode", req.name, req.timeout, state)}
		}
	}
	if !entered {
		return nil
	}
	req.progress("leaving maintenance mode")
	return r.leaveMaintenance(nil, false)
}

// reboot is one host's reboot under way.
type reboot struct {
	c       *Client
	ctx     context.Context // the caller's: done when the apply is cancelled
	op      string
	name    string
	timeout time.Duration
	start   time.Time
	host    *object.HostSystem
	cluster *types.ManagedObjectReference // nil for a host outside a cluster
}

func (r *reboot) elapsed() time.Duration { return time.Since(r.start).Round(time.Second) }

// enterMaintenance puts the host in maintenance mode within rctx, the
// reboot's time. When that fails after vCenter may have started the task
// (the apply cancelled, the time out, a read of the task failed), the task
// is cancelled and the host taken out again if it got there: the task would
// otherwise go on and leave the host in maintenance mode with nobody to
// take it out.
func (r *reboot) enterMaintenance(rctx context.Context) error {
	const step = "entering maintenance mode"
	if rctx.Err() != nil { // no time left: vCenter is not asked
		return r.failed(rctx, step, rctx.Err())
	}
	t, err := r.host.EnterMaintenanceMode(rctx, maintenanceTimeout(time.Until(deadlineOf(rctx))), false, nil)
	if err != nil {
		cause := r.failed(rctx, step, err)
		if soap.IsSoapFault(err) {
			return cause // refused: no task was started
		}
		// The call may have reached vCenter: a task may run that no one
		// has a reference to.
		return r.leaveMaintenance(cause, true)
	}
	if r.cluster != nil {
		// Another reboot may have looked at the cluster when this one did.
		hosts, mine, err := r.c.clusterMaintenance(rctx, r.host.Client(), *r.cluster, types.NewReference(t.Reference()))
		if err == nil && mine != nil && len(aheadOf(hosts, r.host.Reference(), mine)) > 0 {
			return r.leaveMaintenance(errGaveWay, !r.cancelTask(t))
		}
	}
	info, err := r.c.waitTask(rctx, step+" on host "+r.name, t)
	if err == nil {
		return nil
	}
	cause := r.failed(rctx, step, err)
	if info != nil {
		return r.leaveMaintenance(cause, false) // the task has ended
	}
	return r.leaveMaintenance(cause, !r.cancelTask(t))
}

// maintenanceTimeout is vCenter's own bound on entering maintenance mode,
// what is left of the reboot's time: whole seconds, at least one (zero is
// no bound), at most what its int32 holds.
func maintenanceTimeout(left time.Duration) int32 {
	return int32(min(max(left.Seconds(), 1), math.MaxInt32))
}

// cancelTask cancels a task that may still be running and waits for it to
// end, on time of its own (the caller's may be spent), and reports whether
// it has ended.
func (r *reboot) cancelTask(t *object.Task) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), leaveMaintenanceTimeout)
	defer cancel()
	// InvalidState: it has ended already. Any other failure: the wait says
	// whether it ends.
	_ = t.Cancel(ctx)
	info, err := r.c.waitTask(ctx, "cancelling maintenance mode on host "+r.name, t)
	return err == nil || info != nil
}

// failed words a step's failure: the apply cancelled, the reboot's time
// run out (vCenter's Timedout for the bound it was given, or the wait's),
// or what vCenter said.
func (r *reboot) failed(rctx context.Context, step string, err error) error {
	switch {
	case r.ctx.Err() != nil:
		return &Error{Op: r.op, Kind: ErrInvalidState, Cause: r.ctx.Err(), Message: fmt.Sprintf(
			"the reboot of host %s was interrupted after %s, while %s", r.name, r.elapsed(), step)}
	case rctx.Err() != nil || fault.Is(err, &types.Timedout{}):
		return &Error{Op: r.op, Kind: ErrInvalidState, Cause: ErrRebootTimedOut, Message: fmt.Sprintf(
			"host %s did not finish %s within the reboot's time of %s", r.name, step, r.timeout)}
	}
	return translate(r.op, err)
}

// leaveMaintenanceTimeout bounds cancelling maintenance mode, and taking a
// host out of it, after the reboot's own time has run out or the apply was
// cancelled.
const leaveMaintenanceTimeout = 2 * time.Minute

// leaveMaintenance takes a host this reboot put in maintenance mode out of
// it, after the reboot (cause nil) or after a failure (cause), on time of
// its own: a host must not stay in maintenance mode because a step failed
// or the apply was cancelled. mayEnter says an EnterMaintenanceMode task may
// still be running, so a host not in maintenance mode now may be later.
// When it cannot take the host out, or be sure, the error says so and what
// to do.
func (r *reboot) leaveMaintenance(cause error, mayEnter bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), leaveMaintenanceTimeout)
	defer cancel()
	mayBeLeft := func(why error) error {
		return &Error{Op: r.op, Kind: ErrInvalidState, Cause: cause, Message: fmt.Sprintf(
			"%s; host %s may be left in maintenance mode: its Enter Maintenance Mode task could not be confirmed cancelled (%s). "+
				"In vCenter, cancel that task if it still runs (the host's Monitor > Tasks), and if the host is in maintenance "+
				"mode, take it out (right-click the host > Maintenance Mode > Exit Maintenance Mode)", messageOf(cause), r.name, messageOf(why))}
	}
	if cause != nil { // entering may have failed before the host was in it
		var now mo.HostSystem
		err := r.c.readObjectAs(ctx, r.host.Client(), r.host.Reference(), []string{"runtime.inMaintenanceMode"}, &now, fresh)
		if err == nil && !now.Runtime.InMaintenanceMode {
			if mayEnter {
				return mayBeLeft(errors.New("it was not seen to end"))
			}
			return cause
		}
	}
	exit := func() error {
		t, err := r.host.ExitMaintenanceMode(ctx, 0)
		if err == nil {
			_, err = r.c.waitTask(ctx, "leaving maintenance mode on host "+r.name, t)
		}
		return err
	}
	err := exit()
	if answerLost(err) {
		// The call may not have reached vCenter, or its task may run: once
		// the host's tasks have ended, the host is out, or is asked again.
		r.c.settle(ctx, r.host.Client(), r.host.Reference())
		var now mo.HostSystem
		if rerr := r.c.readObjectAs(ctx, r.host.Client(), r.host.Reference(), []string{"runtime.inMaintenanceMode"}, &now, fresh); rerr == nil {
			err = nil
			if now.Runtime.InMaintenanceMode {
				err = exit()
			}
		}
	}
	switch {
	case err != nil && mayEnter:
		return mayBeLeft(translate(r.op, err))
	case err != nil && cause != nil:
		return &Error{Op: r.op, Kind: ErrInvalidState, Cause: cause, Message: fmt.Sprintf(
			"%s; host %s is still in maintenance mode: %s. Take it out in vCenter once it is connected", messageOf(cause), r.name,
			messageOf(translate(r.op, err)))}
	case err != nil:
		return &Error{Op: r.op, Kind: ErrInvalidState, Cause: err, Message: fmt.Sprintf(
			"host %s was rebooted and is back, and is still in maintenance mode: %s. Take it out in vCenter", r.name,
			messageOf(translate(r.op, err)))}
	}
	return cause
}

// messageOf is an error's text without the operation an *Error starts with,
// for a message that goes on inside another of the same operation.
func messageOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	var f *faultError
	if errors.As(err, &f) {
		return f.msg
	}
	return err.Error()
}

// readHostForReboot reads what a reboot needs of a host, fresh.
func (c *Client) readHostForReboot(ctx context.Context, vc *vim25.Client, ref types.ManagedObjectReference, h *mo.HostSystem) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	return c.readObjectAs(ctx, vc, ref, []string{"name", "parent", "runtime"}, h, fresh)
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
