package vsphere

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
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

// HostReboot is what rebooting a host for a change takes.
type HostReboot struct {
	HostID, HostName string
	// Needed: the host applies passthrough and SR-IOV changes only when it
	// reboots (no capability.deviceRebindWithoutRebootSupported).
	Needed bool
	// Stuck are the running VMs maintenance mode would wait for forever,
	// and Why says why they cannot move.
	Stuck []VMRef
	Why   string
	// InMaintenanceMode and BootTime are the host's now (BootTime nil when
	// vCenter reports none).
	InMaintenanceMode bool
	BootTime          *time.Time
}

// PlanHostReboot reads, in one round trip, whether a host needs a reboot to
// apply device changes and which of its running VMs would keep it from
// entering maintenance mode: all of them when no other host can take them,
// those DRS does not move on its own (the cluster's automation level, or the
// VM's override of it, is not fully automated), and those with a
// passthrough or SR-IOV device (which cannot be migrated).
func (c *Client) PlanHostReboot(ctx context.Context, hostID string) (*HostReboot, error) {
	op := "checking a reboot of host " + hostID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	host := types.ManagedObjectReference{Type: "HostSystem", Value: hostID}
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: host, SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "HostSystem", Path: "vm"},
			&types.TraversalSpec{Type: "HostSystem", Path: "parent", SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{Type: "ComputeResource", Path: "host"},
			}},
		}}},
		PropSet: []types.PropertySpec{
			{Type: "HostSystem", PathSet: []string{"name", "parent", "runtime", "capability.deviceRebindWithoutRebootSupported"}},
			{Type: "ClusterComputeResource", PathSet: []string{"configurationEx"}},
			{Type: "VirtualMachine", PathSet: []string{"name", "config.uuid", "runtime.powerState", "runtime.host", "config.hardware.device", "config.managedBy"}},
		},
	})
	if errors.Is(translate(op, err), ErrNotFound) {
		return nil, c.notFoundError(ctx, vc, op, ObjectHost, hostID)
	}
	if err != nil {
		return nil, translate(op, err)
	}
	var self *mo.HostSystem
	var others []mo.HostSystem
	var vms []mo.VirtualMachine
	var drs drsLevels
	for _, o := range objs {
		switch v := o.(type) {
		case mo.HostSystem:
			if v.Self == host {
				self = &v
			} else {
				others = append(others, v)
			}
		case mo.ClusterComputeResource:
			if cfg, ok := v.ConfigurationEx.(*types.ClusterConfigInfoEx); ok {
				drs = drsLevels{cfg}
			}
		case mo.VirtualMachine:
			vms = append(vms, v)
		}
	}
	if self == nil {
		return nil, c.notFoundError(ctx, vc, op, ObjectHost, hostID)
	}
	out := &HostReboot{HostID: hostID, HostName: self.Name, Needed: true,
		InMaintenanceMode: self.Runtime.InMaintenanceMode, BootTime: self.Runtime.BootTime}
	if cp := self.Capability; cp != nil && cp.DeviceRebindWithoutRebootSupported != nil {
		out.Needed = !*cp.DeviceRebindWithoutRebootSupported
	}
	spare := false
	for _, o := range others {
		spare = spare || (!o.Runtime.InMaintenanceMode && o.Runtime.ConnectionState == types.HostSystemConnectionStateConnected)
	}
	var why []string
	for i := range vms {
		vm := &vms[i]
		if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn || vm.Runtime.Host == nil || *vm.Runtime.Host != host ||
			isAgentVM(vm) {
			continue
		}
		reason := ""
		switch {
		case !drs.on():
			reason = "the cluster's DRS is not fully automated, so maintenance mode moves no VM"
		case !spare:
			reason = "no other host of the cluster can take its VMs"
		case vm.Config != nil && hasPassthrough(vm.Config.Hardware.Device):
			reason = "a VM with a PCI passthrough or SR-IOV device cannot be migrated"
		case !drs.moves(vm.Self):
			reason = "DRS moves no VM whose automation level is not fully automated (the cluster's, or the VM's override " +
				"of it in the cluster's VM Overrides)"
		default:
			continue
		}
		out.Stuck = append(out.Stuck, vmRefOf(vm))
		if !slices.Contains(why, reason) {
			why = append(why, reason)
		}
	}
	out.Why = strings.Join(why, "; ")
	return out, nil
}

// isAgentVM reports one of ESX Agent Manager's VMs, such as the vSphere
// Cluster Services VMs every host of a cluster runs since vSphere 7.0 U1:
// vCenter stops them itself for maintenance mode ("vCLS normally stops
// automatically—allowing the host to enter maintenance mode", Broadcom KB
// 403400), whatever DRS and their overrides say.
func isAgentVM(vm *mo.VirtualMachine) bool {
	return vm.Config != nil && vm.Config.ManagedBy != nil && vm.Config.ManagedBy.ExtensionKey == "com.vmware.vim.eam"
}

// drsLevels is a cluster's DRS configuration: its automation level and the
// VMs' overrides of it (vSphere API reference, ClusterDrsVmConfigInfo).
type drsLevels struct{ cfg *types.ClusterConfigInfoEx }

// on reports whether DRS moves any VM on its own: it is enabled, and the
// cluster's level or some VM's override of it is fully automated.
func (d drsLevels) on() bool {
	if d.cfg == nil || d.cfg.DrsConfig.Enabled == nil || !*d.cfg.DrsConfig.Enabled {
		return false
	}
	if d.cfg.DrsConfig.DefaultVmBehavior == types.DrsBehaviorFullyAutomated {
		return true
	}
	for _, o := range d.cfg.DrsVmConfig {
		if o.Behavior == types.DrsBehaviorFullyAutomated && (o.Enabled == nil || *o.Enabled) {
			return true
		}
	}
	return false
}

// moves reports whether DRS moves vm off a host entering maintenance mode
// on its own: its override's level when it has one ("enabled: ... If this
// flag is false, the virtual machine is effectively excluded from DRS"),
// else the cluster's.
func (d drsLevels) moves(vm types.ManagedObjectReference) bool {
	if !d.on() {
		return false
	}
	for _, o := range d.cfg.DrsVmConfig {
		if o.Key != vm {
			continue
		}
		if o.Enabled != nil && !*o.Enabled {
			return false
		}
		if o.Behavior != "" {
			return o.Behavior == types.DrsBehaviorFullyAutomated
		}
	}
	return d.cfg.DrsConfig.DefaultVmBehavior == types.DrsBehaviorFullyAutomated
}

// hasPassthrough reports a DirectPath I/O or SR-IOV device: vSphere
// migrates no VM that has one.
func hasPassthrough(devices []types.BaseVirtualDevice) bool {
	for _, d := range devices {
		switch d.(type) {
		case *types.VirtualPCIPassthrough, *types.VirtualSriovEthernetCard:
			return true
		}
	}
	return false
}

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
	for {
		if cluster != nil {
			if err := c.waitClusterTurn(ctx, vc, op, h.Name, *cluster, ref, timeout, progress); err != nil {
				return err
			}
		}
		err := c.rebootInTurn(ctx, vc, op, h.Name, ref, cluster, timeout, pending, progress)
		if err != errGaveWay { // itself: one wrapped in a failure to leave maintenance mode is a failure
			return err
		}
		progress("another host of its cluster started entering maintenance mode first: out of maintenance mode, waiting for it")
	}
}

// rebootInTurn is RebootHost once the host's turn in its cluster has come.
func (c *Client) rebootInTurn(ctx context.Context, vc *vim25.Client, op, name string, ref types.ManagedObjectReference,
	cluster *types.ManagedObjectReference, timeout time.Duration, pending []string, progress func(string)) error {
	hostID := ref.Value
	// From here until the host is out of maintenance mode, no change of
	// this client to the host's VMs runs.
	releaseGate, err := c.hostGates.hold(ctx, hostID)
	if err != nil {
		return translate(op, err)
	}
	defer releaseGate()
	if pending != nil {
		still, err := c.PendingDeviceChanges(ForChange(ctx), hostID)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(pending, func(id string) bool { return slices.Contains(still, id) }) {
			progress("not rebooted: another reboot of this apply has made the change active")
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
		return &Error{Op: op, Kind: ErrInvalidState, Object: ObjectHost, ID: hostID, Message: fmt.Sprintf(
			"host %s was not rebooted: its running virtual machines %s would keep it from entering maintenance mode (%s)",
			name, strings.Join(vmNames(current.Stuck), ", "), current.Why)}
	}
	r := &reboot{c: c, ctx: ctx, op: op, name: name, timeout: timeout, start: time.Now(), host: object.NewHostSystem(vc, ref), cluster: cluster}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	entered := false
	if !current.InMaintenanceMode {
		progress("entering maintenance mode")
		if err := r.enterMaintenance(rctx); err != nil {
			return err
		}
		entered = true
	} else {
		progress("the host is in maintenance mode already, and stays in it")
	}
	booted := time.Now()
	if current.BootTime != nil {
		booted = *current.BootTime
	}
	progress("rebooting")
	// The host's tasks before the call: one whose answer is lost finds the
	// reboot it started, if it did, among those not listed here.
	var before mo.ManagedEntity
	err = c.readObjectAs(rctx, vc, ref, []string{"recentTask"}, &before, fresh)
	var task *object.Task
	if err == nil {
		var res *types.RebootHost_TaskResponse
		if res, err = methods.RebootHost_Task(rctx, vc, &types.RebootHost_Task{This: ref}); err == nil {
			task = object.NewTask(vc, res.Returnval)
		} else if answerLost(err) {
			// The host may be going down, and would refuse to leave
			// maintenance mode: the reboot's task says.
			if started, ferr := c.startedTask(rctx, vc, ref, before.RecentTask); ferr == nil && started != nil {
				task, err = started, nil
			}
		}
	}
	if err == nil {
		_, err = c.waitTask(rctx, "rebooting host "+name, task)
	}
	if err != nil {
		cause := r.failed(rctx, "rebooting", err)
		if entered {
			return r.leaveMaintenance(cause, false)
		}
		return cause
	}
	progress("waiting for the host to be back")
	for i := 0; ; i++ {
		var now mo.HostSystem
		err := c.readObjectAs(rctx, vc, ref, []string{"runtime"}, &now, fresh)
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
				return &Error{Op: op, Kind: ErrInvalidState, Cause: ctx.Err(), Message: fmt.Sprintf(
					"the wait for host %s to come back from its reboot was interrupted after %s (connection state: %s); it stays in "+
						"maintenance mode", name, r.elapsed(), state)}
			}
			return &Error{Op: op, Kind: ErrInvalidState, Cause: ErrRebootTimedOut, Message: fmt.Sprintf(
				"host %s was rebooted and is not back after %s (connection state: %s); it stays in maintenance mode", name, timeout, state)}
		}
	}
	if !entered {
		return nil
	}
	progress("leaving maintenance mode")
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

// hostGates keep a host's reboot and this client's changes to its VMs
// apart: a VM's change fails while its host is in maintenance mode or down,
// and one under way when maintenance mode starts keeps the host from it (a
// VM being powered back on) or is cut off. Changes share a host's gate; a
// reboot holds it alone, from before maintenance mode until the host is out
// of it, and once a reboot waits for it no new change starts.
type hostGates struct {
	mu    sync.Mutex
	gates map[string]*hostGate
}

type hostGate struct {
	changes int  // VM changes under way
	reboot  bool // a reboot holds the gate
	queued  int  // reboots waiting for it
	changed chan struct{}
}

func (g *hostGates) gate(hostID string) *hostGate {
	if g.gates == nil {
		g.gates = map[string]*hostGate{}
	}
	gt := g.gates[hostID]
	if gt == nil {
		gt = &hostGate{changed: make(chan struct{})}
		g.gates[hostID] = gt
	}
	return gt
}

// wake tells the waiters that the gate changed; g.mu is held.
func (gt *hostGate) wake() {
	close(gt.changed)
	gt.changed = make(chan struct{})
}

// share waits until no reboot of the host holds the gate or waits for it,
// or ctx ends, and takes a share; waited says whether it had to wait.
func (g *hostGates) share(ctx context.Context, hostID string) (release func(), waited bool, err error) {
	g.mu.Lock()
	gt := g.gate(hostID)
	for gt.reboot || gt.queued > 0 {
		ch := gt.changed
		g.mu.Unlock()
		waited = true
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, waited, ctx.Err()
		}
		g.mu.Lock()
	}
	gt.changes++
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		gt.changes--
		gt.wake()
	}, waited, nil
}

// hold waits for the changes under way, keeping new ones out, then holds
// the gate alone, or gives up when ctx ends.
func (g *hostGates) hold(ctx context.Context, hostID string) (release func(), err error) {
	g.mu.Lock()
	gt := g.gate(hostID)
	gt.queued++
	for gt.reboot || gt.changes > 0 {
		ch := gt.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			g.mu.Lock()
			gt.queued--
			gt.wake()
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		g.mu.Lock()
	}
	gt.queued--
	gt.reboot = true
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		gt.reboot = false
		gt.wake()
	}, nil
}

// Hosts of one cluster reboot one at a time across every run, not only
// within this client: separate workspaces, and aliases of one provider,
// have clients of their own. vSphere has no cluster-wide lock, but what a
// queue needs every session sees: each host's runtime.inMaintenanceMode,
// and its EnterMaintenanceMode tasks in its recentTask ("The set of recent
// tasks operating on this managed entity", vSphere API reference,
// ManagedEntity; a task's queueTime from vCenter's one clock). A reboot
// waits, before maintenance mode, until no other host of its cluster is in
// it or entering it. Once its own task is queued it looks again: of two
// reboots that looked at once, the later task (by queueTime, then key)
// gives way, cancelling its task and leaving maintenance mode if it got
// there, and waits again. Only that later host can have been in
// maintenance mode beside the other, for as long as it took to see it.

// errGaveWay is what a reboot that gave way to an earlier host of its
// cluster returns, once back out of maintenance mode: it waits again.
var errGaveWay = errors.New("another host of the cluster started entering maintenance mode first")

// ErrRebootTurnTimedOut is the Cause of a reboot that did not get its turn
// in its cluster within the time it was given.
var ErrRebootTurnTimedOut = errors.New("the reboot's turn did not come in time")

// enterTask is an EnterMaintenanceMode task of a host of the cluster.
type enterTask struct {
	ref    types.ManagedObjectReference
	queued time.Time
}

// before orders tasks as every client of the cluster orders them.
func (t enterTask) before(o enterTask) bool {
	return t.queued.Before(o.queued) || (t.queued.Equal(o.queued) && t.ref.Value < o.ref.Value)
}

// hostMaintenance is a host of a cluster as a reboot waiting for its turn
// sees it.
type hostMaintenance struct {
	ref           types.ManagedObjectReference
	name          string
	inMaintenance bool
	entering      []enterTask // its EnterMaintenanceMode tasks queued or running
	entered       *enterTask  // the last of them that succeeded, when still listed
}

// enterMaintenanceID is EnterMaintenanceMode_Task's TaskInfo.descriptionId,
// a key of vCenter's TaskManager.description.methodInfo (as govmomi's
// simulator/vpx/task_manager.go records a vCenter's).
const enterMaintenanceID = "HostSystem.enterMaintenanceMode"

// clusterMaintenance reads the cluster's hosts and their EnterMaintenanceMode
// tasks in one round trip, and the task mine (nil: none) with them.
func (c *Client) clusterMaintenance(ctx context.Context, vc *vim25.Client, cluster types.ManagedObjectReference, mine *types.ManagedObjectReference) (map[types.ManagedObjectReference]*hostMaintenance, *enterTask, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	spec := types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: cluster, Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "ComputeResource", Path: "host", SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{Type: "HostSystem", Path: "recentTask"},
			}},
		}}},
		PropSet: []types.PropertySpec{
			{Type: "HostSystem", PathSet: []string{"name", "runtime.inMaintenanceMode"}},
			{Type: "Task", PathSet: []string{"info"}},
		},
	}
	if mine != nil {
		spec.ObjectSet = append(spec.ObjectSet, types.ObjectSpec{Obj: *mine})
	}
	objs, err := retrieve(ctx, vc, spec)
	if err != nil {
		return nil, nil, err
	}
	hosts := map[types.ManagedObjectReference]*hostMaintenance{}
	var tasks []types.TaskInfo
	for _, o := range objs {
		switch v := o.(type) {
		case mo.HostSystem:
			hosts[v.Self] = &hostMaintenance{ref: v.Self, name: v.Name, inMaintenance: v.Runtime.InMaintenanceMode}
		case mo.Task:
			tasks = append(tasks, v.Info)
		}
	}
	var own *enterTask
	for _, info := range tasks {
		if info.DescriptionId != enterMaintenanceID || info.Entity == nil {
			continue
		}
		t := enterTask{ref: info.Task, queued: info.QueueTime}
		if mine != nil && info.Task == *mine {
			own = &t
		}
		h := hosts[*info.Entity]
		switch {
		case h == nil:
		case info.State == types.TaskInfoStateQueued || info.State == types.TaskInfoStateRunning:
			h.entering = append(h.entering, t)
		case info.State == types.TaskInfoStateSuccess && (h.entered == nil || h.entered.before(t)):
			h.entered = &t
		}
	}
	return hosts, own, nil
}

// aheadOf lists, by name, the hosts of the cluster other than self whose
// maintenance mode comes before self's: in it, or entering it, before mine
// (self's own task, nil before it has one). Nothing comes before a host in
// maintenance mode already: its reboot takes nothing more down.
func aheadOf(hosts map[types.ManagedObjectReference]*hostMaintenance, self types.ManagedObjectReference, mine *enterTask) []string {
	if h := hosts[self]; h != nil && h.inMaintenance && mine == nil {
		return nil
	}
	var out []string
	for ref, h := range hosts {
		if ref == self {
			continue
		}
		earlier := func(t enterTask) bool { return mine == nil || t.before(*mine) }
		ahead := slices.ContainsFunc(h.entering, earlier)
		// In maintenance mode by a task after mine: it gives way to this
		// one. Without a task listed, it was there before.
		ahead = ahead || (h.inMaintenance && (h.entered == nil || earlier(*h.entered)))
		if ahead {
			out = append(out, fmt.Sprintf("%s (%s)", h.name, ref.Value))
		}
	}
	slices.Sort(out)
	return out
}

// waitClusterTurn waits, polling vCenter, until no other host of the
// cluster is in maintenance mode or entering it, for at most bound; progress
// is told which hosts it waits for.
func (c *Client) waitClusterTurn(ctx context.Context, vc *vim25.Client, op, name string, cluster, self types.ManagedObjectReference,
	bound time.Duration, progress func(string)) error {
	deadline := time.Now().Add(bound)
	said := ""
	for i := 0; ; i++ {
		hosts, _, err := c.clusterMaintenance(ctx, vc, cluster, nil)
		if err != nil {
			return translate(op+": reading the maintenance mode of its cluster's hosts", err)
		}
		ahead := aheadOf(hosts, self, nil)
		if len(ahead) == 0 {
			return nil
		}
		waiting := strings.Join(ahead, ", ")
		if waiting != said {
			progress(fmt.Sprintf("waiting for host %s of its cluster to leave maintenance mode: hosts of a cluster reboot one at a time", waiting))
			said = waiting
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &Error{Op: op, Kind: ErrInvalidState, Object: ObjectHost, ID: self.Value, Cause: ErrRebootTurnTimedOut, Message: fmt.Sprintf(
				"host %s was not rebooted: host %s of its cluster was in maintenance mode, or entering it, for the %s its reboot may wait "+
					"for its turn (hosts of a cluster reboot one at a time, whichever run or client takes them there)", name, waiting, bound)}
		}
		select {
		case <-time.After(min(250*time.Millisecond<<min(i, 6), 15*time.Second, left)):
		case <-ctx.Done():
			return &Error{Op: op, Kind: ErrInvalidState, Cause: ctx.Err(), Message: fmt.Sprintf(
				"the reboot of host %s was interrupted while it waited for host %s of its cluster to leave maintenance mode", name, waiting)}
		}
	}
}
