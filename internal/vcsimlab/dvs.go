package vcsimlab

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Distributed switches: CreateDVS_Task, ReconfigureDvs_Task,
// EnableNetworkResourceManagement, the upgrade, FetchDVPorts, Destroy_Task of
// a switch, and the switch manager's queries. Host membership and uplink
// ports are in dvs_members.go, which hosts a switch version accepts in
// dvs_compat.go, port groups in portgroup.go.

const (
	minMTU = 1280
	maxMTU = 9000
)

// validMTU reports whether a spec's maxMtu is unset (0) or in range.
func validMTU(mtu int32) bool {
	return mtu == 0 || (mtu >= minMTU && mtu <= maxMTU)
}

// CreateDVSTask is vcsim's, plus the checks vSphere makes and the hosts of
// the spec, which vcsim ignores: they join once the switch is complete.
func (x *extension) CreateDVSTask(ctx *simulator.Context, req *types.CreateDVS_Task) soap.HasFault {
	body := new(methods.CreateDVS_TaskBody)
	f, ok := target[*simulator.Folder](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	// The spec is required; a call without one is answered as one on no object.
	if req.Spec.ConfigSpec == nil {
		body.Fault_ = notFoundFault(req.This)
		return body
	}
	cs := req.Spec.ConfigSpec.GetDVSConfigSpec()
	cs.Name = escapeEntityName(cs.Name)
	var hosts []types.ManagedObjectReference
	for _, m := range cs.Host {
		hosts = append(hosts, m.Host)
	}
	if fault := checkHostsRunSwitch(ctx, hosts, switchVersion(req.Spec.ProductInfo)); fault != nil {
		body.Fault_ = fault
		return body
	}
	var res soap.HasFault
	ctx.WithLock(f, func() {
		if err := checkCreateDVS(ctx, f, &req.Spec); err != nil {
			body.Res = &types.CreateDVS_TaskResponse{Returnval: finishTask(ctx, f, "CreateDVS_Task", nil, err)}
			res = body
			return
		}
		x.mu.Lock()
		x.pendingHosts[cs.Name] = cs.Host
		x.mu.Unlock()
		cs.Host = nil
		cs.ConfigVersion = "" // ignored on create; completeDVS starts at "1"
		res = f.CreateDVSTask(ctx, req)
	})
	return res
}

func checkCreateDVS(ctx *simulator.Context, f *simulator.Folder, spec *types.DVSCreateSpec) *vimError {
	cs := spec.ConfigSpec.GetDVSConfigSpec()
	if cs.Name == "" {
		return invalidArgument("spec.configSpec.name")
	}
	if p := spec.ProductInfo; p != nil && p.Version != "" && !slices.Contains(dvsVersions, p.Version) {
		return invalidArgument("spec.productInfo.version")
	}
	if vs, ok := spec.ConfigSpec.(*types.VMwareDVSConfigSpec); ok && !validMTU(vs.MaxMtu) {
		return invalidArgument("spec.configSpec.maxMtu")
	}
	if err := checkName(ctx, &f.Self, cs.Name); err != nil {
		return err
	}
	seen := map[types.ManagedObjectReference]bool{}
	for _, m := range cs.Host {
		host, ok := ctx.Map.Get(m.Host).(*simulator.HostSystem)
		if !ok {
			return objectGone(m.Host)
		}
		if seen[m.Host] || types.ConfigSpecOperation(m.Operation) != types.ConfigSpecOperationAdd {
			return invalidArgument("spec.configSpec.host")
		}
		seen[m.Host] = true
		if err := checkPnics(ctx, "", host, m.Backing); err != nil {
			return err
		}
		// No uplink port exists before the switch: a spec cannot name one.
		if _, err := connectPnics(m.Backing, nil, nil, ""); err != nil {
			return err
		}
	}
	return nil
}

// completeDVS fills in what CreateDVS_Task leaves empty in a new switch
// (config.productInfo, config.configVersion, config.uplinkPortgroup,
// capability.compatibleHostComponentProductInfo) and adds the hosts of its
// create spec with their uplink ports. It runs when vcsim adds the switch's
// first port group, the uplink port group, with the switch locked by ctx.
func (x *extension) completeDVS(ctx *simulator.Context, s *mo.DistributedVirtualSwitch) {
	if s.Config == nil || len(s.Portgroup) == 0 {
		return
	}
	cfg := s.Config.GetDVSConfigInfo()
	if len(cfg.UplinkPortgroup) > 0 {
		return
	}
	uplink := s.Portgroup[0]
	cfg.UplinkPortgroup = []types.ManagedObjectReference{uplink}
	// A create spec usually names the version only, or nothing: "If you do
	// not specify this property, the Server will use the latest version to
	// create the DistributedVirtualSwitch" (vSphere Web Services API,
	// DVSCreateSpec.productInfo).
	var p types.DistributedVirtualSwitchProductSpec
	if s.Summary.ProductInfo != nil {
		p = *s.Summary.ProductInfo
	}
	p.Version = cmp.Or(p.Version, dvsVersions[len(dvsVersions)-1])
	p.Name = cmp.Or(p.Name, "DVS")
	p.Vendor = cmp.Or(p.Vendor, "VMware, Inc.")
	p.ForwardingClass = cmp.Or(p.ForwardingClass, "etherswitch")
	cfg.ProductInfo = p
	s.Summary.ProductInfo = &p
	s.Capability.CompatibleHostComponentProductInfo = compatibleHostSpecs(p.Version)
	if cfg.ConfigVersion == "" {
		cfg.ConfigVersion = "1"
	}
	if pg, ok := ctx.Map.Get(uplink).(*simulator.DistributedVirtualPortgroup); ok {
		ctx.WithLock(pg, func() {
			c := pg.Config
			c.Uplink = types.NewBool(true)
			if c.ConfigVersion == "" {
				c.ConfigVersion = "1"
			}
			// vcsim gives it one port; its ports are the members' uplink
			// ports, none yet.
			c.NumPorts = 0
			pg.PortKeys = nil
			ctx.Update(pg, []types.PropertyChange{{Name: "config", Val: c}, {Name: "portKeys", Val: pg.PortKeys}})
		})
	}

	x.mu.Lock()
	hosts := x.pendingHosts[s.Name]
	delete(x.pendingHosts, s.Name)
	x.mu.Unlock()
	if sim, ok := ctx.Map.Get(s.Self).(*simulator.DistributedVirtualSwitch); ok {
		// checkCreateDVS has checked the hosts.
		if plan, err := planUplinks(ctx, sim, hosts, nil); err == nil {
			for _, m := range hosts {
				applyMember(ctx, sim, m)
			}
			applyUplinks(ctx, sim, plan)
		}
	}
	ctx.Update(s, []types.PropertyChange{
		{Name: "config", Val: s.Config},
		{Name: "summary", Val: s.Summary},
		{Name: "capability", Val: s.Capability},
	})
}

// ReconfigureDvsTask applies a switch reconfiguration; vcsim ignores every
// field but host membership, and drops pnic backings.
func (x *extension) ReconfigureDvsTask(ctx *simulator.Context, req *types.ReconfigureDvs_Task) soap.HasFault {
	body := new(methods.ReconfigureDvs_TaskBody)
	s, ok := target[*simulator.DistributedVirtualSwitch](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	// The spec is required; a call without one is answered as one on no object.
	if req.Spec == nil {
		body.Fault_ = notFoundFault(req.This)
		return body
	}
	ctx.WithLock(s, func() {
		if fault := checkAddedHostsRunSwitch(ctx, s, req.Spec.GetDVSConfigSpec().Host); fault != nil {
			body.Fault_ = fault
			return
		}
		err := reconfigureDVS(ctx, s, req.Spec)
		body.Res = &types.ReconfigureDvs_TaskResponse{Returnval: finishTask(ctx, s, "ReconfigureDvs_Task", nil, err)}
	})
	return body
}

// checkAddedHostsRunSwitch refuses hosts a reconfigure adds that cannot run
// the switch's version. s is locked.
func checkAddedHostsRunSwitch(
	ctx *simulator.Context,
	s *simulator.DistributedVirtualSwitch,
	specs []types.DistributedVirtualSwitchHostMemberConfigSpec,
) *soap.Fault {
	if s.Config == nil {
		return nil
	}
	var added []types.ManagedObjectReference
	for _, m := range specs {
		if types.ConfigSpecOperation(m.Operation) == types.ConfigSpecOperationAdd {
			added = append(added, m.Host)
		}
	}
	return checkHostsRunSwitch(ctx, added, s.Config.GetDVSConfigInfo().ProductInfo.Version)
}

func reconfigureDVS(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, spec types.BaseDVSConfigSpec) *vimError {
	cs := spec.GetDVSConfigSpec()
	cs.Name = escapeEntityName(cs.Name)
	if s.Config == nil {
		return refuse(&types.InvalidState{}, "The switch has no configuration.")
	}
	cfg := s.Config.GetDVSConfigInfo()
	if err := checkConfigVersion(cs.ConfigVersion, cfg.ConfigVersion); err != nil {
		return err
	}
	vs, _ := spec.(*types.VMwareDVSConfigSpec)
	if vs != nil && !validMTU(vs.MaxMtu) {
		return invalidArgument("spec.maxMtu")
	}
	if cs.Name != "" && cs.Name != s.Name {
		if err := checkName(ctx, s.Parent, cs.Name); err != nil {
			return err
		}
	}
	if err := checkMembers(ctx, s, cs.Host); err != nil {
		return err
	}
	var names []string // nil: the uplink names stay
	if p, ok := cs.UplinkPortPolicy.(*types.DVSNameArrayUplinkPortPolicy); ok {
		names = append([]string{}, p.UplinkPortName...)
	}
	plan, err := planUplinks(ctx, s, cs.Host, names)
	if err != nil {
		return err
	}

	applyDVSConfig(s, cs, vs)
	for _, m := range cs.Host {
		applyMember(ctx, s, m)
	}
	// Member hosts show the switch's name, MTU and uplink ports in their
	// proxy switch.
	applyUplinks(ctx, s, plan)
	cfg.ConfigVersion = nextVersion(cfg.ConfigVersion)
	ctx.Update(s, []types.PropertyChange{
		{Name: "name", Val: s.Name},
		{Name: "config", Val: s.Config},
		{Name: "summary", Val: s.Summary},
	})
	return nil
}

// applyDVSConfig sets the fields a spec sets; unset fields keep their value.
func applyDVSConfig(s *simulator.DistributedVirtualSwitch, cs *types.DVSConfigSpec, vs *types.VMwareDVSConfigSpec) {
	cfg := s.Config.GetDVSConfigInfo()
	if cs.Name != "" {
		// The entity's name too, which vcsim's name checks read.
		s.Name, s.Entity().Name = cs.Name, cs.Name
		cfg.Name = cs.Name
		s.Summary.Name = cs.Name
	}
	if cs.Description != "" {
		cfg.Description = cs.Description
		s.Summary.Description = cs.Description
	}
	if cs.UplinkPortPolicy != nil {
		cfg.UplinkPortPolicy = cs.UplinkPortPolicy
	}
	if cs.DefaultPortConfig != nil {
		cfg.DefaultPortConfig = cs.DefaultPortConfig
	}
	if cs.NumStandalonePorts != 0 {
		cfg.NumStandalonePorts = cs.NumStandalonePorts
	}
	if cs.MaxPorts != 0 {
		cfg.MaxPorts = cs.MaxPorts
	}
	if cs.Policy != nil {
		cfg.Policy = cs.Policy
	}
	if cs.Contact != nil {
		cfg.Contact = *cs.Contact
	}
	if cs.SwitchIpAddress != "" {
		cfg.SwitchIpAddress = cs.SwitchIpAddress
	}
	if cs.DefaultProxySwitchMaxNumPorts != 0 {
		cfg.DefaultProxySwitchMaxNumPorts = cs.DefaultProxySwitchMaxNumPorts
	}
	if cs.InfrastructureTrafficResourceConfig != nil {
		cfg.InfrastructureTrafficResourceConfig = cs.InfrastructureTrafficResourceConfig
	}
	if cs.NetworkResourceControlVersion != "" {
		cfg.NetworkResourceControlVersion = cs.NetworkResourceControlVersion
	}
	if vc, ok := s.Config.(*types.VMwareDVSConfigInfo); ok && vs != nil {
		applyVMwareDVSConfig(vc, vs)
	}
}

// applyVMwareDVSConfig sets the fields of a VMware switch that a spec sets.
func applyVMwareDVSConfig(vc *types.VMwareDVSConfigInfo, vs *types.VMwareDVSConfigSpec) {
	if vs.MaxMtu != 0 {
		vc.MaxMtu = vs.MaxMtu
	}
	if vs.LinkDiscoveryProtocolConfig != nil {
		vc.LinkDiscoveryProtocolConfig = vs.LinkDiscoveryProtocolConfig
	}
	if vs.IpfixConfig != nil {
		vc.IpfixConfig = vs.IpfixConfig
	}
	if vs.LacpApiVersion != "" {
		vc.LacpApiVersion = vs.LacpApiVersion
	}
	if vs.MulticastFilteringMode != "" {
		vc.MulticastFilteringMode = vs.MulticastFilteringMode
	}
}

// EnableNetworkResourceManagement turns Network I/O Control on or off.
func (x *extension) EnableNetworkResourceManagement(ctx *simulator.Context, req *types.EnableNetworkResourceManagement) soap.HasFault {
	body := new(methods.EnableNetworkResourceManagementBody)
	s, ok := target[*simulator.DistributedVirtualSwitch](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	ctx.WithLock(s, func() {
		if s.Config == nil {
			body.Fault_ = simulator.Fault("", &types.InvalidState{})
			return
		}
		cfg := s.Config.GetDVSConfigInfo()
		cfg.NetworkResourceManagementEnabled = req.Enable
		cfg.ConfigVersion = nextVersion(cfg.ConfigVersion)
		ctx.Update(s, []types.PropertyChange{{Name: "config", Val: s.Config}})
		body.Res = new(types.EnableNetworkResourceManagementResponse)
	})
	return body
}

// PerformDvsProductSpecOperationTask upgrades a switch to a newer version.
func (x *extension) PerformDvsProductSpecOperationTask(ctx *simulator.Context, req *types.PerformDvsProductSpecOperation_Task) soap.HasFault {
	body := new(methods.PerformDvsProductSpecOperation_TaskBody)
	s, ok := target[*simulator.DistributedVirtualSwitch](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	ctx.WithLock(s, func() {
		if fault := checkMembersRunUpgrade(ctx, s, req.Operation, req.ProductSpec); fault != nil {
			body.Fault_ = fault
			return
		}
		err := upgradeDVS(ctx, s, req.Operation, req.ProductSpec)
		body.Res = &types.PerformDvsProductSpecOperation_TaskResponse{Returnval: finishTask(ctx, s, "PerformDvsProductSpecOperation_Task", nil, err)}
	})
	return body
}

// checkMembersRunUpgrade refuses an upgrade that upgradeDVS would carry out
// when a member host cannot run the new version. s is locked.
func checkMembersRunUpgrade(
	ctx *simulator.Context,
	s *simulator.DistributedVirtualSwitch,
	op string,
	spec *types.DistributedVirtualSwitchProductSpec,
) *soap.Fault {
	if op != string(types.DistributedVirtualSwitchProductSpecOperationTypeUpgrade) || spec == nil || !slices.Contains(dvsVersions, spec.Version) ||
		s.Config == nil ||
		compareVersions(spec.Version, s.Config.GetDVSConfigInfo().ProductInfo.Version) <= 0 {
		return nil
	}
	return checkHostsRunSwitch(ctx, slices.Clone(s.Summary.HostMember), spec.Version)
}

func upgradeDVS(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, op string, spec *types.DistributedVirtualSwitchProductSpec) *vimError {
	if op != string(types.DistributedVirtualSwitchProductSpecOperationTypeUpgrade) {
		return refuse(&types.NotSupported{}, "The operation %q is not supported.", op)
	}
	if spec == nil || !slices.Contains(dvsVersions, spec.Version) {
		return invalidArgument("productSpec.version")
	}
	if s.Config == nil {
		return refuse(&types.InvalidState{}, "The switch has no configuration.")
	}
	cfg := s.Config.GetDVSConfigInfo()
	current := cfg.ProductInfo.Version
	if compareVersions(spec.Version, current) <= 0 {
		return refuse(&types.InvalidArgument{InvalidProperty: "productSpec.version"},
			"A specified parameter was not correct: productSpec.version (%s is not newer than %s; a switch cannot be downgraded)", spec.Version, current)
	}
	cfg.ProductInfo.Version = spec.Version
	summary := cfg.ProductInfo
	s.Summary.ProductInfo = &summary
	for i := range cfg.Host {
		product := cfg.ProductInfo
		cfg.Host[i].ProductInfo = &product
	}
	s.Capability.CompatibleHostComponentProductInfo = compatibleHostSpecs(spec.Version)
	cfg.ConfigVersion = nextVersion(cfg.ConfigVersion)
	ctx.Update(s, []types.PropertyChange{
		{Name: "config", Val: s.Config},
		{Name: "summary", Val: s.Summary},
		{Name: "capability", Val: s.Capability},
	})
	return nil
}

// FetchDVPorts is vcsim's, with the uplink ports as vCenter reports them
// (vSphere Web Services API, DistributedVirtualPort): the member host that
// services the port (proxyHost), its uplink name (config.name) and the
// physical NIC connected to it (connectee of type pnic); and with the
// criteria vcsim ignores (uplinkPort, host) applied.
func (x *extension) FetchDVPorts(ctx *simulator.Context, req *types.FetchDVPorts) soap.HasFault {
	body := new(methods.FetchDVPortsBody)
	s, ok := target[*simulator.DistributedVirtualSwitch](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	ctx.WithLock(s, func() {
		var ports []types.DistributedVirtualPort
		if res, ok := s.FetchDVPorts(ctx, &types.FetchDVPorts{This: s.Self}).(*methods.FetchDVPortsBody); ok && res.Res != nil {
			ports = slices.Clone(res.Res.Returnval) // vcsim may hand out its own slice
		}
		if s.Config != nil {
			annotateUplinkPorts(s.Config.GetDVSConfigInfo(), ports)
		}
		body.Res = &types.FetchDVPortsResponse{Returnval: filterPorts(s.Config, ports, req.Criteria)}
	})
	return body
}

// annotateUplinkPorts fills in the uplink ports of the switch's members.
func annotateUplinkPorts(cfg *types.DVSConfigInfo, ports []types.DistributedVirtualPort) {
	names := uplinkNames(cfg)
	pgKey := uplinkPortgroupKey(cfg)
	for _, h := range cfg.Host {
		if h.Config.Host == nil {
			continue
		}
		nics := map[string]string{} // port -> pnic
		for _, p := range pnicSpecs(h.Config.Backing) {
			nics[p.UplinkPortKey] = p.PnicDevice
		}
		for j, key := range h.UplinkPortKey {
			i := slices.IndexFunc(ports, func(p types.DistributedVirtualPort) bool { return p.Key == key && p.PortgroupKey == pgKey })
			if i < 0 {
				continue
			}
			host := *h.Config.Host
			ports[i].ProxyHost = &host
			if j < len(names) {
				ports[i].Config.Name = names[j]
			}
			if nic := nics[key]; nic != "" {
				ports[i].Connectee = &types.DistributedVirtualSwitchPortConnectee{
					ConnectedEntity: &host, NicKey: nic, Type: string(types.DistributedVirtualSwitchPortConnecteeConnecteeTypePnic),
				}
			}
		}
	}
}

// filterPorts keeps the ports that meet the criteria
// (DistributedVirtualSwitchPortCriteria): in (or, inside false, out of) the
// port groups named, with the keys named, connected or not, uplink ports or
// not, serviced by the hosts named.
func filterPorts(
	config types.BaseDVSConfigInfo,
	ports []types.DistributedVirtualPort,
	c *types.DistributedVirtualSwitchPortCriteria,
) []types.DistributedVirtualPort {
	if c == nil {
		return ports
	}
	var uplinkPG string
	if config != nil {
		uplinkPG = uplinkPortgroupKey(config.GetDVSConfigInfo())
	}
	return slices.DeleteFunc(ports, func(p types.DistributedVirtualPort) bool {
		switch {
		case len(c.PortgroupKey) > 0 && c.Inside != nil && slices.Contains(c.PortgroupKey, p.PortgroupKey) != *c.Inside,
			len(c.PortKey) > 0 && !slices.Contains(c.PortKey, p.Key),
			c.Connected != nil && (p.Connectee != nil) != *c.Connected,
			c.UplinkPort != nil && (uplinkPG != "" && p.PortgroupKey == uplinkPG) != *c.UplinkPort,
			len(c.Host) > 0 && (p.ProxyHost == nil || !slices.Contains(c.Host, *p.ProxyHost)):
			return true
		}
		return false
	})
}

// DestroyTask destroys a distributed switch or port group, refusing while a
// VM network adapter uses it, as vSphere does. A switch takes its port
// groups, uplink port group included, with it.
func (x *extension) DestroyTask(ctx *simulator.Context, req *types.Destroy_Task) soap.HasFault {
	body := new(methods.Destroy_TaskBody)
	switch obj := ctx.Map.Get(req.This).(type) {
	case *simulator.DistributedVirtualSwitch:
		ctx.WithLock(obj, func() {
			body.Res = &types.Destroy_TaskResponse{Returnval: finishTask(ctx, obj, "Destroy_Task", nil, destroyDVS(ctx, obj))}
		})
	case *simulator.DistributedVirtualPortgroup:
		withPortgroup(ctx, obj, func() {
			body.Res = &types.Destroy_TaskResponse{Returnval: finishTask(ctx, obj, "Destroy_Task", nil, destroyPortgroup(ctx, obj))}
		})
	default:
		body.Fault_ = notFoundFault(req.This)
	}
	return body
}

func destroyDVS(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch) *vimError {
	vms := vmsUsing(ctx, allVMs(ctx), func(p *types.DistributedVirtualSwitchPortConnection) bool { return p.SwitchUuid == s.Uuid })
	if len(vms) > 0 {
		return inUse("DistributedVirtualSwitch", s.Name)
	}
	members := s.Summary.HostMember
	s.Summary.HostMember = nil // so that joinNetworks leaves no port group to the clusters
	for _, h := range members {
		joinNetworks(ctx, s, h, false)
		setProxySwitch(ctx, s, h, nil)
	}
	for _, pg := range s.Portgroup {
		removeEntity(ctx, pg)
	}
	removeEntity(ctx, s.Self)
	return nil
}

// QueryDvsByUuid finds a switch by its UUID, how clients resolve the UUID
// the vSphere provider exports as a switch's id.
func (x *extension) QueryDvsByUuid( //nolint:revive // the vSphere method name, which vcsim dispatches by
	ctx *simulator.Context,
	req *types.QueryDvsByUuid,
) soap.HasFault {
	body := new(methods.QueryDvsByUuidBody)
	for _, e := range ctx.Map.All("DistributedVirtualSwitch") {
		s, ok := e.(*simulator.DistributedVirtualSwitch)
		if !ok {
			continue
		}
		var uuid string
		ctx.WithLock(s, func() { uuid = s.Uuid })
		if uuid == req.Uuid {
			ref := s.Self
			body.Res = &types.QueryDvsByUuidResponse{Returnval: &ref}
			return body
		}
	}
	body.Fault_ = simulator.Fault(fmt.Sprintf("No distributed switch with UUID %s", req.Uuid), &types.NotFound{})
	return body
}

// QueryAvailableDvsSpec lists the switch versions vCenter can create.
func (x *extension) QueryAvailableDvsSpec(*simulator.Context, *types.QueryAvailableDvsSpec) soap.HasFault {
	res := new(types.QueryAvailableDvsSpecResponse)
	for _, v := range dvsVersions {
		res.Returnval = append(res.Returnval, types.DistributedVirtualSwitchProductSpec{
			Name: "DVS", Vendor: "VMware, Inc.", Version: v, ForwardingClass: "etherswitch",
		})
	}
	return &methods.QueryAvailableDvsSpecBody{Res: res}
}
