package vsphere

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A bounded prefetch. Terraform's parallelism caps the reads that arrive
// together (10 by default), so batching alone leaves a refresh at one call
// per ten reads. When one command reads many objects of a kind with the same
// properties, and the kind's population is known and small, one call reads
// those properties of every object of the kind, and the later reads are
// answered from it. The rules that keep this honest:
//   - only a refresh read asks it (see freshness): what a change is built
//     from is read fresh;
//   - the prefetch is read after the command started (a client lives for one
//     Terraform command), so nothing older than the command is returned;
//   - once the provider has changed anything in vCenter, no read is answered
//     from a prefetch again (see noteCall);
//   - an object the prefetch lacks (created since, or not of the population)
//     is read from vCenter, never reported gone on the prefetch's word.
// Where it would hurt: a vCenter of 10,000 VMs would make the one call carry
// every VM's devices; the population bound keeps that from happening, and
// the population is known only from a look-up by name's index (so a
// configuration of VMs given by id is read as before).

// prefetchAfter is how many reads of one kind and property set a command
// makes before the rest of the kind's population is prefetched.
const prefetchAfter = 16

// prefetchMax bounds the population a prefetch reads: about 10 KB of
// devices per VM, so at most some MB in one call.
const prefetchMax = 512

// freshness is whether a read may be answered from the command's prefetch.
// It is spelled out where a VM or host is read both ways.
type freshness int

const (
	// fresh: a call made after the read arrived answers it. Reads under a
	// VM's or host's lock, and every read a change is built from, are
	// fresh: a prefetch predates the changes made since, by another
	// resource of the command or behind its back.
	fresh freshness = iota
	// refresh: reporting what is there (a resource's or data source's read,
	// a plan's check); the prefetch may answer it.
	refresh
)

// readObjectAs is readObject, except that a refresh read is answered from
// the prefetch when one holds ref.
func (c *Client) readObjectAs(ctx context.Context, vc *vim25.Client, ref types.ManagedObjectReference, props []string, dst any, f freshness) error {
	if f == refresh {
		if oc, ok := c.prefetched(ctx, vc, ref, props); ok {
			return mo.LoadObjectContent([]types.ObjectContent{oc}, dst)
		}
	}
	return c.readObject(ctx, vc, ref, props, dst)
}

type prefetchKey struct {
	kind  string
	props string // sorted, comma-separated
}

type prefetcher struct {
	limit   int // the population bound; prefetchMax when 0
	mu      sync.Mutex
	reads   map[prefetchKey]int
	fetched map[prefetchKey]*prefetch
	changed bool // the provider changed something in vCenter
}

type prefetch struct {
	ready chan struct{}
	objs  map[types.ManagedObjectReference]types.ObjectContent
	err   error
}

// readOnlyMethods are the calls that change nothing in vCenter's inventory;
// any other call ends prefetching for the command.
var readOnlyMethods = map[string]bool{
	"RetrieveServiceContent": true, "Login": true, "Logout": true, "RetrieveProperties": true, "RetrievePropertiesEx": true,
	"ContinueRetrievePropertiesEx": true, "CancelRetrievePropertiesEx": true, "FindByUuid": true, "QueryConfigOptionEx": true,
	"QueryConfigTarget": true, "QueryAvailableDvsSpec": true, "QueryDvsConfigTarget": true, "QueryDvsCompatibleHostSpec": true,
	"QueryOptions": true, "RetrieveManagedMethodExecuter": true, "ExecuteSoap": true, "CreateContainerView": true,
	"DestroyView": true, "SessionIsActive": true, "CurrentTime": true,
}

// noteCall records a call: one that may change vCenter ends prefetching.
func (p *prefetcher) noteCall(method string) {
	if readOnlyMethods[method] {
		return
	}
	p.mu.Lock()
	p.changed = true
	p.mu.Unlock()
}

// prefetched answers a read of props of ref from a prefetch, starting one
// when this read is the prefetchAfter-th of its kind and properties and the
// kind's population (from the look-ups' name indexes) is within
// prefetchMax; false when the read must go to vCenter.
func (c *Client) prefetched(ctx context.Context, vc *vim25.Client, ref types.ManagedObjectReference, props []string) (types.ObjectContent, bool) {
	sorted := slices.Sorted(slices.Values(props))
	key := prefetchKey{kind: ref.Type, props: strings.Join(sorted, ",")}
	p := &c.prefetch
	p.mu.Lock()
	if p.changed {
		p.mu.Unlock()
		return types.ObjectContent{}, false
	}
	f := p.fetched[key]
	if f == nil {
		if p.reads == nil {
			p.reads = map[prefetchKey]int{}
			p.fetched = map[prefetchKey]*prefetch{}
		}
		p.reads[key]++
		if p.reads[key] < prefetchAfter {
			p.mu.Unlock()
			return types.ObjectContent{}, false
		}
		population := c.names.population(ref.Type)
		limit := p.limit
		if limit == 0 {
			limit = prefetchMax
		}
		if len(population) == 0 || len(population) > limit {
			p.mu.Unlock()
			return types.ObjectContent{}, false
		}
		f = &prefetch{ready: make(chan struct{})}
		p.fetched[key] = f
		go f.load(c, vc, population, sorted)
	}
	p.mu.Unlock()
	select {
	case <-f.ready:
	case <-ctx.Done():
		return types.ObjectContent{}, false
	}
	oc, ok := f.objs[ref]
	return oc, ok && f.err == nil
}

// load reads props of every object of population in one call.
func (f *prefetch) load(c *Client, vc *vim25.Client, population []types.ManagedObjectReference, props []string) {
	defer close(f.ready)
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.APITimeout)
	defer cancel()
	objects := make([]types.ObjectSpec, len(population))
	for i, ref := range population {
		objects[i] = types.ObjectSpec{Obj: ref}
	}
	start := time.Now()
	f.objs, f.err = retrieveMerged(ctx, vc, []types.PropertyFilterSpec{{
		ObjectSet: objects,
		PropSet:   []types.PropertySpec{{Type: population[0].Type, PathSet: props}},
	}})
	c.log.Debug(ctx, "Prefetched", map[string]any{"kind": population[0].Type, "objects": len(population), "returned": len(f.objs),
		"duration_ms": time.Since(start).Milliseconds(), "error": errText(f.err)})
}
