package vcsimlab

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/cli/esx"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// esxcli "network firewall ruleset" (list, set) and "network firewall
// ruleset allowedip" (list, add, remove) through each host's managed method
// executer (ping.go's plumbing), as govc host.esxcli and administrators run
// them. vcsim answers neither namespace (NotFound). The commands read and
// change the host's own rulesets, the state its HostFirewallSystem
// (firewallInfo, EnableRuleset, DisableRuleset, UpdateRuleset; host.go) and
// its config.firewall show: on ESXi both are views of the one firewall
// configuration, so a change made through either is seen through the other.
//
// Parameters (names as sent, aliases as typed), from the metadata ESXi
// serves, as pyvisdk generated its handlers from it
// (github.com/xuru/pyvisdk, pyvisdk/esxcli/handlers/
// ha_cli_handler_network_firewall_ruleset.py and
// ha_cli_handler_network_firewall_ruleset_allowedip.py: rulesetid,
// allowedall, enabled, ipaddress; set, add and remove answer a boolean,
// the lists Ruleset[] and FirewallRulesetAllowedip[]), the vSphere CLI
// "Concepts and Examples" firewall procedure
// (https://docs.vmware.com/en/VMware-vSphere/6.7/vspherecli-concepts-examples/GUID-CB2A997E-9B49-4B08-8202-3FB220EADE9D.html:
// --ruleset-id, --enabled, --allowed-all, --ip-address) and govc's own
// example "host.esxcli network firewall ruleset set -r remoteSerialPort -e
// true" (govmomi cli/host/esxcli/esxcli.go): -r, -e, and -a, -i as the
// ESXi reference pairs them. Metadata names drop the dashes of the long
// option as ESXi's do (network.firewall set's "defaultaction" for
// --default-action in govmomi's simulator/esx/command_info.go, captured
// from a host); parameters are listed by name.
//
// Output fields: "ruleset list" prints the columns Name and Enabled, and
// "ruleset allowedip list" Ruleset and "Allowed IP Addresses", All for a
// ruleset open to all addresses (the procedure above); govc's table
// formatter finds a column's field by dropping its spaces
// (AllowedIPAddresses), as do the PowerCLI Get-EsxCli scripts that read
// .Name, .Enabled, .Ruleset and .AllowedIPAddresses. A ruleset's allowed
// list prints its addresses, then its networks (address/prefix): the
// procedure adds 192.XXX.1.0/24, then 192.XXX.10.10, and lists
// "192.XXX.10.10, 192.XXX.1.0/24", the order of HostFirewallRulesetIpList's
// ipAddress and ipNetwork. Fields are sent in name order, as ESXi's
// answers in govmomi's fixtures are.
//
// Errors are CLI faults with ESXi's message where a public source shows
// it: "Already allowed all ip" for --allowed-all true on a ruleset open to
// all (an ESXi shell session's output, published in a Chinese SNMP setup
// note), "Already use allowed ip list" for --allowed-all false on one that
// is not (PowerCLI scripts that test for that exact message, e.g. a
// Set-VMHostSecureNTP function), and "Ip address already exist." for
// adding an address the list has (the same function). Those scripts treat
// "Already use allowed ip list" from a set that also passes --enabled as
// harmless, so the lab applies --enabled before it refuses --allowed-all.
// No public source shows ESXi's words for an unknown ruleset id (the API
// answers NotFound, "the ruleset ID is unknown"), a malformed address, an
// address the list lacks, a list that is not user configurable
// (ipListUserConfigurable false, which UpdateRuleset refuses too), a
// malformed boolean or a missing required parameter: the lab answers
// plain messages of its own for those. Adding to or removing from the
// list of a ruleset open to all is accepted: the list is kept, and applies
// once --allowed-all is false (HostFirewallRulesetIpList carries allIp and
// the list side by side); --allowed-all keeps the list too.

const (
	rulesetNamespace   = "network.firewall.ruleset"
	allowedIPNamespace = "network.firewall.ruleset.allowedip"
)

func init() {
	registerEsxcli(rulesetInfo, map[string]esxcliCommand{
		"list": (*extension).rulesetList,
		"set":  (*extension).rulesetSet,
	})
	registerEsxcli(allowedIPInfo, map[string]esxcliCommand{
		"list":   (*extension).allowedIPList,
		"add":    (*extension).allowedIPAdd,
		"remove": (*extension).allowedIPRemove,
	})
}

// cliParam is a parameter of the metadata: its name as sent, its long
// option (displayed name) and short alias, if any.
func cliParam(name, long, short, help string) esx.CommandInfoParam {
	aliases := []string{"--" + long}
	if short != "" {
		aliases = []string{"-" + short, "--" + long}
	}
	return esx.CommandInfoParam{CommandInfoItem: esx.CommandInfoItem{Name: name, DisplayName: long, Help: help}, Aliases: aliases}
}

var (
	rulesetIDParam = cliParam("rulesetid", "ruleset-id", "r", "The label of the ruleset.")
	ipAddressParam = cliParam("ipaddress", "ip-address", "i", "Allowed ip address/range for the ruleset.")
)

// tableHints are the hints of a list command: govc prints it as a table of
// those columns of the structure kind.
func tableHints(kind string, columns ...string) esx.CommandInfoHints {
	return esx.CommandInfoHints{{Key: "fields:" + kind, Value: strings.Join(columns, ",")}, {Key: "formatter", Value: "table"}}
}

// rulesetInfo is the metadata of network.firewall.ruleset.
func rulesetInfo() *esx.CommandInfo {
	return &esx.CommandInfo{
		CommandInfoItem: esx.CommandInfoItem{
			Name:        rulesetNamespace,
			DisplayName: "ruleset",
			Help:        "Commands to list and update firewall ruleset configuration",
		},
		Method: []esx.CommandInfoMethod{
			{
				CommandInfoItem: esx.CommandInfoItem{Name: "list", DisplayName: "list", Help: "List the rulesets in firewall."},
				Param: []esx.CommandInfoParam{
					cliParam("rulesetid", "ruleset-id", "r", "List configuration for specfic ruleset"), //nolint:misspell // as ESXi has it
				},
				Hints: tableHints("Ruleset", "Name", "Enabled"),
			},
			{
				CommandInfoItem: esx.CommandInfoItem{Name: "set", DisplayName: "set", Help: "Set firewall ruleset status (allowedAll flag and enabled status)."},
				Param: []esx.CommandInfoParam{
					cliParam("allowedall", "allowed-all", "a", "Set to true to allowed all ip, set to false to use allowed ip list."),
					cliParam("enabled", "enabled", "e", "Set to true to enable ruleset, set to false to disable it."),
					rulesetIDParam,
				},
				Hints: esx.CommandInfoHints{{Key: "formatter", Value: ""}},
			},
		},
	}
}

// allowedIPInfo is the metadata of network.firewall.ruleset.allowedip.
func allowedIPInfo() *esx.CommandInfo {
	return &esx.CommandInfo{
		CommandInfoItem: esx.CommandInfoItem{
			Name:        allowedIPNamespace,
			DisplayName: "allowedip",
			Help:        "Commands to list and add/remove allowedip on ruleset",
		},
		Method: []esx.CommandInfoMethod{
			{
				CommandInfoItem: esx.CommandInfoItem{Name: "add", DisplayName: "add", Help: "Add allowed ip address/range to the ruleset ruleset."},
				Param:           []esx.CommandInfoParam{ipAddressParam, rulesetIDParam},
				Hints:           esx.CommandInfoHints{{Key: "formatter", Value: ""}},
			},
			{
				CommandInfoItem: esx.CommandInfoItem{Name: "list", DisplayName: "list", Help: "list allowed ip addresses for rulesets."},
				Param:           []esx.CommandInfoParam{rulesetIDParam},
				Hints:           tableHints("FirewallRulesetAllowedip", "Ruleset", "Allowed IP Addresses"),
			},
			{
				CommandInfoItem: esx.CommandInfoItem{Name: "remove", DisplayName: "remove", Help: "Remove allowed ip address/range from the ruleset."},
				Param:           []esx.CommandInfoParam{ipAddressParam, rulesetIDParam},
				Hints:           esx.CommandInfoHints{{Key: "formatter", Value: ""}},
			},
		},
	}
}

// The structure types of the lists: "VimEsxCLI", the command, the
// structure's name.
const (
	rulesetKind   = "VimEsxCLInetworkfirewallrulesetlistRuleset"
	allowedIPKind = "VimEsxCLInetworkfirewallrulesetallowediplistFirewallRulesetAllowedip"
)

// The lab's own messages, where ESXi's are not public (see above).
func unknownRuleset(id string) *soapResult { return cliFault("Ruleset " + id + " not found") }

func missingParam(p esx.CommandInfoParam) *soapResult {
	return cliFault("Missing required parameter " + strings.Join(p.Aliases, "|"))
}

// hostFirewall is the firewall system of the executer's host.
func (x *extension) hostFirewall(ctx *simulator.Context, hostID string) (*simulator.HostFirewallSystem, bool) {
	h, ok := ctx.Map.Get(ref("HostSystem", hostID)).(*simulator.HostSystem)
	if !ok {
		return nil, false
	}
	var fwRef *types.ManagedObjectReference
	ctx.WithLock(h, func() { fwRef = h.ConfigManager.FirewallSystem })
	if fwRef == nil {
		return nil, false
	}
	fw, ok := ctx.Map.Get(*fwRef).(*simulator.HostFirewallSystem)
	return fw, ok
}

// rulesets are the rulesets of the executer's host, or those named id;
// false when id names none. The lab never changes a ruleset in place
// (applyRuleset copies), so the copy may be read unlocked.
func (x *extension) rulesets(ctx *simulator.Context, hostID, id string) ([]types.HostFirewallRuleset, bool) {
	fw, ok := x.hostFirewall(ctx, hostID)
	if !ok {
		return nil, id == ""
	}
	var all []types.HostFirewallRuleset
	ctx.WithLock(fw, func() {
		if fw.FirewallInfo != nil {
			all = slices.Clone(fw.FirewallInfo.Ruleset)
		}
	})
	if id == "" {
		return all, true
	}
	i := slices.IndexFunc(all, func(rs types.HostFirewallRuleset) bool { return rs.Key == id })
	if i < 0 {
		return nil, false
	}
	return all[i : i+1], true
}

// changeHostRuleset applies change to ruleset id of the executer's host
// through host.go's changeRuleset (firewallInfo and config.firewall alike).
// change runs once per copy, each time on the same state, and returns the
// refusal, if any, as a CLI fault.
func (x *extension) changeHostRuleset(ctx *simulator.Context, hostID, id string, change func(*types.HostFirewallRuleset) *soapResult) *soapResult {
	fw, ok := x.hostFirewall(ctx, hostID)
	if !ok {
		return unknownRuleset(id)
	}
	var refused *soapResult
	if f := x.changeRuleset(ctx, fw.Self, id, func(rs *types.HostFirewallRuleset) { refused = change(rs) }); f != nil {
		return unknownRuleset(id)
	}
	if refused != nil {
		return refused
	}
	return cliBoolean(true)
}

// allowsAll reports whether a ruleset is open to all addresses (the stock
// rulesets are, and one without a list is).
func allowsAll(rs *types.HostFirewallRuleset) bool {
	return rs.AllowedHosts == nil || rs.AllowedHosts.AllIp
}

// ipListFixed reports whether the ruleset's allowed list is not user
// configurable (HostFirewallRuleset.ipListUserConfigurable, API 8.0.2.0).
func ipListFixed(rs *types.HostFirewallRuleset) bool {
	return rs.IpListUserConfigurable != nil && !*rs.IpListUserConfigurable
}

func ipListFixedFault(id string) *soapResult {
	return cliFault("The allowed ip list of ruleset " + id + " is not user configurable")
}

// allowedList is a copy of a ruleset's allowed list, never nil.
func allowedList(rs *types.HostFirewallRuleset) *types.HostFirewallRulesetIpList {
	if rs.AllowedHosts == nil {
		return &types.HostFirewallRulesetIpList{AllIp: true}
	}
	return &types.HostFirewallRulesetIpList{
		AllIp:     rs.AllowedHosts.AllIp,
		IpAddress: slices.Clone(rs.AllowedHosts.IpAddress),
		IpNetwork: slices.Clone(rs.AllowedHosts.IpNetwork),
	}
}

// parseCLIBool reads a boolean argument: the xsd:boolean forms the
// executer's SOAP arguments take (true, false, 1, 0). ok is false when the
// argument is absent.
func parseCLIBool(call soapCall, p esx.CommandInfoParam) (v, ok bool, fault *soapResult) {
	s, given := call.args[p.Name]
	if !given {
		return false, false, nil
	}
	switch first(s) {
	case "true", "1":
		return true, true, nil
	case "false", "0":
		return false, true, nil
	}
	return false, false, cliFault(fmt.Sprintf("Invalid value %q for parameter %s: expected true or false", first(s), strings.Join(p.Aliases, "|")))
}

// rulesetList answers "network firewall ruleset list [-r id]".
func (x *extension) rulesetList(ctx *simulator.Context, call soapCall) *soapResult {
	id := first(call.args["rulesetid"])
	rss, ok := x.rulesets(ctx, call.hostID, id)
	if !ok {
		return unknownRuleset(id)
	}
	objects := make([][]cliField, len(rss))
	for i, rs := range rss {
		objects[i] = []cliField{{"Enabled", []string{strconv.FormatBool(rs.Enabled)}}, {"Name", []string{rs.Key}}}
	}
	return cliList(rulesetKind, objects)
}

// rulesetSet answers "network firewall ruleset set -r id [-e bool] [-a
// bool]". Neither -e nor -a changes nothing.
func (x *extension) rulesetSet(ctx *simulator.Context, call soapCall) *soapResult {
	info := rulesetInfo().Method[1]
	id := first(call.args["rulesetid"])
	if id == "" {
		return missingParam(rulesetIDParam)
	}
	enabled, setEnabled, fault := parseCLIBool(call, info.Param[1])
	if fault != nil {
		return fault
	}
	allowAll, setAllowAll, fault := parseCLIBool(call, info.Param[0])
	if fault != nil {
		return fault
	}
	return x.changeHostRuleset(ctx, call.hostID, id, func(rs *types.HostFirewallRuleset) *soapResult {
		if setEnabled {
			rs.Enabled = enabled
		}
		if !setAllowAll {
			return nil
		}
		switch {
		case allowAll && allowsAll(rs):
			return cliFault("Already allowed all ip")
		case !allowAll && !allowsAll(rs):
			return cliFault("Already use allowed ip list")
		case ipListFixed(rs):
			return ipListFixedFault(id)
		}
		list := allowedList(rs)
		list.AllIp = allowAll
		rs.AllowedHosts = list
		return nil
	})
}

// allowedEntries is what "allowedip list" prints of a ruleset's list.
func allowedEntries(rs *types.HostFirewallRuleset) []string {
	if allowsAll(rs) {
		return []string{"All"}
	}
	out := slices.Clone(rs.AllowedHosts.IpAddress)
	for _, n := range rs.AllowedHosts.IpNetwork {
		out = append(out, n.Network+"/"+strconv.Itoa(int(n.PrefixLength)))
	}
	return out
}

// allowedIPList answers "network firewall ruleset allowedip list [-r id]".
func (x *extension) allowedIPList(ctx *simulator.Context, call soapCall) *soapResult {
	id := first(call.args["rulesetid"])
	rss, ok := x.rulesets(ctx, call.hostID, id)
	if !ok {
		return unknownRuleset(id)
	}
	objects := make([][]cliField, len(rss))
	for i := range rss {
		objects[i] = []cliField{{"AllowedIPAddresses", allowedEntries(&rss[i])}, {"Ruleset", []string{rss[i].Key}}}
	}
	return cliList(allowedIPKind, objects)
}

// allowedEntry is an address or network the allowed list takes: the
// address or network as given, and the canonical form two entries are
// compared by.
type allowedEntry struct {
	ip        string
	network   *types.HostFirewallRulesetIpNetwork
	canonical string
}

func parseAllowedEntry(s string) (allowedEntry, bool) {
	if ip := net.ParseIP(s); ip != nil {
		return allowedEntry{ip: s, canonical: ip.String()}, true
	}
	ip, _, err := net.ParseCIDR(s)
	if err != nil {
		return allowedEntry{}, false
	}
	addr, prefix, _ := strings.Cut(s, "/")
	n, _ := strconv.Atoi(prefix)
	return allowedEntry{
		network:   &types.HostFirewallRulesetIpNetwork{Network: addr, PrefixLength: int32(n)},
		canonical: ip.String() + "/" + strconv.Itoa(n),
	}, true
}

// index is the position of e in the list's addresses or networks, or -1.
func (e allowedEntry) index(list *types.HostFirewallRulesetIpList) int {
	if e.network == nil {
		return slices.IndexFunc(list.IpAddress, func(s string) bool {
			other, ok := parseAllowedEntry(s)
			return ok && other.canonical == e.canonical
		})
	}
	return slices.IndexFunc(list.IpNetwork, func(n types.HostFirewallRulesetIpNetwork) bool {
		other, ok := parseAllowedEntry(n.Network + "/" + strconv.Itoa(int(n.PrefixLength)))
		return ok && other.canonical == e.canonical
	})
}

// allowedIPArgs reads the arguments of allowedip add and remove.
func allowedIPArgs(call soapCall) (id string, e allowedEntry, fault *soapResult) {
	id, addr := first(call.args["rulesetid"]), first(call.args["ipaddress"])
	switch {
	case addr == "":
		return "", e, missingParam(ipAddressParam)
	case id == "":
		return "", e, missingParam(rulesetIDParam)
	}
	e, ok := parseAllowedEntry(addr)
	if !ok {
		return "", e, cliFault("Invalid ip address or network: " + addr)
	}
	return id, e, nil
}

// allowedIPAdd answers "network firewall ruleset allowedip add -r id -i
// address[/prefix]".
func (x *extension) allowedIPAdd(ctx *simulator.Context, call soapCall) *soapResult {
	id, e, fault := allowedIPArgs(call)
	if fault != nil {
		return fault
	}
	return x.changeHostRuleset(ctx, call.hostID, id, func(rs *types.HostFirewallRuleset) *soapResult {
		if ipListFixed(rs) {
			return ipListFixedFault(id)
		}
		list := allowedList(rs)
		if e.index(list) >= 0 {
			return cliFault("Ip address already exist.")
		}
		if e.network != nil {
			list.IpNetwork = append(list.IpNetwork, *e.network)
		} else {
			list.IpAddress = append(list.IpAddress, e.ip)
		}
		rs.AllowedHosts = list
		return nil
	})
}

// allowedIPRemove answers "network firewall ruleset allowedip remove -r id
// -i address[/prefix]".
func (x *extension) allowedIPRemove(ctx *simulator.Context, call soapCall) *soapResult {
	id, e, fault := allowedIPArgs(call)
	if fault != nil {
		return fault
	}
	return x.changeHostRuleset(ctx, call.hostID, id, func(rs *types.HostFirewallRuleset) *soapResult {
		if ipListFixed(rs) {
			return ipListFixedFault(id)
		}
		list := allowedList(rs)
		i := e.index(list)
		if i < 0 {
			return cliFault(fmt.Sprintf("Ip address %s is not in the allowed ip list of ruleset %s", first(call.args["ipaddress"]), id))
		}
		if e.network != nil {
			list.IpNetwork = slices.Delete(list.IpNetwork, i, i+1)
		} else {
			list.IpAddress = slices.Delete(list.IpAddress, i, i+1)
		}
		rs.AllowedHosts = list
		return nil
	})
}
