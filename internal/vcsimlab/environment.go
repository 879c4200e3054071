package vcsimlab

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// QueryConfigTarget adds what vcsim leaves out: the host's
// passthrough-active PCI devices, for static and dynamic DirectPath, and
// its SR-IOV NICs in sriov ("Description of a SRIOV device that can be
// attached to a virtual machine", VirtualMachineSriovInfo, vSphere Web
// Services API 8.0): one per PF with SR-IOV active that is a physical NIC,
// with virtualFunction false, its pnic ("The name of the physical nic that
// is represented by a SR-IOV capable physical function") and, when the NIC
// is the uplink of a switch with an SR-IOV network device pool, devicePool
// naming that switch (VirtualMachineSriovNetworkDevicePoolInfo: switchKey
// "vSwitch key", switchUuid "DVSwitch Uuid"). And the vGPUs its hosts
// offer (see configTargetVGPUs).
func (x *extension) QueryConfigTarget(ctx *simulator.Context, req *types.QueryConfigTarget) soap.HasFault {
	var fault *soap.Fault
	b, ok := target[*simulator.EnvironmentBrowser](ctx, req.This, &fault)
	if !ok {
		return &methods.QueryConfigTargetBody{Fault_: fault}
	}
	var res soap.HasFault
	ctx.WithLock(b, func() { res = b.QueryConfigTarget(ctx, req) })
	body, ok := res.(*methods.QueryConfigTargetBody)
	if !ok || body.Res == nil || body.Res.Returnval == nil {
		return res
	}

	hosts := computeHosts(ctx, b.Self)
	if req.Host != nil {
		hosts = []types.ManagedObjectReference{*req.Host}
	}
	target := *body.Res.Returnval
	target.PciPassthrough = slices.Clone(target.PciPassthrough)
	target.DynamicPassthrough = slices.Clone(target.DynamicPassthrough)
	target.Sriov = slices.Clone(target.Sriov)
	for _, ref := range hosts {
		host, ok := ctx.Map.Get(ref).(*simulator.HostSystem)
		if !ok {
			continue
		}
		ctx.WithLock(host, func() {
			if host.Hardware == nil {
				return
			}
			for _, dev := range activeDevices(&host.HostSystem) {
				target.PciPassthrough = append(target.PciPassthrough, &types.VirtualMachinePciPassthroughInfo{
					VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: dev.DeviceName},
					PciDevice:                dev,
					SystemId:                 host.Hardware.SystemInfo.Uuid,
				})
				// A labelled device is offered with its label (customLabel,
				// "the custom label attached to this PCI device").
				target.DynamicPassthrough = append(target.DynamicPassthrough, types.VirtualMachineDynamicPassthroughInfo{
					VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: dev.DeviceName},
					VendorName:               dev.VendorName,
					DeviceName:               dev.DeviceName,
					CustomLabel:              hardwareLabel(&host.HostSystem, dev.Id),
					VendorId:                 int32(uint16(dev.VendorId)),
					DeviceId:                 int32(uint16(dev.DeviceId)),
				})
			}
			target.Sriov = append(target.Sriov, sriovTargets(sriovHostOf(&host.HostSystem))...)
			configTargetVGPUs(&target, &host.HostSystem)
		})
	}
	body.Res.Returnval = &target
	return body
}

// sriovTargets are the config target's sriov entries of a host.
func sriovTargets(s sriovHost) []types.VirtualMachineSriovInfo {
	var out []types.VirtualMachineSriovInfo
	for _, n := range s.pfs {
		info := types.VirtualMachineSriovInfo{
			VirtualMachinePciPassthroughInfo: types.VirtualMachinePciPassthroughInfo{
				VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: n.device.DeviceName},
				PciDevice:                n.device,
				SystemId:                 s.systemID,
			},
			Pnic: n.pnic,
		}
		if p := s.poolOf(n.pnic); p != nil {
			info.DevicePool = &types.VirtualMachineSriovNetworkDevicePoolInfo{
				VirtualMachineSriovDevicePoolInfo: types.VirtualMachineSriovDevicePoolInfo{Key: p.Key},
				SwitchKey:                         p.SwitchKey,
				SwitchUuid:                        p.SwitchUuid,
			}
		}
		out = append(out, info)
	}
	return out
}

// computeHosts lists the hosts of the compute resource whose environment
// browser is env.
func computeHosts(ctx *simulator.Context, env types.ManagedObjectReference) []types.ManagedObjectReference {
	var hosts []types.ManagedObjectReference
	for _, e := range ctx.Map.All("ClusterComputeResource") {
		cr, ok := e.(*simulator.ClusterComputeResource)
		if !ok {
			continue
		}
		ctx.WithLock(cr, func() {
			if cr.EnvironmentBrowser != nil && *cr.EnvironmentBrowser == env {
				hosts = slices.Clone(cr.Host)
			}
		})
	}
	return hosts
}

// QueryConfigOption reports the options of the requested hardware version,
// including the PVRDMA adapter's device protocols.
func (x *extension) QueryConfigOption(ctx *simulator.Context, req *types.QueryConfigOption) soap.HasFault {
	var fault *soap.Fault
	b, ok := target[*simulator.EnvironmentBrowser](ctx, req.This, &fault)
	if !ok {
		return &methods.QueryConfigOptionBody{Fault_: fault}
	}
	var body *methods.QueryConfigOptionBody
	ctx.WithLock(b, func() {
		res := b.QueryConfigOption(req)
		body, _ = res.(*methods.QueryConfigOptionBody)
		if body != nil && body.Res != nil && body.Res.Returnval != nil {
			body.Res.Returnval = configOption(b, body.Res.Returnval, req.Key)
		}
	})
	return body
}

// QueryConfigOptionEx is QueryConfigOption with a spec.
func (x *extension) QueryConfigOptionEx(ctx *simulator.Context, req *types.QueryConfigOptionEx) soap.HasFault {
	var fault *soap.Fault
	b, ok := target[*simulator.EnvironmentBrowser](ctx, req.This, &fault)
	if !ok {
		return &methods.QueryConfigOptionExBody{Fault_: fault}
	}
	key := ""
	if req.Spec != nil {
		key = req.Spec.Key
	}
	var body *methods.QueryConfigOptionExBody
	ctx.WithLock(b, func() {
		res := b.QueryConfigOptionEx(req)
		body, _ = res.(*methods.QueryConfigOptionExBody)
		if body != nil && body.Res != nil && body.Res.Returnval != nil {
			body.Res.Returnval = configOption(b, body.Res.Returnval, key)
		}
	})
	return body
}

// configOption returns a copy of vcsim's config option (which ignores the
// key) for hardware version key, or for the default version when key is "".
// b is locked.
func configOption(b *simulator.EnvironmentBrowser, opt *types.VirtualMachineConfigOption, key string) *types.VirtualMachineConfigOption {
	if key == "" {
		for _, d := range b.QueryConfigOptionDescriptorResponse.Returnval {
			if d.DefaultConfigOption {
				key = d.Key
			}
		}
	}
	hw := hwVersion(key)
	if hw == 0 {
		return opt
	}
	out := *opt
	out.Version = key
	out.Description = "Hardware version " + strconv.Itoa(hw)
	out.HardwareOptions.HwVersion = int32(hw)
	out.HardwareOptions.VirtualDeviceOption = slices.Clone(opt.HardwareOptions.VirtualDeviceOption)
	if protocols, offered := vrdmaProtocols(hw); offered {
		vrdma := &types.VirtualVmxnet3VrdmaOption{}
		vrdma.Type = "VirtualVmxnet3Vrdma"
		if len(protocols) > 0 {
			choice := &types.ChoiceOption{DefaultIndex: int32(slices.Index(protocols, vrdmaDefaultProtocol))}
			for _, p := range protocols {
				choice.ChoiceInfo = append(choice.ChoiceInfo, &types.ElementDescription{
					Key:         p,
					Description: types.Description{Label: p, Summary: p},
				})
			}
			vrdma.DeviceProtocol = choice
		}
		out.HardwareOptions.VirtualDeviceOption = append(out.HardwareOptions.VirtualDeviceOption, vrdma)
	}
	return &out
}

// VMs' own environment browsers. On vCenter each VM has an environment
// browser of its own (VirtualMachine.environmentBrowser; vCenter names the
// one of vm-396 envbrowser-396), which offers what the browser of the VM's
// compute resource offers ("identical to the environment browser on the
// ComputeResource to which the virtual machine belongs", vSphere Web
// Services API, VirtualMachine.environmentBrowser) but for its default
// config option: the VM's own hardware version. QueryConfigOption with
// neither key nor host returns "the default ConfigOption for this
// environment browser", and "if the EnvironmentBrowser is from a
// VirtualMachine neither a host nor a key should be specified" (vSphere Web
// Services API, EnvironmentBrowser.QueryConfigOption); govc vm.option.info
// -vm, which queries a VM's browser so, reports the VM's hardware version
// where the cluster's browser reports the newest (govmomi issue #2270:
// HwVersion 14 for the VM, 15 for its cluster). vcsim hands every VM its
// compute resource's browser.

// vmBrowser is the environment browser of one VM. It serves its properties;
// resolveVMBrowser sends its calls to the browser of the VM's compute
// resource.
type vmBrowser struct {
	mo.EnvironmentBrowser // first field: vcsim reads properties from it

	vm types.ManagedObjectReference
}

// compute returns the environment browser of the compute resource of the
// VM's host and the VM's hardware version; an empty browser when the VM or
// its host is gone.
func (b *vmBrowser) compute(ctx *simulator.Context) (browser types.ManagedObjectReference, version string) {
	vm, ok := ctx.Map.Get(b.vm).(*simulator.VirtualMachine)
	if !ok {
		return browser, ""
	}
	var host types.ManagedObjectReference
	ctx.WithLock(vm, func() {
		if vm.Config != nil {
			version = vm.Config.Version
		}
		if vm.Runtime.Host != nil {
			host = *vm.Runtime.Host
		}
	})
	h, ok := ctx.Map.Get(host).(*simulator.HostSystem)
	if !ok {
		return browser, version
	}
	var parent types.ManagedObjectReference
	ctx.WithLock(h, func() {
		if h.Parent != nil {
			parent = *h.Parent
		}
	})
	// A cluster, or a standalone host's compute resource.
	obj := ctx.Map.Get(parent)
	var cr *mo.ComputeResource
	switch o := obj.(type) {
	case *simulator.ClusterComputeResource:
		cr = &o.ComputeResource
	case *mo.ComputeResource:
		cr = o
	default:
		return browser, version
	}
	ctx.WithLock(obj, func() {
		if cr.EnvironmentBrowser != nil {
			browser = *cr.EnvironmentBrowser
		}
	})
	return browser, version
}

// resolveVMBrowser is the pre-hook of the environment browser's methods: a
// call on a VM's browser goes to the browser of the VM's compute resource,
// and QueryConfigOption(Ex) without key or host asks for the VM's hardware
// version.
func resolveVMBrowser(_ *extension, ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	b, ok := ctx.Map.Get(m.This).(*vmBrowser)
	if !ok {
		return nil
	}
	browser, version := b.compute(ctx)
	if browser.Value == "" {
		return &types.ManagedObjectNotFound{Obj: m.This}
	}
	switch req := m.Body.(type) {
	case *types.QueryConfigOption:
		if req.Key == "" && req.Host == nil {
			req.Key = version
		}
	case *types.QueryConfigOptionEx:
		if req.Spec == nil {
			req.Spec = &types.EnvironmentBrowserConfigOptionQuerySpec{}
		}
		if req.Spec.Key == "" && req.Spec.Host == nil {
			req.Spec.Key = version
		}
	}
	retarget(m, browser)
	return nil
}

// vmSetup completes the VMs vcsim creates (CreateVM_Task, CloneVM_Task,
// RegisterVM_Task) as vCenter has them: each gets its own environment
// browser, and its initial swap placement (initialSwapPlacement). It
// listens to the registry's changes: vcsim gives a new VM its compute
// resource's environment browser before the last change of its creation;
// the first change of a VM with a browser is the VM's creation.
type vmSetup struct {
	reg *simulator.Registry

	mu       sync.Mutex
	browsers map[types.ManagedObjectReference]types.ManagedObjectReference // VM -> its browser
}

func newVMSetup(reg *simulator.Registry) *vmSetup {
	return &vmSetup{reg: reg, browsers: map[types.ManagedObjectReference]types.ManagedObjectReference{}}
}

// Reference is part of simulator.RegisterObject.
func (*vmSetup) Reference() types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "VcsimLabVMSetup", Value: "vmsetup"}
}

// PutObject is part of simulator.RegisterObject.
func (*vmSetup) PutObject(*simulator.Context, mo.Reference) {}

// UpdateObject sets up a VM vcsim has just created.
func (s *vmSetup) UpdateObject(ctx *simulator.Context, obj mo.Reference, _ []types.PropertyChange) {
	vm, ok := obj.(*mo.VirtualMachine)
	if !ok || vm.EnvironmentBrowser.Value == "" {
		return
	}
	if ctx == nil {
		ctx = newContext(s.reg)
	}
	s.mu.Lock()
	_, done := s.browsers[vm.Self]
	if !done && ctx.Map.Get(vm.Self) != nil {
		s.browsers[vm.Self] = types.ManagedObjectReference{}
	} else {
		done = true
	}
	s.mu.Unlock()
	if done {
		return
	}

	b := &vmBrowser{vm: vm.Self}
	b.Self.Type = "EnvironmentBrowser"
	if n, ok := strings.CutPrefix(vm.Self.Value, "vm-"); ok &&
		ctx.Map.Get(types.ManagedObjectReference{Type: b.Self.Type, Value: "envbrowser-" + n}) == nil {
		b.Self.Value = "envbrowser-" + n
	}
	if cb, ok := ctx.Map.Get(vm.EnvironmentBrowser).(*simulator.EnvironmentBrowser); ok {
		ctx.WithLock(cb, func() { b.DatastoreBrowser = cb.DatastoreBrowser })
	}
	ctx.Map.Put(b) // names it if the VM's id does not
	s.mu.Lock()
	s.browsers[vm.Self] = b.Self
	s.mu.Unlock()

	changes := append([]types.PropertyChange{{Name: "environmentBrowser", Val: b.Self}}, initialSwapPlacement(ctx, vm)...)
	ctx.Update(vm, changes)
}

// RemoveObject removes a removed VM's environment browser.
func (s *vmSetup) RemoveObject(ctx *simulator.Context, ref types.ManagedObjectReference) {
	if ref.Type != "VirtualMachine" {
		return
	}
	s.mu.Lock()
	b, ok := s.browsers[ref]
	delete(s.browsers, ref)
	s.mu.Unlock()
	if !ok || b.Value == "" {
		return
	}
	if ctx == nil {
		ctx = newContext(s.reg)
	}
	ctx.Map.Remove(ctx, b)
}
