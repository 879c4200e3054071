package vcsimlab

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Waits on a property collector. vSphere handles the WaitForUpdates,
// WaitForUpdatesEx and CheckForUpdates calls made to one collector "on the
// server serially", and warns that concurrent calls "may cause suspended
// change calculations to be discarded" (vSphere Web Services API,
// PropertyCollector.CreatePropertyCollector and WaitForUpdatesEx). A client
// that waits for every task on the session's one collector, as the vSphere
// provider does with govmomi's Task.WaitForResultEx (documented there as
// not thread safe), may so wait until its context ends: the Kubernetes
// vSphere CSI driver met that on a real vCenter (its pull request #3182).
// What vCenter does not do is drop the call. vcsim's WaitForUpdatesEx
// (simulator/property_collector.go) looks up each filter of the collector
// with an unchecked type assertion and panics when another call destroyed
// the filter meanwhile; it also waits on a context of its own, which
// nothing ends when the server closes. The lab runs vcsim's wait so that
// such a panic discards that calculation and the wait goes on, and ends
// every wait still running when the lab closes, so Close, and the lab
// command's SIGTERM, never wait for a client's wait.

// WaitForUpdatesEx runs vcsim's wait, again after a panic, until it answers
// or the lab closes (RequestCanceled, as CancelWaitForUpdates ends a wait).
func (x *extension) WaitForUpdatesEx(ctx *simulator.Context, req *types.WaitForUpdatesEx) soap.HasFault {
	body := new(methods.WaitForUpdatesExBody)
	// The root collector is each session's own (vcsim's Session.Get): the
	// session's filters are on that one, not on the registry's.
	var pc *simulator.PropertyCollector
	if ctx.Session != nil {
		pc, _ = ctx.Session.Get(req.This).(*simulator.PropertyCollector)
	}
	if pc == nil {
		body.Fault_ = notFoundFault(req.This)
		return body
	}
	answer := make(chan soap.HasFault, 1)
	go func() {
		for {
			if res, ok := waitOnce(ctx, pc, req); ok {
				answer <- res
				return
			}
			select {
			case <-x.closing:
				return
			default:
			}
		}
	}()
	select {
	case res := <-answer:
		return res
	case <-x.closing:
		body.Fault_ = simulator.Fault("", &types.RequestCanceled{})
		return body
	}
}

// waitOnce is one run of vcsim's wait; false when it panicked on a filter
// destroyed during it.
func waitOnce(ctx *simulator.Context, pc *simulator.PropertyCollector, req *types.WaitForUpdatesEx) (res soap.HasFault, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return pc.WaitForUpdatesEx(ctx, req), true
}
