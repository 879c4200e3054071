package vsphere

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Reads that arrive together share one round trip. Terraform reads many
// resources at once (its parallelism, 10 by default), and on a real vCenter
// each call costs 10-50 ms, so the calls are the cost. A read waits for the
// call in flight and for the readers of that call to come back (see
// runBatches), or, when none is and reads came lately, for batchWindow (a
// read after a quiet spell goes at once), and then goes out with every read
// that came meanwhile, each as its own PropertyFilterSpec of one
// RetrievePropertiesEx. Each read is answered by a call made after it
// arrived, so it is never older than the read itself; the one exception is
// a refresh read, which the bounded prefetch of prefetch.go, read within the
// same command, may answer (see freshness).

// batchWindow is how long a read waits for others when no call is in
// flight: Terraform starts the next reads a few milliseconds after earlier
// ones return. Measured with make bench-scale (16 hosts, 64 VMs, 20 ms per
// call, before runBatches waited for returning readers): a refresh took 46
// calls and 2.9 s at 5 ms, 37 and 2.4 s at 10 ms, 44 and 3.0 s at 20 ms.
const batchWindow = 10 * time.Millisecond

// quietAfter is how long without a read makes the next one go at once: a
// lone read (one resource's refresh, a plan of a few) does not wait for
// company that is not coming.
const quietAfter = 100 * time.Millisecond

// batchMax caps the specs of one call.
const batchMax = 200

// gatherMax is the longest a call waits for the reads of the call before
// it to come back (see runBatches). Terraform takes longer between a
// resource's read and the next resource's as its state grows: at 64 hosts
// and 256 VMs, a read every 75 ms or more; with 40 ms, calls there carried
// 4.8 reads on average, with 100 ms 7.7 (make bench-scale, refresh: 704
// reads in 146 calls, then in 91).
const gatherMax = 100 * time.Millisecond

// readBatch coalesces concurrent reads of one client.
type readBatch struct {
	mu      sync.Mutex
	pending []*sharedRead
	running bool
	last    time.Time     // when the latest read arrived
	arrived chan struct{} // signalled when a read arrives or a hold ends
	held    int           // readers of inOneCall yet to make their first read
	stats   ReadStats
	// clock times the waits for company (batchWindow, quietAfter,
	// gatherMax); nil is the real one. A test sets its own to end the waits
	// when it chooses, so that which reads meet in a call does not depend on
	// the machine's speed.
	clock clock
}

type clock interface {
	Now() time.Time
	After(time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (b *readBatch) clk() clock {
	if b.clock == nil {
		return realClock{}
	}
	return b.clock
}

// ReadStats counts a client's shared reads. Which reads meet in one call
// depends on when they arrive, so on the machine's speed; the reads do not.
// A task's state is read until the task ends, as often as that takes: those
// reads are left out.
type ReadStats struct {
	Calls     int // RetrievePropertiesEx calls made for shared reads
	Reads     int // shared reads of anything but a task
	TaskReads int // shared reads of a task's state
	// Joined are the first reads of an inOneCall's functions but one (per
	// inOneCall): they share a call whatever else runs at the same time,
	// so even at parallelism 1.
	Joined int
}

// ReadStats sums the shared reads of the clients kept, for tests that
// budget calls.
func (cs *Clients) ReadStats() ReadStats {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var sum ReadStats
	for _, c := range cs.list {
		c.batch.mu.Lock()
		sum.Calls += c.batch.stats.Calls
		sum.Reads += c.batch.stats.Reads
		sum.TaskReads += c.batch.stats.TaskReads
		sum.Joined += c.batch.stats.Joined
		c.batch.mu.Unlock()
	}
	return sum
}

// inOneCall runs each read function in a goroutine of its own, so that
// their first reads go out in one shared call: no call leaves until each
// function has made its first shared read or returned. One resource's plan
// reads a VM and a port group, then the switch and the VM's cluster; these
// are independent, and at parallelism 1 nothing else would share their
// calls, so each would be a round trip of its own. It returns the first
// function's error, else the second's, and so on. Before its first shared
// read a function must not wait for anything that itself waits for a shared
// read (a lock held across one): the call it holds back would never leave.
func (c *Client) inOneCall(ctx context.Context, reads ...func(context.Context) error) error {
	b := &c.batch
	b.mu.Lock()
	b.held += len(reads)
	b.mu.Unlock()
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	group := &holdGroup{}
	for i, read := range reads {
		h := &hold{b: b, group: group}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer h.release()
			errs[i] = read(context.WithValue(ctx, holdKey{}, h))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

type holdKey struct{}

// hold is one inOneCall reader's claim that a call waits for its read.
type hold struct {
	b        *readBatch
	group    *holdGroup
	once     sync.Once
	released bool // under b.mu
}

// holdGroup is an inOneCall's readers: read once one of them has made its
// first read (under b.mu).
type holdGroup struct{ read bool }

// release ends the claim (once): at the reader's first read, or when it
// returns without one.
func (h *hold) release() {
	h.once.Do(func() {
		h.b.mu.Lock()
		h.b.held--
		h.released = true
		arrived := h.b.arrived
		h.b.mu.Unlock()
		if arrived != nil {
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
	})
}

type sharedRead struct {
	// ctx is the reader's: a shared call logs under its first reader's, so
	// a TRACE log shows every call, with its cancellation cut off (the
	// call answers other readers too).
	ctx  context.Context
	spec types.PropertyFilterSpec
	done chan struct{}
	objs map[types.ManagedObjectReference]types.ObjectContent
	err  error
}

// readShared reads spec in a call shared with the reads other goroutines
// make at the same moment, and returns every object of that call by
// reference, each with the properties all its readers asked for: the caller
// picks its own objects. When the shared call fails (an object of another
// read is gone), each read is retried alone, so a failure is the read's own.
func (c *Client) readShared(
	ctx context.Context,
	vc *vim25.Client,
	spec types.PropertyFilterSpec,
) (map[types.ManagedObjectReference]types.ObjectContent, error) {
	r := &sharedRead{ctx: ctx, spec: spec, done: make(chan struct{})}
	b := &c.batch
	h, _ := ctx.Value(holdKey{}).(*hold)
	b.mu.Lock()
	if h != nil && !h.released {
		if h.group.read {
			b.stats.Joined++
		}
		h.group.read = true
	}
	b.pending = append(b.pending, r)
	start := !b.running
	now := b.clk().Now()
	wait := time.Duration(0)
	if now.Sub(b.last) < quietAfter {
		wait = batchWindow
	}
	b.last = now
	b.running = true
	if b.arrived == nil {
		b.arrived = make(chan struct{}, 1)
	}
	arrived := b.arrived
	b.mu.Unlock()
	select {
	case arrived <- struct{}{}:
	default:
	}
	if h != nil {
		h.release()
	}
	if start {
		go c.runBatches(vc, wait)
	}
	select {
	case <-r.done:
		return r.objs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runBatches sends the pending reads, a call at a time, until none is
// left: the first call after wait, each later one once the readers of the
// call before have come back with their next reads, or after gatherMax.
// Terraform starts a resource's next read some milliseconds after the last
// one returned (more for a bigger resource), and a call sent at once would
// carry only the reads that came during the last one: calls of 8 and 2
// reads, or 5 and 5, instead of 10.
func (c *Client) runBatches(vc *vim25.Client, wait time.Duration) {
	b := &c.batch
	<-b.clk().After(wait)
	for {
		c.awaitHolds()
		b.mu.Lock()
		// A reader that gave up (its context ended) has returned: its read
		// goes out with no call.
		b.pending = slices.DeleteFunc(b.pending, func(r *sharedRead) bool { return r.ctx.Err() != nil })
		reads := b.pending
		if len(reads) > batchMax {
			reads = reads[:batchMax]
		}
		b.pending = b.pending[len(reads):]
		if len(reads) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		c.send(vc, reads)
		c.gather(len(reads))
	}
}

// awaitHolds waits until every inOneCall reader has made its first read
// or returned.
func (c *Client) awaitHolds() {
	b := &c.batch
	for {
		b.mu.Lock()
		held, arrived := b.held, b.arrived
		b.mu.Unlock()
		if held <= 0 {
			return
		}
		<-arrived
	}
}

// gather waits until returning more reads are pending than the call just
// sent answered, or gatherMax.
func (c *Client) gather(returning int) {
	b := &c.batch
	b.mu.Lock()
	want := len(b.pending) + returning
	arrived := b.arrived
	b.mu.Unlock()
	timeout := b.clk().After(gatherMax)
	for {
		b.mu.Lock()
		n := len(b.pending)
		b.mu.Unlock()
		if n >= want {
			return
		}
		select {
		case <-arrived:
		case <-timeout:
			return
		}
	}
}

// send makes one call for reads, or, when it fails and holds more than one,
// one call for each.
func (c *Client) send(vc *vim25.Client, reads []*sharedRead) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(reads[0].ctx), c.cfg.APITimeout)
	defer cancel()
	specs := make([]types.PropertyFilterSpec, len(reads))
	for i, r := range reads {
		specs[i] = r.spec
	}
	objs, err := retrieveMerged(ctx, vc, specs)
	c.count(reads, err != nil && len(reads) > 1)
	if err != nil && len(reads) > 1 {
		for _, r := range reads {
			r.objs, r.err = retrieveMerged(ctx, vc, []types.PropertyFilterSpec{r.spec})
			close(r.done)
		}
		return
	}
	for _, r := range reads {
		r.objs, r.err = objs, err
		close(r.done)
	}
}

// count adds a call of reads to the stats, and a call for each read when
// they are retried alone.
func (c *Client) count(reads []*sharedRead, alone bool) {
	b := &c.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Calls++
	if alone {
		b.stats.Calls += len(reads)
	}
	for _, r := range reads {
		if r.spec.ObjectSet[0].Obj.Type == "Task" {
			b.stats.TaskReads++
		} else {
			b.stats.Reads++
		}
	}
}

// retrieveMerged makes one RetrievePropertiesEx and merges what it returns
// by object: two specs that read one object give one content with the
// properties of both.
func retrieveMerged(
	ctx context.Context,
	vc *vim25.Client,
	specs []types.PropertyFilterSpec,
) (map[types.ManagedObjectReference]types.ObjectContent, error) {
	res, err := property.DefaultCollector(vc).RetrieveProperties(ctx, types.RetrieveProperties{SpecSet: specs})
	if err != nil {
		return nil, err
	}
	out := make(map[types.ManagedObjectReference]types.ObjectContent, len(res.Returnval))
	for _, oc := range res.Returnval {
		oc = withoutAbsentKeys(oc)
		have, ok := out[oc.Obj]
		if !ok {
			out[oc.Obj] = oc
			continue
		}
		seen := map[string]bool{}
		for _, p := range have.PropSet {
			seen[p.Name] = true
		}
		for _, p := range oc.PropSet {
			if !seen[p.Name] {
				have.PropSet = append(have.PropSet, p)
			}
		}
		have.MissingSet = append(have.MissingSet, oc.MissingSet...)
		out[oc.Obj] = have
	}
	return out, nil
}

// readObject reads properties of one object into dst (a pointer to its mo
// type), fresh: in a shared call, never from the prefetch. An object the
// call does not return reads as ManagedObjectNotFound, as a call of its own
// would fail.
func (c *Client) readObject(ctx context.Context, vc *vim25.Client, ref types.ManagedObjectReference, props []string, dst any) error {
	objs, err := c.readShared(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: ref}},
		PropSet:   []types.PropertySpec{{Type: ref.Type, PathSet: props}},
	})
	if err != nil {
		return err
	}
	oc, ok := objs[ref]
	if !ok {
		return soap.WrapVimFault(&types.ManagedObjectNotFound{Obj: ref})
	}
	return mo.LoadObjectContent([]types.ObjectContent{oc}, dst)
}
