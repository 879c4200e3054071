package vsphere

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// The host side of PVRDMA, as vSphere Networking's "Configure an ESXi Host
// for PVRDMA" sets it by hand: the vmknic PVRDMA uses for its control
// traffic ("Tag a VMkernel Adapter for PVRDMA") and the firewall ruleset for
// its ports ("Enable Firewall Rule for PVRDMA").
const (
	PVRDMAVmknicOption = "Net.PVRDMAVmknic"
	PVRDMARuleset      = "pvrdma"
)

// PVRDMASettings is a host's PVRDMA configuration.
type PVRDMASettings struct {
	Vmknic          string   // "" when unset
	FirewallEnabled bool     // the pvrdma ruleset
	AllowedIPs      []string // IPs and CIDR networks the ruleset admits; empty admits all
}

// HostPVRDMA is a host's PVRDMA settings plus what checking them needs.
type HostPVRDMA struct {
	HostName string
	Settings PVRDMASettings
	Vmknics  []string // the host's vmknics, to check Settings.Vmknic against
}

// hostPVRDMAProps are what a host's settings are read from. The option and
// the ruleset are read by key (config.option["Net.PVRDMAVmknic"],
// config.firewall.ruleset["pvrdma"]): vSphere answers a property path
// indexed by an array element's key with that element alone (as VMware's
// vm-operator reads config.extraConfig["key"], its PR #480), where
// config.option would carry every advanced option, over a thousand on a
// real host, and config.firewall every ruleset, 17 KB of a lab host's 60.
// configManager comes along, so that setting the host after reading it
// needs no call for its managers (see hostConfigManager).
var hostPVRDMAProps = []string{"name", "runtime.connectionState", pvrdmaRulesetPath, "config.network.vnic", pvrdmaVmknicPath, "configManager"}

// pvrdmaVmknicPath reads Net.PVRDMAVmknic alone of a host's options.
var pvrdmaVmknicPath = fmt.Sprintf("config.option[%q]", PVRDMAVmknicOption)

// pvrdmaRulesetPath reads the pvrdma ruleset alone of a host's firewall.
var pvrdmaRulesetPath = fmt.Sprintf("config.firewall.ruleset[%q]", PVRDMARuleset)

// HostPVRDMA reads a host's PVRDMA settings in one property-collector round
// trip, shared with the reads of other hosts (a refresh's first one reads
// them all, see prefetch.go).
func (c *Client) HostPVRDMA(ctx context.Context, hostID string) (*HostPVRDMA, error) {
	op := "reading the PVRDMA settings of host " + hostID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	h, err := c.readHostProps(ctx, op, hostID, hostPVRDMAProps)
	if err != nil {
		return nil, err
	}
	if h.Config == nil {
		return nil, hostDisconnected(op, h)
	}
	c.rememberConfigManager(hostID, &h.ConfigManager)
	return hostPVRDMAFromMO(h, vmknicOf(h)), nil
}

// vmknicOf is the host's Net.PVRDMAVmknic as read with config.option; ""
// when the host has no such option (before ESXi 6.5).
func vmknicOf(h *mo.HostSystem) string {
	if h.Config == nil {
		return ""
	}
	for _, o := range h.Config.Option {
		if v := o.GetOptionValue(); v.Key == PVRDMAVmknicOption && v.Value != nil {
			return fmt.Sprint(v.Value)
		}
	}
	return ""
}

// hostPVRDMAFromMO is a host's PVRDMA settings from its properties and the
// value of its vmknic option.
func hostPVRDMAFromMO(h *mo.HostSystem, vmknic string) *HostPVRDMA {
	out := &HostPVRDMA{HostName: h.Name, Settings: PVRDMASettings{Vmknic: vmknic}}
	if h.Config == nil {
		return out
	}
	if h.Config.Firewall != nil {
		for _, rs := range h.Config.Firewall.Ruleset {
			if rs.Key == PVRDMARuleset {
				out.Settings.FirewallEnabled = rs.Enabled
				out.Settings.AllowedIPs = allowedIPs(rs.AllowedHosts)
			}
		}
	}
	if h.Config.Network != nil {
		for _, v := range h.Config.Network.Vnic {
			out.Vmknics = append(out.Vmknics, v.Device)
		}
		slices.SortFunc(out.Vmknics, func(a, b string) int {
			if lessDeviceName(a, b) {
				return -1
			}
			return 1
		})
	}
	return out
}

// SetHostPVRDMA applies settings to a host: the advanced option, then the
// ruleset's allowed addresses, then whether it is enabled.
func (c *Client) SetHostPVRDMA(ctx context.Context, hostID string, s PVRDMASettings) error {
	op := "setting PVRDMA on host " + hostID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	managers, err := c.hostConfigManager(ctx, vc, op, hostID)
	if err != nil {
		return err
	}
	if managers.AdvancedOption == nil || managers.FirewallSystem == nil {
		return &Error{Op: op, Kind: ErrNotImplemented, Message: "the host has no advanced option manager or firewall system"}
	}
	options := object.NewOptionManager(vc, *managers.AdvancedOption)
	err = options.Update(ctx, []types.BaseOptionValue{&types.OptionValue{Key: PVRDMAVmknicOption, Value: s.Vmknic}})
	if fault.Is(err, &types.InvalidName{}) {
		return &Error{Op: op, Kind: ErrInvalidArg, Message: fmt.Sprintf(
			"the host does not know the advanced option %s: PVRDMA needs ESXi 6.5 or later, so upgrade the host or leave it out", PVRDMAVmknicOption)}
	}
	if err != nil {
		return translate(op+": setting "+PVRDMAVmknicOption, err)
	}

	firewall := object.NewHostFirewallSystem(vc, *managers.FirewallSystem)
	allowed, err := ipList(s.AllowedIPs)
	if err != nil {
		return &Error{Op: op, Kind: ErrInvalidArg, Message: err.Error()}
	}
	_, err = methods.UpdateRuleset(ctx, vc, &types.UpdateRuleset{
		This: firewall.Reference(), Id: PVRDMARuleset,
		Spec: types.HostFirewallRulesetRulesetSpec{AllowedHosts: *allowed},
	})
	if err != nil {
		return translate(op+": setting the allowed addresses of the "+PVRDMARuleset+" firewall ruleset", err)
	}
	if s.FirewallEnabled {
		err = firewall.EnableRuleset(ctx, PVRDMARuleset)
	} else {
		err = firewall.DisableRuleset(ctx, PVRDMARuleset)
	}
	if err != nil {
		return translate(op+": switching the "+PVRDMARuleset+" firewall ruleset", err)
	}
	c.log.Debug(ctx, "Set PVRDMA host settings", map[string]any{
		"host_system_id": hostID, "vmknic": s.Vmknic, "firewall_enabled": s.FirewallEnabled, "allowed_ips": strings.Join(s.AllowedIPs, ","),
	})
	return nil
}

// readHostProps reads properties of one host, reporting a missing host as
// ErrNotFound with its id. It reports what is there (refresh): no host is
// read under a lock here, and the prefetch is never used after a write.
func (c *Client) readHostProps(ctx context.Context, op, hostID string, props []string) (*mo.HostSystem, error) {
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	var h mo.HostSystem
	if err := c.readObjectAs(ctx, vc, types.ManagedObjectReference{Type: "HostSystem", Value: hostID}, props, &h, refresh); err != nil {
		if err = translate(op, err); errors.Is(err, ErrNotFound) {
			return nil, c.notFoundError(ctx, vc, op, ObjectHost, hostID)
		}
		return nil, err
	}
	return &h, nil
}

// ParseAllowedIP accepts an IP address or a CIDR network, as the ruleset's
// allowed list takes them, in the canonical form vSphere reports back.
func ParseAllowedIP(s string) (string, error) {
	if ip := net.ParseIP(s); ip != nil {
		if ip.String() != s {
			return "", fmt.Errorf("write %q as %s", s, ip)
		}
		return s, nil
	}
	_, network, err := net.ParseCIDR(s)
	if err != nil {
		return "", fmt.Errorf("%q is neither an IP address nor a CIDR network such as 10.0.0.0/24", s)
	}
	if network.String() != s {
		return "", fmt.Errorf("%q is not a network address: write %s", s, network)
	}
	return s, nil
}

func ipList(entries []string) (*types.HostFirewallRulesetIpList, error) {
	list := &types.HostFirewallRulesetIpList{AllIp: len(entries) == 0}
	for _, e := range entries {
		canonical, err := ParseAllowedIP(e)
		if err != nil {
			return nil, err
		}
		ip, network, _ := net.ParseCIDR(canonical)
		if network == nil {
			list.IpAddress = append(list.IpAddress, canonical)
			continue
		}
		ones, _ := network.Mask.Size()
		list.IpNetwork = append(list.IpNetwork, types.HostFirewallRulesetIpNetwork{Network: ip.String(), PrefixLength: int32(ones)})
	}
	return list, nil
}

// allowedIPs flattens a ruleset's allowed list, sorted; empty means all.
func allowedIPs(l *types.HostFirewallRulesetIpList) []string {
	if l == nil || l.AllIp {
		return nil
	}
	out := slices.Clone(l.IpAddress)
	for _, n := range l.IpNetwork {
		out = append(out, n.Network+"/"+strconv.Itoa(int(n.PrefixLength)))
	}
	slices.Sort(out)
	return out
}

// NoSuchVmknic: the host has no VMkernel adapter of that name.
type NoSuchVmknic struct {
	HostID, Host, Vmknic string
	Vmknics              []string
}

func (NoSuchVmknic) finding() {}

// PlanHostPVRDMA checks planned PVRDMA settings against the host: the vmknic
// must be one of its VMkernel adapters.
func (c *Client) PlanHostPVRDMA(ctx context.Context, hostID string, s PVRDMASettings) ([]Finding, error) {
	host, err := c.HostPVRDMA(ctx, hostID)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(host.Vmknics, s.Vmknic) {
		return []Finding{NoSuchVmknic{HostID: hostID, Host: host.HostName, Vmknic: s.Vmknic, Vmknics: host.Vmknics}}, nil
	}
	return nil, nil
}
