package mtu

import (
	"context"
	"errors"
	"math/rand"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fabric is a fake path: sizes up to pathMTU get through, except for the
// loss rate, which drops any probe at random.
type fabric struct {
	pathMTU int
	loss    float64
	mu      sync.Mutex
	rng     *rand.Rand
}

func (f *fabric) Probe(_ context.Context, size int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loss > 0 && f.rng.Float64() < f.loss {
		return false, nil
	}
	return size <= f.pathMTU, nil
}

func TestSearchIsExact(t *testing.T) {
	t.Parallel()
	sizes := []int{1280, 1281, 1282, 1499, 1500, 1501, 4000, 7466, 8192, 8999, 9000}
	for m := 1280; m <= 9000; m += 7 {
		sizes = append(sizes, m)
	}
	for _, m := range sizes {
		r, err := Search(context.Background(), &fabric{pathMTU: m}, Options{})
		if err != nil || r.MTU != m {
			t.Fatalf("path MTU %d: got %+v, %v", m, r, err)
		}
		if r.Probes > 16 {
			t.Fatalf("path MTU %d took %d probes, want at most 16", m, r.Probes)
		}
	}
}

// With 30% of probes lost, the search stays exact when the boundary gets
// enough retries: a confirmation is fooled only if all 13 probes are lost
// (0.3^13, about 1.6e-7), and a lossy search confirms about 20 boundaries.
func TestSearchSurvivesLoss(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(42))
	for _, m := range []int{1280, 1500, 4000, 7466, 8192, 9000} {
		for range 300 {
			f := &fabric{pathMTU: m, loss: 0.3, rng: rng}
			r, err := Search(context.Background(), f, Options{Retries: 12})
			if err != nil || r.MTU != m {
				t.Fatalf("path MTU %d with 30%% loss: got %+v, %v", m, r, err)
			}
		}
	}
}

func TestSearchUnreachable(t *testing.T) {
	t.Parallel()
	_, err := Search(context.Background(), &fabric{pathMTU: 0}, Options{})
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a path that drops everything: %v, want ErrUnreachable", err)
	}
	sendErr := errors.New("sendto: operation not permitted")
	_, err = Search(context.Background(), ProberFunc(func(context.Context, int) (bool, error) { return false, sendErr }), Options{})
	if !errors.Is(err, sendErr) {
		t.Fatalf("a probe that cannot be sent: %v", err)
	}
	if _, err := Search(context.Background(), &fabric{pathMTU: 9000}, Options{Min: 9000, Max: 1500}); err == nil {
		t.Fatal("min above max accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Search(ctx, &fabric{pathMTU: 9000}, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled search: %v", err)
	}
}

// linearWalk is the method of max-mtu.sh
// (https://earlruby.org/2020/02/determine-maximum-mtu/): up from the floor,
// 4 bytes a step.
func linearWalk(ctx context.Context, p Prober, o Options) Result {
	o = withDefaults(o)
	r := Result{}
	for size := o.Min; size <= o.Max; size += 4 {
		r.Probes++
		if ok, _ := p.Probe(ctx, size); !ok {
			return r
		}
		r.MTU = size
	}
	return r
}

// BenchmarkSearch and BenchmarkLinearWalk compare probe counts on the same
// fabric (a 9000 path, the common healthy case, and a 7466 one).
func BenchmarkSearch(b *testing.B) {
	for _, m := range []int{9000, 7466} {
		b.Run(strconv.Itoa(m), func(b *testing.B) {
			var probes int
			for range b.N {
				r, _ := Search(context.Background(), &fabric{pathMTU: m}, Options{})
				probes = r.Probes
			}
			b.ReportMetric(float64(probes), "probes/op")
		})
	}
}

func BenchmarkLinearWalk(b *testing.B) {
	for _, m := range []int{9000, 7466} {
		b.Run(strconv.Itoa(m), func(b *testing.B) {
			var probes int
			for range b.N {
				probes = linearWalk(context.Background(), &fabric{pathMTU: m}, Options{}).Probes
			}
			b.ReportMetric(float64(probes), "probes/op")
		})
	}
}

func TestSearchPaths(t *testing.T) {
	t.Parallel()
	sendErr := errors.New("sendto: network is unreachable")
	paths := []Path{
		{Prober: &fabric{pathMTU: 9000}, Limit: 9000},
		{Prober: &fabric{pathMTU: 9000}, Limit: 1500}, // capped by the path's configuration
		{Prober: &fabric{pathMTU: 7466}, Limit: 9216}, // capped by Max
		{Prober: &fabric{pathMTU: 9000}, Limit: 1000}, // nothing to search
		{Prober: &fabric{pathMTU: 0}, Limit: 9000},
		{Prober: ProberFunc(func(context.Context, int) (bool, error) { return false, sendErr }), Limit: 9000},
	}
	got := SearchPaths(context.Background(), paths, Options{Min: 1280, Max: 9000}, 3)
	if len(got) != len(paths) {
		t.Fatalf("%d results for %d paths", len(got), len(paths))
	}
	for i, want := range []struct{ mtu, max int }{{9000, 9000}, {1500, 1500}, {7466, 9000}} {
		if r := got[i]; r.Err != nil || r.MTU != want.mtu || r.Bounds.Max != want.max || r.Bounds.Min != 1280 || r.Probes < 1 {
			t.Errorf("path %d: %+v, want MTU %d searched up to %d", i, r, want.mtu, want.max)
		}
	}
	if r := got[3]; !errors.Is(r.Err, ErrBelowMin) || r.Probes != 0 || r.Bounds.Max != 1000 {
		t.Errorf("a path allowing less than Min: %+v, want ErrBelowMin without a probe", r)
	}
	if r := got[4]; !errors.Is(r.Err, ErrUnreachable) {
		t.Errorf("a path that drops everything: %+v, want ErrUnreachable", r)
	}
	if r := got[5]; !errors.Is(r.Err, sendErr) {
		t.Errorf("a path whose probes cannot be sent: %+v", r)
	}
}

// SearchPaths never probes more paths at once than it is allowed to.
func TestSearchPathsConcurrency(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{0, 1, 4} {
		var mu sync.Mutex
		running, most := 0, 0
		probe := ProberFunc(func(context.Context, int) (bool, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			return true, nil
		})
		paths := make([]Path, 12)
		for i := range paths {
			paths[i] = Path{Prober: probe, Limit: 9000}
		}
		for i, r := range SearchPaths(context.Background(), paths, Options{}, limit) {
			if r.Err != nil || r.MTU != 9000 {
				t.Fatalf("concurrency %d, path %d: %+v", limit, i, r)
			}
		}
		if want := max(limit, 1); most > want {
			t.Errorf("concurrency %d: %d paths probed at once", limit, most)
		}
	}
}
