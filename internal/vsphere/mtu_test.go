package vsphere

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mtu"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func pathMTUSpec(lab *vcsimlab.Lab, hosts int) PathMTUSpec {
	spec := PathMTUSpec{VMKernelNIC: "vmk1", Min: 1280, Max: 9000, Timeout: time.Second, Retries: 1, Concurrency: 4}
	for _, name := range lab.HostNames()[:hosts] {
		spec.HostIDs = append(spec.HostIDs, lab.HostID(name))
	}
	return spec
}

// mtus maps "source>target" host names to the pair's MTU.
func mtus(t *testing.T, lab *vcsimlab.Lab, got []PathMTU) map[string]int {
	t.Helper()
	name := map[string]string{}
	for _, n := range lab.HostNames() {
		name[lab.HostID(n)] = n
	}
	out := map[string]int{}
	for _, p := range got {
		if p.ConfiguredMTU != 9000 || p.Probes < 1 || p.Probes > 16 || p.TargetAddress == "" {
			t.Errorf("pair %+v: want configured 9000, 1..16 probes, an address", p)
		}
		out[name[p.SourceHostID]+">"+name[p.TargetHostID]] = p.MTU
	}
	return out
}

func TestPathMTUs(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 3})
	lab.SetLostProbeDelay(time.Millisecond)
	ctx := context.Background()
	c := labClient(lab)
	h := lab.HostNames()

	got, err := c.PathMTUs(ctx, pathMTUSpec(lab, 3))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d pairs for 3 hosts, want 6", len(got))
	}
	for pair, m := range mtus(t, lab, got) {
		if m != 9000 {
			t.Errorf("%s on a uniform 9000 fabric = %d", pair, m)
		}
	}

	// One slow link and one host behind a 1500 port.
	lab.SetLinkMTU(h[0], h[1], 7466)
	lab.SetPortMTU(h[2], 1500)
	got, err = c.PathMTUs(ctx, pathMTUSpec(lab, 3))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		h[0] + ">" + h[1]: 7466, h[1] + ">" + h[0]: 7466,
		h[0] + ">" + h[2]: 1500, h[2] + ">" + h[0]: 1500,
		h[1] + ">" + h[2]: 1500, h[2] + ">" + h[1]: 1500,
	}
	for pair, m := range mtus(t, lab, got) {
		if want[pair] != m {
			t.Errorf("%s = %d, want %d", pair, m, want[pair])
		}
	}
}

func TestPathMTUsRefusals(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 2})
	lab.SetLostProbeDelay(time.Millisecond)
	ctx := context.Background()
	c := labClient(lab)
	h := lab.HostNames()

	spec := pathMTUSpec(lab, 2)
	spec.VMKernelNIC = "vmk7"
	if _, err := c.PathMTUs(ctx, spec); !errors.Is(err, ErrNotFound) ||
		!strings.Contains(err.Error(), "has no VMkernel adapter vmk7 (it has vmk0, vmk1)") {
		t.Errorf("unknown vmknic: %v", err)
	}

	spec = pathMTUSpec(lab, 2)
	spec.HostIDs[1] = "host-999999"
	if _, err := c.PathMTUs(ctx, spec); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "host-999999") {
		t.Errorf("unknown host: %v", err)
	}

	spec = pathMTUSpec(lab, 2)
	spec.Min, spec.Max = 9100, 9216
	if _, err := c.PathMTUs(ctx, spec); !errors.Is(err, ErrInvalidArg) || !errors.Is(err, mtu.ErrBelowMin) ||
		!strings.Contains(err.Error(), "below the smallest size to try, 9100") {
		t.Errorf("configuration below min: %v", err)
	}

	lab.DropAll(h[1], true)
	_, err := c.PathMTUs(ctx, pathMTUSpec(lab, 2))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "got no reply from "+h[1]) {
		t.Errorf("a host that drops everything: %v", err)
	}
}

// BenchmarkPathMTUs8Hosts measures all 56 ordered pairs of 8 lab hosts: a
// uniform 9000 fabric, and one where a host sits behind a 1500 port and one
// link is 7466. Lost probes answer at once here; on ESXi each costs the
// probe's wait (1 s by default), spread over the concurrent pairs.
func BenchmarkPathMTUs8Hosts(b *testing.B) {
	for _, fabric := range []string{"uniform", "degraded"} {
		b.Run(fabric, func(b *testing.B) {
			lab, err := vcsimlab.Start(context.Background(), vcsimlab.Options{Hosts: 8})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(lab.Close)
			if fabric == "degraded" {
				h := lab.HostNames()
				lab.SetPortMTU(h[7], 1500)
				lab.SetLinkMTU(h[0], h[1], 7466)
			}
			c := labClient(lab)
			spec := pathMTUSpec(lab, 8)
			spec.Concurrency = 8
			var probes, worst int
			for b.Loop() {
				got, err := c.PathMTUs(context.Background(), spec)
				if err != nil {
					b.Fatal(err)
				}
				probes, worst = 0, 0
				for _, p := range got {
					probes += p.Probes
					worst = max(worst, p.Probes)
				}
			}
			b.ReportMetric(float64(probes)/56, "probes/pair")
			b.ReportMetric(float64(worst), "max-probes/pair")
			b.ReportMetric(float64(probes), "probes/op")
		})
	}
}

// TestPathMTUsNamesEveryMissingHost: a refusal names the hosts that do not
// exist, all of them, and none that does.
func TestPathMTUsNamesEveryMissingHost(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 3})
	c := labClient(lab)
	spec := pathMTUSpec(lab, 3)
	existing := spec.HostIDs[0]
	spec.HostIDs[1], spec.HostIDs[2] = "host-9999", "host-9998"
	_, err := c.PathMTUs(context.Background(), spec)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrNotFound) || e.Object != ObjectHost || e.ID != "host-9999, host-9998" {
		t.Fatalf("err = %#v, want a not-found error for hosts host-9999, host-9998", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "hosts host-9999, host-9998 do not exist") || strings.Contains(msg, existing) {
		t.Fatalf("err = %q, want the two missing hosts named and not %s", msg, existing)
	}
}

// The calls a measurement makes, by path choice: a ping per path (more for a
// probe lost at the boundary), plus reaching each sending host's esxcli (one
// call: its executer) and the read of the hosts. Counted at 8 and 32 hosts
// (a measurement runs on every plan).
func TestPathMTUsCallsByPathChoice(t *testing.T) {
	t.Parallel()
	for _, k := range []int{8, 32} {
		lab := acctest.StartLab(t, vcsimlab.Options{Hosts: k})
		ctx := context.Background()
		for _, choice := range []PathChoice{PathsAll, PathsStar, PathsRing} {
			c := labClient(lab)
			spec := pathMTUSpec(lab, k)
			spec.Paths, spec.Concurrency = choice, 16
			lab.ResetCalls()
			got, err := c.PathMTUs(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			paths := map[PathChoice]int{PathsAll: k * (k - 1), PathsStar: 2 * (k - 1), PathsRing: k}[choice]
			calls := lab.Calls()
			total := 0
			for _, n := range calls {
				total += n
			}
			t.Logf("%d hosts, paths %s: %d paths, %d calls: %v", k, choice, len(got), total, calls)
			// Pings are ExecuteSoap calls; all else is reaching the hosts:
			// logging in (2 calls), reading them, and their executers.
			if len(got) != paths || calls["ExecuteSoap"] < paths || calls["RetrieveManagedMethodExecuter"] != k || total-calls["ExecuteSoap"] > k+3 {
				t.Errorf(
					"%d hosts, %s: %d paths, %d pings, %d executers, %d other calls; want %d paths, at least as many pings, %d executers, at most %d other calls",
					k,
					choice,
					len(got),
					calls["ExecuteSoap"],
					calls["RetrieveManagedMethodExecuter"],
					total-calls["ExecuteSoap"]-calls["RetrieveManagedMethodExecuter"],
					paths,
					k,
					3,
				)
			}
		}
	}
}

// A vmknic on a distributed switch is capped by that switch's MTU, which the
// host shows on its proxy switch of the switch's UUID; other proxy switches
// and one that reports no MTU do not cap it.
func TestEndOfDistributedSwitchMTU(t *testing.T) {
	t.Parallel()
	host := func(vnicMTU int32, proxies ...types.HostProxySwitch) mo.HostSystem {
		h := mo.HostSystem{Config: &types.HostConfigInfo{Network: &types.HostNetworkInfo{
			Vnic: []types.HostVirtualNic{{Device: "vmk1", Spec: types.HostVirtualNicSpec{
				Mtu: vnicMTU, Ip: &types.HostIpConfig{IpAddress: "192.0.2.11"},
				DistributedVirtualPort: &types.DistributedVirtualSwitchPortConnection{SwitchUuid: "50 aa", PortgroupKey: "dvportgroup-1"},
			}}},
			ProxySwitch: proxies,
		}}}
		h.Name = "esx1"
		return h
	}
	for _, tc := range []struct {
		name string
		host mo.HostSystem
		want int
	}{
		{
			"the switch's smaller MTU",
			host(9000, types.HostProxySwitch{DvsUuid: "50 bb", Mtu: 1280}, types.HostProxySwitch{DvsUuid: "50 aa", Mtu: 1500}),
			1500,
		},
		{"the vmknic's smaller MTU", host(4000, types.HostProxySwitch{DvsUuid: "50 aa", Mtu: 9000}), 4000},
		{"no MTU reported", host(9000, types.HostProxySwitch{DvsUuid: "50 aa"}), 9000},
	} {
		end, err := endOf(tc.host, "vmk1")
		if err != nil || end.configured != tc.want {
			t.Errorf("%s: configured %d, %v; want %d", tc.name, end.configured, err, tc.want)
		}
	}
}
