package provider

import (
	"slices"
	"testing"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// A GPU waits for a reboot to be driven as set, unless the host booted
// since its type was set and still does not drive it so: another reboot
// would change nothing (NVIDIA's vGPU manager missing, for one).
func TestGraphicsWaiting(t *testing.T) {
	t.Parallel()
	set := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	later := set.Add(time.Hour)
	st := func(boot time.Time) *vsphere.HostGraphicsState {
		return &vsphere.HostGraphicsState{BootTime: &boot, GPUs: []vsphere.GPU{
			{PCIID: "a", GraphicsType: "basic"}, {PCIID: "b", GraphicsType: "basic"},
		}}
	}
	shared := vsphere.HostGraphicsSettings{DefaultType: "sharedDirect"}
	bShared := vsphere.HostGraphicsSettings{DefaultType: "sharedDirect", Devices: map[string]string{"b": "shared"}}
	for _, c := range []struct {
		name    string
		st      *vsphere.HostGraphicsState
		s       vsphere.HostGraphicsSettings
		prior   *vsphere.HostGraphicsSettings
		setBoot *time.Time
		want    []string
	}{
		{"a create: both wait", st(set), shared, nil, nil, []string{"a", "b"}},
		{"set in this boot: both wait", st(set), shared, &shared, &set, []string{"a", "b"}},
		{"booted since: neither can be driven so", st(later), shared, &shared, &set, nil},
		{"booted since, b changed back: nothing waits", st(later), bShared, &shared, &set, nil},
		{"booted since, b's type changed: b waits", st(later), shared, &bShared, &set, []string{"b"}},
		{"no record: both wait", st(later), shared, &shared, nil, []string{"a", "b"}},
	} {
		if got := graphicsWaiting(c.st, c.s, c.prior, c.setBoot); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
