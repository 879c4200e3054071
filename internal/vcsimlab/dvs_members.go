package vcsimlab

import (
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// Host membership of a distributed switch: the hosts that ReconfigureDvs_Task
// and CreateDVS_Task add, edit and remove (dvs.go), with their uplinks, in
// the switch's config.host and summary.hostMember, in the port groups' and
// clusters' networks and in each host's config.network.proxySwitch.

// switchMTU is the MTU a member host's proxy switch shows: the switch's
// maxMtu, 1500 when unset.
func switchMTU(s *simulator.DistributedVirtualSwitch) int32 {
	if vc, ok := s.Config.(*types.VMwareDVSConfigInfo); ok && vc.MaxMtu != 0 {
		return vc.MaxMtu
	}
	return 1500
}

// checkMembers validates host membership changes before any is applied.
func checkMembers(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, specs []types.DistributedVirtualSwitchHostMemberConfigSpec) *vimError {
	seen := map[types.ManagedObjectReference]bool{}
	for _, m := range specs {
		host, ok := ctx.Map.Get(m.Host).(*simulator.HostSystem)
		if !ok {
			return objectGone(m.Host)
		}
		if seen[m.Host] {
			return invalidArgument("spec.host")
		}
		seen[m.Host] = true
		member := slices.Contains(s.Summary.HostMember, m.Host)
		switch types.ConfigSpecOperation(m.Operation) {
		case types.ConfigSpecOperationAdd:
			if member {
				return refuse(&types.AlreadyExists{Name: host.Name}, "The specified key, name, or identifier '%s' already exists.", host.Name)
			}
		case types.ConfigSpecOperationEdit, types.ConfigSpecOperationRemove:
			if !member {
				return refuse(&types.NotFound{}, "Host %s is not a member of the distributed switch %s.", host.Name, s.Name)
			}
		default:
			return invalidArgument("spec.host.operation")
		}
		if types.ConfigSpecOperation(m.Operation) == types.ConfigSpecOperationRemove {
			if vms := vmsUsing(ctx, hostVMs(ctx, host), func(b *types.DistributedVirtualSwitchPortConnection) bool { return b.SwitchUuid == s.Uuid }); len(vms) > 0 {
				return inUse("DistributedVirtualSwitch", s.Name)
			}
			continue
		}
		if err := checkPnics(ctx, s.Uuid, host, m.Backing); err != nil {
			return err
		}
	}
	return nil
}

// checkPnics refuses uplinks the host does not have or that a switch of the
// host other than the distributed switch dvsUUID already claims.
func checkPnics(ctx *simulator.Context, dvsUUID string, host *simulator.HostSystem, backing types.BaseDistributedVirtualSwitchHostMemberBacking) *vimError {
	b, ok := backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking)
	if !ok {
		return nil
	}
	var err *vimError
	ctx.WithLock(host, func() {
		if host.Config == nil || host.Config.Network == nil {
			err = refuse(&types.InvalidState{}, "Host %s has no network configuration.", host.Name)
			return
		}
		n := host.Config.Network
		seen := map[string]bool{}
		for _, p := range b.PnicSpec {
			i := slices.IndexFunc(n.Pnic, func(nic types.PhysicalNic) bool { return nic.Device == p.PnicDevice })
			if i < 0 || seen[p.PnicDevice] {
				err = refuse(&types.InvalidArgument{InvalidProperty: "spec.host.backing.pnicSpec.pnicDevice"},
					"A specified parameter was not correct: physical NIC %q on host %s", p.PnicDevice, host.Name)
				return
			}
			seen[p.PnicDevice] = true
			if owner := pnicOwner(n, n.Pnic[i].Key, dvsUUID); owner != "" {
				err = inUse("PhysicalNic", p.PnicDevice)
				return
			}
		}
	})
	return err
}

// pnicOwner names the switch of the host, other than the distributed switch
// dvsUUID, that has pnic as an uplink, or "".
func pnicOwner(n *types.HostNetworkInfo, pnic, dvsUUID string) string {
	for _, vs := range n.Vswitch {
		if slices.Contains(vs.Pnic, pnic) {
			return vs.Name
		}
	}
	for _, ps := range n.ProxySwitch {
		if ps.DvsUuid != dvsUUID && slices.Contains(ps.Pnic, pnic) {
			return ps.DvsName
		}
	}
	return ""
}

// applyMember carries out one validated host membership change. s is locked.
func applyMember(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, m types.DistributedVirtualSwitchHostMemberConfigSpec) {
	cfg := s.Config.GetDVSConfigInfo()
	backing := m.Backing
	if backing == nil {
		backing = &types.DistributedVirtualSwitchHostMemberPnicBacking{}
	}
	i := slices.IndexFunc(cfg.Host, func(h types.DistributedVirtualSwitchHostMember) bool {
		return h.Config.Host != nil && *h.Config.Host == m.Host
	})
	switch types.ConfigSpecOperation(m.Operation) {
	case types.ConfigSpecOperationAdd:
		host, product := m.Host, cfg.ProductInfo
		cfg.Host = append(cfg.Host, types.DistributedVirtualSwitchHostMember{
			Config: types.DistributedVirtualSwitchHostMemberConfigInfo{
				Host:                 &host,
				MaxProxySwitchPorts:  m.MaxProxySwitchPorts,
				VendorSpecificConfig: m.VendorSpecificConfig,
				Backing:              backing,
			},
			ProductInfo: &product,
			Status:      "up",
		})
		s.Summary.HostMember = append(slices.Clone(s.Summary.HostMember), m.Host)
		joinNetworks(ctx, s, m.Host, true)
		setProxySwitch(ctx, s, m.Host, backing)
	case types.ConfigSpecOperationEdit:
		if i >= 0 {
			cfg.Host[i].Config.Backing = backing
			if m.MaxProxySwitchPorts != 0 {
				cfg.Host[i].Config.MaxProxySwitchPorts = m.MaxProxySwitchPorts
			}
		}
		setProxySwitch(ctx, s, m.Host, backing)
	case types.ConfigSpecOperationRemove:
		if i >= 0 {
			cfg.Host = slices.Delete(slices.Clone(cfg.Host), i, i+1)
		}
		s.Summary.HostMember = slices.DeleteFunc(slices.Clone(s.Summary.HostMember), func(r types.ManagedObjectReference) bool { return r == m.Host })
		joinNetworks(ctx, s, m.Host, false)
		setProxySwitch(ctx, s, m.Host, nil)
	}
}

// joinNetworks adds (or removes) the switch's port groups to (from) the
// host's networks, the port groups' hosts and the networks of the host's
// cluster.
func joinNetworks(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, hostRef types.ManagedObjectReference, join bool) {
	for _, pg := range s.Portgroup {
		setMember(ctx, hostRef, "network", pg, join)
		setMember(ctx, pg, "host", hostRef, join)
	}
	host, ok := ctx.Map.Get(hostRef).(*simulator.HostSystem)
	if !ok || host.Parent == nil {
		return
	}
	cluster, ok := ctx.Map.Get(*host.Parent).(*simulator.ClusterComputeResource)
	if !ok {
		return
	}
	// The cluster keeps a port group while any of its hosts is a member.
	keep := slices.ContainsFunc(s.Summary.HostMember, func(h types.ManagedObjectReference) bool {
		return slices.Contains(cluster.Host, h)
	})
	for _, pg := range s.Portgroup {
		setMember(ctx, cluster.Self, "network", pg, join || keep)
	}
}

// setProxySwitch sets the host's proxy switch for s with the backing's
// uplinks, or removes it when backing is nil.
func setProxySwitch(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, hostRef types.ManagedObjectReference, backing types.BaseDistributedVirtualSwitchHostMemberBacking) {
	changeHostNetwork(ctx, hostRef, func(n *types.HostNetworkInfo) {
		n.ProxySwitch = slices.DeleteFunc(slices.Clone(n.ProxySwitch), func(ps types.HostProxySwitch) bool { return ps.DvsUuid == s.Uuid })
		if backing == nil {
			return
		}
		var pnics []string
		if b, ok := backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking); ok {
			for _, p := range b.PnicSpec {
				pnics = append(pnics, "key-vim.host.PhysicalNic-"+p.PnicDevice)
			}
		}
		n.ProxySwitch = append(n.ProxySwitch, types.HostProxySwitch{
			DvsUuid:           s.Uuid,
			DvsName:           s.Name,
			Key:               s.Uuid,
			NumPorts:          512,
			NumPortsAvailable: 512 - int32(len(pnics)),
			Mtu:               switchMTU(s),
			Pnic:              pnics,
			Spec:              types.HostProxySwitchSpec{Backing: backing},
		})
	})
}

// updateProxySwitch changes the host's proxy switch for the switch dvsUUID.
func updateProxySwitch(ctx *simulator.Context, hostRef types.ManagedObjectReference, dvsUUID string, change func(*types.HostProxySwitch)) {
	changeHostNetwork(ctx, hostRef, func(n *types.HostNetworkInfo) {
		n.ProxySwitch = slices.Clone(n.ProxySwitch)
		for i := range n.ProxySwitch {
			if n.ProxySwitch[i].DvsUuid == dvsUUID {
				change(&n.ProxySwitch[i])
			}
		}
	})
}

// changeHostNetwork applies change to a copy of the host's
// config.network, under the host's lock, and publishes the result.
func changeHostNetwork(ctx *simulator.Context, hostRef types.ManagedObjectReference, change func(*types.HostNetworkInfo)) {
	host, ok := ctx.Map.Get(hostRef).(*simulator.HostSystem)
	if !ok {
		return
	}
	ctx.WithLock(host, func() {
		if host.Config == nil || host.Config.Network == nil {
			return
		}
		n := *host.Config.Network
		change(&n)
		ctx.Update(host, []types.PropertyChange{{Name: "config.network", Val: &n}})
	})
}

// hostVMs lists the VMs of a host.
func hostVMs(ctx *simulator.Context, host *simulator.HostSystem) []types.ManagedObjectReference {
	var vms []types.ManagedObjectReference
	ctx.WithLock(host, func() { vms = slices.Clone(host.Vm) })
	return vms
}
