package vsphere

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A host's reboot waits for its turn: this client's changes to the host's
// VMs (hostGates), and the other hosts of its cluster as vCenter shows them
// (waitClusterTurn).

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
func (c *Client) clusterMaintenance(
	ctx context.Context,
	vc *vim25.Client,
	cluster types.ManagedObjectReference,
	mine *types.ManagedObjectReference,
) (map[types.ManagedObjectReference]*hostMaintenance, *enterTask, error) {
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
// request's cluster is in maintenance mode or entering it, for at most its
// timeout; its progress is told which hosts it waits for.
func (c *Client) waitClusterTurn(ctx context.Context, req rebootRequest) error {
	deadline := time.Now().Add(req.timeout)
	said := ""
	for i := 0; ; i++ {
		hosts, _, err := c.clusterMaintenance(ctx, req.vc, *req.cluster, nil)
		if err != nil {
			return translate(req.op+": reading the maintenance mode of its cluster's hosts", err)
		}
		ahead := aheadOf(hosts, req.ref, nil)
		if len(ahead) == 0 {
			return nil
		}
		waiting := strings.Join(ahead, ", ")
		if waiting != said {
			req.progress(fmt.Sprintf("waiting for host %s of its cluster to leave maintenance mode: hosts of a cluster reboot one at a time", waiting))
			said = waiting
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &Error{Op: req.op, Kind: ErrInvalidState, Object: ObjectHost, ID: req.ref.Value, Cause: ErrRebootTurnTimedOut, Message: fmt.Sprintf(
				"host %s was not rebooted: host %s of its cluster was in maintenance mode, or entering it, for the %s its reboot may wait "+
					"for its turn (hosts of a cluster reboot one at a time, whichever run or client takes them there)", req.name, waiting, req.timeout)}
		}
		select {
		case <-time.After(min(250*time.Millisecond<<min(i, 6), 15*time.Second, left)):
		case <-ctx.Done():
			return &Error{Op: req.op, Kind: ErrInvalidState, Cause: ctx.Err(), Message: fmt.Sprintf(
				"the reboot of host %s was interrupted while it waited for host %s of its cluster to leave maintenance mode", req.name, waiting)}
		}
	}
}
