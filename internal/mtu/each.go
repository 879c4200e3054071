package mtu

import (
	"errors"

	"golang.org/x/sync/errgroup"
)

// Each runs f(0) … f(n-1), at most limit at a time, and joins their errors:
// every failing path is reported, not only the first.
func Each(n, limit int, f func(i int) error) error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(max(limit, 1))
	for i := range n {
		g.Go(func() error {
			errs[i] = f(i)
			return nil
		})
	}
	_ = g.Wait() // the functions report through errs
	return errors.Join(errs...)
}
