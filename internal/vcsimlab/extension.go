package vcsimlab

import (
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

// extension is the lab's addition to the simulator's registry. vcsim
// dispatches to it the methods the lab adds or overrides (Lab.handle points
// the call at it; the request body still names the real target), and it
// listens to changes of managed objects to keep derived state current, as
// vCenter does.
//
// Routing calls to one registered object, rather than replacing objects,
// keeps the simulator's own type assertions on its objects working.
type extension struct {
	// An embedded mo type, as vcsim expects of every registered object:
	// code that walks the whole registry (SearchIndex.FindByUuid) digs it out.
	mo.ExtensibleManagedObject
	lab *Lab

	mu           sync.Mutex
	pendingHosts map[string][]types.DistributedVirtualSwitchHostMemberConfigSpec // by switch name, see CreateDVSTask
}

func newExtension(l *Lab) *extension {
	return &extension{
		ExtensibleManagedObject: mo.ExtensibleManagedObject{Self: types.ManagedObjectReference{Type: "VcsimLabExtension", Value: "extension"}},
		lab:                     l,
		pendingHosts:            map[string][]types.DistributedVirtualSwitchHostMemberConfigSpec{},
	}
}

// Lock and Unlock opt out of the per-object lock vcsim takes around a call:
// every method locks the object it works on.
func (*extension) Lock()   {}
func (*extension) Unlock() {}

// implements reports whether the extension handles the call m.
func (x *extension) implements(ctx *simulator.Context, m *simulator.Method) bool {
	obj := ctx.Map.Get(m.This)
	switch m.Name {
	case "CreateDVS_Task":
		_, ok := obj.(*simulator.Folder)
		return ok
	case "QueryDvsByUuid", "QueryAvailableDvsSpec":
		_, ok := obj.(*simulator.DistributedVirtualSwitchManager)
		return ok
	case "ReconfigureDvs_Task", "EnableNetworkResourceManagement", "PerformDvsProductSpecOperation_Task", "CreateDVPortgroup_Task":
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
	case "QueryConfigTarget", "QueryConfigOption", "QueryConfigOptionEx":
		_, ok := obj.(*simulator.EnvironmentBrowser)
		return ok
	case "ReconfigVM_Task":
		_, ok := obj.(*simulator.VirtualMachine)
		return ok
	case "FindByUuid", "FindAllByUuid":
		_, ok := obj.(*simulator.SearchIndex)
		return ok
	case "ExecuteSoap":
		_, ok := obj.(*simulator.ManagedMethodExecuter)
		return ok && isDiagCall(m.Body)
	}
	return false
}

// FailTask answers a call that FailTaskOnce targets.
func (x *extension) FailTask(ctx *simulator.Context, req *failTaskRequest) soap.HasFault {
	task := failedTask(ctx, req.This, req.Method, req.Fault, "injected fault: "+faultName(req.Fault))
	return &taskBody{Res: &taskResponse{method: req.Method, task: task}}
}

// taskBody is the response of any *_Task method.
type taskBody struct {
	Res *taskResponse
}

func (*taskBody) Fault() *soap.Fault { return nil }

type taskResponse struct {
	method string
	task   types.ManagedObjectReference
}

// MarshalXML names the element after the method ("ReconfigVM_TaskResponse"),
// as clients decode the response by that name.
func (r *taskResponse) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	start.Name.Local = r.method + "Response"
	return e.EncodeElement(struct {
		Returnval types.ManagedObjectReference `xml:"returnval"`
	}{r.task}, start)
}

// PutObject is part of simulator.RegisterObject.
func (x *extension) PutObject(*simulator.Context, mo.Reference) {}

// UpdateObject keeps state that real vSphere derives from other objects in
// step with changes. It runs with obj locked by ctx.
func (x *extension) UpdateObject(ctx *simulator.Context, obj mo.Reference, changes []types.PropertyChange) {
	if ctx == nil {
		ctx = x.lab.internalContext()
	}
	switch o := obj.(type) {
	case *mo.VirtualMachine:
		for _, c := range changes {
			switch c.Name {
			case "config.hardware.device":
				x.syncGraphics(ctx, o)
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
		ctx = x.lab.internalContext()
	}
	if ref.Type == "VirtualMachine" {
		for _, h := range x.lab.hosts {
			x.setGraphicsVM(ctx, types.ManagedObjectReference{Type: "HostSystem", Value: h.id}, ref, nil)
		}
		syncNetworkVMs(ctx, ref, nil)
	}
}
