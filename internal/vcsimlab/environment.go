package vcsimlab

import (
	"slices"
	"strconv"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
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
// "vSwitch key", switchUuid "DVSwitch Uuid").
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
				target.DynamicPassthrough = append(target.DynamicPassthrough, types.VirtualMachineDynamicPassthroughInfo{
					VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: dev.DeviceName},
					VendorName:               dev.VendorName,
					DeviceName:               dev.DeviceName,
					VendorId:                 int32(uint16(dev.VendorId)),
					DeviceId:                 int32(uint16(dev.DeviceId)),
				})
			}
			target.Sriov = append(target.Sriov, sriovTargets(sriovHostOf(&host.HostSystem))...)
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
	if protocols := vrdmaProtocols(hw); len(protocols) > 0 {
		choice := &types.ChoiceOption{DefaultIndex: int32(len(protocols) - 1)}
		for _, p := range protocols {
			choice.ChoiceInfo = append(choice.ChoiceInfo, &types.ElementDescription{
				Key:         p,
				Description: types.Description{Label: p, Summary: p},
			})
		}
		vrdma := &types.VirtualVmxnet3VrdmaOption{DeviceProtocol: choice}
		vrdma.Type = "VirtualVmxnet3Vrdma"
		out.HardwareOptions.VirtualDeviceOption = append(out.HardwareOptions.VirtualDeviceOption, vrdma)
	}
	return &out
}
