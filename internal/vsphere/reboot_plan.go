package vsphere

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// HostReboot is what rebooting a host for a change takes.
type HostReboot struct {
	HostID, HostName string
	// Needed: the host applies passthrough and SR-IOV changes only when it
	// reboots (no capability.deviceRebindWithoutRebootSupported).
	Needed bool
	// Stuck are the running VMs maintenance mode would wait for forever,
	// and Why says why they cannot move.
	Stuck []VMRef
	Why   string
	// InMaintenanceMode and BootTime are the host's now (BootTime nil when
	// vCenter reports none).
	InMaintenanceMode bool
	BootTime          *time.Time
}

// PlanHostReboot reads, in one round trip (more only for running VMs with
// vGPUs, see vgpuEvacuation), whether a host needs a reboot to
// apply device changes and which of its running VMs would keep it from
// entering maintenance mode: all of them when no other host can take them,
// those DRS does not move on its own (the cluster's automation level, or the
// VM's override of it, is not fully automated), those with a passthrough
// or SR-IOV device (which cannot be migrated), and those with vGPUs that
// vgpuEvacuation says stay. planned are the running VMs the same plan gives
// vGPUs, on any host: the room they take on the other hosts counts.
func (c *Client) PlanHostReboot(ctx context.Context, hostID string, planned ...PlannedVGPUs) (*HostReboot, error) {
	op := "checking a reboot of host " + hostID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	host := types.ManagedObjectReference{Type: "HostSystem", Value: hostID}
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: host, SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "HostSystem", Path: "vm"},
			&types.TraversalSpec{Type: "HostSystem", Path: "parent", SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{Type: "ComputeResource", Path: "host"},
			}},
		}}},
		PropSet: []types.PropertySpec{
			{Type: "HostSystem", PathSet: []string{"name", "parent", "runtime", "capability.deviceRebindWithoutRebootSupported"}},
			{Type: "ClusterComputeResource", PathSet: []string{"configurationEx"}},
			{
				Type:    "VirtualMachine",
				PathSet: []string{"name", "config.uuid", "runtime.powerState", "runtime.host", "config.hardware.device", "config.managedBy"},
			},
		},
	})
	if errors.Is(translate(op, err), ErrNotFound) {
		return nil, c.notFoundError(ctx, vc, op, ObjectHost, hostID)
	}
	if err != nil {
		return nil, translate(op, err)
	}
	var self *mo.HostSystem
	var others []mo.HostSystem
	var vms []mo.VirtualMachine
	var drs drsLevels
	for _, o := range objs {
		switch v := o.(type) {
		case mo.HostSystem:
			if v.Self == host {
				self = &v
			} else {
				others = append(others, v)
			}
		case mo.ClusterComputeResource:
			if cfg, ok := v.ConfigurationEx.(*types.ClusterConfigInfoEx); ok {
				drs = drsLevels{cfg}
			}
		case mo.VirtualMachine:
			vms = append(vms, v)
		}
	}
	if self == nil {
		return nil, c.notFoundError(ctx, vc, op, ObjectHost, hostID)
	}
	out := &HostReboot{HostID: hostID, HostName: self.Name, Needed: true,
		InMaintenanceMode: self.Runtime.InMaintenanceMode, BootTime: self.Runtime.BootTime}
	if cp := self.Capability; cp != nil && cp.DeviceRebindWithoutRebootSupported != nil {
		out.Needed = !*cp.DeviceRebindWithoutRebootSupported
	}
	spare := false
	for _, o := range others {
		spare = spare || (!o.Runtime.InMaintenanceMode && o.Runtime.ConnectionState == types.HostSystemConnectionStateConnected)
	}
	var why []string
	var withVGPUs []*mo.VirtualMachine
	for i := range vms {
		vm := &vms[i]
		if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn || vm.Runtime.Host == nil || *vm.Runtime.Host != host ||
			isAgentVM(vm) {
			continue
		}
		reason := ""
		switch {
		case !drs.on():
			reason = "the cluster's DRS is not fully automated, so maintenance mode moves no VM"
		case !spare:
			reason = "no other host of the cluster can take its VMs"
		case vm.Config != nil && pinnedToHost(vm.Config.Hardware.Device):
			reason = "a VM with a PCI passthrough or SR-IOV device cannot be migrated"
		case !drs.moves(vm.Self):
			reason = "DRS moves no VM whose automation level is not fully automated (the cluster's, or the VM's override " +
				"of it in the cluster's VM Overrides)"
		case vm.Config != nil && len(vgpuProfilesOf(vm.Config.Hardware.Device)) > 0:
			withVGPUs = append(withVGPUs, vm)
			continue
		default:
			continue
		}
		out.Stuck = append(out.Stuck, vmRefOf(vm))
		if !slices.Contains(why, reason) {
			why = append(why, reason)
		}
	}
	if len(withVGPUs) > 0 {
		stuck, err := c.vgpuEvacuation(ctx, vc, self, drs, withVGPUs, planned)
		if err != nil {
			return nil, err
		}
		for _, s := range stuck {
			out.Stuck = append(out.Stuck, vmRefOf(s.vm))
			if !slices.Contains(why, s.reason) {
				why = append(why, s.reason)
			}
		}
	}
	out.Why = strings.Join(why, "; ")
	return out, nil
}

// isAgentVM reports one of ESX Agent Manager's VMs, such as the vSphere
// Cluster Services VMs every host of a cluster runs since vSphere 7.0 U1:
// vCenter stops them itself for maintenance mode ("vCLS normally stops
// automatically—allowing the host to enter maintenance mode", Broadcom KB
// 403400), whatever DRS and their overrides say.
func isAgentVM(vm *mo.VirtualMachine) bool {
	return vm.Config != nil && vm.Config.ManagedBy != nil && vm.Config.ManagedBy.ExtensionKey == "com.vmware.vim.eam"
}

// drsLevels is a cluster's DRS configuration: its automation level and the
// VMs' overrides of it (vSphere API reference, ClusterDrsVmConfigInfo).
type drsLevels struct{ cfg *types.ClusterConfigInfoEx }

// on reports whether DRS moves any VM on its own: it is enabled, and the
// cluster's level or some VM's override of it is fully automated.
func (d drsLevels) on() bool {
	if d.cfg == nil || d.cfg.DrsConfig.Enabled == nil || !*d.cfg.DrsConfig.Enabled {
		return false
	}
	if d.cfg.DrsConfig.DefaultVmBehavior == types.DrsBehaviorFullyAutomated {
		return true
	}
	for _, o := range d.cfg.DrsVmConfig {
		if o.Behavior == types.DrsBehaviorFullyAutomated && (o.Enabled == nil || *o.Enabled) {
			return true
		}
	}
	return false
}

// moves reports whether DRS moves vm off a host entering maintenance mode
// on its own: its override's level when it has one ("enabled: ... If this
// flag is false, the virtual machine is effectively excluded from DRS"),
// else the cluster's.
func (d drsLevels) moves(vm types.ManagedObjectReference) bool {
	if !d.on() {
		return false
	}
	for _, o := range d.cfg.DrsVmConfig {
		if o.Key != vm {
			continue
		}
		if o.Enabled != nil && !*o.Enabled {
			return false
		}
		if o.Behavior != "" {
			return o.Behavior == types.DrsBehaviorFullyAutomated
		}
	}
	return d.cfg.DrsConfig.DefaultVmBehavior == types.DrsBehaviorFullyAutomated
}

// pinnedToHost reports a DirectPath I/O or SR-IOV device: vSphere migrates
// no VM that has one. A vGPU does not pin its VM (see vgpuEvacuation).
func pinnedToHost(devices []types.BaseVirtualDevice) bool {
	for _, d := range devices {
		switch d := d.(type) {
		case *types.VirtualPCIPassthrough:
			if pciPassthrough(d).VGPU == "" {
				return true
			}
		case *types.VirtualSriovEthernetCard:
			return true
		}
	}
	return false
}

// hasPassthrough reports a PCI passthrough device (a vGPU too) or an SR-IOV
// adapter.
func hasPassthrough(devices []types.BaseVirtualDevice) bool {
	for _, d := range devices {
		switch d.(type) {
		case *types.VirtualPCIPassthrough, *types.VirtualSriovEthernetCard:
			return true
		}
	}
	return false
}
