package mmio

import (
	"math"
	"strings"
	"testing"
)

func TestSizeGB(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		gpus []float64
		want int64
	}{
		// The four verified configurations of "Calculating the value for
		// 64bitMMIOSizeGB" (earlruby.org) and its A100 example.
		{"2x V100 16GB (power of two)", repeat(2, 16), 64},
		{"2x P40 24GB (between powers)", repeat(2, 24), 128},
		{"8x V100 16GB (power of two)", repeat(8, 16), 256},
		{"10x V100 16GB (between powers)", repeat(10, 16), 512},
		{"2x A100 40GB", repeat(2, 40), 256},
		// Edges.
		{"one GPU of 1 GB", []float64{1}, 2},
		{"fractional total just above a power of two", []float64{16.25}, 64},
		{"fractional total below one", []float64{0.5}, 1},
		{"8x H100 80GB", repeat(8, 80), 2048},
		{"mixed sizes", []float64{80, 40, 24}, 512},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			groups := make([]Group, len(tc.gpus))
			for i, gb := range tc.gpus {
				groups[i] = Group{Count: 1, MemoryGB: gb}
			}
			total, count, err := TotalGB(groups)
			if err != nil || count != int64(len(tc.gpus)) {
				t.Fatalf("TotalGB(%v) = %v, %d, %v", tc.gpus, total, count, err)
			}
			got, err := SizeGB(total)
			if err != nil {
				t.Fatalf("SizeGB(%v): %v", total, err)
			}
			if got != tc.want {
				t.Errorf("SizeGB(%v) = %d, want %d", total, got, tc.want)
			}
			if got&(got-1) != 0 || float64(got) < 2*total || float64(got/2) >= 2*total {
				t.Errorf("SizeGB(%v) = %d is not the smallest power of two >= 2x total", total, got)
			}
		})
	}
}

func TestTotalGBRejectsBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		groups []Group
		want   string
	}{
		{"empty", nil, "no GPUs given"},
		{"zero", []Group{{1, 16}, {1, 0}}, "GPU entry 2: memory size 0 GB must be greater than zero"},
		{"negative", []Group{{1, -8}}, "GPU entry 1: memory size -8 GB must be greater than zero"},
		{"NaN", []Group{{1, math.NaN()}}, "not a finite number"},
		{"infinite", []Group{{1, math.Inf(1)}}, "not a finite number"},
		{"no GPUs in a group", []Group{{0, 16}}, "GPU count 0 must be at least 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := TotalGB(tc.groups)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("TotalGB(%v) error = %v, want it to contain %q", tc.groups, err, tc.want)
			}
		})
	}
}

func TestTotalGBOfGroups(t *testing.T) {
	t.Parallel()
	// Groups multiply out, without one entry per GPU.
	total, gpus, err := TotalGB([]Group{{Count: 8, MemoryGB: 16}, {Count: 2, MemoryGB: 16}})
	if err != nil || total != 160 || gpus != 10 {
		t.Fatalf("TotalGB = %v, %d, %v; want 160 GB over 10 GPUs", total, gpus, err)
	}
}

func TestSizeGBRejectsHugeTotals(t *testing.T) {
	t.Parallel()
	if _, err := SizeGB(math.MaxFloat64 / 4); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("SizeGB(huge) error = %v, want too large", err)
	}
}

func TestExtraConfig(t *testing.T) {
	t.Parallel()
	got := ExtraConfig(256)
	if got[Use64bitMMIOKey] != "TRUE" || got[SizeGBKey] != "256" || len(got) != 2 {
		t.Fatalf("ExtraConfig(256) = %v", got)
	}
}

func repeat(n int, gb float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = gb
	}
	return out
}

func TestIsPowerOfTwo(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]bool{-4: false, 0: false, 1: true, 2: true, 3: false, 96: false, 128: true} {
		if got := IsPowerOfTwo(n); got != want {
			t.Errorf("IsPowerOfTwo(%d) = %v, want %v", n, got, want)
		}
	}
}

// TestSizeGBStopsAtWhatAHostAddresses: the largest window is MaxSizeGB
// (1 PiB, what an ESXi host addresses); a total that needs more is refused.
func TestSizeGBStopsAtWhatAHostAddresses(t *testing.T) {
	t.Parallel()
	if MaxSizeGB != 1<<20 || !IsPowerOfTwo(MaxSizeGB) {
		t.Fatalf("MaxSizeGB = %d, want 2^20", MaxSizeGB)
	}
	if got, err := SizeGB(float64(MaxSizeGB / 2)); err != nil || got != MaxSizeGB {
		t.Fatalf("SizeGB(%d) = %d, %v; want %d", MaxSizeGB/2, got, err, MaxSizeGB)
	}
	if _, err := SizeGB(float64(MaxSizeGB/2) + 0.5); err == nil || !strings.Contains(err.Error(), "the most an ESXi host can address") {
		t.Fatalf("SizeGB(just over half the maximum) error = %v, want too large", err)
	}
}

// One GPU's memory is bounded by MaxGPUMemoryGB, and a number that reads as
// megabytes or bytes of a real GPU says so.
func TestCheckGPUMemoryGB(t *testing.T) {
	t.Parallel()
	cases := []struct {
		gb   float64
		want string // "" when accepted
	}{
		{288, ""},            // B300, the most shipping today
		{MaxGPUMemoryGB, ""}, // the bound itself
		{0, "memory size 0 GB must be greater than zero"},
		{2049, "memory size 2049 GB is beyond any GPU made (at most 2048 GB per GPU)"},
		{81920, "memory size 81920 GB is beyond any GPU made (at most 2048 GB per GPU): did you give megabytes? 81920 MB is 80 GB"},
		{81559, "did you give megabytes? 81559 MB is about 79.6 GB"},
		{85899345920, "did you give bytes? 85899345920 bytes is 80 GB"},
	}
	for _, tc := range cases {
		err := CheckGPUMemoryGB(tc.gb)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckGPUMemoryGB(%v) = %v, want accepted", tc.gb, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckGPUMemoryGB(%v) = %v, want it to contain %q", tc.gb, err, tc.want)
		}
	}
	// Beyond any unit's reading: no hint.
	if err := CheckGPUMemoryGB(1e15); err == nil || strings.Contains(err.Error(), "did you give") {
		t.Errorf("CheckGPUMemoryGB(1e15) = %v, want refused without a unit hint", err)
	}
	// The bound applies per GPU, not to a total of many.
	if _, _, err := TotalGB([]Group{{Count: 8, MemoryGB: 288}}); err != nil {
		t.Errorf("TotalGB(8x 288 GB) = %v, want accepted", err)
	}
}
