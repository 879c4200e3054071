package vcsimlab

import (
	"fmt"
	"net"
	"reflect"
	"slices"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// pciPassthruSystem is a host's HostPciPassthruSystem: vcsim points every
// host at one that does not exist.
type pciPassthruSystem struct {
	mo.HostPciPassthruSystem // first field: vcsim reads properties from it

	host types.ManagedObjectReference
}

func newPciPassthruSystem(h *simulator.HostSystem) *pciPassthruSystem {
	s := &pciPassthruSystem{host: h.Self}
	s.Self = types.ManagedObjectReference{Type: "HostPciPassthruSystem", Value: "pcipassthrusystem-" + h.Self.Value}
	s.PciPassthruInfo = passthruInfo()
	return s
}

// UpdatePassthruConfig enables or disables passthrough of devices and
// configures SR-IOV of the PFs (HostSriovConfig: sriovEnabled,
// numVirtualFunction), vSphere Web Services API 8.0, HostPciPassthruSystem.
//
// When a change takes effect follows HostPciPassthruConfig.applyNow
// ("Whether the passThru config should take effect without rebooting ESX.
// When unset, the behavior will be determined automatically based on
// deviceRebindWithoutRebootSupported. If the configuration can be applied
// immediately, it will be, otherwise the changes will take effect after
// reboot") and HostCapability.deviceRebindWithoutRebootSupported ("the
// capability which enables PCI passthrough and SR-IOV configuration without
// reboot"). A change that takes effect sets passthruActive to
// passthruEnabled and, for SR-IOV, sriovActive to sriovEnabled and
// numVirtualFunction to the VFs requested, which then appear as PCI
// devices of the host. Until then it is pending: enabled, not active
// (HostPciPassthruInfo.passthruActive: "meaning enabled + rebooted";
// HostSriovInfo.sriovActive likewise), VFs absent; Lab.RebootHost applies
// it. applyNow true on a host without the capability is not documented:
// the lab leaves the change pending.
//
// Refusals: an unknown id (NotFound), passthrough of a device that is not
// capable (InvalidArgument), and SR-IOV of a device that is not SR-IOV
// capable or with more VFs than maxVirtualFunctionSupported ("Maximum
// number of SRIOV virtual functions supported on this device"). For the
// last two the lab sends HostConfigFault, the one fault the API reference
// documents for the method ("Thrown if an error occurs"); ESXi's exact
// fault and message are not public.
//
// Enabling a NIC the host uses (an uplink of a standard or distributed
// switch) is accepted: the API reference documents only HostConfigFault
// for the method, and no public source documents a refusal for NICs in use.
// Nor is SR-IOV of an uplink refused: the PF of an SR-IOV NIC can stay the
// uplink of its switch (vSphere Networking, "Enable SR-IOV on a Host
// Physical Adapter" and "Using an SR-IOV Physical Adapter to Handle Virtual
// Machine Traffic", mixed mode).
//
// A device's hardware label (HostPciPassthruConfig.hardwareLabel, API
// 7.0.2.0; read back in HostPciPassthruInfo.hardwareLabel) is what the
// device's configuration carries: one sent without a label leaves the
// device without one. The API reference does not say whether an omitted
// label is kept instead; a client that always sends the label it wants
// (as this provider does, and the lab's admin actions) is right either way.
// A label takes effect at once, whatever the host applies at reboot: it
// only narrows which devices a VM's Dynamic DirectPath device may take.
//
// The extension takes the call, so that it locks the host before the
// system, the order in which the host's changes reach the system (see
// syncSriovPools).
func (x *extension) UpdatePassthruConfig(ctx *simulator.Context, req *types.UpdatePassthruConfig) soap.HasFault {
	body := new(methods.UpdatePassthruConfigBody)
	s, ok := target[*pciPassthruSystem](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	s.withHost(ctx, func(host *simulator.HostSystem) { s.updatePassthruConfig(ctx, host, req, body) })
	return body
}

// withHost runs f with s's host (nil when it is gone) and then s locked.
func (s *pciPassthruSystem) withHost(ctx *simulator.Context, f func(*simulator.HostSystem)) {
	host, _ := ctx.Map.Get(s.host).(*simulator.HostSystem)
	if host == nil {
		ctx.WithLock(s, func() { f(nil) })
		return
	}
	ctx.WithLock(host, func() { ctx.WithLock(s, func() { f(host) }) })
}

// updatePassthruConfig carries out UpdatePassthruConfig, with host (or nil)
// and s locked.
func (s *pciPassthruSystem) updatePassthruConfig(
	ctx *simulator.Context,
	host *simulator.HostSystem,
	req *types.UpdatePassthruConfig,
	body *methods.UpdatePassthruConfigBody,
) {
	// vCenter cannot reach a host that is not connected: the vSphere API
	// reference, HostNotConnected, "thrown if a method needs to communicate
	// with a host that has been disconnected".
	if host != nil && !connected(host, &body.Fault_) {
		return
	}
	rebind := false
	if host != nil {
		c := host.Capability
		rebind = c != nil && c.DeviceRebindWithoutRebootSupported != nil && *c.DeviceRebindWithoutRebootSupported
	}
	next := clonePassthru(s.PciPassthruInfo)
	for _, c := range req.Config {
		if c == nil {
			continue
		}
		cfg := c.GetHostPciPassthruConfig()
		i := slices.IndexFunc(next, func(p types.BaseHostPciPassthruInfo) bool { return p.GetHostPciPassthruInfo().Id == cfg.Id })
		if i < 0 {
			body.Fault_ = simulator.Fault(fmt.Sprintf("PCI device %q not found", cfg.Id), &types.NotFound{})
			return
		}
		info := next[i].GetHostPciPassthruInfo()
		if cfg.PassthruEnabled && !info.PassthruCapable {
			body.Fault_ = simulator.Fault(
				fmt.Sprintf("PCI device %s is not passthrough capable", cfg.Id),
				&types.InvalidArgument{InvalidProperty: "config.passthruEnabled"},
			)
			return
		}
		if sc, ok := c.(*types.HostSriovConfig); ok {
			sr, ok := next[i].(*types.HostSriovInfo)
			switch {
			case !ok || !sr.SriovCapable:
				body.Fault_ = simulator.Fault(fmt.Sprintf("PCI device %s is not SR-IOV capable", cfg.Id), &types.HostConfigFault{})
				return
			case sc.NumVirtualFunction < 0 || sc.NumVirtualFunction > sr.MaxVirtualFunctionSupported:
				body.Fault_ = simulator.Fault(
					fmt.Sprintf("PCI device %s supports at most %d SR-IOV virtual functions, not %d", cfg.Id, sr.MaxVirtualFunctionSupported, sc.NumVirtualFunction),
					&types.HostConfigFault{},
				)
				return
			case sc.SriovEnabled && sr.PassthruEnabled:
				// Not documented: neither the API reference (HostSriovConfig,
				// UpdatePassthruConfig) nor the vSphere Networking guide says
				// what ESXi does when SR-IOV is turned on for a function that
				// is passed through whole. The lab takes the safe answer and
				// refuses, leaving the device (and the VMs configured with it)
				// as they are, rather than taking passthrough away under them.
				body.Fault_ = simulator.Fault(
					fmt.Sprintf("PCI device %s is enabled for passthrough; turn passthrough off before enabling SR-IOV", cfg.Id),
					&types.HostConfigFault{},
				)
				return
			}
			sr.SriovEnabled = sc.SriovEnabled
			sr.NumVirtualFunctionRequested = sc.NumVirtualFunction
		}
		info.PassthruEnabled = cfg.PassthruEnabled
		info.HardwareLabel = cfg.HardwareLabel
		if cfg.ApplyNow == nil || *cfg.ApplyNow {
			if rebind {
				activate(next[i])
			}
		}
	}
	s.publish(ctx, host, next)
	body.Res = new(types.UpdatePassthruConfigResponse)
}

// reboot applies every pending change, as a host reboot does. Neither s nor
// its host may be locked.
func (s *pciPassthruSystem) reboot(ctx *simulator.Context) {
	s.withHost(ctx, func(host *simulator.HostSystem) {
		next := clonePassthru(s.PciPassthruInfo)
		for _, p := range next {
			activate(p)
		}
		s.publish(ctx, host, next)
		if host != nil {
			now := time.Now()
			ctx.Update(host, []types.PropertyChange{{Name: "runtime.bootTime", Val: &now}})
		}
	})
}

// activate makes a device's configuration take effect.
func activate(p types.BaseHostPciPassthruInfo) {
	info := p.GetHostPciPassthruInfo()
	info.PassthruActive = info.PassthruEnabled
	if sr, ok := p.(*types.HostSriovInfo); ok {
		sr.SriovActive = sr.SriovEnabled
		sr.NumVirtualFunction = 0
		if sr.SriovEnabled {
			sr.NumVirtualFunction = sr.NumVirtualFunctionRequested
		}
	}
}

// publish sets the passthrough state, with the VFs present, on s and on its
// host: config.pciPassthruInfo, hardware.pciDevice and the GPUs' graphics
// type (and so the SR-IOV pools, see syncSriovPools). The host (if any) and
// s are locked.
func (s *pciPassthruSystem) publish(ctx *simulator.Context, host *simulator.HostSystem, next []types.BaseHostPciPassthruInfo) {
	next = withVFInfos(next)
	ctx.Update(s, []types.PropertyChange{{Name: "pciPassthruInfo", Val: next}})
	if host == nil || host.Config == nil {
		return
	}
	hostInfo := clonePassthru(next)
	graphics := slices.Clone(host.Config.GraphicsInfo)
	for i := range graphics {
		for _, p := range hostInfo {
			if info := p.GetHostPciPassthruInfo(); info.Id == graphics[i].PciId {
				graphics[i].GraphicsType = graphicsType(info.PassthruActive, graphics[i].GraphicsType,
					configuredGraphicsType(host.Config.GraphicsConfig, info.Id))
			}
		}
	}
	changes := []types.PropertyChange{
		{Name: "config.pciPassthruInfo", Val: hostInfo},
		{Name: "config.graphicsInfo", Val: graphics},
	}
	if host.Hardware != nil {
		changes = append(changes, types.PropertyChange{Name: "hardware.pciDevice", Val: withVFs(host.Hardware.PciDevice, hostInfo)})
	}
	ctx.Update(host, changes)
}

// syncSriovPools keeps a host's SR-IOV network device pools
// (config.sriovDevicePool and its HostPciPassthruSystem's
// sriovDevicePoolInfo, see sriovPools) in step with its network and
// passthrough state, as ESXi does. h is locked; its passthrough system is
// locked after it, the order every lab method follows.
func syncSriovPools(ctx *simulator.Context, h *mo.HostSystem) {
	if h.Config == nil {
		return
	}
	pools := sriovPools(h.Config.Network, h.Config.PciPassthruInfo)
	if reflect.DeepEqual(pools, h.Config.SriovDevicePool) {
		return
	}
	ctx.Update(h, []types.PropertyChange{{Name: "config.sriovDevicePool", Val: pools}})
	if r := h.ConfigManager.PciPassthruSystem; r != nil {
		if s, ok := ctx.Map.Get(*r).(*pciPassthruSystem); ok {
			ctx.WithLock(s, func() {
				ctx.Update(s, []types.PropertyChange{{Name: "sriovDevicePoolInfo", Val: sriovPools(h.Config.Network, h.Config.PciPassthruInfo)}})
			})
		}
	}
}

// Refresh re-reads the passthrough state, which the lab always has current.
func (s *pciPassthruSystem) Refresh(*types.Refresh) soap.HasFault {
	return &methods.RefreshBody{Res: new(types.RefreshResponse)}
}

func clonePassthru(in []types.BaseHostPciPassthruInfo) []types.BaseHostPciPassthruInfo {
	out := make([]types.BaseHostPciPassthruInfo, len(in))
	for i, p := range in {
		if sr, ok := p.(*types.HostSriovInfo); ok {
			c := *sr
			out[i] = &c
			continue
		}
		info := *p.GetHostPciPassthruInfo()
		out[i] = &info
	}
	return out
}

// EnableRuleset is vcsim's, but per host and visible in host.config.firewall.
func (x *extension) EnableRuleset(ctx *simulator.Context, req *types.EnableRuleset) soap.HasFault {
	body := &methods.EnableRulesetBody{Fault_: x.changeRuleset(ctx, req.This, req.Id, enableRuleset(true))}
	if body.Fault_ == nil {
		body.Res = new(types.EnableRulesetResponse)
	}
	return body
}

// DisableRuleset is vcsim's, but per host and visible in host.config.firewall.
func (x *extension) DisableRuleset(ctx *simulator.Context, req *types.DisableRuleset) soap.HasFault {
	body := &methods.DisableRulesetBody{Fault_: x.changeRuleset(ctx, req.This, req.Id, enableRuleset(false))}
	if body.Fault_ == nil {
		body.Res = new(types.DisableRulesetResponse)
	}
	return body
}

// enableRuleset is the change of EnableRuleset or DisableRuleset.
func enableRuleset(on bool) func(*types.HostFirewallRuleset) {
	return func(rs *types.HostFirewallRuleset) { rs.Enabled = on }
}

// UpdateRuleset sets which addresses a ruleset allows.
func (x *extension) UpdateRuleset(ctx *simulator.Context, req *types.UpdateRuleset) soap.HasFault {
	body := new(methods.UpdateRulesetBody)
	allowed := req.Spec.AllowedHosts
	for _, ip := range allowed.IpAddress {
		if net.ParseIP(ip) == nil {
			body.Fault_ = simulator.Fault("invalid IP address "+ip, &types.InvalidArgument{InvalidProperty: "spec.allowedHosts.ipAddress"})
			return body
		}
	}
	for _, n := range allowed.IpNetwork {
		ip := net.ParseIP(n.Network)
		bits := 128
		if ip.To4() != nil {
			bits = 32
		}
		if ip == nil || n.PrefixLength < 0 || int(n.PrefixLength) > bits {
			body.Fault_ = simulator.Fault(
				fmt.Sprintf("invalid network %s/%d", n.Network, n.PrefixLength),
				&types.InvalidArgument{InvalidProperty: "spec.allowedHosts.ipNetwork"},
			)
			return body
		}
	}
	var refused bool
	f := x.changeRuleset(ctx, req.This, req.Id, func(rs *types.HostFirewallRuleset) {
		if rs.IpListUserConfigurable != nil && !*rs.IpListUserConfigurable {
			refused = true
			return
		}
		rs.AllowedHosts = &types.HostFirewallRulesetIpList{
			IpAddress: slices.Clone(allowed.IpAddress),
			IpNetwork: slices.Clone(allowed.IpNetwork),
			AllIp:     allowed.AllIp,
		}
	})
	switch {
	case f != nil:
		body.Fault_ = f
	case refused:
		body.Fault_ = simulator.Fault(
			"the allowed IP list of ruleset "+req.Id+" is not configurable",
			&types.InvalidArgument{InvalidProperty: "spec.allowedHosts"},
		)
	default:
		body.Res = new(types.UpdateRulesetResponse)
	}
	return body
}

// RefreshFirewall re-reads the firewall configuration, which the lab always
// has current.
func (x *extension) RefreshFirewall(ctx *simulator.Context, req *types.RefreshFirewall) soap.HasFault {
	body := new(methods.RefreshFirewallBody)
	if _, ok := target[*simulator.HostFirewallSystem](ctx, req.This, &body.Fault_); !ok {
		return body
	}
	body.Res = new(types.RefreshFirewallResponse)
	return body
}

// changeRuleset applies change to ruleset id of a firewall system and of its
// host's config.firewall, or returns NotFound.
func (x *extension) changeRuleset(
	ctx *simulator.Context,
	fwRef types.ManagedObjectReference,
	id string,
	change func(*types.HostFirewallRuleset),
) *soap.Fault {
	var fault *soap.Fault
	fw, ok := target[*simulator.HostFirewallSystem](ctx, fwRef, &fault)
	if !ok {
		return fault
	}
	ctx.WithLock(fw, func() {
		next, err := applyRuleset(fw.FirewallInfo, id, change)
		if err != nil {
			fault = simulator.Fault(err.Error(), &types.NotFound{})
			return
		}
		ctx.Update(fw, []types.PropertyChange{{Name: "firewallInfo", Val: next}})
	})
	if fault != nil {
		return fault
	}
	if host, ok := ctx.Map.Get(x.fwHost[fwRef]).(*simulator.HostSystem); ok {
		ctx.WithLock(host, func() {
			if host.Config == nil {
				return
			}
			next, err := applyRuleset(host.Config.Firewall, id, change)
			if err == nil {
				ctx.Update(host, []types.PropertyChange{{Name: "config.firewall", Val: next}})
			}
		})
	}
	return nil
}

// applyRuleset returns a copy of info with change applied to ruleset id.
func applyRuleset(info *types.HostFirewallInfo, id string, change func(*types.HostFirewallRuleset)) (*types.HostFirewallInfo, error) {
	if info == nil {
		return nil, fmt.Errorf("no firewall")
	}
	next := *info
	next.Ruleset = slices.Clone(info.Ruleset)
	i := slices.IndexFunc(next.Ruleset, func(rs types.HostFirewallRuleset) bool { return rs.Key == id })
	if i < 0 {
		return nil, fmt.Errorf("ruleset %q not found", id)
	}
	change(&next.Ruleset[i])
	return &next, nil
}

// checkOptions refuses unknown keys in a host's UpdateOptions, as ESXi does;
// vcsim creates them.
func (x *extension) checkOptions(ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	req, ok := m.Body.(*types.UpdateOptions)
	if !ok || !x.hostOptions[m.This] {
		return nil
	}
	om, ok := ctx.Map.Get(m.This).(*simulator.OptionManager)
	if !ok {
		return nil
	}
	var unknown string
	ctx.WithLock(om, func() {
		for _, c := range req.ChangedValue {
			if c == nil {
				continue
			}
			key := c.GetOptionValue().Key
			if !slices.ContainsFunc(om.Setting, func(o types.BaseOptionValue) bool { return o.GetOptionValue().Key == key }) {
				unknown = key
				return
			}
		}
	})
	if unknown != "" {
		return &types.InvalidName{Name: unknown}
	}
	return nil
}
