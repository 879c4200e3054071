package vcsimlab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// preHooks run before vcsim's own method: they may refuse the call with a
// SOAP fault, or adjust the request.
var preHooks = map[string]func(*Lab, *simulator.Context, *simulator.Method) types.BaseMethodFault{
	"UpdateOptions":                checkOptions,
	"AddDVPortgroup_Task":          setPortgroupVersion,
	"RetrieveProperties":           requireSession,
	"RetrievePropertiesEx":         requireSession,
	"ContinueRetrievePropertiesEx": requireSession,
}

// requireSession refuses property reads without a session with the
// NotAuthenticated fault vCenter sends; vcsim instead answers them with
// NotAuthenticated per object inside the result. Reads of the
// ServiceInstance, which vCenter allows anonymously, are left to vcsim.
func requireSession(_ *Lab, ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	if ctx.Session != nil {
		return nil
	}
	var specs []types.PropertyFilterSpec
	switch req := m.Body.(type) {
	case *types.RetrieveProperties:
		specs = req.SpecSet
	case *types.RetrievePropertiesEx:
		specs = req.SpecSet
	default:
		specs = []types.PropertyFilterSpec{{ObjectSet: []types.ObjectSpec{{Obj: m.This}}}}
	}
	for _, spec := range specs {
		for _, o := range spec.ObjectSet {
			if o.Obj.Type != "ServiceInstance" {
				return &types.NotAuthenticated{NoPermission: types.NoPermission{Object: &o.Obj, PrivilegeId: "System.View"}}
			}
		}
	}
	return nil
}

type callFault struct {
	method, object string
	fault          types.BaseMethodFault
	remaining      int
}

type taskFault struct {
	method, object string
	fault          types.BaseMethodFault
}

// handle runs before vcsim dispatches any SOAP call (Registry.Handler). It
// counts the call, applies injected delays and faults, runs the pre-hook of
// the method, and routes the methods the lab implements to the extension.
func (l *Lab) handle(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	delay, callF, taskF := l.intercept(ctx, m)
	if delay > 0 {
		time.Sleep(delay)
	}
	if callF != nil {
		return nil, callF
	}
	if taskF != nil {
		m.Body = &failTaskRequest{This: m.This, Method: m.Name, Fault: taskF}
		m.Name = "FailTask"
		m.This = l.ext.Self
		return l.ext, nil
	}
	if hook := preHooks[m.Name]; hook != nil {
		if f := hook(l, ctx, m); f != nil {
			return nil, f
		}
	}
	if l.ext.implements(ctx, m) {
		// The extension reads the target from the request body's This.
		m.This = l.ext.Self
		return l.ext, nil
	}
	return nil, nil
}

// intercept counts the call and takes the delay and faults that apply to it.
// Calls of the lab's own client are exempt.
func (l *Lab) intercept(ctx *simulator.Context, m *simulator.Method) (time.Duration, types.BaseMethodFault, types.BaseMethodFault) {
	l.mu.Lock()
	if ctx.Session != nil && ctx.Session.Key == l.adminKey {
		l.mu.Unlock()
		return 0, nil, nil
	}
	l.calls[m.Name]++
	delay := l.delays[m.Name]
	faulty := len(l.callFaults) > 0 || len(l.taskFaults) > 0
	l.mu.Unlock()
	if !faulty {
		return delay, nil, nil
	}

	// Outside l.mu: objectName takes the object's lock.
	name := objectName(ctx, m.This)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, f := range l.callFaults {
		if f.method == m.Name && (f.object == "" || f.object == name) {
			f.remaining--
			if f.remaining <= 0 {
				l.callFaults = append(l.callFaults[:i], l.callFaults[i+1:]...)
			}
			return delay, f.fault, nil
		}
	}
	for i, f := range l.taskFaults {
		if f.method == m.Name && f.object == name {
			l.taskFaults = append(l.taskFaults[:i], l.taskFaults[i+1:]...)
			return delay, nil, f.fault
		}
	}
	return delay, nil, nil
}

// objectName is the name of the entity ref points at, or its moref value for
// objects that are not entities (such as a HostFirewallSystem).
func objectName(ctx *simulator.Context, ref types.ManagedObjectReference) string {
	e, ok := ctx.Map.Get(ref).(mo.Entity)
	if !ok {
		return ref.Value
	}
	var name string
	ctx.WithLock(e, func() { name = e.Entity().Name })
	return name
}

// FailTaskOnce makes the next call of the task method method on the object
// named objectName succeed with a task that fails with fault, without doing
// anything. objectName is an entity name, or a moref value for other objects.
func (l *Lab) FailTaskOnce(method, objectName string, fault types.BaseMethodFault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.taskFaults = append(l.taskFaults, &taskFault{method: method, object: objectName, fault: fault})
}

// FailCall makes the next count calls of method on the object named
// objectName ("" for any object) fail with fault as a SOAP fault.
func (l *Lab) FailCall(method, objectName string, fault types.BaseMethodFault, count int) {
	if count <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.callFaults = append(l.callFaults, &callFault{method: method, object: objectName, fault: fault, remaining: count})
}

// Delay makes every call of method wait d before it runs; 0 removes the delay.
func (l *Lab) Delay(method string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d <= 0 {
		delete(l.delays, method)
		return
	}
	l.delays[method] = d
}

// Calls returns the SOAP calls seen since Start or ResetCalls, by method
// name, from every session but the lab's own client.
func (l *Lab) Calls() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.calls))
	for k, v := range l.calls {
		out[k] = v
	}
	return out
}

// ResetCalls clears the call counts.
func (l *Lab) ResetCalls() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = map[string]int{}
}

// TerminateSessions ends every session except the lab's own, as a vCenter
// restart or a session timeout does.
func (l *Lab) TerminateSessions(ctx context.Context) error {
	var sm mo.SessionManager
	c := l.client.Client
	pc := property.DefaultCollector(c)
	if err := pc.RetrieveOne(ctx, *c.ServiceContent.SessionManager, []string{"sessionList"}, &sm); err != nil {
		return err
	}
	var keys []string
	for _, s := range sm.SessionList {
		if s.Key != l.ownKey() {
			keys = append(keys, s.Key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := methods.TerminateSession(ctx, c, &types.TerminateSession{
		This:      *c.ServiceContent.SessionManager,
		SessionId: keys,
	})
	return err
}

func (l *Lab) ownKey() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.adminKey
}

// failTaskRequest replaces the body of a call that FailTaskOnce targets.
type failTaskRequest struct {
	This   types.ManagedObjectReference
	Method string
	Fault  types.BaseMethodFault
}

// failedTask registers a task that has already failed with fault: what
// vCenter returns when it refuses an operation after accepting the call.
func failedTask(ctx *simulator.Context, obj types.ManagedObjectReference, method string, fault types.BaseMethodFault, msg string) types.ManagedObjectReference {
	t := simulator.CreateTask(obj, strings.TrimSuffix(method, "_Task"), nil)
	now := time.Now()
	t.Info.State = types.TaskInfoStateError
	t.Info.StartTime = &now
	t.Info.CompleteTime = &now
	t.Info.Error = &types.LocalizedMethodFault{Fault: fault, LocalizedMessage: msg}
	ctx.Map.Put(t)
	ctx.Map.AtomicUpdate(ctx, t, []types.PropertyChange{
		{Name: "info.key", Val: t.Self.Value},
		{Name: "info.task", Val: t.Self},
	})
	return t.Self
}

// faultName is the vSphere name of a fault, for messages.
func faultName(f types.BaseMethodFault) string {
	s := fmt.Sprintf("%T", f)
	return s[strings.LastIndex(s, ".")+1:]
}

// vimError is a fault with the message vCenter reports with it.
type vimError struct {
	fault types.BaseMethodFault
	msg   string
}

func refuse(f types.BaseMethodFault, format string, args ...any) *vimError {
	return &vimError{fault: f, msg: fmt.Sprintf(format, args...)}
}

func invalidArgument(property string) *vimError {
	return refuse(&types.InvalidArgument{InvalidProperty: property}, "A specified parameter was not correct: %s", property)
}

// finishTask returns the task of an operation the lab has carried out (or
// refused) synchronously within the call: failed with err, or succeeded with
// result. Clients see no difference from vCenter's asynchronous tasks.
func finishTask(ctx *simulator.Context, obj mo.Reference, method string, result types.AnyType, err *vimError) types.ManagedObjectReference {
	if err != nil {
		return failedTask(ctx, obj.Reference(), method, err.fault, err.msg)
	}
	task := simulator.CreateTask(obj, strings.TrimSuffix(method, "_Task"), func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		return result, nil
	})
	return task.Run(ctx)
}
