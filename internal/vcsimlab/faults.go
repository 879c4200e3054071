package vcsimlab

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

// What tests inject into the lab and what they observe of it: faults of
// calls and tasks, delays, the end of sessions, the fabric's MTUs and dead
// hosts; the calls and the pings seen. The lab's own client is exempt from
// all of it.

type callFault struct {
	method, object string
	fault          types.BaseMethodFault
	remaining      int
	read           bool            // object is a type whose properties a read asks for, not the call's this
	taskEnd        bool            // the reads of the next task read (see FailTaskEndRead)
	task           *simulator.Task // that task, once read
}

type taskFault struct {
	method, object string
	fault          types.BaseMethodFault
}

// intercept counts the call and takes the delay, the hold and the faults
// that apply to it. Calls of the lab's own client are exempt.
func (l *Lab) intercept(ctx *simulator.Context, m *simulator.Method) (time.Duration, <-chan struct{}, types.BaseMethodFault, types.BaseMethodFault) {
	l.mu.Lock()
	if ctx.Session != nil && ctx.Session.Key == l.adminKey {
		l.mu.Unlock()
		return 0, nil, nil, nil
	}
	if m.Name == "CurrentTime" {
		l.keepAlives++
	} else {
		l.calls[m.Name]++
	}
	delay, hold := l.delays[m.Name]+l.latency, l.holds[m.Name]
	faulty := len(l.callFaults) > 0 || len(l.taskFaults) > 0
	l.mu.Unlock()
	if !faulty {
		return delay, hold, nil, nil
	}

	if f := l.taskEndFault(ctx, m); f != nil {
		return delay, hold, f, nil
	}
	// Outside l.mu: objectName takes the object's lock.
	name := objectName(ctx, m.This)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, f := range l.callFaults {
		match := f.method == m.Name && (f.object == "" || f.object == name)
		switch {
		case f.taskEnd:
			continue // taskEndFault
		case f.read:
			match = readsType(m, f.object)
		}
		if match {
			f.remaining--
			if f.remaining <= 0 {
				l.callFaults = append(l.callFaults[:i], l.callFaults[i+1:]...)
			}
			return delay, hold, f.fault, nil
		}
	}
	for i, f := range l.taskFaults {
		if f.method == m.Name && f.object == name {
			l.taskFaults = append(l.taskFaults[:i], l.taskFaults[i+1:]...)
			return delay, hold, nil, f.fault
		}
	}
	return delay, hold, nil, nil
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
	if l.simulatorOnly("FailTaskOnce") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.taskFaults = append(l.taskFaults, &taskFault{method: method, object: objectName, fault: fault})
}

// FailCall makes the next count calls of method on the object named
// objectName ("" for any object) fail with fault as a SOAP fault.
func (l *Lab) FailCall(method, objectName string, fault types.BaseMethodFault, count int) {
	l.addCallFault("FailCall", &callFault{method: method, object: objectName, fault: fault, remaining: count})
}

// FailRead makes the next count property reads (RetrieveProperties,
// RetrievePropertiesEx) that ask for properties of objects of type typ
// ("HostSystem") fail with fault as a SOAP fault, while reads of other
// types go through: one read failing among others, as when vCenter is
// briefly unreachable.
func (l *Lab) FailRead(typ string, fault types.BaseMethodFault, count int) {
	l.addCallFault("FailRead", &callFault{object: typ, fault: fault, remaining: count, read: true})
}

// FailTaskEndRead makes the property reads of the next task a client reads
// fail with fault as a SOAP fault, each once the task has ended (succeeded or
// failed): a client loses sight of a task just as it ends, as when vCenter
// is briefly unreachable then, and whatever the task made exists by the
// time the client looks for it. A read of that task is answered only after
// it ends, and every read of it fails, however the client's reads are
// grouped into calls: what a test sees does not depend on how fast the task
// ran or which reads met in one call. Reads of other objects go through.
func (l *Lab) FailTaskEndRead(fault types.BaseMethodFault) {
	l.addCallFault("FailTaskEndRead", &callFault{fault: fault, remaining: 1, taskEnd: true})
}

// taskEndFault is the fault of FailTaskEndRead for the property read m, nil
// when none applies; it returns once the task has ended.
func (l *Lab) taskEndFault(ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	tasks := tasksRead(ctx, m)
	if len(tasks) == 0 {
		return nil
	}
	var task *simulator.Task
	var fault types.BaseMethodFault
	l.mu.Lock()
	for _, f := range l.callFaults {
		if !f.taskEnd {
			continue
		}
		if f.task == nil {
			f.task = tasks[0] // kept: the task's later reads fail too
		}
		if slices.Contains(tasks, f.task) {
			task, fault = f.task, f.fault
			break
		}
	}
	l.mu.Unlock()
	if task == nil {
		return nil
	}
	for {
		var state types.TaskInfoState
		ctx.WithLock(task, func() { state = task.Info.State })
		if state == types.TaskInfoStateSuccess || state == types.TaskInfoStateError {
			return fault
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tasksRead is the tasks among the objects a property read m asks for.
func tasksRead(ctx *simulator.Context, m *simulator.Method) []*simulator.Task {
	var specs []types.PropertyFilterSpec
	switch req := m.Body.(type) {
	case *types.RetrievePropertiesEx:
		specs = req.SpecSet
	case *types.RetrieveProperties:
		specs = req.SpecSet
	}
	var tasks []*simulator.Task
	for _, spec := range specs {
		for _, o := range spec.ObjectSet {
			if t, ok := ctx.Map.Get(o.Obj).(*simulator.Task); ok {
				tasks = append(tasks, t)
			}
		}
	}
	return tasks
}

// addCallFault keeps f for intercept, unless it fails no call.
func (l *Lab) addCallFault(name string, f *callFault) {
	if l.simulatorOnly(name) || f.remaining <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.callFaults = append(l.callFaults, f)
}

// readsType reports whether m is a property read that asks for properties
// of objects of type typ.
func readsType(m *simulator.Method, typ string) bool {
	var specs []types.PropertyFilterSpec
	switch req := m.Body.(type) {
	case *types.RetrievePropertiesEx:
		specs = req.SpecSet
	case *types.RetrieveProperties:
		specs = req.SpecSet
	}
	for _, spec := range specs {
		for _, p := range spec.PropSet {
			if p.Type == typ {
				return true
			}
		}
	}
	return false
}

// Delay makes every call of method wait d before it runs; 0 removes the delay.
func (l *Lab) Delay(method string, d time.Duration) {
	if l.simulatorOnly("Delay") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d <= 0 {
		delete(l.delays, method)
		return
	}
	l.delays[method] = d
}

// Hold makes every call of method wait, once counted, until release is
// called: a test can see what a client does while a call of its is in
// flight, with no clock involved. release may be called more than once.
func (l *Lab) Hold(method string) (release func()) {
	if l.simulatorOnly("Hold") {
		return func() {}
	}
	held := make(chan struct{})
	l.mu.Lock()
	l.holds[method] = held
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			if l.holds[method] == held {
				delete(l.holds, method)
			}
			l.mu.Unlock()
			close(held)
		})
	}
}

// SetLatency changes Options.Latency from now on: a test can build a large
// lab at full speed, then measure with a real vCenter's round trip.
func (l *Lab) SetLatency(d time.Duration) {
	if l.simulatorOnly("SetLatency") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latency = max(d, 0)
}

// countRequests counts and delays, as Options.Latency says, every request
// to an endpoint other than /sdk (the REST and vAPI endpoints, the storage
// policy service's SOAP endpoint, file transfers), by "METHOD /path": a
// client that uses them pays the round trips a real vCenter charges.
// /sdk's SOAP calls are counted by method, and delayed, in handle.
// Each request's answer time (see AnswerTimes) is taken here too.
func (l *Lab) countRequests(next http.Handler) http.Handler {
	sdk := l.model.Map().Path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if r.URL.Path == sdk {
			if lose, answered := l.sdkCall(r); lose {
				loseConnection(w, r, next, answered)
				return
			}
		}
		if r.URL.Path != sdk {
			l.mu.Lock()
			l.calls[r.Method+" "+r.URL.Path]++
			delay := l.latency
			l.mu.Unlock()
			if delay > 0 {
				time.Sleep(delay)
			}
		}
		next.ServeHTTP(w, r)
		cookie, _ := r.Cookie(soap.SessionCookieName)
		l.mu.Lock()
		defer l.mu.Unlock()
		if cookie == nil || cookie.Value != l.adminKey {
			l.answers = append(l.answers, time.Since(start))
		}
	})
}

// AnswerTimes returns how long the lab took to answer each request since
// Start or ResetCalls, longest first, from the request's arrival to the
// last byte of its answer written: the latency, the work and the encoding
// of a round trip, all but what the network adds. The lab's own client's
// are not there.
func (l *Lab) AnswerTimes() []time.Duration {
	if l.simulatorOnly("AnswerTimes") {
		return nil
	}
	l.mu.Lock()
	out := slices.Clone(l.answers)
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b time.Duration) int { return cmp.Compare(b, a) })
	return out
}

// Calls returns the calls seen since Start or ResetCalls: SOAP calls to
// /sdk by method name, from every session but the lab's own client, and
// every other request by "METHOD /path" (see countRequests). Session
// keep-alives are counted apart (KeepAlives): the calls left are those the
// work asked makes, the same on a slow machine as on a fast one.
func (l *Lab) Calls() map[string]int {
	if l.simulatorOnly("Calls") {
		return map[string]int{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.calls))
	for k, v := range l.calls {
		out[k] = v
	}
	return out
}

// KeepAlives returns how many session keep-alives (CurrentTime calls) the
// lab saw since Start or ResetCalls, from every session but the lab's own.
// Calls leaves them out: a client sends one when its session has sat idle
// for a while, so how many depends on the machine's speed (and on clients
// of earlier commands still alive in the test process), not on the work
// asked. Nothing but a keep-alive calls CurrentTime.
func (l *Lab) KeepAlives() int {
	if l.simulatorOnly("KeepAlives") {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keepAlives
}

// ResetCalls clears the call counts, the keep-alives, the call log and
// the answer times.
func (l *Lab) ResetCalls() {
	if l.simulatorOnly("ResetCalls") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = map[string]int{}
	l.keepAlives = 0
	l.answers = nil
	l.callLog = nil
}

// Sessions returns the keys of the sessions open on the lab, except the
// lab's own, from SessionManager's sessionList: whether a client logged
// out, and the session keys that must never reach a log.
func (l *Lab) Sessions(ctx context.Context) ([]string, error) {
	var sm mo.SessionManager
	c := l.client.Client
	pc := property.DefaultCollector(c)
	if err := pc.RetrieveOne(ctx, *c.ServiceContent.SessionManager, []string{"sessionList"}, &sm); err != nil {
		return nil, err
	}
	var keys []string
	for _, s := range sm.SessionList {
		if s.Key != l.ownKey() {
			keys = append(keys, s.Key)
		}
	}
	return keys, nil
}

// TerminateSessions ends every session except the lab's own, as a vCenter
// restart or a session timeout does.
func (l *Lab) TerminateSessions(ctx context.Context) error {
	if l.simulatorOnly("TerminateSessions") {
		return ErrNotSimulated
	}
	keys, err := l.Sessions(ctx)
	if err != nil || len(keys) == 0 {
		return err
	}
	c := l.client.Client
	_, err = methods.TerminateSession(ctx, c, &types.TerminateSession{
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

// FailTask answers a call that FailTaskOnce targets.
func (x *extension) FailTask(ctx *simulator.Context, req *failTaskRequest) soap.HasFault {
	task := failedTask(ctx, req.This, req.Method, req.Fault, "injected fault: "+faultName(req.Fault))
	return &taskBody{Res: &taskResponse{method: req.Method, task: task}}
}

// taskBody is the response of any *_Task method.
type taskBody struct {
	Res *taskResponse
}

func (*taskBody) Fault() *soap.Fault { return nil }

type taskResponse struct {
	method string
	task   types.ManagedObjectReference
}

// MarshalXML names the element after the method ("ReconfigVM_TaskResponse"),
// as clients decode the response by that name.
func (r *taskResponse) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	start.Name.Local = r.method + "Response"
	return e.EncodeElement(struct {
		Returnval types.ManagedObjectReference `xml:"returnval"`
	}{r.task}, start)
}

// The fabric between the hosts (fabric.go), which esxcli pings cross.

// SetPortMTU sets the MTU of a host's physical switch port (default 9000).
func (l *Lab) SetPortMTU(hostName string, mtu int) {
	if l.simulatorOnly("SetPortMTU") {
		return
	}
	l.ext.fabric.setPortMTU(l.HostID(hostName), mtu)
}

// SetLinkMTU sets the MTU of the path between two hosts, e.g. one slow link.
func (l *Lab) SetLinkMTU(hostA, hostB string, mtu int) {
	if l.simulatorOnly("SetLinkMTU") {
		return
	}
	l.ext.fabric.setLinkMTU(l.HostID(hostA), l.HostID(hostB), mtu)
}

// DropAll makes a host drop every packet (a dead NIC or cable), or not.
func (l *Lab) DropAll(hostName string, drop bool) {
	if l.simulatorOnly("DropAll") {
		return
	}
	l.ext.fabric.setDead(l.HostID(hostName), drop)
}

// SetLostProbeDelay sets how long a lost ping takes to answer (the wait).
func (l *Lab) SetLostProbeDelay(d time.Duration) {
	if l.simulatorOnly("SetLostProbeDelay") {
		return
	}
	l.ext.fabric.setLostDelay(d)
}

// Pings returns the pings answered so far.
func (l *Lab) Pings() []Ping {
	if l.simulatorOnly("Pings") {
		return nil
	}
	return l.ext.fabric.history()
}
