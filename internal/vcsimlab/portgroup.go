package vcsimlab

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Distributed port groups: CreateDVPortgroup_Task, ReconfigureDVPortgroup_Task
// and Destroy_Task of a port group, and the configVersion vcsim's own
// AddDVPortgroup_Task gives new ones.

// setPortgroupVersion starts new port groups at configVersion "1", which
// vSphere ignores in a create spec and vcsim copies from it, and stores
// their names escaped (entity_names.go).
func setPortgroupVersion(_ *extension, _ *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	if req, ok := m.Body.(*types.AddDVPortgroup_Task); ok {
		for i := range req.Spec {
			req.Spec[i].ConfigVersion = "1"
			req.Spec[i].Name = escapeEntityName(req.Spec[i].Name)
		}
	}
	return nil
}

// CreateDVPortgroupTask adds one port group and returns its reference as
// the task result; vcsim only has AddDVPortgroup_Task, whose result is empty.
func (x *extension) CreateDVPortgroupTask(ctx *simulator.Context, req *types.CreateDVPortgroup_Task) soap.HasFault {
	body := new(methods.CreateDVPortgroup_TaskBody)
	s, ok := target[*simulator.DistributedVirtualSwitch](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	ctx.WithLock(s, func() {
		spec := req.Spec
		spec.ConfigVersion = "1"
		spec.Name = escapeEntityName(spec.Name)
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
	pg, ok := target[*simulator.DistributedVirtualPortgroup](ctx, req.This, &body.Fault_)
	if !ok {
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
	spec.Name = escapeEntityName(spec.Name)
	if err := checkConfigVersion(spec.ConfigVersion, c.ConfigVersion); err != nil {
		return err
	}
	if spec.Name != "" && spec.Name != pg.Name {
		if err := checkName(ctx, pg.Parent, spec.Name); err != nil {
			return err
		}
	}
	oldName := pg.Name
	applyPortgroupConfig(pg, spec)
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

// applyPortgroupConfig sets the fields a spec sets; unset fields keep their
// value.
func applyPortgroupConfig(pg *simulator.DistributedVirtualPortgroup, spec *types.DVPortgroupConfigSpec) {
	c := &pg.Config
	if spec.Name != "" {
		// The entity's name too, which vcsim's name checks read.
		pg.Name, pg.Entity().Name = spec.Name, spec.Name
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
		c.DefaultPortConfig = mergePortSetting(c.DefaultPortConfig, spec.DefaultPortConfig)
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
}

// mergePortSetting returns the port setting cur with the policies spec
// sets (see mergeSet); a spec of another type replaces cur.
func mergePortSetting(cur, spec types.BaseDVPortSetting) types.BaseDVPortSetting {
	if cur == nil || reflect.TypeOf(cur) != reflect.TypeOf(spec) {
		return spec
	}
	merged := reflect.New(reflect.TypeOf(cur).Elem())
	merged.Elem().Set(reflect.ValueOf(cur).Elem())
	mergeSet(merged.Elem(), reflect.ValueOf(spec).Elem())
	if setting, ok := merged.Interface().(types.BaseDVPortSetting); ok {
		return setting
	}
	return cur
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

// destroyPortgroup carries out Destroy_Task on a port group: DestroyTask
// (dvs.go) takes both switches and port groups, and calls it within
// withPortgroup.
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
		return inUse("DistributedVirtualPortgroup", pg.Name)
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
