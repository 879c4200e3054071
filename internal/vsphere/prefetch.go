package vsphere

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// A bounded prefetch. Terraform's parallelism caps the reads that arrive
// together (10 by default), so batching alone leaves a refresh at one call
// per ten reads, and how many reads meet in a call depends on timing. The
// first refresh read of a kind with a property set instead reads those
// properties of the kind's whole population in the vCenter, in one call
// bounded at prefetchMax objects, and every refresh read of the kind and
// properties in the command is answered from it: a refresh costs one call
// per kind and property set, whatever the number of objects and however the
// resources name them (by id or through look-ups), and the same
// configuration always makes the same calls. The command's first refresh
// read goes further, reading every kind in one call (prefetch_all.go); a
// kind's own prefetch serves what that one does not cover, or all reads
// when it found the vCenter too large. The rules that keep this honest:
//   - only a refresh read asks it (see freshness): what a change is built
//     from is read fresh;
//   - the prefetch is read after the command started (a client lives for one
//     Terraform command), so nothing older than the command is returned;
//   - once the provider has changed anything in vCenter, no read is answered
//     from a prefetch again (see noteCall);
//   - an object the prefetch lacks (created since) is read from vCenter,
//     never reported gone on the prefetch's word.
// Where it would hurt: a vCenter of 10,000 VMs would make the one call carry
// every VM's devices; the call stops at prefetchMax objects
// (RetrieveOptions.maxObjects), and the kind is then read object by object,
// as before, its other property sets not tried: a large vCenter pays one
// page of prefetchMax objects per kind and command for finding out.

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

// changeKey marks the context of a change (see ForChange).
type changeKey struct{}

// ForChange is ctx for a resource's create, update or delete: every read
// made with it is fresh. What a change reads first (the values destroy puts
// back, the adapter it reads back) must not come from a prefetch an
// apply-time plan check started before another provider's resource, in the
// same apply, changed the object.
func ForChange(ctx context.Context) context.Context {
	return context.WithValue(ctx, changeKey{}, true)
}

// prefetchMayAnswer reports whether a read of freshness f with ctx may be
// answered from the prefetch.
func prefetchMayAnswer(ctx context.Context, f freshness) bool {
	return f == refresh && ctx.Value(changeKey{}) == nil
}

// readObjectAs is readObject, except that a refresh read is answered from
// the prefetch when one holds ref.
func (c *Client) readObjectAs(ctx context.Context, vc *vim25.Client, ref types.ManagedObjectReference, props []string, dst any, f freshness) error {
	if prefetchMayAnswer(ctx, f) {
		if p := c.kindPrefetch(ctx, vc, ref.Type, props); p.wait(ctx) && p.object(ref, dst) {
			return nil
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
	fetched map[prefetchKey]*prefetch
	changed bool            // the provider changed something in vCenter
	tooMany map[string]bool // kinds found larger than the bound
}

// tooLarge reports whether a prefetch found kind larger than the bound in
// this command: its other property sets are not tried.
func (p *prefetcher) tooLarge(kind string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tooMany[kind]
}

func (p *prefetcher) markTooLarge(kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tooMany == nil {
		p.tooMany = map[string]bool{}
	}
	p.tooMany[kind] = true
}

type prefetch struct {
	ready chan struct{}
	objs  map[types.ManagedObjectReference]types.ObjectContent
	err   error
	names prefetchNames // the first prefetch's name indexes (prefetch_all.go)
}

// readOnlyMethods are the calls that change nothing in vCenter's inventory;
// any other call ends prefetching for the command.
var readOnlyMethods = map[string]bool{
	"RetrieveServiceContent": true, "Login": true, "Logout": true, "RetrieveProperties": true, "RetrievePropertiesEx": true,
	"ContinueRetrievePropertiesEx": true, "CancelRetrievePropertiesEx": true, "FindAllByUuid": true, "QueryConfigOptionEx": true,
	"QueryConfigTarget": true, "QueryAvailableDvsSpec": true, "QueryDvsConfigTarget": true, "QueryDvsCompatibleHostSpec": true,
	"QueryOptions": true, "RetrieveManagedMethodExecuter": true, "CreateContainerView": true,
	"DestroyView": true, "SessionIsActive": true, "CurrentTime": true, "QueryDvsByUuid": true, "FindByInventoryPath": true,
}

// noteCall records a call: one that may change vCenter ends prefetching. A
// request that says whether it is read-only (an esxcli command) decides.
func (p *prefetcher) noteCall(method string, req soap.HasFault) {
	if r, ok := req.(interface{ readOnly() bool }); ok && r.readOnly() || readOnlyMethods[method] {
		return
	}
	p.mu.Lock()
	p.changed = true
	p.mu.Unlock()
}

// kindPrefetch is the command's prefetch of props (widened, for a VM, to
// vmRefreshProps) of every object of kind, started if it is the first;
// nil once the provider has changed anything. Callers wait for it.
func (c *Client) kindPrefetch(ctx context.Context, vc *vim25.Client, kind string, props []string) *prefetch {
	if all := c.prefetchAllFor(ctx, vc, types.PropertySpec{Type: kind, PathSet: props}); all != nil {
		return all
	}
	sorted := slices.Sorted(slices.Values(props))
	if kind == "HostSystem" && subset(sorted, hostRefreshProps) {
		return c.hostsPrefetch(ctx, vc)
	}
	if kind == "VirtualMachine" && subset(sorted, vmRefreshProps) {
		sorted = vmRefreshProps
	}
	return c.prefetch.start(ctx, prefetchKey{kind: kind, props: strings.Join(sorted, ",")}, func(ctx context.Context, f *prefetch, limit int) {
		if c.prefetch.tooLarge(kind) {
			f.err = errPopulationTooLarge
			return
		}
		f.load(ctx, c, vc, kind, populationSpec(vc.ServiceContent.RootFolder, kind, sorted), limit)
		if errors.Is(f.err, errPopulationTooLarge) {
			c.prefetch.markTooLarge(kind)
		}
	})
}

// wait waits for the prefetch to end; false when there is none, it failed
// or ctx ended first.
func (f *prefetch) wait(ctx context.Context) bool {
	if f == nil {
		return false
	}
	select {
	case <-f.ready:
		return f.err == nil
	case <-ctx.Done():
		return false
	}
}

// object loads ref's properties from a prefetch that has ended well.
func (f *prefetch) object(ref types.ManagedObjectReference, dst any) bool {
	oc, ok := f.objs[ref]
	return ok && mo.LoadObjectContent([]types.ObjectContent{oc}, dst) == nil
}

// vmRefreshProps are what a refresh reads of every VM when it reads no
// more than these: the VM data source's, a host's VMs', an adapter's and a
// GPU setup's properties. One prefetch answers them all, whichever arrives
// first, so the calls a refresh makes do not depend on the order Terraform
// reads in, and a VM with an adapter and a GPU setup is read once, not in
// two calls one after the other (the GPU setups' reads arrive when the
// adapters' are done). The price: every VM's two MMIO keys of its
// extraConfig come along in a refresh that has no GPU setup. The environment browser (a
// reference) is there for an adapter's plan, which asks the VM's
// configuration options through it.
var vmRefreshProps = slices.Compact(slices.Sorted(slices.Values(slices.Concat(vmProps, gpuMMIOProps, []string{"environmentBrowser"}))))

// hostRefreshProps are what a refresh reads of every host when it reads no
// more than these: the host data source's, passthrough's and SR-IOV's (with
// the VMs registered on the host) and the host PVRDMA settings'. One
// prefetch answers them all, with the names of the hosts' clusters: a host
// with settings and a data source is read once.
var hostRefreshProps = sortedUnion(hostProps, []string{"vm"}, hostPVRDMAProps)

// hostsPrefetch is the command's prefetch of every host's hostRefreshProps
// and its cluster's name, started by the first host read; nil once the
// provider has changed anything. Callers wait for it.
func (c *Client) hostsPrefetch(ctx context.Context, vc *vim25.Client) *prefetch {
	return c.prefetchedSet(ctx, vc, "host reads", []types.PropertySpec{
		{Type: "HostSystem", PathSet: hostRefreshProps},
		{Type: "ComputeResource", PathSet: []string{"name"}},
	})
}

// subset reports whether each of the sorted props is in the sorted of.
func subset(props, of []string) bool {
	for _, p := range props {
		if _, found := slices.BinarySearch(of, p); !found {
			return false
		}
	}
	return true
}

// prefetchedSet is the command's prefetch named name: several kinds with
// their properties, read in one call over the vCenter's inventory, bounded
// at prefetchMax objects in all; nil once the provider has changed
// anything. Callers wait for its ready.
func (c *Client) prefetchedSet(ctx context.Context, vc *vim25.Client, name string, props []types.PropertySpec) *prefetch {
	if all := c.prefetchAllFor(ctx, vc, props...); all != nil {
		return all
	}
	return c.prefetch.start(ctx, prefetchKey{kind: name}, func(ctx context.Context, f *prefetch, limit int) {
		spec := populationSpec(vc.ServiceContent.RootFolder, props[0].Type, props[0].PathSet)
		spec.PropSet = props
		f.load(ctx, c, vc, name, spec, limit)
	})
}

// start returns the prefetch of key, starting it with run (in the
// background, logging under ctx without its cancellation: other reads wait
// for it too; ready once run returns) when it is the first; nil once the
// provider has changed anything.
func (p *prefetcher) start(ctx context.Context, key prefetchKey, run func(ctx context.Context, f *prefetch, limit int)) *prefetch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed {
		return nil
	}
	if f := p.fetched[key]; f != nil {
		return f
	}
	if p.fetched == nil {
		p.fetched = map[prefetchKey]*prefetch{}
	}
	limit := cmp.Or(p.limit, prefetchMax)
	f := &prefetch{ready: make(chan struct{})}
	p.fetched[key] = f
	go func() {
		defer close(f.ready)
		run(context.WithoutCancel(ctx), f, limit)
	}()
	return f
}

// errPopulationTooLarge: the kind has more objects than a prefetch reads.
var errPopulationTooLarge = errors.New("more objects than a prefetch reads")

// load reads spec in one call (and its pages), bounded at limit objects.
func (f *prefetch) load(ctx context.Context, c *Client, vc *vim25.Client, what string, spec types.PropertyFilterSpec, limit int) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.APITimeout)
	defer cancel()
	start := time.Now()
	f.objs, f.err = retrieveBounded(ctx, vc, spec, limit)
	c.log.Debug(ctx, "Prefetched", map[string]any{"kind": what, "kinds": len(spec.PropSet),
		"returned": len(f.objs), "duration_ms": time.Since(start).Milliseconds(), "error": errText(f.err)})
}

// populationSpec selects every object of kind below root: through folders,
// datacenters' VM, host and network folders, compute resources' hosts and
// vApps' VMs, with props of the objects of kind only.
func populationSpec(root types.ManagedObjectReference, kind string, props []string) types.PropertyFilterSpec {
	named := func(name string) types.BaseSelectionSpec { return &types.SelectionSpec{Name: name} }
	all := []types.BaseSelectionSpec{named("folders"), named("datacenterVMs"), named("datacenterHosts"), named("datacenterNetwork"),
		named("computeHosts"), named("vAppVMs")}
	traverse := func(name, kind, path string) *types.TraversalSpec {
		return &types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: name}, Type: kind, Path: path, SelectSet: all}
	}
	return types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: root, SelectSet: []types.BaseSelectionSpec{
			traverse("folders", "Folder", "childEntity"),
			traverse("datacenterVMs", "Datacenter", "vmFolder"),
			traverse("datacenterHosts", "Datacenter", "hostFolder"),
			traverse("datacenterNetwork", "Datacenter", "networkFolder"),
			traverse("computeHosts", "ComputeResource", "host"),
			traverse("vAppVMs", "VirtualApp", "vm"),
		}}},
		PropSet: []types.PropertySpec{{Type: kind, PathSet: props}},
	}
}

// retrieveBounded reads spec, page by page, and gives up (cancelling the
// rest) once it holds more than limit objects.
func retrieveBounded(
	ctx context.Context,
	vc *vim25.Client,
	spec types.PropertyFilterSpec,
	limit int,
) (map[types.ManagedObjectReference]types.ObjectContent, error) {
	pc := vc.ServiceContent.PropertyCollector
	res, err := methods.RetrievePropertiesEx(ctx, vc, &types.RetrievePropertiesEx{This: pc, SpecSet: []types.PropertyFilterSpec{spec},
		Options: types.RetrieveOptions{MaxObjects: int32(limit + 1)}})
	if err != nil {
		return nil, err
	}
	out := map[types.ManagedObjectReference]types.ObjectContent{}
	for r := res.Returnval; r != nil; {
		for _, oc := range r.Objects {
			out[oc.Obj] = withoutAbsentKeys(oc)
		}
		if len(out) > limit {
			if r.Token != "" {
				_, _ = methods.CancelRetrievePropertiesEx(ctx, vc, &types.CancelRetrievePropertiesEx{This: pc, Token: r.Token})
			}
			return nil, errPopulationTooLarge
		}
		if r.Token == "" {
			break
		}
		next, err := methods.ContinueRetrievePropertiesEx(ctx, vc, &types.ContinueRetrievePropertiesEx{This: pc, Token: r.Token})
		if err != nil {
			return nil, err
		}
		r = &next.Returnval
	}
	return out, nil
}
