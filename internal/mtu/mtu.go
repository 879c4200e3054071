// Package mtu finds the largest packet that crosses a path unfragmented, by
// don't-fragment probes and a binary search. It is pure: how a probe is sent
// (esxcli on an ESXi host, internal/vsphere; ICMP from the machine running
// Terraform, internal/runnerprobe) is the caller's Prober.
//
// The usual manual method, the max-mtu.sh script
// (https://earlruby.org/2020/02/determine-maximum-mtu/), pings up from 1,300
// bytes 4 bytes at a time: about 1,900 pings to reach 9000. A path that
// cannot carry a size usually drops the probe without a reply, so every
// failing probe costs a timeout: the search probes the upper bound first (a
// healthy jumbo fabric answers in one probe), then the floor, then the
// common sizes, then bisects. Lost probes are retried before a size counts
// as too big. SearchPaths measures many paths at once.
package mtu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// HeaderBytes is what an ICMP echo adds to its payload: a 20-byte IPv4
// header and an 8-byte ICMP header. A size here is the whole IP packet.
const HeaderBytes = 28

// Prober sends one don't-fragment probe of size bytes (the IP packet) and
// reports whether a reply came back. A probe that is lost or dropped as too
// big returns false, nil; an error means the probe could not be sent at all.
type Prober interface {
	Probe(ctx context.Context, size int) (bool, error)
}

// ProberFunc adapts a function to Prober.
type ProberFunc func(ctx context.Context, size int) (bool, error)

// Probe calls f.
func (f ProberFunc) Probe(ctx context.Context, size int) (bool, error) { return f(ctx, size) }

// Options bound the search.
type Options struct {
	Min     int // smallest size to try; default 1280 (the IPv6 minimum)
	Max     int // largest size to try: what the configuration allows; default 9000
	Retries int // extra probes of the boundary size before it counts as too big; default 1 (-1 for none)
}

// Result is the answer and what it cost.
type Result struct {
	MTU    int // the largest size that got through
	Probes int // probes sent, retries included
}

// ErrUnreachable: not even the smallest size got a reply.
var ErrUnreachable = errors.New("no reply at the smallest size")

// commonSizes are MTUs fabrics are often set to, tried before bisecting so
// that a typical misconfiguration is found in a probe or two.
var commonSizes = []int{1500, 9000}

// Search finds the largest size in [Min, Max] that passes.
//
// A failing probe is believed at first and only the final boundary is
// probed again: a lost probe that made a size look too big is caught when
// that size becomes the boundary, and the search goes on above it. Without
// loss, an answer takes at most 16 probes with the default retries.
func Search(ctx context.Context, p Prober, o Options) (Result, error) {
	o = withDefaults(o)
	if o.Min > o.Max {
		return Result{}, fmt.Errorf("minimum size %d is above the maximum %d", o.Min, o.Max)
	}
	var r Result
	probe := func(size int) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		r.Probes++
		return p.Probe(ctx, size)
	}
	// tooBig confirms that a size fails: Retries more probes, all lost.
	tooBig := func(size int) (bool, error) {
		for range o.Retries {
			ok, err := probe(size)
			if err != nil || ok {
				return false, err
			}
		}
		return true, nil
	}

	if ok, err := probe(o.Max); err != nil || ok {
		r.MTU = o.Max
		return r, err
	}
	lo, passed := o.Min, false // lo passes once passed is true
	failed := []int{o.Max}     // sizes seen failing, ascending
	record := func(size int, ok bool) {
		if ok {
			lo, passed = size, true
			return
		}
		i := sort.SearchInts(failed, size)
		failed = slices.Insert(failed, i, size)
	}
	for _, size := range commonSizes {
		if size > o.Min && size < o.Max {
			ok, err := probe(size)
			if err != nil {
				return r, err
			}
			record(size, ok)
		}
	}
	for {
		// The smallest failing size above what passes bounds the search.
		failed = slices.DeleteFunc(failed, func(f int) bool { return f <= lo })
		if len(failed) == 0 {
			r.MTU = lo
			return r, nil
		}
		hi := failed[0]
		if hi-lo > 1 {
			mid := lo + (hi-lo)/2
			ok, err := probe(mid)
			if err != nil {
				return r, err
			}
			record(mid, ok)
			continue
		}
		big, err := tooBig(hi)
		if err != nil {
			return r, err
		}
		if !big {
			record(hi, true) // its first probe was lost: search above it
			continue
		}
		break
	}
	if !passed { // nothing got through yet: is the floor reachable at all?
		ok, err := probe(o.Min)
		if err == nil && !ok {
			if big, terr := tooBig(o.Min); terr != nil {
				err = terr
			} else if big {
				err = fmt.Errorf("%w (%d bytes)", ErrUnreachable, o.Min)
			}
		}
		if err != nil {
			return r, err
		}
	}
	r.MTU = lo
	return r, nil
}

func withDefaults(o Options) Options {
	if o.Min == 0 {
		o.Min = 1280
	}
	if o.Max == 0 {
		o.Max = 9000
	}
	if o.Retries == 0 {
		o.Retries = 1
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	return o
}
