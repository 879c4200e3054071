package vcsimlab

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// dvsVersions are the distributed switch versions vCenter 8.0.3 can create
// or upgrade to.
var dvsVersions = []string{"7.0.0", "7.0.2", "7.0.3", "8.0.0", "8.0.3"}

const (
	minMTU = 1280
	maxMTU = 9000
)

var errConcurrent = refuse(&types.ConcurrentAccess{}, "Cannot complete operation due to concurrent modification by another operation.")

// CreateDVSTask is vcsim's, plus the checks vSphere makes and the hosts of
// the spec, which vcsim ignores: they join once the switch is complete.
func (x *extension) CreateDVSTask(ctx *simulator.Context, req *types.CreateDVS_Task) soap.HasFault {
	body := new(methods.CreateDVS_TaskBody)
	f, ok := ctx.Map.Get(req.This).(*simulator.Folder)
	if !ok || req.Spec.ConfigSpec == nil {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})
		return body
	}
	var res soap.HasFault
	ctx.WithLock(f, func() {
		cs := req.Spec.ConfigSpec.GetDVSConfigSpec()
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
	if vs, ok := spec.ConfigSpec.(*types.VMwareDVSConfigSpec); ok && vs.MaxMtu != 0 && (vs.MaxMtu < minMTU || vs.MaxMtu > maxMTU) {
		return invalidArgument("spec.configSpec.maxMtu")
	}
	if err := checkName(ctx, &f.Self, cs.Name); err != nil {
		return err
	}
	seen := map[types.ManagedObjectReference]bool{}
	for _, m := range cs.Host {
		host, ok := ctx.Map.Get(m.Host).(*simulator.HostSystem)
		if !ok {
			return refuse(&types.ManagedObjectNotFound{Obj: m.Host}, "The object '%s' has already been deleted or has not been completely created", m.Host)
		}
		if seen[m.Host] || types.ConfigSpecOperation(m.Operation) != types.ConfigSpecOperationAdd {
			return invalidArgument("spec.configSpec.host")
		}
		seen[m.Host] = true
		if err := checkPnics(ctx, "", host, m.Backing); err != nil {
			return err
		}
	}
	return nil
}

// completeDVS fills in what CreateDVS_Task leaves empty in a new switch
// (config.productInfo, config.configVersion, config.uplinkPortgroup) and
// adds the hosts of its create spec. It runs when vcsim adds the switch's
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
	if s.Summary.ProductInfo != nil {
		// A create spec usually names the version only.
		p := *s.Summary.ProductInfo
		p.Name = cmp.Or(p.Name, "DVS")
		p.Vendor = cmp.Or(p.Vendor, "VMware, Inc.")
		p.ForwardingClass = cmp.Or(p.ForwardingClass, "etherswitch")
		cfg.ProductInfo = p
		s.Summary.ProductInfo = &p
	}
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
			ctx.Update(pg, []types.PropertyChange{{Name: "config", Val: c}})
		})
	}

	x.mu.Lock()
	hosts := x.pendingHosts[s.Name]
	delete(x.pendingHosts, s.Name)
	x.mu.Unlock()
	if sim, ok := ctx.Map.Get(s.Self).(*simulator.DistributedVirtualSwitch); ok {
		for _, m := range hosts {
			applyMember(ctx, sim, m)
		}
	}
	ctx.Update(s, []types.PropertyChange{
		{Name: "config", Val: s.Config},
		{Name: "summary", Val: s.Summary},
	})
}

// setPortgroupVersion starts new port groups at configVersion "1", which
// vSphere ignores in a create spec and vcsim copies from it.
func setPortgroupVersion(_ *Lab, _ *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	if req, ok := m.Body.(*types.AddDVPortgroup_Task); ok {
		for i := range req.Spec {
			req.Spec[i].ConfigVersion = "1"
		}
	}
	return nil
}

// nextVersion bumps a configVersion, as vCenter does on every change.
func nextVersion(v string) string {
	n, _ := strconv.Atoi(v)
	return strconv.Itoa(n + 1)
}

// ReconfigureDvsTask applies a switch reconfiguration; vcsim ignores every
// field but host membership, and drops pnic backings.
func (x *extension) ReconfigureDvsTask(ctx *simulator.Context, req *types.ReconfigureDvs_Task) soap.HasFault {
	body := new(methods.ReconfigureDvs_TaskBody)
	s, ok := ctx.Map.Get(req.This).(*simulator.DistributedVirtualSwitch)
	if !ok || req.Spec == nil {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})
		return body
	}
	ctx.WithLock(s, func() {
		err := reconfigureDVS(ctx, s, req.Spec)
		body.Res = &types.ReconfigureDvs_TaskResponse{Returnval: finishTask(ctx, s, "ReconfigureDvs_Task", nil, err)}
	})
	return body
}

func reconfigureDVS(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, spec types.BaseDVSConfigSpec) *vimError {
	cs := spec.GetDVSConfigSpec()
	if s.Config == nil {
		return refuse(&types.InvalidState{}, "The switch has no configuration.")
	}
	cfg := s.Config.GetDVSConfigInfo()
	if cs.ConfigVersion == "" {
		return invalidArgument("spec.configVersion")
	}
	if cs.ConfigVersion != cfg.ConfigVersion {
		return errConcurrent
	}
	vs, _ := spec.(*types.VMwareDVSConfigSpec)
	if vs != nil && vs.MaxMtu != 0 && (vs.MaxMtu < minMTU || vs.MaxMtu > maxMTU) {
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

	applyDVSConfig(s, cs, vs)
	for _, m := range cs.Host {
		applyMember(ctx, s, m)
	}
	cfg.ConfigVersion = nextVersion(cfg.ConfigVersion)
	ctx.Update(s, []types.PropertyChange{
		{Name: "name", Val: s.Name},
		{Name: "config", Val: s.Config},
		{Name: "summary", Val: s.Summary},
	})
	// Member hosts show the switch's name and MTU in their proxy switch.
	for _, h := range s.Summary.HostMember {
		updateProxySwitch(ctx, h, s.Uuid, func(ps *types.HostProxySwitch) {
			ps.DvsName = s.Name
			ps.Mtu = switchMTU(s)
		})
	}
	return nil
}

// checkName refuses a name that another child of the folder has.
func checkName(ctx *simulator.Context, parent *types.ManagedObjectReference, name string) *vimError {
	if parent == nil {
		return nil
	}
	f, ok := ctx.Map.Get(*parent).(*simulator.Folder)
	if !ok {
		return nil
	}
	var children []types.ManagedObjectReference
	ctx.WithLock(f, func() { children = slices.Clone(f.ChildEntity) })
	if e := ctx.Map.FindByName(name, children); e != nil {
		return refuse(&types.DuplicateName{Name: name, Object: e.Reference()}, "The name '%s' already exists.", name)
	}
	return nil
}

// applyDVSConfig sets the fields a spec sets; unset fields keep their value.
func applyDVSConfig(s *simulator.DistributedVirtualSwitch, cs *types.DVSConfigSpec, vs *types.VMwareDVSConfigSpec) {
	cfg := s.Config.GetDVSConfigInfo()
	if cs.Name != "" {
		s.Name = cs.Name
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
	vc, ok := s.Config.(*types.VMwareDVSConfigInfo)
	if vs == nil || !ok {
		return
	}
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
			return refuse(&types.ManagedObjectNotFound{Obj: m.Host}, "The object '%s' has already been deleted or has not been completely created", m.Host)
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
				return refuse(&types.ResourceInUse{Type: "DistributedVirtualSwitch", Name: s.Name},
					"The resource '%s' is in use.", s.Name)
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
				err = refuse(&types.ResourceInUse{Type: "PhysicalNic", Name: p.PnicDevice},
					"The resource '%s' is in use.", p.PnicDevice)
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

// setMember adds ref to (or removes it from) the reference list property
// prop of the object obj, under obj's lock.
func setMember(ctx *simulator.Context, obj types.ManagedObjectReference, prop string, ref types.ManagedObjectReference, in bool) {
	o := ctx.Map.Get(obj)
	if o == nil {
		return
	}
	ctx.WithLock(o, func() {
		field := reflect.ValueOf(o).Elem().FieldByName(strings.ToUpper(prop[:1]) + prop[1:])
		if !field.IsValid() {
			return
		}
		refs, ok := field.Interface().([]types.ManagedObjectReference)
		if !ok {
			return
		}
		has := slices.Contains(refs, ref)
		switch {
		case in && !has:
			refs = append(slices.Clone(refs), ref)
		case !in && has:
			refs = slices.DeleteFunc(slices.Clone(refs), func(r types.ManagedObjectReference) bool { return r == ref })
		default:
			return
		}
		ctx.Update(o, []types.PropertyChange{{Name: prop, Val: refs}})
	})
}

// setProxySwitch sets the host's proxy switch for s with the backing's
// uplinks, or removes it when backing is nil.
func setProxySwitch(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, hostRef types.ManagedObjectReference, backing types.BaseDistributedVirtualSwitchHostMemberBacking) {
	host, ok := ctx.Map.Get(hostRef).(*simulator.HostSystem)
	if !ok {
		return
	}
	ctx.WithLock(host, func() {
		if host.Config == nil || host.Config.Network == nil {
			return
		}
		n := *host.Config.Network
		n.ProxySwitch = slices.DeleteFunc(slices.Clone(n.ProxySwitch), func(ps types.HostProxySwitch) bool { return ps.DvsUuid == s.Uuid })
		if backing != nil {
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
		}
		ctx.Update(host, []types.PropertyChange{{Name: "config.network", Val: &n}})
	})
}

// updateProxySwitch changes the host's proxy switch for the switch dvsUUID.
func updateProxySwitch(ctx *simulator.Context, hostRef types.ManagedObjectReference, dvsUUID string, change func(*types.HostProxySwitch)) {
	host, ok := ctx.Map.Get(hostRef).(*simulator.HostSystem)
	if !ok {
		return
	}
	ctx.WithLock(host, func() {
		if host.Config == nil || host.Config.Network == nil {
			return
		}
		n := *host.Config.Network
		n.ProxySwitch = slices.Clone(n.ProxySwitch)
		for i := range n.ProxySwitch {
			if n.ProxySwitch[i].DvsUuid == dvsUUID {
				change(&n.ProxySwitch[i])
			}
		}
		ctx.Update(host, []types.PropertyChange{{Name: "config.network", Val: &n}})
	})
}

// hostVMs lists the VMs of a host.
func hostVMs(ctx *simulator.Context, host *simulator.HostSystem) []types.ManagedObjectReference {
	var vms []types.ManagedObjectReference
	ctx.WithLock(host, func() { vms = slices.Clone(host.Vm) })
	return vms
}

// allVMs lists every VM of the inventory.
func allVMs(ctx *simulator.Context) []types.ManagedObjectReference {
	var vms []types.ManagedObjectReference
	for _, e := range ctx.Map.All("VirtualMachine") {
		vms = append(vms, e.Reference())
	}
	return vms
}

// vmsUsing names the VMs among vms with a network adapter on a distributed
// port that match accepts.
func vmsUsing(ctx *simulator.Context, vms []types.ManagedObjectReference, match func(*types.DistributedVirtualSwitchPortConnection) bool) []string {
	var names []string
	for _, ref := range vms {
		vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
		if !ok {
			continue
		}
		ctx.WithLock(vm, func() {
			if vm.Config == nil {
				return
			}
			for _, d := range vm.Config.Hardware.Device {
				nic, ok := d.(types.BaseVirtualEthernetCard)
				if !ok {
					continue
				}
				b, ok := nic.GetVirtualEthernetCard().Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo)
				if ok && match(&b.Port) {
					names = append(names, vm.Name)
					return
				}
			}
		})
	}
	slices.Sort(names)
	return names
}

// EnableNetworkResourceManagement turns Network I/O Control on or off.
func (x *extension) EnableNetworkResourceManagement(ctx *simulator.Context, req *types.EnableNetworkResourceManagement) soap.HasFault {
	body := new(methods.EnableNetworkResourceManagementBody)
	s, ok := ctx.Map.Get(req.This).(*simulator.DistributedVirtualSwitch)
	if !ok {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})
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
	s, ok := ctx.Map.Get(req.This).(*simulator.DistributedVirtualSwitch)
	if !ok {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})
		return body
	}
	ctx.WithLock(s, func() {
		err := upgradeDVS(ctx, s, req.Operation, req.ProductSpec)
		body.Res = &types.PerformDvsProductSpecOperation_TaskResponse{Returnval: finishTask(ctx, s, "PerformDvsProductSpecOperation_Task", nil, err)}
	})
	return body
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
	cfg.ConfigVersion = nextVersion(cfg.ConfigVersion)
	ctx.Update(s, []types.PropertyChange{
		{Name: "config", Val: s.Config},
		{Name: "summary", Val: s.Summary},
	})
	return nil
}

// compareVersions compares dotted versions numerically.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// CreateDVPortgroupTask adds one port group and returns its reference as
// the task result; vcsim only has AddDVPortgroup_Task, whose result is empty.
func (x *extension) CreateDVPortgroupTask(ctx *simulator.Context, req *types.CreateDVPortgroup_Task) soap.HasFault {
	body := new(methods.CreateDVPortgroup_TaskBody)
	s, ok := ctx.Map.Get(req.This).(*simulator.DistributedVirtualSwitch)
	if !ok {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})
		return body
	}
	ctx.WithLock(s, func() {
		spec := req.Spec
		spec.ConfigVersion = "1"
		res := s.AddDVPortgroupTask(ctx, &types.AddDVPortgroup_Task{This: s.Self, Spec: []types.DVPortgroupConfigSpec{spec}})
		var result types.AnyType
		var err *vimError
		add, ok := res.(*methods.AddDVPortgroup_TaskBody)
		if !ok || add.Res == nil {
			err = refuse(&types.SystemError{}, "Adding the port group failed.")
		} else if t, ok := ctx.Map.Get(add.Res.Returnval).(*simulator.Task); ok {
			// The task shares this call's lock on the switch.
			t.Wait()
			if t.Info.Error != nil {
				err = &vimError{fault: t.Info.Error.Fault, msg: portgroupFaultMessage(t.Info.Error.Fault, spec.Name)}
			}
		}
		if err == nil {
			if pg := ctx.Map.FindByName(spec.Name, s.Portgroup); pg != nil {
				result = pg.Reference()
			}
		}
		body.Res = &types.CreateDVPortgroup_TaskResponse{Returnval: finishTask(ctx, s, "CreateDVPortgroup_Task", result, err)}
	})
	return body
}

func portgroupFaultMessage(f types.BaseMethodFault, name string) string {
	if _, ok := f.(*types.DuplicateName); ok {
		return fmt.Sprintf("The name '%s' already exists.", name)
	}
	return faultName(f)
}

// ReconfigureDVPortgroupTask merges a port group spec into the current
// configuration, as vSphere does; vcsim replaces the configuration.
func (x *extension) ReconfigureDVPortgroupTask(ctx *simulator.Context, req *types.ReconfigureDVPortgroup_Task) soap.HasFault {
	body := new(methods.ReconfigureDVPortgroup_TaskBody)
	pg, ok := ctx.Map.Get(req.This).(*simulator.DistributedVirtualPortgroup)
	if !ok {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})
		return body
	}
	withPortgroup(ctx, pg, func() {
		err := reconfigurePortgroup(ctx, pg, &req.Spec)
		body.Res = &types.ReconfigureDVPortgroup_TaskResponse{Returnval: finishTask(ctx, pg, "ReconfigureDVPortgroup_Task", nil, err)}
	})
	return body
}

func reconfigurePortgroup(ctx *simulator.Context, pg *simulator.DistributedVirtualPortgroup, spec *types.DVPortgroupConfigSpec) *vimError {
	c := &pg.Config
	if spec.ConfigVersion == "" {
		return invalidArgument("spec.configVersion")
	}
	if spec.ConfigVersion != c.ConfigVersion {
		return errConcurrent
	}
	if spec.Name != "" && spec.Name != pg.Name {
		if err := checkName(ctx, pg.Parent, spec.Name); err != nil {
			return err
		}
	}
	oldName := pg.Name
	if spec.Name != "" {
		pg.Name = spec.Name
		c.Name = spec.Name
	}
	if spec.NumPorts != 0 {
		c.NumPorts = spec.NumPorts
		pg.PortKeys = nil
		for i := range spec.NumPorts {
			pg.PortKeys = append(pg.PortKeys, strconv.Itoa(int(i)))
		}
	}
	if spec.DefaultPortConfig != nil {
		if c.DefaultPortConfig == nil || reflect.TypeOf(c.DefaultPortConfig) != reflect.TypeOf(spec.DefaultPortConfig) {
			c.DefaultPortConfig = spec.DefaultPortConfig
		} else {
			merged := reflect.New(reflect.TypeOf(c.DefaultPortConfig).Elem())
			merged.Elem().Set(reflect.ValueOf(c.DefaultPortConfig).Elem())
			mergeSet(merged.Elem(), reflect.ValueOf(spec.DefaultPortConfig).Elem())
			if setting, ok := merged.Interface().(types.BaseDVPortSetting); ok {
				c.DefaultPortConfig = setting
			}
		}
	}
	if spec.Description != "" {
		c.Description = spec.Description
	}
	if spec.Type != "" {
		c.Type = spec.Type
	}
	if spec.Policy != nil {
		c.Policy = spec.Policy
	}
	if spec.PortNameFormat != "" {
		c.PortNameFormat = spec.PortNameFormat
	}
	if spec.Scope != nil {
		c.Scope = spec.Scope
	}
	if spec.VendorSpecificConfig != nil {
		c.VendorSpecificConfig = spec.VendorSpecificConfig
	}
	if spec.AutoExpand != nil {
		c.AutoExpand = spec.AutoExpand
	}
	if spec.VmVnicNetworkResourcePoolKey != "" {
		c.VmVnicNetworkResourcePoolKey = spec.VmVnicNetworkResourcePoolKey
	}
	c.ConfigVersion = nextVersion(c.ConfigVersion)
	ctx.Update(pg, []types.PropertyChange{
		{Name: "name", Val: pg.Name},
		{Name: "config", Val: pg.Config},
		{Name: "portKeys", Val: pg.PortKeys},
	})
	if pg.Name != oldName && c.DistributedVirtualSwitch != nil {
		renamePortgroup(ctx, *c.DistributedVirtualSwitch, oldName, pg.Name)
	}
	return nil
}

// withPortgroup runs f with the port group's switch and then the port group
// locked, the order in which the lab always takes these two locks.
func withPortgroup(ctx *simulator.Context, pg *simulator.DistributedVirtualPortgroup, f func()) {
	if ref := pg.Config.DistributedVirtualSwitch; ref != nil {
		if s := ctx.Map.Get(*ref); s != nil {
			ctx.WithLock(s, func() { ctx.WithLock(pg, f) })
			return
		}
	}
	ctx.WithLock(pg, f)
}

// mergeSet copies into dst the fields that are set (not zero) in src, and
// recurses into embedded structs: a port setting spec changes only the
// policies it names.
func mergeSet(dst, src reflect.Value) {
	for i := range src.NumField() {
		f := src.Field(i)
		if src.Type().Field(i).Anonymous && f.Kind() == reflect.Struct {
			mergeSet(dst.Field(i), f)
			continue
		}
		if !f.IsZero() {
			dst.Field(i).Set(f)
		}
	}
}

// renamePortgroup updates the port group names the switch's summary lists.
func renamePortgroup(ctx *simulator.Context, dvs types.ManagedObjectReference, oldName, newName string) {
	s, ok := ctx.Map.Get(dvs).(*simulator.DistributedVirtualSwitch)
	if !ok {
		return
	}
	ctx.WithLock(s, func() {
		names := slices.Clone(s.Summary.PortgroupName)
		for i := range names {
			if names[i] == oldName {
				names[i] = newName
			}
		}
		ctx.Update(s, []types.PropertyChange{{Name: "summary.portgroupName", Val: names}})
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
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})
	}
	return body
}

func destroyDVS(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch) *vimError {
	vms := vmsUsing(ctx, allVMs(ctx), func(p *types.DistributedVirtualSwitchPortConnection) bool { return p.SwitchUuid == s.Uuid })
	if len(vms) > 0 {
		return refuse(&types.ResourceInUse{Type: "DistributedVirtualSwitch", Name: s.Name},
			"The resource '%s' is in use.", s.Name)
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

func destroyPortgroup(ctx *simulator.Context, pg *simulator.DistributedVirtualPortgroup) *vimError {
	c := pg.Config
	if c.DistributedVirtualSwitch == nil {
		removeEntity(ctx, pg.Self)
		return nil
	}
	s, ok := ctx.Map.Get(*c.DistributedVirtualSwitch).(*simulator.DistributedVirtualSwitch)
	if !ok {
		removeEntity(ctx, pg.Self)
		return nil
	}
	// The port group's vm list (see syncNetworkVMs) names the VMs with an
	// adapter on it; reading it rather than locking each VM keeps the lock
	// order VM before network.
	if len(pg.Vm) > 0 {
		return refuse(&types.ResourceInUse{Type: "DistributedVirtualPortgroup", Name: pg.Name},
			"The resource '%s' is in use.", pg.Name)
	}
	for _, h := range pg.Host {
		setMember(ctx, h, "network", pg.Self, false)
		if host, ok := ctx.Map.Get(h).(*simulator.HostSystem); ok && host.Parent != nil {
			setMember(ctx, *host.Parent, "network", pg.Self, false)
		}
	}
	ctx.WithLock(s, func() {
		ctx.Update(s, []types.PropertyChange{
			{Name: "portgroup", Val: slices.DeleteFunc(slices.Clone(s.Portgroup), func(r types.ManagedObjectReference) bool { return r == pg.Self })},
			{Name: "summary.portgroupName", Val: slices.DeleteFunc(slices.Clone(s.Summary.PortgroupName), func(n string) bool { return n == pg.Name })},
		})
	})
	removeEntity(ctx, pg.Self)
	return nil
}

// removeEntity removes a network entity from its folder, its datacenter's
// network list and the inventory.
func removeEntity(ctx *simulator.Context, ref types.ManagedObjectReference) {
	e, ok := ctx.Map.Get(ref).(mo.Entity)
	if !ok {
		return
	}
	if parent := e.Entity().Parent; parent != nil {
		if f, ok := ctx.Map.Get(*parent).(*simulator.Folder); ok {
			ctx.WithLock(f, func() {
				children := slices.DeleteFunc(slices.Clone(f.ChildEntity), func(r types.ManagedObjectReference) bool { return r == ref })
				ctx.Update(f, []types.PropertyChange{{Name: "childEntity", Val: children}})
			})
			if f.Parent != nil {
				setMember(ctx, *f.Parent, "network", ref, false)
			}
		}
	}
	ctx.Map.Remove(ctx, ref)
}

// QueryDvsByUuid finds a switch by its UUID, how clients resolve the UUID
// the vSphere provider exports as a switch's id.
func (x *extension) QueryDvsByUuid(ctx *simulator.Context, req *types.QueryDvsByUuid) soap.HasFault {
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
