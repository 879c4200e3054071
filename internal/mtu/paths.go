package mtu

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// Path is one path to measure: how to probe it and the largest packet its
// configuration allows (an interface's MTU, or the vmknics' and switches').
type Path struct {
	Prober Prober
	Limit  int
}

// PathResult is one path's answer.
type PathResult struct {
	Result
	Bounds Options // what was searched: defaults filled in, Max capped at the path's Limit
	Err    error   // ErrBelowMin, ErrUnreachable (wrapped), a probe's error, or the context's
}

// ErrBelowMin: the path's Limit, capped by Max, is below Min, so there is
// nothing to search.
var ErrBelowMin = errors.New("the path allows less than the smallest size to try")

// SearchPaths searches every path, at most concurrency at a time (at least
// one), each between o.Min and its Limit capped by o.Max. Every path is
// searched even when another fails, so that a caller can report every
// failing path, not only the first. Results keep the order of paths.
func SearchPaths(ctx context.Context, paths []Path, o Options, concurrency int) []PathResult {
	o = withDefaults(o)
	results := make([]PathResult, len(paths))
	var g errgroup.Group
	g.SetLimit(max(concurrency, 1))
	for i, p := range paths {
		g.Go(func() error {
			results[i] = searchPath(ctx, p, o)
			return nil
		})
	}
	_ = g.Wait() // every path reports through results
	return results
}

func searchPath(ctx context.Context, p Path, o Options) PathResult {
	o.Max = min(p.Limit, o.Max)
	r := PathResult{Bounds: o}
	if o.Max < o.Min {
		r.Err = fmt.Errorf("%w: the path allows %d bytes and the search at most %d, below the minimum %d", ErrBelowMin, p.Limit, o.Max, o.Min)
		return r
	}
	r.Result, r.Err = Search(ctx, p.Prober, o)
	return r
}
