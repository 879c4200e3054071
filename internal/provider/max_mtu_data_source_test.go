package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// maxMTUDataSourceConfig probes all the lab's hosts, found by name as a module would,
// so host_system_ids is unknown when the configuration is validated.
func maxMTUDataSourceConfig(lab *vcsimlab.Lab, extra string) string {
	var names []string
	for _, name := range lab.HostNames() {
		names = append(names, fmt.Sprintf("%q", name))
	}
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_host" "node" {
  count         = %d
  datacenter_id = %q
  name          = [%s][count.index]
}

data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = data.vspherehpc_host.node[*].id
  vmknic          = %q
%s}
`, len(names), lab.DatacenterID(), strings.Join(names, ", "), lab.Vmknic(), extra)
}

// pairMTUs checks every pair's measured and configured MTU, keyed by the
// lab's host indexes.
func pairMTUs(lab *vcsimlab.Lab, configured int64, mtu func(from, to int) int64) statecheck.StateCheck {
	var pairs []knownvalue.Check
	hosts := lab.HostNames()
	for i := range hosts {
		for j := range hosts {
			if i == j {
				continue
			}
			pairs = append(pairs, knownvalue.ObjectPartial(map[string]knownvalue.Check{
				"source_host_id":   knownvalue.StringExact(lab.HostID(hosts[i])),
				"source_host_name": knownvalue.StringExact(hosts[i]),
				"target_host_id":   knownvalue.StringExact(lab.HostID(hosts[j])),
				"target_address":   knownvalue.StringRegexp(regexp.MustCompile(`^192\.0\.2\.\d+$`)),
				"mtu":              knownvalue.Int64Exact(mtu(i, j)),
				"configured_mtu":   knownvalue.Int64Exact(configured),
			}))
		}
	}
	return statecheck.ExpectKnownValue("data.vspherehpc_max_mtu.fabric", tfjsonpath.New("pairs"), knownvalue.ListExact(pairs))
}

func TestAccMaxMTUDataSource(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 3})
	simulatedOnly(t, lab, "measures the lab's simulated fabric, and changes its MTUs")
	lab.SetLostProbeDelay(time.Millisecond)
	h := lab.HostNames()
	d := "data.vspherehpc_max_mtu.fabric"
	// Without loss, with the default single retry.
	atMost16Probes := statecheck.ExpectKnownValue(d, tfjsonpath.New("pairs").AtSliceIndex(0).AtMapKey("probes"),
		knownvalue.Int64Func(func(n int64) error {
			if n < 1 || n > 16 {
				return fmt.Errorf("%d probes, want 1 to 16", n)
			}
			return nil
		}))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// A uniform 9000 fabric: one probe per pair at the upper bound.
				Config: maxMTUDataSourceConfig(lab, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("mtu"), knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("configured_mtu"), knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("min_mtu"), knownvalue.Int64Exact(1280)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("timeout"), knownvalue.StringExact("1s")),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("pairs").AtSliceIndex(0).AtMapKey("probes"), knownvalue.Int64Exact(1)),
					pairMTUs(lab, 9000, func(int, int) int64 { return 9000 }),
				},
			},
			{
				// One slow link: only that pair, both ways, is found short.
				PreConfig: func() { lab.SetLinkMTU(h[0], h[1], 7466) },
				Config:    maxMTUDataSourceConfig(lab, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("mtu"), knownvalue.Int64Exact(7466)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("configured_mtu"), knownvalue.Int64Exact(9000)),
					atMost16Probes,
					pairMTUs(lab, 9000, func(i, j int) int64 {
						if i+j == 1 {
							return 7466
						}
						return 9000
					}),
				},
			},
			{
				// One host behind a 1500 switch port, searched within tighter bounds.
				PreConfig: func() { lab.SetPortMTU(h[2], 1500) },
				Config:    maxMTUDataSourceConfig(lab, "  min_mtu = 1400\n  max_mtu = 8000\n  retries = 2\n  concurrency = 1\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("mtu"), knownvalue.Int64Exact(1500)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("retries"), knownvalue.Int64Exact(2)),
					pairMTUs(lab, 8000, func(i, j int) int64 {
						switch {
						case i == 2 || j == 2:
							return 1500
						case i+j == 1:
							return 7466
						}
						return 8000 // capped by max_mtu
					}),
				},
			},
			{
				// A host that drops everything is an error naming it, not a small number.
				PreConfig:   func() { lab.DropAll(h[1], true) },
				Config:      maxMTUDataSourceConfig(lab, ""),
				ExpectError: regexp.MustCompile(`(?s)got no reply from ` + regexp.QuoteMeta(h[1]) + `.*even at 1280 bytes`),
			},
		},
	})
}

func TestAccMaxMTUDataSourceRefusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 2})
	h0 := lab.HostID(lab.HostNames()[0])
	// A vmknic the hosts do not have, and those the first host has: the
	// lab's, or on an external vCenter at least the PVRDMA one.
	missing, vmknics := "vmk9", regexp.QuoteMeta("vmk0, vmk1")
	if !lab.Simulated() {
		for _, name := range lab.HostNames() {
			h, err := labClient(lab).HostPVRDMA(context.Background(), lab.HostID(name))
			acctest.Must(t, err)
			for slices.Contains(h.Vmknics, missing) {
				missing += "9"
			}
		}
		vmknics = regexp.QuoteMeta(lab.Vmknic())
	}
	one := acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = [%q]
}
`, h0)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: one, ExpectError: regexp.MustCompile(`(?s)host_system_ids.*at least 2`)},
			{
				Config:      maxMTUDataSourceConfig(lab, "  min_mtu = 9000\n  max_mtu = 8000\n"),
				ExpectError: regexp.MustCompile(`min_mtu \(9000\) is larger than max_mtu\s+\(8000\)`),
			},
			{
				Config:      maxMTUDataSourceConfig(lab, "  min_mtu = 1500\n  max_mtu = 1400\n"),
				ExpectError: regexp.MustCompile(`min_mtu \(1500\) is larger than max_mtu\s+\(1400\)`),
			},
			{Config: maxMTUDataSourceConfig(lab, "  max_mtu = 9216\n"), ExpectError: regexp.MustCompile(`(?s)max_mtu.*between 576 and 9000`)},
			{Config: maxMTUDataSourceConfig(lab, "  timeout = \"0s\"\n"), ExpectError: regexp.MustCompile(`timeout must be a positive duration`)},
			{
				Config: strings.Replace(
					maxMTUDataSourceConfig(lab, ""),
					fmt.Sprintf("vmknic          = %q", lab.Vmknic()),
					fmt.Sprintf("vmknic          = %q", missing),
					1,
				),
				ExpectError: regexp.MustCompile(`(?s)has no VMkernel adapter ` + missing + `.*` + vmknics),
			},
		},
	})
}

// Runner mode probes from this process; loopback is the only path a test
// may use outside a network namespace (internal/mtu tests a real router).
//
// An acceptance test (resource.Test, run with TF_ACC=1, as make test does):
// its probes need an ICMP socket, which the process may open only with its
// group in net.ipv4.ping_group_range or with CAP_NET_RAW, a setting of the
// machine rather than of this process.
func TestAccMaxMTUDataSourceFromRunner(t *testing.T) {
	t.Parallel()
	d := "data.vspherehpc_max_mtu.runner"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      "data \"vspherehpc_max_mtu\" \"runner\" {\n  targets = [\"::1\"]\n}\n",
				ExpectError: regexp.MustCompile(`::1 is not an IPv4 address`),
			},
			{
				Config:      "data \"vspherehpc_max_mtu\" \"runner\" {\n  targets = [\"127.0.0.1\"]\n  vmknic = \"vmk1\"\n}\n",
				ExpectError: regexp.MustCompile(`(?s)Invalid Attribute Combination.*vmknic`),
			},
			{
				Config:      "data \"vspherehpc_max_mtu\" \"runner\" {\n  min_mtu = 1400\n}\n",
				ExpectError: regexp.MustCompile(`(?s)Exactly one of these attributes must be configured:\s+\[host_system_ids,targets\]`),
			},
			{
				// No vCenter settings: runner mode does not need them.
				Config: `
data "vspherehpc_max_mtu" "runner" {
  targets = ["127.0.0.1", "localhost"]
  max_mtu = 8192
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("mtu"), knownvalue.Int64Exact(8192)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("configured_mtu"), knownvalue.Int64Exact(8192)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("vmknic"), knownvalue.Null()),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("pairs"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectExact(map[string]knownvalue.Check{
							"source_host_id": knownvalue.StringExact(""), "source_host_name": knownvalue.StringExact(""),
							"target_host_id": knownvalue.StringExact(""), "target_host_name": knownvalue.StringExact("127.0.0.1"),
							"target_address": knownvalue.StringExact("127.0.0.1"), "mtu": knownvalue.Int64Exact(8192),
							"configured_mtu": knownvalue.Int64Exact(8192), "probes": knownvalue.Int64Exact(1),
						}),
						knownvalue.ObjectPartial(map[string]knownvalue.Check{
							"target_host_name": knownvalue.StringExact("localhost"),
							"target_address":   knownvalue.StringRegexp(regexp.MustCompile(`^127\.`)),
							"mtu":              knownvalue.Int64Exact(8192),
						}),
					})),
				},
			},
		},
	})
}

func TestShortfallNamesTheWorstPair(t *testing.T) {
	got := shortfall([]measuredPath{
		{sourceName: "a", targetName: "b", address: "192.0.2.12", mtu: 7466, configured: 9000},
		{sourceName: "a", targetName: "c", address: "192.0.2.13", mtu: 1500, configured: 9000},
		{sourceName: "c", targetName: "a", address: "192.0.2.11", mtu: 1500, configured: 1600},
	}, 6)
	if !strings.Contains(got, "3 of 6 paths") ||
		!strings.Contains(got, "The worst is a to c (192.0.2.13): 1500 bytes get through, 9000 are configured") {
		t.Fatalf("warning = %q", got)
	}
	got = shortfall([]measuredPath{{targetName: "gw", address: "10.0.0.1", mtu: 1500, configured: 9000}}, 1)
	if !strings.Contains(got, "The worst is this machine to gw (10.0.0.1)") {
		t.Fatalf("runner warning = %q", got)
	}
}

// A host id that does not exist is named, each of them, with where ids come
// from; a fractional MTU bound is refused naming the argument (issue 12).
func TestAccMaxMTUDataSource_missingHostsAndNumbers(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	existing := lab.HostID(lab.HostNames()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = [%q, "host-9999", "host-9998"]
  vmknic          = %q
}
`, existing, lab.Vmknic()), PlanOnly: true,
				ExpectError: acctest.Wording(`hosts host-9999, host-9998 do not exist; ` +
					`data.vspherehpc_host looks one up by name, and data.vspherehpc_cluster lists a cluster's in host_system_ids.`)},
			{Config: maxMTUDataSourceConfig(lab, "  min_mtu = 1400.5\n"), PlanOnly: true,
				ExpectError: acctest.Wording(`min_mtu must be a whole number from 576 to 9000; 1400.5 is not.`)},
		},
	})
}

// paths chooses the ordered pairs: every one, a star around the first host,
// or a ring. Each pair is one ping on a healthy fabric, so the lab's pings
// count the paths too.
func TestAccMaxMTUDataSource_paths(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 4})
	simulatedOnly(t, lab, "measures the lab's simulated fabric, and counts its pings")
	h := lab.HostNames()
	id := func(i int) string { return lab.HostID(h[i]) }
	pair := func(from, to int) knownvalue.Check {
		return knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"source_host_id": knownvalue.StringExact(id(from)), "target_host_id": knownvalue.StringExact(id(to)),
			"mtu": knownvalue.Int64Exact(9000),
		})
	}
	pings := 0
	before := func() { pings = len(lab.Pings()) }
	pingsAre := func(want int) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if got := len(lab.Pings()) - pings; got != want {
				return fmt.Errorf("%d pings, want %d: one per path", got, want)
			}
			return nil
		}
	}
	d := "data.vspherehpc_max_mtu.fabric"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_max_mtu" "fabric" {
  targets = ["127.0.0.1"]
  paths   = "star"
}
`,
				ExpectError: regexp.MustCompile(`(?s)Invalid Attribute Combination.*paths`),
			},
			{
				Config:      maxMTUDataSourceConfig(lab, `  paths = "mesh"`+"\n"),
				ExpectError: regexp.MustCompile(`(?s)paths.*value must be one of`),
			},
			{
				PreConfig: before,
				Config:    maxMTUDataSourceConfig(lab, `  paths = "star"`+"\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("pairs"), knownvalue.ListExact([]knownvalue.Check{
						pair(0, 1), pair(0, 2), pair(0, 3), pair(1, 0), pair(2, 0), pair(3, 0),
					})),
				},
				Check: pingsAre(6),
			},
			{
				PreConfig: before,
				Config:    maxMTUDataSourceConfig(lab, `  paths = "ring"`+"\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("pairs"), knownvalue.ListExact([]knownvalue.Check{
						pair(0, 1), pair(1, 2), pair(2, 3), pair(3, 0),
					})),
				},
				Check: pingsAre(4),
			},
			{
				PreConfig: before,
				Config:    maxMTUDataSourceConfig(lab, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("paths"), knownvalue.StringExact("all")),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("pairs"), knownvalue.ListSizeExact(12)),
				},
				Check: pingsAre(12),
			},
		},
	})
}
