package vsphere

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A host reboot inside an apply: maintenance mode (the cluster's DRS moves
// the running VMs it can), reboot, wait for the host to be back, leave
// maintenance mode. Hosts of one cluster reboot one at a time, so parallel
// resources never take a whole cluster down.

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

// PlanHostReboot reads, in one round trip, whether a host needs a reboot to
// apply device changes and which of its running VMs would keep it from
// entering maintenance mode: all of them when no other host can take them,
// those DRS does not move on its own (the cluster's automation level, or the
// VM's override of it, is not fully automated), and those with a
// passthrough or SR-IOV device (which cannot be migrated).
func (c *Client) PlanHostReboot(ctx context.Context, hostID string) (*HostReboot, error) {
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
			{Type: "VirtualMachine", PathSet: []string{"name", "config.uuid", "runtime.powerState", "runtime.host", "config.hardware.device", "config.managedBy"}},
		},
	})
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
		return nil, objectNotFound(op, ObjectHost, hostID, "no host has id %s", hostID)
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
		case vm.Config != nil && hasPassthrough(vm.Config.Hardware.Device):
			reason = "a VM with a PCI passthrough or SR-IOV device cannot be migrated"
		case !drs.moves(vm.Self):
			reason = "DRS moves no VM whose automation level is not fully automated (the cluster's, or the VM's override " +
				"of it in the cluster's VM Overrides)"
		default:
			continue
		}
		out.Stuck = append(out.Stuck, vmRefOf(vm))
		if !slices.Contains(why, reason) {
			why = append(why, reason)
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

// hasPassthrough reports a DirectPath I/O or SR-IOV device: vSphere
// migrates no VM that has one.
func hasPassthrough(devices []types.BaseVirtualDevice) bool {
	for _, d := range devices {
		switch d.(type) {
		case *types.VirtualPCIPassthrough, *types.VirtualSriovEthernetCard:
			return true
		}
	}
	return false
}

// ErrHostNotBack is the Cause of a reboot whose host did not come back.
var ErrHostNotBack = fmt.Errorf("the host did not come back")

// RebootHost puts a host in maintenance mode, reboots it, waits up to
// timeout for it to be connected again with a new boot time, and takes it
// out of maintenance mode unless it was in it already. Reboots of one
// cluster's hosts wait for each other, and timeout starts once this one's
// turn has come. With pending set (the PCI ids of a change waiting for the
// reboot), a host whose reboot by another resource of the apply has made
// them active already is not rebooted again. progress is told each step.
func (c *Client) RebootHost(ctx context.Context, hostID string, timeout time.Duration, pending []string, progress func(string)) error {
	op := "rebooting host " + hostID
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	ref := types.ManagedObjectReference{Type: "HostSystem", Value: hostID}
	var h mo.HostSystem
	if err := c.readHostForReboot(ctx, vc, ref, &h); err != nil {
		return translate(op, err)
	}
	group := hostID
	if h.Parent != nil && h.Parent.Type == "ClusterComputeResource" {
		group = h.Parent.Value
	}
	progress(fmt.Sprintf("waiting for the other reboots of %s", group))
	unlock, err := c.reboots.lock(ctx, group)
	if err != nil {
		return translate(op, err)
	}
	defer unlock()
	if pending != nil {
		still, err := c.PendingDeviceChanges(ForChange(ctx), hostID)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(pending, func(id string) bool { return slices.Contains(still, id) }) {
			progress("not rebooted: another reboot of this apply has made the change active")
			return nil
		}
	}
	// The host as the reboots before this one left it, read again with the
	// VMs started or moved onto it, and DRS settings changed, since the plan
	// checked: maintenance mode would wait the whole timeout for a VM that
	// cannot move, and fail with the host half-drained.
	current, err := c.PlanHostReboot(ForChange(ctx), hostID)
	if err != nil {
		return err
	}
	if !current.InMaintenanceMode && len(current.Stuck) > 0 {
		return &Error{Op: op, Kind: ErrInvalidState, Object: ObjectHost, ID: hostID, Message: fmt.Sprintf(
			"host %s was not rebooted: its running virtual machines %s would keep it from entering maintenance mode (%s)",
			h.Name, strings.Join(vmNames(current.Stuck), ", "), current.Why)}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host := object.NewHostSystem(vc, ref)
	entered := false
	if !current.InMaintenanceMode {
		progress("entering maintenance mode")
		secs := int32(time.Until(deadlineOf(ctx)).Seconds())
		t, err := host.EnterMaintenanceMode(ctx, max(secs, 1), false, nil)
		if err == nil {
			_, err = c.waitTask(ctx, "entering maintenance mode on host "+h.Name, t)
		}
		// Whether or not the wait saw it end, the task may put the host in
		// maintenance mode: it is taken out below either way.
		entered = true
		if err != nil {
			return c.leaveMaintenance(ctx, host, h.Name, op, translate(op, err))
		}
	} else {
		progress("the host is in maintenance mode already, and stays in it")
	}
	booted := time.Now()
	if current.BootTime != nil {
		booted = *current.BootTime
	}
	progress("rebooting")
	res, err := methods.RebootHost_Task(ctx, vc, &types.RebootHost_Task{This: ref})
	if err == nil {
		_, err = c.waitTask(ctx, "rebooting host "+h.Name, object.NewTask(vc, res.Returnval))
	}
	if err != nil {
		if entered {
			return c.leaveMaintenance(ctx, host, h.Name, op, translate(op, err))
		}
		return translate(op, err)
	}
	progress("waiting for the host to be back")
	for i := 0; ; i++ {
		var now mo.HostSystem
		err := c.readObjectAs(ctx, vc, ref, []string{"runtime"}, &now, fresh)
		if err == nil && now.Runtime.ConnectionState == types.HostSystemConnectionStateConnected &&
			now.Runtime.BootTime != nil && now.Runtime.BootTime.After(booted) {
			break
		}
		select {
		case <-time.After(min(100*time.Millisecond<<min(i, 6), 5*time.Second)):
		case <-ctx.Done():
			state := string(now.Runtime.ConnectionState)
			if state == "" {
				state = "not read"
			}
			return &Error{Op: op, Kind: ErrInvalidState, Cause: ErrHostNotBack, Message: fmt.Sprintf(
				"host %s was rebooted and is not back after %s (connection state: %s); it stays in maintenance mode", h.Name, timeout, state)}
		}
	}
	if !entered {
		return nil
	}
	progress("leaving maintenance mode")
	return c.leaveMaintenance(ctx, host, h.Name, op, nil)
}

// leaveMaintenanceTimeout bounds taking a host out of maintenance mode after
// the reboot's own time has run out or the apply was cancelled.
const leaveMaintenanceTimeout = 2 * time.Minute

// leaveMaintenance takes a host this reboot put in maintenance mode out of
// it, after the reboot (cause nil) or after a failure (cause), on time of
// its own: a host must not stay in maintenance mode because a step failed
// or the apply was cancelled. When it cannot, the error says the host is
// still in it.
func (c *Client) leaveMaintenance(ctx context.Context, host *object.HostSystem, name, op string, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveMaintenanceTimeout)
	defer cancel()
	if cause != nil { // entering may have failed before the host was in it
		var now mo.HostSystem
		err := c.readObjectAs(ctx, host.Client(), host.Reference(), []string{"runtime.inMaintenanceMode"}, &now, fresh)
		if err == nil && !now.Runtime.InMaintenanceMode {
			return cause
		}
	}
	t, err := host.ExitMaintenanceMode(ctx, 0)
	if err == nil {
		_, err = c.waitTask(ctx, "leaving maintenance mode on host "+name, t)
	}
	switch {
	case err != nil && cause != nil:
		return &Error{Op: op, Kind: ErrInvalidState, Cause: cause, Message: fmt.Sprintf(
			"%v; host %s is still in maintenance mode: %v. Take it out in vCenter once it is connected", cause, name, translate(op, err))}
	case err != nil:
		return &Error{Op: op, Kind: ErrInvalidState, Cause: err, Message: fmt.Sprintf(
			"host %s was rebooted and is back, and is still in maintenance mode: %v. Take it out in vCenter", name, translate(op, err))}
	}
	return cause
}

// readHostForReboot reads what a reboot needs of a host, fresh.
func (c *Client) readHostForReboot(ctx context.Context, vc *vim25.Client, ref types.ManagedObjectReference, h *mo.HostSystem) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	return c.readObjectAs(ctx, vc, ref, []string{"name", "parent", "runtime"}, h, fresh)
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
