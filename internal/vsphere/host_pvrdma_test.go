package vsphere

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestHostPVRDMA(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	host, other := lab.HostID(lab.HostNames()[0]), lab.HostID(lab.HostNames()[1])

	got, err := c.HostPVRDMA(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	if got.Settings.Vmknic != "" || got.Settings.FirewallEnabled || len(got.Settings.AllowedIPs) != 0 {
		t.Fatalf("fresh host settings = %+v, want unset, disabled, all addresses", got.Settings)
	}
	if !slices.Equal(got.Vmknics, []string{"vmk0", "vmk1"}) || got.HostName != lab.HostNames()[0] {
		t.Fatalf("host = %+v", got)
	}

	want := PVRDMASettings{Vmknic: "vmk1", FirewallEnabled: true, AllowedIPs: []string{"10.10.0.0/24", "192.0.2.10"}}
	if err := c.SetHostPVRDMA(ctx, host, want); err != nil {
		t.Fatal(err)
	}
	got, err = c.HostPVRDMA(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	if got.Settings.Vmknic != want.Vmknic || !got.Settings.FirewallEnabled || !slices.Equal(got.Settings.AllowedIPs, want.AllowedIPs) {
		t.Fatalf("after set: %+v, want %+v", got.Settings, want)
	}
	untouched, err := c.HostPVRDMA(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if untouched.Settings.Vmknic != "" || untouched.Settings.FirewallEnabled {
		t.Fatalf("another host changed: %+v", untouched.Settings)
	}

	// Back to all addresses, disabled.
	if err := c.SetHostPVRDMA(ctx, host, PVRDMASettings{Vmknic: "vmk0"}); err != nil {
		t.Fatal(err)
	}
	got, _ = c.HostPVRDMA(ctx, host)
	if got.Settings.FirewallEnabled || len(got.Settings.AllowedIPs) != 0 || got.Settings.Vmknic != "vmk0" {
		t.Fatalf("after reset: %+v", got.Settings)
	}

	if _, err := c.HostPVRDMA(ctx, "host-99999"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing host: %v", err)
	}
}

// A host's settings are read, the option by key, with the host's
// properties; the first read of a command reads every host's (see
// prefetch_all.go), so a second host's read makes no call.
func TestHostPVRDMAReadsShareOneCall(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	if _, err := c.DatacenterByName(ForChange(ctx), lab.DatacenterName()); err != nil { // logs in, no prefetch
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		lab.ResetCalls()
		if _, err := c.HostPVRDMA(ctx, lab.HostID(lab.HostNames()[i])); err != nil {
			t.Fatal(err)
		}
		if calls := lab.Calls(); calls["RetrievePropertiesEx"] != want || len(calls) > want {
			t.Fatalf("settings read %d made %v, want %d RetrievePropertiesEx", i+1, calls, want)
		}
	}
}

func TestSetHostPVRDMAOnHostWithoutTheOption(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	lab.FailCall("UpdateOptions", "", &types.InvalidName{Name: PVRDMAVmknicOption}, 1)
	err := c.SetHostPVRDMA(ctx, lab.HostID(lab.HostNames()[0]), PVRDMASettings{Vmknic: "vmk0"})
	if !errors.Is(err, ErrInvalidArg) || !strings.Contains(err.Error(), "PVRDMA needs ESXi 6.5 or later") {
		t.Fatalf("error = %v, want a clear explanation", err)
	}
}

func TestParseAllowedIP(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"10.0.0.5", "10.0.0.0/24", "fd00::/64", "fd00::1"} {
		if _, err := ParseAllowedIP(ok); err != nil {
			t.Errorf("ParseAllowedIP(%q): %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"10.0.0.5/24": "write 10.0.0.0/24",
		"FD00::1":     "write",
		"nope":        "neither an IP address nor a CIDR network",
	} {
		if _, err := ParseAllowedIP(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAllowedIP(%q) = %v, want %q", bad, err, want)
		}
	}
}

// TestPVRDMARulesetReadByKey: a host's PVRDMA settings read the pvrdma
// ruleset alone of its firewall, whose other rulesets a refresh of every
// host would otherwise carry.
func TestPVRDMARulesetReadByKey(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 1})
	ctx := context.Background()
	h, err := labClient(lab).readHostProps(ctx, "reading a host", lab.HostID(lab.HostNames()[0]), hostPVRDMAProps)
	if err != nil {
		t.Fatal(err)
	}
	if h.Config == nil || h.Config.Firewall == nil || len(h.Config.Firewall.Ruleset) != 1 || h.Config.Firewall.Ruleset[0].Key != PVRDMARuleset {
		t.Fatalf("the host's firewall as read: %+v; want the %s ruleset alone", h.Config, PVRDMARuleset)
	}
}
