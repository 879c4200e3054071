package vcsimlab

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/cli/esx"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// esxcliExecutor is govmomi's esxcli executor on lab host i, over a client
// of its own, as govc host.esxcli uses it.
func esxcliExecutor(t *testing.T, l *Lab, i int) *esx.Executor {
	t.Helper()
	c := newClient(t, l).Client
	e, err := esx.NewExecutor(context.Background(), c, object.NewHostSystem(c, hostRef(l, i)))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// esxcliRun runs a command line through e; a CLI fault comes back as its
// message.
func esxcliRun(t *testing.T, e *esx.Executor, args ...string) (*esx.Response, error) {
	t.Helper()
	res, err := e.Run(context.Background(), args)
	var f *esx.Fault
	if errors.As(err, &f) {
		return nil, errors.New(faultMessage(f))
	}
	return res, err
}

func mustRun(t *testing.T, e *esx.Executor, args ...string) *esx.Response {
	t.Helper()
	res, err := esxcliRun(t, e, args...)
	if err != nil {
		t.Fatalf("esxcli %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// wantCLIFault checks that a command fails with a message containing msg.
func wantCLIFault(t *testing.T, e *esx.Executor, msg string, args ...string) {
	t.Helper()
	if _, err := esxcliRun(t, e, args...); err == nil || !strings.Contains(err.Error(), msg) {
		t.Errorf("esxcli %s: err = %v, want %q", strings.Join(args, " "), err, msg)
	}
}

// listed is one structure of a list answer, by its key field.
func listed(t *testing.T, res *esx.Response, key, value string) esx.Values {
	t.Helper()
	for _, v := range res.Values {
		if v.Value(key) == value {
			return v
		}
	}
	t.Fatalf("no %s %s in %v", key, value, res.Values)
	return nil
}

func TestEsxcliFirewallMetadata(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	e := esxcliExecutor(t, l, 0)
	ctx := context.Background()

	for _, c := range []struct {
		ns, cmd string
		params  map[string][]string // name -> aliases
		fields  string
	}{
		{"network.firewall.ruleset", "list", map[string][]string{"rulesetid": {"-r", "--ruleset-id"}}, "Name,Enabled"},
		{"network.firewall.ruleset", "set", map[string][]string{
			"rulesetid":  {"-r", "--ruleset-id"},
			"enabled":    {"-e", "--enabled"},
			"allowedall": {"-a", "--allowed-all"},
		}, ""},
		{"network.firewall.ruleset.allowedip", "list", map[string][]string{"rulesetid": {"-r", "--ruleset-id"}}, "Ruleset,Allowed IP Addresses"},
		{"network.firewall.ruleset.allowedip", "add", map[string][]string{"rulesetid": {"-r", "--ruleset-id"}, "ipaddress": {"-i", "--ip-address"}}, ""},
		{"network.firewall.ruleset.allowedip", "remove", map[string][]string{"rulesetid": {"-r", "--ruleset-id"}, "ipaddress": {"-i", "--ip-address"}}, ""},
	} {
		m, err := e.CommandInfoMethod(ctx, esx.NewCommand(append(strings.Split(c.ns, "."), c.cmd)))
		if err != nil {
			t.Fatalf("%s %s: %v", c.ns, c.cmd, err)
		}
		got := map[string][]string{}
		for _, p := range m.Param {
			got[p.Name] = p.Aliases
			if p.Flag {
				t.Errorf("%s %s: %s is a flag; esxcli takes a value", c.ns, c.cmd, p.Name)
			}
		}
		if len(got) != len(c.params) {
			t.Errorf("%s %s: params %v, want %v", c.ns, c.cmd, got, c.params)
		}
		for name, aliases := range c.params {
			if !slices.Equal(got[name], aliases) {
				t.Errorf("%s %s: %s aliases %v, want %v", c.ns, c.cmd, name, got[name], aliases)
			}
		}
		if c.fields != "" && (m.Hints.Formatter() != "table" || strings.Join(m.Hints.Fields(), ",") != c.fields) {
			t.Errorf("%s %s: hints %v, want a table of %s", c.ns, c.cmd, m.Hints, c.fields)
		}
	}

	// The options parse as govc parses them: short aliases, long names, "=".
	req, _, err := e.NewRequest(ctx, []string{"network", "firewall", "ruleset", "set", "-r", "pvrdma", "--enabled=true", "--allowed-all", "false"})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, a := range req.Argument {
		args[a.Name] = strings.Join(a.Value(), ",")
	}
	if req.Method != "vim.EsxCLI.network.firewall.ruleset.set" || args["rulesetid"] != "pvrdma" || args["enabled"] != "true" ||
		args["allowedall"] != "false" {
		t.Errorf("request %s %v", req.Method, args)
	}

	// vcsim's own namespaces are still vcsim's, and ping the lab's.
	if res := mustRun(t, e, "network", "firewall", "get"); res.Values[0].Value("Loaded") != "true" {
		t.Errorf("network firewall get: %v", res.Values)
	}
	if _, err := e.CommandInfoMethod(ctx, esx.NewCommand([]string{"network", "diag", "ping"})); err != nil {
		t.Errorf("network diag ping metadata: %v", err)
	}
	// A namespace the lab does not model stays unknown, as on stock vcsim.
	if _, err := e.CommandInfo(ctx, "network.firewall.ruleset.rule"); err == nil {
		t.Error("network.firewall.ruleset.rule has metadata; the lab does not model it")
	}
	// Older clients capitalize the command (pyvisdk's "...ruleset.List").
	req, _, err = e.NewRequest(ctx, []string{"network", "firewall", "ruleset", "list"})
	if err != nil {
		t.Fatal(err)
	}
	req.Method = "vim.EsxCLI.network.firewall.ruleset.List"
	var res esx.Response
	if err := e.Execute(ctx, req, &res); err != nil || len(res.Values) == 0 {
		t.Errorf("capitalized list: %d rulesets, %v", len(res.Values), err)
	}
}

// Enabling and disabling through esxcli and through HostFirewallSystem
// change the same per-host rulesets.
func TestEsxcliRulesetSetAndList(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	e := esxcliExecutor(t, l, 0)

	all := mustRun(t, e, "network", "firewall", "ruleset", "list")
	var fw mo.HostFirewallSystem
	retrieve(t, l.Client(), firewall(t, l, 0), []string{"firewallInfo"}, &fw)
	if len(all.Values) != len(fw.FirewallInfo.Ruleset) {
		t.Errorf("esxcli lists %d rulesets, the firewall system %d", len(all.Values), len(fw.FirewallInfo.Ruleset))
	}
	for _, rs := range fw.FirewallInfo.Ruleset {
		if got := listed(t, all, "Name", rs.Key).Value("Enabled"); got != map[bool]string{true: "true", false: "false"}[rs.Enabled] {
			t.Errorf("ruleset %s: esxcli Enabled %s, API %v", rs.Key, got, rs.Enabled)
		}
	}
	if v := listed(t, all, "Name", "pvrdma"); v.Value("Enabled") != "false" {
		t.Errorf("pvrdma listed %v, want disabled", v)
	}

	// esxcli enables: the API sees it, on this host only.
	res := mustRun(t, e, "network", "firewall", "ruleset", "set", "--ruleset-id", "pvrdma", "--enabled", "true")
	if res.String != "true" || len(res.Values) != 0 {
		t.Errorf("set answered %+v, want the boolean true", res)
	}
	if sys, cfg := ruleset(t, l, 0, "pvrdma"); !sys.Enabled || !cfg.Enabled {
		t.Errorf("after esxcli set: firewall system %v, config.firewall %v; want both enabled", sys.Enabled, cfg.Enabled)
	}
	if sys, cfg := ruleset(t, l, 1, "pvrdma"); sys.Enabled || cfg.Enabled {
		t.Error("esxcli on host 0 enabled host 1")
	}
	one := mustRun(t, e, "network", "firewall", "ruleset", "list", "-r", "pvrdma")
	if len(one.Values) != 1 || one.Values[0].Value("Name") != "pvrdma" || one.Values[0].Value("Enabled") != "true" {
		t.Errorf("list -r pvrdma: %v", one.Values)
	}

	// The API disables: esxcli sees it. 0 and 1 are booleans too.
	c := newClient(t, l).Client
	if _, err := methods.DisableRuleset(ctx, c, &types.DisableRuleset{This: firewall(t, l, 0), Id: "pvrdma"}); err != nil {
		t.Fatal(err)
	}
	if v := mustRun(t, e, "network", "firewall", "ruleset", "list", "--ruleset-id=pvrdma").Values[0]; v.Value("Enabled") != "false" {
		t.Errorf("after DisableRuleset esxcli lists %v", v)
	}
	mustRun(t, e, "network", "firewall", "ruleset", "set", "-r", "pvrdma", "-e", "1")
	if sys, _ := ruleset(t, l, 0, "pvrdma"); !sys.Enabled {
		t.Error("-e 1 did not enable")
	}

	wantCLIFault(t, e, "Ruleset nope not found", "network", "firewall", "ruleset", "set", "-r", "nope", "-e", "true")
	wantCLIFault(t, e, "Ruleset nope not found", "network", "firewall", "ruleset", "list", "-r", "nope")
	wantCLIFault(t, e, "Missing required parameter -r|--ruleset-id", "network", "firewall", "ruleset", "set", "-e", "true")
	wantCLIFault(t, e, `Invalid value "maybe" for parameter -e|--enabled`, "network", "firewall", "ruleset", "set", "-r", "pvrdma", "-e", "maybe")
	if sys, _ := ruleset(t, l, 0, "pvrdma"); !sys.Enabled {
		t.Error("a refused set changed the ruleset")
	}
}

// --allowed-all and the allowed list through esxcli and through
// UpdateRuleset change the same list.
func TestEsxcliAllowedIPs(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	e := esxcliExecutor(t, l, 0)
	allowed := func() []string {
		t.Helper()
		res := mustRun(t, e, "network", "firewall", "ruleset", "allowedip", "list", "-r", "pvrdma")
		if len(res.Values) != 1 || res.Values[0].Value("Ruleset") != "pvrdma" {
			t.Fatalf("allowedip list -r pvrdma: %v", res.Values)
		}
		return res.Values[0]["AllowedIPAddresses"]
	}
	if got := allowed(); !slices.Equal(got, []string{"All"}) {
		t.Errorf("allowed %v, want All", got)
	}
	wantCLIFault(t, e, "Already allowed all ip", "network", "firewall", "ruleset", "set", "-r", "pvrdma", "-a", "true")

	mustRun(t, e, "network", "firewall", "ruleset", "set", "-r", "pvrdma", "--allowed-all", "false")
	if got := allowed(); len(got) != 0 {
		t.Errorf("allowed %v, want none", got)
	}
	mustRun(t, e, "network", "firewall", "ruleset", "allowedip", "add", "-r", "pvrdma", "-i", "198.51.100.0/24")
	mustRun(t, e, "network", "firewall", "ruleset", "allowedip", "add", "--ruleset-id", "pvrdma", "--ip-address", "192.0.2.7")
	// Addresses, then networks, as the vSphere CLI examples show.
	if got := allowed(); !slices.Equal(got, []string{"192.0.2.7", "198.51.100.0/24"}) {
		t.Errorf("allowed %v", got)
	}
	for _, rs := range func() []types.HostFirewallRuleset {
		s, c := ruleset(t, l, 0, "pvrdma")
		return []types.HostFirewallRuleset{s, c}
	}() {
		a := rs.AllowedHosts
		if a == nil || a.AllIp || !slices.Equal(a.IpAddress, []string{"192.0.2.7"}) || len(a.IpNetwork) != 1 ||
			a.IpNetwork[0] != (types.HostFirewallRulesetIpNetwork{Network: "198.51.100.0", PrefixLength: 24}) {
			t.Errorf("the API sees %+v", a)
		}
	}
	if rs, _ := ruleset(t, l, 1, "pvrdma"); !rs.AllowedHosts.AllIp {
		t.Error("esxcli on host 0 changed host 1's list")
	}
	// All rulesets are listed without -r.
	if all := mustRun(t, e, "network", "firewall", "ruleset", "allowedip", "list"); listed(
		t,
		all,
		"Ruleset",
		"sshServer",
	).Value("AllowedIPAddresses") !=
		"All" {
		t.Errorf("sshServer: %v", listed(t, all, "Ruleset", "sshServer"))
	}

	wantCLIFault(t, e, "Ip address already exist.", "network", "firewall", "ruleset", "allowedip", "add", "-r", "pvrdma", "-i", "192.0.2.7")
	wantCLIFault(t, e, "Ip address already exist.", "network", "firewall", "ruleset", "allowedip", "add", "-r", "pvrdma", "-i", "198.51.100.0/24")
	wantCLIFault(
		t,
		e,
		"Invalid ip address or network: 192.0.2.300",
		"network",
		"firewall",
		"ruleset",
		"allowedip",
		"add",
		"-r",
		"pvrdma",
		"-i",
		"192.0.2.300",
	)
	wantCLIFault(
		t,
		e,
		"Invalid ip address or network: 10.0.0.0/33",
		"network",
		"firewall",
		"ruleset",
		"allowedip",
		"add",
		"-r",
		"pvrdma",
		"-i",
		"10.0.0.0/33",
	)
	wantCLIFault(t, e, "Ruleset nope not found", "network", "firewall", "ruleset", "allowedip", "add", "-r", "nope", "-i", "192.0.2.8")
	wantCLIFault(t, e, "Ruleset nope not found", "network", "firewall", "ruleset", "allowedip", "list", "-r", "nope")
	wantCLIFault(t, e, "Missing required parameter -i|--ip-address", "network", "firewall", "ruleset", "allowedip", "add", "-r", "pvrdma")
	wantCLIFault(
		t,
		e,
		"is not in the allowed ip list of ruleset pvrdma",
		"network",
		"firewall",
		"ruleset",
		"allowedip",
		"remove",
		"-r",
		"pvrdma",
		"-i",
		"192.0.2.8",
	)
	wantCLIFault(t, e, "Already use allowed ip list", "network", "firewall", "ruleset", "set", "-r", "pvrdma", "-a", "false")
	// --enabled applies even when --allowed-all is refused.
	wantCLIFault(t, e, "Already use allowed ip list", "network", "firewall", "ruleset", "set", "-r", "pvrdma", "-a", "false", "-e", "true")
	if sys, cfg := ruleset(t, l, 0, "pvrdma"); !sys.Enabled || !cfg.Enabled {
		t.Error("--enabled true was not applied with a refused --allowed-all")
	}

	// The API replaces the list: esxcli sees it; esxcli removes from it.
	c := newClient(t, l).Client
	if _, err := methods.UpdateRuleset(ctx, c, &types.UpdateRuleset{This: firewall(t, l, 0), Id: "pvrdma", Spec: types.HostFirewallRulesetRulesetSpec{
		AllowedHosts: types.HostFirewallRulesetIpList{IpAddress: []string{"203.0.113.5", "203.0.113.6"}},
	}}); err != nil {
		t.Fatal(err)
	}
	if got := allowed(); !slices.Equal(got, []string{"203.0.113.5", "203.0.113.6"}) {
		t.Errorf("after UpdateRuleset esxcli lists %v", got)
	}
	mustRun(t, e, "network", "firewall", "ruleset", "allowedip", "remove", "-r", "pvrdma", "-i", "203.0.113.5")
	if rs, _ := ruleset(t, l, 0, "pvrdma"); !slices.Equal(rs.AllowedHosts.IpAddress, []string{"203.0.113.6"}) {
		t.Errorf("after remove the API sees %+v", rs.AllowedHosts)
	}

	// --allowed-all true opens the ruleset and keeps the list.
	mustRun(t, e, "network", "firewall", "ruleset", "set", "-r", "pvrdma", "-a", "true")
	if got := allowed(); !slices.Equal(got, []string{"All"}) {
		t.Errorf("allowed %v, want All", got)
	}
	if rs, _ := ruleset(t, l, 0, "pvrdma"); !rs.AllowedHosts.AllIp || !slices.Equal(rs.AllowedHosts.IpAddress, []string{"203.0.113.6"}) {
		t.Errorf("after --allowed-all true the API sees %+v", rs.AllowedHosts)
	}
}

// A ruleset whose allowed list is not user configurable refuses changes to
// it, through esxcli as through UpdateRuleset.
func TestEsxcliFixedIPList(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	e := esxcliExecutor(t, l, 0)
	ctx := newContext(l.model.Map())
	if f := l.ext.changeRuleset(ctx, firewall(t, l, 0), "sshServer", func(rs *types.HostFirewallRuleset) {
		rs.IpListUserConfigurable = types.NewBool(false)
	}); f != nil {
		t.Fatal(f)
	}
	const msg = "The allowed ip list of ruleset sshServer is not user configurable"
	wantCLIFault(t, e, msg, "network", "firewall", "ruleset", "set", "-r", "sshServer", "-a", "false")
	wantCLIFault(t, e, msg, "network", "firewall", "ruleset", "allowedip", "add", "-r", "sshServer", "-i", "192.0.2.1")
	wantCLIFault(t, e, msg, "network", "firewall", "ruleset", "allowedip", "remove", "-r", "sshServer", "-i", "192.0.2.1")
	if rs, _ := ruleset(t, l, 0, "sshServer"); !rs.AllowedHosts.AllIp || len(rs.AllowedHosts.IpAddress) != 0 {
		t.Errorf("a fixed list changed: %+v", rs.AllowedHosts)
	}
}
