package vcsimlab

import (
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// How calls and changes reach the lab's handlers: handle takes every SOAP
// call (through faults.go's interception and the pre-hooks) and routes the
// methods the lab implements to the extension; UpdateObject and
// RemoveObject route the registry's change notifications.

// preHooks run before vcsim's own method: they may refuse the call with a
// SOAP fault, or adjust the request.
var preHooks = map[string]func(*extension, *simulator.Context, *simulator.Method) types.BaseMethodFault{
	"UpdateOptions":                (*extension).checkOptions,
	"AddDVPortgroup_Task":          setPortgroupVersion,
	"RetrieveProperties":           readProperties,
	"RetrievePropertiesEx":         readProperties,
	"ContinueRetrievePropertiesEx": requireSession,
	// A cluster read or called as ComputeResource: compute.go.
	"CreateFilter":                    resolveReads,
	"ReconfigureComputeResource_Task": resolveTarget,
	"Destroy_Task":                    resolveTarget,
	"Rename_Task":                     resolveTarget,
	"Reload":                          resolveTarget,
	"setCustomValue":                  resolveTarget,
	// A VM's environment browser: environment.go.
	"QueryConfigOption":           resolveVMBrowser,
	"QueryConfigOptionEx":         resolveVMBrowser,
	"QueryConfigOptionDescriptor": resolveVMBrowser,
	"QueryConfigTarget":           resolveVMBrowser,
	"QueryTargetCapabilities":     resolveVMBrowser,
	// A new VM's name (vm_name.go) and swap placement (vm.go).
	"CreateVM_Task": requestVMCreation,
	"CloneVM_Task":  requestSwapPlacement,
}

// readProperties is requireSession, then resolveReads.
func readProperties(x *extension, ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	if f := requireSession(x, ctx, m); f != nil {
		return f
	}
	return resolveReads(x, ctx, m)
}

// requireSession refuses property reads without a session with the
// NotAuthenticated fault vCenter sends; vcsim instead answers them with
// NotAuthenticated per object inside the result. Reads of the
// ServiceInstance, which vCenter allows anonymously, are left to vcsim.
func requireSession(_ *extension, ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	if ctx.Session != nil {
		return nil
	}
	var specs []types.PropertyFilterSpec
	switch req := m.Body.(type) {
	case *types.RetrieveProperties:
		specs = req.SpecSet
	case *types.RetrievePropertiesEx:
		specs = req.SpecSet
	default:
		specs = []types.PropertyFilterSpec{{ObjectSet: []types.ObjectSpec{{Obj: m.This}}}}
	}
	for _, spec := range specs {
		for _, o := range spec.ObjectSet {
			if o.Obj.Type != "ServiceInstance" {
				return &types.NotAuthenticated{NoPermission: types.NoPermission{Object: &o.Obj, PrivilegeId: "System.View"}}
			}
		}
	}
	return nil
}

// handle runs before vcsim dispatches any SOAP call (Registry.Handler). It
// counts the call, applies injected delays and faults, runs the pre-hook of
// the method, and routes the methods the lab implements to the extension.
func (l *Lab) handle(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	delay, hold, callF, taskF := l.intercept(ctx, m)
	if delay > 0 {
		time.Sleep(delay)
	}
	if hold != nil {
		<-hold
	}
	if callF != nil {
		return nil, callF
	}
	if taskF != nil {
		m.Body = &failTaskRequest{This: m.This, Method: m.Name, Fault: taskF}
		m.Name = "FailTask"
		m.This = l.ext.Self
		return l.ext, nil
	}
	if hook := preHooks[m.Name]; hook != nil {
		if f := hook(l.ext, ctx, m); f != nil {
			return nil, f
		}
	}
	if l.ext.implements(ctx, m) {
		// The extension reads the target from the request body's This.
		m.This = l.ext.Self
		return l.ext, nil
	}
	return nil, nil
}

// implements reports whether the extension handles the call m.
func (x *extension) implements(ctx *simulator.Context, m *simulator.Method) bool {
	obj := ctx.Map.Get(m.This)
	switch m.Name {
	case "CreateDVS_Task":
		_, ok := obj.(*simulator.Folder)
		return ok
	case "QueryDvsByUuid", "QueryAvailableDvsSpec", "QueryDvsCompatibleHostSpec", "QueryCompatibleHostForNewDvs", "QueryCompatibleHostForExistingDvs":
		_, ok := obj.(*simulator.DistributedVirtualSwitchManager)
		return ok
	case "ReconfigureDvs_Task", "EnableNetworkResourceManagement", "PerformDvsProductSpecOperation_Task", "CreateDVPortgroup_Task", "FetchDVPorts":
		_, ok := obj.(*simulator.DistributedVirtualSwitch)
		return ok
	case "ReconfigureDVPortgroup_Task":
		_, ok := obj.(*simulator.DistributedVirtualPortgroup)
		return ok
	case "Destroy_Task":
		switch obj.(type) {
		case *simulator.DistributedVirtualSwitch, *simulator.DistributedVirtualPortgroup:
			return true
		}
	case "RefreshFirewall", "UpdateRuleset", "EnableRuleset", "DisableRuleset":
		_, ok := obj.(*simulator.HostFirewallSystem)
		return ok
	case "UpdatePassthruConfig":
		_, ok := obj.(*pciPassthruSystem)
		return ok
	case "ReconfigureComputeResource_Task": // DRS advanced options: vm_vgpu_migrate.go
		_, ok := obj.(*simulator.ClusterComputeResource)
		return ok
	case "UpdateGraphicsConfig": // graphics.go
		_, ok := obj.(*graphicsManager)
		return ok
	case "EnterMaintenanceMode_Task", "ExitMaintenanceMode_Task", "RebootHost_Task": // maintenance.go
		_, ok := obj.(*simulator.HostSystem)
		return ok
	case "CancelTask": // maintenance_cancel.go
		return cancelsMaintenance(obj)
	case "UpdateVirtualSwitch":
		_, ok := obj.(*simulator.HostNetworkSystem)
		return ok
	case "QueryConfigTarget", "QueryConfigOption", "QueryConfigOptionEx":
		_, ok := obj.(*simulator.EnvironmentBrowser)
		return ok
	case "ReconfigVM_Task", "PowerOnVM_Task":
		_, ok := obj.(*simulator.VirtualMachine)
		return ok
	case "CreateVM_Task":
		_, ok := obj.(*simulator.Folder)
		return ok
	case "RegisterVM_Task": // vm_register.go
		_, ok := obj.(*simulator.Folder)
		return ok
	case "UnregisterVM": // vm_register.go
		_, ok := obj.(*simulator.VirtualMachine)
		return ok
	case "PowerOnMultiVM_Task":
		_, ok := obj.(*simulator.Datacenter)
		return ok
	case "FindByUuid", "FindAllByUuid":
		_, ok := obj.(*simulator.SearchIndex)
		return ok
	case "WaitForUpdatesEx": // property_wait.go
		_, ok := obj.(*simulator.PropertyCollector)
		return ok
	case "ExecuteSoap":
		_, ok := obj.(*simulator.ManagedMethodExecuter)
		return ok && answersEsxcli(m.Body)
	}
	return false
}

// PutObject is part of simulator.RegisterObject.
func (x *extension) PutObject(*simulator.Context, mo.Reference) {}

// UpdateObject keeps state that real vSphere derives from other objects in
// step with changes. It runs with obj locked by ctx.
func (x *extension) UpdateObject(ctx *simulator.Context, obj mo.Reference, changes []types.PropertyChange) {
	if ctx == nil {
		ctx = newContext(x.reg)
	}
	switch o := obj.(type) {
	case *mo.VirtualMachine:
		for _, c := range changes {
			switch c.Name {
			case "config.hardware.device":
				x.syncGraphics(ctx, o)
			case "runtime.powerState":
				if c.Val == types.VirtualMachinePowerStatePoweredOff {
					x.releaseVGPUs(o.Self)
					x.syncGraphics(ctx, o)
				}
			case "network":
				// vCenter lists the VM on the networks it uses (Network.vm).
				// A VM out of the inventory (Destroy_Task removes its devices
				// after unregistering it) uses none.
				nets := o.Network
				if ctx.Map.Get(o.Self) == nil {
					nets = nil
				}
				syncNetworkVMs(ctx, o.Self, nets)
			}
		}
	case *mo.HostSystem:
		mirrorGraphics(ctx, o, changes)
		for _, c := range changes {
			if c.Name == "config.network" || c.Name == "config.pciPassthruInfo" {
				syncSriovPools(ctx, o)
				return
			}
		}
	case *mo.DistributedVirtualSwitch:
		for _, c := range changes {
			if c.Name == "portgroup" {
				x.completeDVS(ctx, o)
				return
			}
		}
	}
}

// RemoveObject drops a removed VM from the hosts' graphicsInfo and the
// networks' vm lists.
func (x *extension) RemoveObject(ctx *simulator.Context, ref types.ManagedObjectReference) {
	if ctx == nil {
		ctx = newContext(x.reg)
	}
	if ref.Type == "VirtualMachine" {
		x.releaseVGPUs(ref)
		for _, h := range ctx.Map.All("HostSystem") {
			x.setGraphicsVM(ctx, h.Reference(), ref, nil)
		}
		syncNetworkVMs(ctx, ref, nil)
	}
}
