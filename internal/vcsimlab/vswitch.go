package vcsimlab

import (
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Standard switches: HostNetworkSystem.UpdateVirtualSwitch, which vcsim
// leaves out, on the host's config.network, where the lab keeps its
// switches, with the uplink bookkeeping of dvs_members.go.

// UpdateVirtualSwitch sets a standard switch's spec, and its uplinks to the
// NICs of the spec's bond bridge ("If the bridge is NULL, the configuration
// will be unset"; "The BondBridge configuration is the only valid bridge
// configuration for an ESX Server system", vSphere Web Services API 8.0,
// HostNetworkSystem.UpdateVirtualSwitch). Refusals: an unknown switch
// (NotFound), a bridge of another kind (InvalidArgument), a NIC the host
// does not have (HostConfigFault, the method's fault for other
// configuration failures) and a NIC another switch has (ResourceInUse,
// which the reference lists for the method).
func (x *extension) UpdateVirtualSwitch(ctx *simulator.Context, req *types.UpdateVirtualSwitch) soap.HasFault {
	body := new(methods.UpdateVirtualSwitchBody)
	ns, ok := target[*simulator.HostNetworkSystem](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	var host *simulator.HostSystem
	if ns.Host != nil {
		host, _ = ctx.Map.Get(ns.Host.Self).(*simulator.HostSystem)
	}
	if host == nil {
		body.Fault_ = notFoundFault(req.This)
		return body
	}
	ctx.WithLock(host, func() {
		if host.Config == nil || host.Config.Network == nil {
			body.Fault_ = simulator.Fault("The host has no network configuration.", &types.HostConfigFault{})
			return
		}
		next, err := updateVswitch(host.Config.Network, req.VswitchName, req.Spec)
		if err != nil {
			body.Fault_ = simulator.Fault(err.msg, err.fault)
			return
		}
		ctx.Update(host, []types.PropertyChange{{Name: "config.network", Val: next}})
		body.Res = new(types.UpdateVirtualSwitchResponse)
	})
	return body
}

// updateVswitch returns a copy of n with the standard switch name set to
// spec, or what vSphere refuses.
func updateVswitch(n *types.HostNetworkInfo, name string, spec types.HostVirtualSwitchSpec) (*types.HostNetworkInfo, *vimError) {
	i := slices.IndexFunc(n.Vswitch, func(vs types.HostVirtualSwitch) bool { return vs.Name == name })
	if i < 0 {
		return nil, refuse(&types.NotFound{}, "The virtual switch %s was not found.", name)
	}
	var pnics []string
	switch b := spec.Bridge.(type) {
	case nil:
	case *types.HostVirtualSwitchBondBridge:
		for _, dev := range b.NicDevice {
			j := slices.IndexFunc(n.Pnic, func(p types.PhysicalNic) bool { return p.Device == dev })
			if j < 0 {
				return nil, refuse(&types.HostConfigFault{}, "The host has no physical NIC %s.", dev)
			}
			if owner := pnicOwner(n, n.Pnic[j].Key, ""); owner != "" && owner != name {
				return nil, inUse("PhysicalNic", dev)
			}
			pnics = append(pnics, n.Pnic[j].Key)
		}
	default:
		return nil, invalidArgument("spec.bridge")
	}
	next := *n
	next.Vswitch = slices.Clone(n.Vswitch)
	vs := &next.Vswitch[i]
	vs.Spec = spec
	vs.Pnic = pnics
	if spec.Mtu != 0 {
		vs.Mtu = spec.Mtu
	}
	return &next, nil
}
