package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// maxMTUConfig probes all the lab's hosts, found by name as a module would,
// so host_system_ids is unknown when the configuration is validated.
func maxMTUConfig(lab *vcsimlab.Lab, extra string) string {
	var names []string
	for _, name := range lab.HostNames() {
		names = append(names, fmt.Sprintf("%q", name))
	}
	return providerConfig(lab) + fmt.Sprintf(`
data "vspherehpc_host" "node" {
  count         = %d
  datacenter_id = %q
  name          = [%s][count.index]
}

data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = data.vspherehpc_host.node[*].id
  vmknic          = "vmk1"
%s}
`, len(names), lab.DatacenterID(), strings.Join(names, ", "), extra)
}

// pairMTUs checks every pair's measured and configured MTU, keyed by the
// lab's host indexes.
func pairMTUs(lab *vcsimlab.Lab, mtu func(from, to int) int64) statecheck.StateCheck {
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
				"configured_mtu":   knownvalue.Int64Exact(9000),
			}))
		}
	}
	return statecheck.ExpectKnownValue("data.vspherehpc_max_mtu.fabric", tfjsonpath.New("pairs"), knownvalue.ListExact(pairs))
}

func TestAccMaxMTUDataSource(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 3})
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
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// A uniform 9000 fabric: one probe per pair at the upper bound.
				Config: maxMTUConfig(lab, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("mtu"), knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("configured_mtu"), knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("min_mtu"), knownvalue.Int64Exact(1280)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("timeout"), knownvalue.StringExact("1s")),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("pairs").AtSliceIndex(0).AtMapKey("probes"), knownvalue.Int64Exact(1)),
					pairMTUs(lab, func(int, int) int64 { return 9000 }),
				},
			},
			{
				// One slow link: only that pair, both ways, is found short.
				PreConfig: func() { lab.SetLinkMTU(h[0], h[1], 7466) },
				Config:    maxMTUConfig(lab, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("mtu"), knownvalue.Int64Exact(7466)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("configured_mtu"), knownvalue.Int64Exact(9000)),
					atMost16Probes,
					pairMTUs(lab, func(i, j int) int64 {
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
				Config:    maxMTUConfig(lab, "  min_mtu = 1400\n  max_mtu = 8000\n  retries = 2\n  concurrency = 1\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(d, tfjsonpath.New("mtu"), knownvalue.Int64Exact(1500)),
					statecheck.ExpectKnownValue(d, tfjsonpath.New("retries"), knownvalue.Int64Exact(2)),
					pairMTUs(lab, func(i, j int) int64 {
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
				Config:      maxMTUConfig(lab, ""),
				ExpectError: regexp.MustCompile(`(?s)got no reply from ` + regexp.QuoteMeta(h[1]) + `.*even at 1280 bytes`),
			},
		},
	})
}

func TestAccMaxMTUDataSourceRefusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 2})
	h0 := lab.HostID(lab.HostNames()[0])
	one := providerConfig(lab) + fmt.Sprintf(`
data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = [%q]
}
`, h0)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: one, ExpectError: regexp.MustCompile(`(?s)host_system_ids.*at least 2`)},
			{Config: maxMTUConfig(lab, "  min_mtu = 9000\n  max_mtu = 8000\n"), ExpectError: regexp.MustCompile(`min_mtu \(9000\) is larger than max_mtu\s+\(8000\)`)},
			{Config: maxMTUConfig(lab, "  min_mtu = 1500\n  max_mtu = 1400\n"), ExpectError: regexp.MustCompile(`min_mtu \(1500\) is larger than max_mtu\s+\(1400\)`)},
			{Config: maxMTUConfig(lab, "  max_mtu = 9216\n"), ExpectError: regexp.MustCompile(`(?s)max_mtu.*between 576 and 9000`)},
			{Config: maxMTUConfig(lab, "  timeout = \"0s\"\n"), ExpectError: regexp.MustCompile(`timeout must be a positive duration`)},
			{
				Config:      strings.Replace(maxMTUConfig(lab, ""), `"vmk1"`, `"vmk9"`, 1),
				ExpectError: regexp.MustCompile(`(?s)has no VMkernel adapter vmk9.*vmk0, vmk1`),
			},
		},
	})
}

func TestShortfallNamesTheWorstPair(t *testing.T) {
	got := shortfall([]vsphere.PathMTU{
		{SourceHostName: "a", TargetHostName: "b", TargetAddress: "192.0.2.12", MTU: 7466, ConfiguredMTU: 9000},
		{SourceHostName: "a", TargetHostName: "c", TargetAddress: "192.0.2.13", MTU: 1500, ConfiguredMTU: 9000},
		{SourceHostName: "c", TargetHostName: "a", TargetAddress: "192.0.2.11", MTU: 1500, ConfiguredMTU: 1600},
	}, 6)
	if !strings.Contains(got, "3 of 6 host pairs") || !strings.Contains(got, "The worst is a to c (192.0.2.13): 1500 bytes get through, 9000 are configured") {
		t.Fatalf("warning = %q", got)
	}
}
