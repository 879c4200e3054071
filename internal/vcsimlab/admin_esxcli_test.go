package vcsimlab

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vmware/govmomi/cli/esx"
)

func TestAdminEsxcli(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	host := l.HostNames()[1]
	run := func(args ...string) []map[string]string {
		t.Helper()
		rows, err := l.Esxcli(ctx, host, args...)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}

	// A change answers no row; a list answers one per structure.
	if rows := run("network", "firewall", "ruleset", "set", "--ruleset-id", "pvrdma", "--enabled", "true"); rows != nil {
		t.Errorf("set answered rows %v", rows)
	}
	if sys, cfg := ruleset(t, l, 1, "pvrdma"); !sys.Enabled || !cfg.Enabled {
		t.Error("the set did not reach the host's firewall")
	}
	if rows := run("network", "firewall", "ruleset", "list", "-r", "pvrdma"); len(rows) != 1 || rows[0]["Name"] != "pvrdma" ||
		rows[0]["Enabled"] != "true" {
		t.Errorf("list rows %v", rows)
	}
	run("network", "firewall", "ruleset", "set", "-r", "pvrdma", "-a", "false")
	run("network", "firewall", "ruleset", "allowedip", "add", "-r", "pvrdma", "-i", "198.51.100.0/24")
	run("network", "firewall", "ruleset", "allowedip", "add", "-r", "pvrdma", "--ip-address=192.0.2.7")
	if rows := run("network", "firewall", "ruleset", "allowedip", "list", "-r", "pvrdma"); len(rows) != 1 ||
		rows[0]["AllowedIPAddresses"] != "192.0.2.7, 198.51.100.0/24" {
		t.Errorf("allowedip rows %v", rows)
	}
	// vcsim's own commands work too.
	if rows := run("network", "firewall", "get"); len(rows) != 1 || rows[0]["Loaded"] != "true" {
		t.Errorf("firewall get rows %v", rows)
	}

	// The command's own failure carries its message and the CLI fault.
	_, err := l.Esxcli(ctx, host, "network", "firewall", "ruleset", "set", "-r", "nope", "-e", "true")
	var f *esx.Fault
	if err == nil || !strings.HasSuffix(err.Error(), "on host "+host+": Ruleset nope not found") || !errors.As(err, &f) {
		t.Errorf("unknown ruleset: %v", err)
	}
	// What govc's parser would exit the process on is an error instead.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"network", "firewall", "ruleset", "set", "--bogus", "x"}, "unknown option --bogus"},
		{[]string{"network", "firewall", "ruleset", "set", "-h"}, "unknown option -h"},
		{[]string{"network", "firewall", "ruleset", "set", "-r"}, "option -r needs a value"},
		{[]string{"network", "firewall", "ruleset", "set", "-r", "pvrdma", "extra"}, `unexpected argument "extra"`},
		{[]string{"network", "firewall", "ruleset", "set", "---r", "pvrdma"}, `unexpected argument "---r"`},
		{[]string{"network"}, "name a namespace and a command"},
		{[]string{"network", "firewall", "ruleset", "nope"}, "method 'nope' not found"},
		{[]string{"no", "such", "namespace"}, "could not be found"},
	} {
		if _, err := l.Esxcli(ctx, host, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("esxcli %v: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := l.Esxcli(ctx, "no-such-host", "network", "firewall", "get"); err == nil {
		t.Error("an unknown host was accepted")
	}
	// The admin client's calls are not counted.
	if n := l.Calls()["ExecuteSoap"]; n != 0 {
		t.Errorf("%d ExecuteSoap calls counted", n)
	}
}
