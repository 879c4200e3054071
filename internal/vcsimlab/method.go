package vcsimlab

import (
	"fmt"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// What every method the lab implements is made of: find the object the call
// names, refuse with the fault vCenter sends, answer with a task.

// target is the prologue of the lab's methods: the object of type T that a
// call names in This (the request body's; Lab.handle points the call itself
// at the extension). When This is no such object, it sets *fault to the
// ManagedObjectNotFound fault vCenter answers and returns false.
func target[T any](ctx *simulator.Context, this types.ManagedObjectReference, fault **soap.Fault) (T, bool) {
	obj, ok := ctx.Map.Get(this).(T)
	if !ok {
		*fault = notFoundFault(this)
	}
	return obj, ok
}

// notFoundFault is the SOAP fault of a call on an object that does not
// exist.
func notFoundFault(ref types.ManagedObjectReference) *soap.Fault {
	return simulator.Fault("", &types.ManagedObjectNotFound{Obj: ref})
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

// objectGone refuses a spec that names an object that does not exist.
func objectGone(ref types.ManagedObjectReference) *vimError {
	return refuse(&types.ManagedObjectNotFound{Obj: ref}, "The object '%s' has already been deleted or has not been completely created", ref)
}

// inUse refuses to take away a resource that something still uses.
func inUse(kind, name string) *vimError {
	return refuse(&types.ResourceInUse{Type: kind, Name: name}, "The resource '%s' is in use.", name)
}

// faultName is the vSphere name of a fault, for messages.
func faultName(f types.BaseMethodFault) string {
	s := fmt.Sprintf("%T", f)
	return s[strings.LastIndex(s, ".")+1:]
}

// failedTask registers a task that has already failed with fault: what
// vCenter returns when it refuses an operation after accepting the call.
func failedTask(
	ctx *simulator.Context,
	obj types.ManagedObjectReference,
	method string,
	fault types.BaseMethodFault,
	msg string,
) types.ManagedObjectReference {
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
