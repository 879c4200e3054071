package vcsimlab

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Distributed switches: CreateDVS_Task, ReconfigureDvs_Task,
// EnableNetworkResourceManagement, the upgrade, Destroy_Task of a switch, and
// the switch manager's queries. Host membership is in dvs_members.go, port
// groups in portgroup.go.

// dvsVersions are the distributed switch versions vCenter 8.0.3 can create
// or upgrade to.
var dvsVersions = []string{"7.0.0", "7.0.2", "7.0.3", "8.0.0", "8.0.3"}

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
