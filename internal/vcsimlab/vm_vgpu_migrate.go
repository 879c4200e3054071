package vcsimlab

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// vMotion of VMs with NVIDIA vGPUs, and maintenance mode moving them:
//
//   - vCenter migrates a running VM with vGPUs only when its advanced
//     setting vgpu.hotmigrate.enabled is true: "To enable vMotion for vGPU
//     virtual machines, you need to set the vgpu.hotmigrate.enabled advanced
//     setting to true" (vSphere 7.0 and 8.0 documentation, "Using vMotion to
//     Migrate vGPU Virtual Machines"); otherwise vMotion reports "vGPU hot
//     migration is not enabled" (William Lam, "How to enable the new vGPU
//     vMotion feature in vSphere 6.7 Update 1", williamlam.com). The lab's
//     vCenter starts with it false, as the documentation has it off until
//     set.
//   - DRS moves such a VM off a host entering maintenance mode only when the
//     cluster's DRS advanced option VgpuMMAutomationTimeoutSecs is -1: "If
//     VgpuMMAutomationTimeoutSecs is not set to -1, then DRS does not
//     recommend compatible hosts in the Cluster, and only option user has is
//     to manually evacuate VMs" (Broadcom KB 88271, vGPU VM automated
//     migration for host maintenance mode in a DRS cluster, vCenter 7.0 U3f
//     and later), and as for any VM only when DRS moves it (maintenance.go).
//   - Its vGPUs must fit on the destination: a host whose GPUs offer their
//     profiles and have room, placed as at power-on (vm_vgpu.go), and their
//     types must support vMotion (HostSharedGpuCapabilities.migrateSupported,
//     true for all of the lab's, see vgpuCapabilities).
//   - ReconfigureComputeResource_Task keeps the DRS advanced options of a
//     spec with a drsConfig (ClusterDrsConfigInfo.option, "Advanced
//     settings"), which vcsim drops: merged by key when the spec is
//     incremental (modify true), and as given otherwise ("If modify is false
//     and the operation succeeds, then the configuration of the cluster
//     matches the specification exactly"; vcsim merges the spec's other
//     fields either way).

const (
	vgpuHotMigrateSetting = "vgpu.hotmigrate.enabled"
	vgpuEvacuationOption  = "VgpuMMAutomationTimeoutSecs"
)

// seedVCenterSettings adds to vCenter's advanced settings those the lab
// reads, at their defaults.
func seedVCenterSettings(reg *simulator.Registry) {
	om := reg.OptionManager()
	om.Setting = append(slices.Clone(om.Setting), &types.OptionValue{Key: vgpuHotMigrateSetting, Value: "false"})
}

// vgpuHotMigrate reports whether vCenter migrates running VMs with vGPUs.
func vgpuHotMigrate(ctx *simulator.Context) bool {
	om := ctx.Map.OptionManager()
	on := false
	ctx.WithLock(om, func() {
		for _, o := range om.Setting {
			if v := o.GetOptionValue(); v.Key == vgpuHotMigrateSetting {
				on = strings.EqualFold(fmt.Sprint(v.Value), "true")
			}
		}
	})
	return on
}

// evacuatesVGPUs reports whether the cluster's DRS moves VMs with vGPUs off
// a host entering maintenance mode.
func evacuatesVGPUs(cfg *types.ClusterConfigInfoEx) bool {
	for _, o := range cfg.DrsConfig.Option {
		if v := o.GetOptionValue(); v.Key == vgpuEvacuationOption {
			return strings.TrimSpace(fmt.Sprint(v.Value)) == "-1"
		}
	}
	return false
}

// migrateVGPUVM moves a running VM with vGPUs from one host to another,
// its vGPUs placed on the destination's GPUs, or refuses as vCenter does.
// The VM stays locked throughout, so that it cannot power off meanwhile;
// one no longer running moves as a powered-off VM does.
func (x *extension) migrateVGPUVM(ctx *simulator.Context, vm *simulator.VirtualMachine, from, to types.ManagedObjectReference) error {
	if !vgpuHotMigrate(ctx) {
		return fmt.Errorf("vGPU hot migration is not enabled")
	}
	var err error
	ctx.WithLock(vm, func() {
		if vm.Config == nil || vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
			moveVM(ctx, vm, from, to)
			return
		}
		profiles := vgpuProfilesOf(vm.Config.Hardware.Device)
		for _, p := range profiles {
			if !vgpuCapabilities(p).MigrateSupported {
				err = fmt.Errorf("vGPU profile %s does not support vMotion", p)
				return
			}
		}
		if e := x.reserveVGPUs(ctx, vm.Self, to, profiles); e != nil {
			err = fmt.Errorf("%s", e.msg)
			return
		}
		moveVM(ctx, vm, from, to)
		x.setGraphicsVM(ctx, from, vm.Self, nil)
		x.syncGraphics(ctx, &vm.VirtualMachine)
	})
	return err
}

// hasVGPU reports a vGPU among a VM's devices.
func hasVGPU(devices []types.BaseVirtualDevice) bool {
	return len(vgpuProfilesOf(devices)) > 0
}

func (x *extension) ReconfigureComputeResourceTask(ctx *simulator.Context, req *types.ReconfigureComputeResource_Task) soap.HasFault {
	body := new(methods.ReconfigureComputeResource_TaskBody)
	c, ok := target[*simulator.ClusterComputeResource](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	var res soap.HasFault
	ctx.WithLock(c, func() { res = c.ReconfigureComputeResourceTask(ctx, req) })
	spec, ok := req.Spec.(*types.ClusterConfigSpecEx)
	done, _ := res.(*methods.ReconfigureComputeResource_TaskBody)
	if !ok || spec.DrsConfig == nil || done == nil || done.Res == nil {
		return res
	}
	t, ok := ctx.Map.Get(done.Res.Returnval).(*simulator.Task)
	if !ok {
		return res
	}
	t.Wait()
	var state types.TaskInfoState
	ctx.WithLock(t, func() { state = t.Info.State })
	if state != types.TaskInfoStateSuccess {
		return res
	}
	ctx.WithLock(c, func() {
		cfg, ok := c.ConfigurationEx.(*types.ClusterConfigInfoEx)
		if !ok {
			return
		}
		if !req.Modify {
			cfg.DrsConfig.Option = slices.Clone(spec.DrsConfig.Option)
			return
		}
		options := slices.Clone(cfg.DrsConfig.Option)
		for _, o := range spec.DrsConfig.Option {
			key := o.GetOptionValue().Key
			if i := slices.IndexFunc(options, func(v types.BaseOptionValue) bool { return v.GetOptionValue().Key == key }); i >= 0 {
				options[i] = o
			} else {
				options = append(options, o)
			}
		}
		cfg.DrsConfig.Option = options
	})
	return res
}
