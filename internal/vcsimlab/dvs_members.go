package vcsimlab

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// Host membership of a distributed switch: the hosts that ReconfigureDvs_Task
// and CreateDVS_Task add, edit and remove (dvs.go), with their uplinks, in
// the switch's config.host and summary.hostMember, in the port groups' and
// clusters' networks and in each host's config.network.proxySwitch; and the
// uplink ports of each member host.
//
// Uplink ports (vSphere Web Services API): vCenter creates, for each member
// host, one port in the switch's uplink port group per uplink name
// (DVSNameArrayUplinkPortPolicy: "The size of the array indicates the number
// of uplink ports that will be created for each host in the switch") and
// lists their keys in the member's uplinkPortKey ("Port keys of the uplink
// ports created for the host member. These ports will be deleted after the
// host leaves the switch", DistributedVirtualSwitchHostMember). The port at
// index i bears uplink name i. Each physical NIC of the member's backing is
// connected to one of them: DistributedVirtualSwitchHostMemberPnicSpec's
// uplinkPortKey ("Key of the port to be connected to the physical NIC") and
// uplinkPortgroupKey, which vCenter fills in. A spec may name the port; one
// that does not (govc dvs.add, Ansible's vmware_dvs_host, this provider) gets
// the host's first free uplink port, and a NIC that stays in an edited
// backing keeps its port. The host's proxy switch lists the ports with their
// names (HostProxySwitch.uplinkPort). Changing the number of uplink names
// creates ports on every host, or "deletes the unused uplink ports on each
// host", the remaining ones renamed in order; "decreasing beyond the number
// of unused uplink port raises a fault" (DVSNameArrayUplinkPortPolicy).
//
// Not settled by the reference, and chosen here: the fault for too few
// unused ports (ResourceInUse), for a spec naming a port that is not one of
// the host's or a port twice (InvalidArgument); a NIC beyond the host's
// uplink ports stays without a port. Port keys are numbers, each above every
// key of the switch's port groups when allocated; vcsim numbers each port
// group's own ports from "0", so a port group made later may reuse a number.

// switchMTU is the MTU a member host's proxy switch shows: the switch's
// maxMtu, 1500 when unset.
func switchMTU(s *simulator.DistributedVirtualSwitch) int32 {
	if vc, ok := s.Config.(*types.VMwareDVSConfigInfo); ok && vc.MaxMtu != 0 {
		return vc.MaxMtu
	}
	return 1500
}

// checkMembers validates host membership changes before any is applied.
func checkMembers(
	ctx *simulator.Context,
	s *simulator.DistributedVirtualSwitch,
	specs []types.DistributedVirtualSwitchHostMemberConfigSpec,
) *vimError {
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
			if vms := vmsUsing(ctx, hostVMs(ctx, host), func(b *types.DistributedVirtualSwitchPortConnection) bool { return b.SwitchUuid == s.Uuid }); len(
				vms,
			) > 0 {
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
func checkPnics(
	ctx *simulator.Context,
	dvsUUID string,
	host *simulator.HostSystem,
	backing types.BaseDistributedVirtualSwitchHostMemberBacking,
) *vimError {
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

// memberUplinks is a member host's uplink ports, one per uplink name in name
// order, and its backing with each NIC's port.
type memberUplinks struct {
	ports   []string
	backing types.BaseDistributedVirtualSwitchHostMemberBacking
}

// uplinkPlan is every member's uplinks after a change, by host.
type uplinkPlan map[types.ManagedObjectReference]*memberUplinks

// uplinkNames are the switch's uplink names.
func uplinkNames(cfg *types.DVSConfigInfo) []string {
	if p, ok := cfg.UplinkPortPolicy.(*types.DVSNameArrayUplinkPortPolicy); ok {
		return p.UplinkPortName
	}
	return nil
}

// uplinkPortgroupKey is the key of the switch's uplink port group, "" until
// it exists.
func uplinkPortgroupKey(cfg *types.DVSConfigInfo) string {
	if len(cfg.UplinkPortgroup) == 0 {
		return ""
	}
	return cfg.UplinkPortgroup[0].Value // a port group's key is its moref value
}

// planUplinks works out every member's uplink ports and NIC connections after
// the membership changes specs (validated by checkMembers) and, when names is
// not nil, the switch's new uplink names. s is locked.
func planUplinks(
	ctx *simulator.Context,
	s *simulator.DistributedVirtualSwitch,
	specs []types.DistributedVirtualSwitchHostMemberConfigSpec,
	names []string,
) (uplinkPlan, *vimError) {
	cfg := s.Config.GetDVSConfigInfo()
	pgKey := uplinkPortgroupKey(cfg)
	plan := uplinkPlan{}
	for _, h := range cfg.Host {
		if h.Config.Host != nil {
			plan[*h.Config.Host] = &memberUplinks{ports: slices.Clone(h.UplinkPortKey), backing: h.Config.Backing}
		}
	}
	next := nextPortKey(ctx, s)
	alloc := func(n int) []string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = strconv.Itoa(next)
			next++
		}
		return keys
	}
	count := len(uplinkNames(cfg))
	for _, m := range specs {
		switch types.ConfigSpecOperation(m.Operation) {
		case types.ConfigSpecOperationAdd:
			ports := alloc(count)
			b, err := connectPnics(m.Backing, ports, nil, pgKey)
			if err != nil {
				return nil, err
			}
			plan[m.Host] = &memberUplinks{ports: ports, backing: b}
		case types.ConfigSpecOperationEdit:
			cur := plan[m.Host]
			if cur == nil {
				continue // checkMembers refuses an edit of a non-member
			}
			b, err := connectPnics(m.Backing, cur.ports, cur.backing, pgKey)
			if err != nil {
				return nil, err
			}
			cur.backing = b
		case types.ConfigSpecOperationRemove:
			delete(plan, m.Host)
		}
	}
	if names != nil && len(names) != count {
		for _, host := range slices.SortedFunc(maps.Keys(plan), func(a, b types.ManagedObjectReference) int { return strings.Compare(a.Value, b.Value) }) {
			m := plan[host]
			if len(names) > len(m.ports) {
				m.ports = append(m.ports, alloc(len(names)-len(m.ports))...)
				continue
			}
			used := map[string]bool{}
			for _, p := range pnicSpecs(m.backing) {
				used[p.UplinkPortKey] = true
			}
			for i := len(m.ports) - 1; i >= 0 && len(m.ports) > len(names); i-- {
				if !used[m.ports[i]] {
					m.ports = slices.Delete(m.ports, i, i+1)
				}
			}
			if len(m.ports) > len(names) {
				return nil, refuse(&types.ResourceInUse{Type: "DistributedVirtualPort", Name: m.ports[len(names)]},
					"The resource '%s' is in use.", m.ports[len(names)])
			}
		}
	}
	return plan, nil
}

// connectPnics connects the NICs of a member's new backing to its uplink
// ports: the port the spec names, else the one the NIC had in the old
// backing, else the first free one. Other backing types are kept as they are.
func connectPnics(
	backing types.BaseDistributedVirtualSwitchHostMemberBacking,
	ports []string,
	old types.BaseDistributedVirtualSwitchHostMemberBacking,
	pgKey string,
) (types.BaseDistributedVirtualSwitchHostMemberBacking, *vimError) {
	if backing == nil {
		backing = &types.DistributedVirtualSwitchHostMemberPnicBacking{}
	}
	in, ok := backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking)
	if !ok {
		return backing, nil
	}
	out := &types.DistributedVirtualSwitchHostMemberPnicBacking{PnicSpec: slices.Clone(in.PnicSpec)}
	taken := map[string]bool{}
	for _, p := range out.PnicSpec {
		if p.UplinkPortgroupKey != "" && p.UplinkPortgroupKey != pgKey {
			return nil, invalidArgument("spec.host.backing.pnicSpec.uplinkPortgroupKey")
		}
		if p.UplinkPortKey == "" {
			continue
		}
		if !slices.Contains(ports, p.UplinkPortKey) || taken[p.UplinkPortKey] {
			return nil, invalidArgument("spec.host.backing.pnicSpec.uplinkPortKey")
		}
		taken[p.UplinkPortKey] = true
	}
	had := map[string]string{} // pnic -> its port in the old backing
	for _, p := range pnicSpecs(old) {
		had[p.PnicDevice] = p.UplinkPortKey
	}
	for i := range out.PnicSpec {
		p := &out.PnicSpec[i]
		if p.UplinkPortKey != "" {
			continue
		}
		if k := had[p.PnicDevice]; k != "" && slices.Contains(ports, k) && !taken[k] {
			p.UplinkPortKey = k
		} else if j := slices.IndexFunc(ports, func(k string) bool { return !taken[k] }); j >= 0 {
			p.UplinkPortKey = ports[j]
		}
		taken[p.UplinkPortKey] = true
	}
	for i := range out.PnicSpec {
		if out.PnicSpec[i].UplinkPortKey != "" {
			out.PnicSpec[i].UplinkPortgroupKey = pgKey
		}
	}
	return out, nil
}

// pnicSpecs are the NICs of a pnic backing, none for other backings.
func pnicSpecs(b types.BaseDistributedVirtualSwitchHostMemberBacking) []types.DistributedVirtualSwitchHostMemberPnicSpec {
	if pb, ok := b.(*types.DistributedVirtualSwitchHostMemberPnicBacking); ok {
		return pb.PnicSpec
	}
	return nil
}

// nextPortKey is the number above every port key of the switch: its port
// groups' and its members' uplink ports. s is locked.
func nextPortKey(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch) int {
	highest := -1
	note := func(keys []string) {
		for _, k := range keys {
			if n, err := strconv.Atoi(k); err == nil && n > highest {
				highest = n
			}
		}
	}
	for _, h := range s.Config.GetDVSConfigInfo().Host {
		note(h.UplinkPortKey)
	}
	for _, ref := range s.Portgroup {
		if pg, ok := ctx.Map.Get(ref).(*simulator.DistributedVirtualPortgroup); ok {
			ctx.WithLock(pg, func() { note(pg.PortKeys) })
		}
	}
	return highest + 1
}

// applyMember carries out one validated host membership change. s is locked.
func applyMember(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, m types.DistributedVirtualSwitchHostMemberConfigSpec) {
	cfg := s.Config.GetDVSConfigInfo()
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
			},
			ProductInfo: &product,
			Status:      "up",
		})
		s.Summary.HostMember = append(slices.Clone(s.Summary.HostMember), m.Host)
		joinNetworks(ctx, s, m.Host, true)
	case types.ConfigSpecOperationEdit:
		if i >= 0 && m.MaxProxySwitchPorts != 0 {
			cfg.Host[i].Config.MaxProxySwitchPorts = m.MaxProxySwitchPorts
		}
	case types.ConfigSpecOperationRemove:
		if i >= 0 {
			cfg.Host = slices.Delete(slices.Clone(cfg.Host), i, i+1)
		}
		s.Summary.HostMember = slices.DeleteFunc(slices.Clone(s.Summary.HostMember), func(r types.ManagedObjectReference) bool { return r == m.Host })
		joinNetworks(ctx, s, m.Host, false)
		setProxySwitch(ctx, s, m.Host, nil)
	}
}

// applyUplinks gives every member its planned uplink ports and backing, in
// config.host and its proxy switch, and the uplink port group the members'
// ports. s is locked; its name and MTU are final.
func applyUplinks(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, plan uplinkPlan) {
	cfg := s.Config.GetDVSConfigInfo()
	var keys []string
	for i := range cfg.Host {
		h := &cfg.Host[i]
		m := plan[*h.Config.Host]
		if m == nil {
			continue
		}
		h.UplinkPortKey, h.Config.Backing = m.ports, m.backing
		keys = append(keys, m.ports...)
		setProxySwitch(ctx, s, *h.Config.Host, m)
	}
	if len(cfg.UplinkPortgroup) == 0 {
		return
	}
	pg, ok := ctx.Map.Get(cfg.UplinkPortgroup[0]).(*simulator.DistributedVirtualPortgroup)
	if !ok {
		return
	}
	ctx.WithLock(pg, func() {
		if slices.Equal(pg.PortKeys, keys) && int(pg.Config.NumPorts) == len(keys) {
			return
		}
		pg.PortKeys = keys
		c := pg.Config
		c.NumPorts = int32(len(keys))
		ctx.Update(pg, []types.PropertyChange{{Name: "config", Val: c}, {Name: "portKeys", Val: keys}})
	})
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

// setProxySwitch sets the host's proxy switch for s with the member's
// uplinks (its NICs, and its uplink ports with their names), or removes it
// when m is nil.
func setProxySwitch(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, hostRef types.ManagedObjectReference, m *memberUplinks) {
	names := uplinkNames(s.Config.GetDVSConfigInfo())
	changeHostNetwork(ctx, hostRef, func(n *types.HostNetworkInfo) {
		i := slices.IndexFunc(n.ProxySwitch, func(ps types.HostProxySwitch) bool { return ps.DvsUuid == s.Uuid })
		n.ProxySwitch = slices.Clone(n.ProxySwitch)
		if m == nil {
			if i >= 0 {
				n.ProxySwitch = slices.Delete(n.ProxySwitch, i, i+1)
			}
			return
		}
		var pnics []string
		for _, p := range pnicSpecs(m.backing) {
			pnics = append(pnics, "key-vim.host.PhysicalNic-"+p.PnicDevice)
		}
		var ports []types.KeyValue
		for j, k := range m.ports {
			if j < len(names) {
				ports = append(ports, types.KeyValue{Key: k, Value: names[j]})
			}
		}
		ps := types.HostProxySwitch{
			DvsUuid:           s.Uuid,
			DvsName:           s.Name,
			Key:               s.Uuid,
			NumPorts:          512,
			NumPortsAvailable: 512 - int32(len(pnics)),
			Mtu:               switchMTU(s),
			Pnic:              pnics,
			UplinkPort:        ports,
			Spec:              types.HostProxySwitchSpec{Backing: m.backing},
		}
		if i >= 0 {
			n.ProxySwitch[i] = ps
		} else {
			n.ProxySwitch = append(n.ProxySwitch, ps)
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
