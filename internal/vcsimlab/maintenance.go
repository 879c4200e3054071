package vcsimlab

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Maintenance mode and host reboots, as the vSphere API reference documents
// HostSystem's methods (vcsim only flips runtime.inMaintenanceMode and has
// no RebootHost_Task):
//
//   - EnterMaintenanceMode_Task(timeout, evacuatePoweredOffVms): "The task
//     completes once there are no powered-on virtual machines on the host
//     and no provisioning operations in progress on the host. The operation
//     does not directly initiate any operation to evacuate or power-down
//     powered-on virtual machines. However, if the host is part of a cluster
//     with VMware DRS enabled, DRS provides migration recommendations to
//     evacuate the powered-on virtual machines. If DRS is in fully-automatic
//     mode, these are automatically scheduled." A VM's own DRS settings
//     override the cluster's (ClusterDrsVmConfigInfo: "enabled: ... If this
//     flag is false, the virtual machine is effectively excluded from DRS";
//     "behavior: Specifies the particular DRS behavior for this virtual
//     machine"; vSphere Resource Management, "Customize an Individual
//     Virtual Machine"): DRS moves a VM whose level is fully automated, its
//     own or the cluster's, and no other. A VM with a DirectPath I/O or
//     SR-IOV passthrough device cannot be migrated (vSphere Networking,
//     "SR-IOV Support": vMotion is not available; vSphere Virtual Machine
//     Administration, "Add a PCI Device": features unavailable with
//     DirectPath I/O include vMotion), so it stays and keeps the task
//     running. "timeout: ... If the timeout is less than or equal to zero,
//     there is no timeout"; a timeout that expires fails the task with
//     Timedout. evacuatePoweredOffVms: "for a DRS enabled cluster, VirtualCenter
//     will automatically reregister powered-off virtual machines". Entering
//     maintenance mode on a host already in it is refused with InvalidState
//     (the method's documented fault).
//     Agent VMs of vCenter's ESX Agent Manager (config.managedBy naming
//     the extension com.vmware.vim.eam), such as the vSphere Cluster
//     Services VMs on every host of a cluster since vSphere 7.0 U1, do not
//     hold it up: "When you attempt to put [a] host into maintenance mode,
//     vCLS normally stops automatically—allowing the host to enter
//     maintenance mode" (Broadcom KB 403400), so the lab powers them off.
//   - ExitMaintenanceMode_Task: leaves maintenance mode, and powers the
//     host's agent VMs on again (the task's "Wait for EAM VMs to Power-on"
//     step, Broadcom KB 434349). Outside maintenance mode, ESX Agent
//     Manager keeps agent VMs on ("Cluster Agent VM vCLS ... Is expected to
//     be powered on", Broadcom KB 316460): a maintenance mode that timed
//     out, or a host back from a forced reboot, has them on again.
//   - RebootHost_Task(force): "force: Flag to specify whether or not the host
//     should be rebooted regardless of whether it is in maintenance mode. If
//     true, the host is rebooted, even if there are virtual machines running
//     or other operations in progress"; without force, a host outside
//     maintenance mode is refused with InvalidState. The task completes once
//     the reboot starts; the host is then notResponding
//     (runtime.connectionState) until it is back, which takes
//     Options.RebootTime, with its pending passthrough and SR-IOV changes
//     applied (as Lab.RebootHost does) and runtime.bootTime the time it came
//     back. Its running VMs, with force, are powered off.
//   - A host that is not connected refuses all three with HostNotConnected
//     ("Thrown if the host is not connected", the fault vCenter documents for
//     calls it cannot pass to a host).
//
// Lab.MaintenanceWindows records when each host was in maintenance mode;
// Lab.KeepHostDown keeps a rebooting host from coming back.

// maintenanceWindow is one stay of a host in maintenance mode.
type maintenanceWindow struct {
	host       types.ManagedObjectReference
	start, end time.Time // end zero: still in it
}

// hostStates is what the lab keeps about hosts beyond vcsim's objects.
type hostStates struct {
	mu         sync.Mutex
	windows    []maintenanceWindow
	keptDown   map[types.ManagedObjectReference]bool
	rebootTime time.Duration
	agentsOff  map[types.ManagedObjectReference][]types.ManagedObjectReference // host -> agent VMs its maintenance mode powered off
	cancels    map[types.ManagedObjectReference]bool                           // EnterMaintenanceMode tasks asked to stop, see maintenance_cancel.go
}

// eamExtension is vCenter's ESX Agent Manager, which manages agent VMs such
// as the vSphere Cluster Services ones.
const eamExtension = "com.vmware.vim.eam"

// isAgentVM reports whether vm is one of ESX Agent Manager's.
func isAgentVM(vm *simulator.VirtualMachine) bool {
	return vm.Config != nil && vm.Config.ManagedBy != nil && vm.Config.ManagedBy.ExtensionKey == eamExtension
}

// setPower sets a VM's power state, as its power task does.
func setPower(ctx *simulator.Context, vm *simulator.VirtualMachine, state types.VirtualMachinePowerState) {
	ctx.Update(vm, []types.PropertyChange{{Name: "runtime.powerState", Val: state}, {Name: "summary.runtime.powerState", Val: state}})
}

// connected reports whether h answers calls; else fault is set.
func connected(h *simulator.HostSystem, fault **soap.Fault) bool {
	if s := h.Runtime.ConnectionState; s != "" && s != types.HostSystemConnectionStateConnected {
		*fault = simulator.Fault("The host is not connected.", &types.HostNotConnected{})
		return false
	}
	return true
}

func (x *extension) EnterMaintenanceModeTask(ctx *simulator.Context, req *types.EnterMaintenanceMode_Task) soap.HasFault {
	body := new(methods.EnterMaintenanceMode_TaskBody)
	h, ok := target[*simulator.HostSystem](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	var refused bool
	ctx.WithLock(h, func() {
		switch {
		case !connected(h, &body.Fault_):
			refused = true
		case h.Runtime.InMaintenanceMode:
			body.Fault_ = simulator.Fault("The host is already in maintenance mode.", &types.InvalidState{})
			refused = true
		}
	})
	if refused {
		return body
	}
	deadline := time.Time{}
	if req.Timeout > 0 {
		deadline = time.Now().Add(time.Duration(req.Timeout) * time.Second)
	}
	evacuateOff := req.EvacuatePoweredOffVms != nil && *req.EvacuatePoweredOffVms
	// The task runs on the extension's lock, not the host's: reads of the
	// host and its VMs go on while it waits.
	task := simulator.CreateTask(x, "enterMaintenanceMode", func(t *simulator.Task) (types.AnyType, types.BaseMethodFault) {
		for {
			lctx := newContext(x.reg)
			if x.cancelRequested(t.Self) {
				x.startAgents(lctx, h)
				return nil, &types.RequestCanceled{}
			}
			if x.evacuate(lctx, h, evacuateOff) {
				lctx.WithLock(h, func() {
					lctx.Update(h, []types.PropertyChange{{Name: "runtime.inMaintenanceMode", Val: true}})
				})
				x.hosts.mu.Lock()
				x.hosts.windows = append(x.hosts.windows, maintenanceWindow{host: h.Self, start: time.Now()})
				x.hosts.mu.Unlock()
				return nil, nil
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				x.startAgents(lctx, h)
				return nil, &types.Timedout{}
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	// The task is the host's, as vCenter names it, though it runs on the
	// extension: set before the task is registered.
	task.Info.DescriptionId = enterMaintenanceTask
	ref := task.Run(ctx)
	ctx.Map.AtomicUpdate(ctx, task, []types.PropertyChange{{Name: "info.entity", Val: h.Self}, {Name: "info.entityName", Val: h.Name},
		{Name: "info.cancelable", Val: true}})
	// vcsim lists a task in its entity's recentTask when it registers it,
	// and this one's entity was then the extension: listed here, as
	// vCenter lists every task on the host ("recentTask: The set of recent
	// tasks operating on this managed entity. This is a subset of
	// TaskManager.recentTask belonging to this entity", vSphere API
	// reference, ManagedEntity), for every session to see.
	ctx.WithLock(h, func() {
		ctx.Update(h, []types.PropertyChange{{Name: "recentTask", Val: append(slices.Clone(h.RecentTask), ref)}})
	})
	body.Res = &types.EnterMaintenanceMode_TaskResponse{Returnval: ref}
	return body
}

// evacuate moves what DRS moves off h and reports whether no powered-on VM
// is left on it.
func (x *extension) evacuate(ctx *simulator.Context, h *simulator.HostSystem, poweredOff bool) bool {
	var vms []types.ManagedObjectReference
	var cluster *simulator.ClusterComputeResource
	ctx.WithLock(h, func() {
		vms = slices.Clone(h.Vm)
		if h.Parent != nil {
			cluster, _ = ctx.Map.Get(*h.Parent).(*simulator.ClusterComputeResource)
		}
	})
	var others []types.ManagedObjectReference
	drsOn, automatic, evacuatesVGPU := false, false, false
	var overrides []types.ClusterDrsVmConfigInfo
	if cluster != nil {
		ctx.WithLock(cluster, func() {
			if cfg, ok := cluster.ConfigurationEx.(*types.ClusterConfigInfoEx); ok {
				drs := cfg.DrsConfig
				drsOn = drs.Enabled != nil && *drs.Enabled
				automatic = drs.DefaultVmBehavior == types.DrsBehaviorFullyAutomated
				overrides = slices.Clone(cfg.DrsVmConfig)
				evacuatesVGPU = evacuatesVGPUs(cfg)
			}
			others = slices.Clone(cluster.Host)
		})
	}
	movedByDRS := func(vm types.ManagedObjectReference) bool {
		for _, o := range overrides {
			if o.Key != vm {
				continue
			}
			if o.Enabled != nil && !*o.Enabled {
				return false
			}
			if o.Behavior != "" {
				return drsOn && o.Behavior == types.DrsBehaviorFullyAutomated
			}
		}
		return drsOn && automatic
	}
	// destinations are the hosts of the cluster that take VMs.
	destinations := func() []types.ManagedObjectReference {
		var out []types.ManagedObjectReference
		for _, o := range others {
			other, ok := ctx.Map.Get(o).(*simulator.HostSystem)
			if !ok || o == h.Self {
				continue
			}
			var usable bool
			ctx.WithLock(other, func() {
				usable = !other.Runtime.InMaintenanceMode && (other.Runtime.ConnectionState == "" ||
					other.Runtime.ConnectionState == types.HostSystemConnectionStateConnected)
			})
			if usable {
				out = append(out, o)
			}
		}
		return out
	}
	left := false
	for _, ref := range vms {
		vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
		if !ok {
			continue
		}
		var on, movable, agent, vgpu bool
		ctx.WithLock(vm, func() {
			on = vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
			movable = vm.Config != nil && !pinnedToHost(vm.Config.Hardware.Device)
			vgpu = on && vm.Config != nil && hasVGPU(vm.Config.Hardware.Device)
			if agent = isAgentVM(vm); agent && on {
				setPower(ctx, vm, types.VirtualMachinePowerStatePoweredOff)
			}
		})
		if agent {
			if on {
				x.agentStopped(h, ref)
			}
			continue
		}
		if !on && !poweredOff {
			continue
		}
		if !movedByDRS(ref) || !movable || vgpu && !evacuatesVGPU {
			left = left || on
			continue
		}
		moved := false
		for _, to := range destinations() {
			if vgpu {
				moved = x.migrateVGPUVM(ctx, vm, h.Self, to) == nil
			} else {
				moveVM(ctx, vm, h.Self, to)
				moved = true
			}
			if moved {
				break
			}
		}
		left = left || on && !moved
	}
	return !left
}

// pinnedToHost reports a DirectPath I/O or SR-IOV device, which keeps a VM
// from migrating. A vGPU (a passthrough device with a vmiop backing) does
// not: see vm_vgpu_migrate.go.
func pinnedToHost(devices []types.BaseVirtualDevice) bool {
	for _, d := range devices {
		switch d := d.(type) {
		case *types.VirtualPCIPassthrough:
			if _, vgpu := d.Backing.(*types.VirtualPCIPassthroughVmiopBackingInfo); !vgpu {
				return true
			}
		case *types.VirtualSriovEthernetCard:
			return true
		}
	}
	return false
}

// moveVM registers vm on host to instead of from, as a DRS migration does.
func moveVM(ctx *simulator.Context, vm *simulator.VirtualMachine, from, to types.ManagedObjectReference) {
	ctx.WithLock(vm, func() {
		ctx.Update(vm, []types.PropertyChange{{Name: "runtime.host", Val: &to}, {Name: "summary.runtime.host", Val: &to}})
	})
	setMember(ctx, from, "vm", vm.Self, false)
	setMember(ctx, to, "vm", vm.Self, true)
}

func (x *extension) ExitMaintenanceModeTask(ctx *simulator.Context, req *types.ExitMaintenanceMode_Task) soap.HasFault {
	body := new(methods.ExitMaintenanceMode_TaskBody)
	h, ok := target[*simulator.HostSystem](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	ctx.WithLock(h, func() {
		if !connected(h, &body.Fault_) {
			return
		}
		ctx.Update(h, []types.PropertyChange{{Name: "runtime.inMaintenanceMode", Val: false}})
		x.hosts.mu.Lock()
		for i := range x.hosts.windows {
			if w := &x.hosts.windows[i]; w.host == h.Self && w.end.IsZero() {
				w.end = time.Now()
			}
		}
		x.hosts.mu.Unlock()
		body.Res = &types.ExitMaintenanceMode_TaskResponse{Returnval: finishTask(ctx, h, "ExitMaintenanceMode_Task", nil, nil)}
	})
	if body.Res != nil {
		x.startAgents(ctx, h) // not under the host's lock: a power-on takes the VM's, then the host's
	}
	return body
}

// agentStopped records an agent VM stopped on h, to start again when h
// leaves maintenance mode or comes back from a reboot.
func (x *extension) agentStopped(h *simulator.HostSystem, vm types.ManagedObjectReference) {
	x.hosts.mu.Lock()
	defer x.hosts.mu.Unlock()
	if x.hosts.agentsOff == nil {
		x.hosts.agentsOff = map[types.ManagedObjectReference][]types.ManagedObjectReference{}
	}
	x.hosts.agentsOff[h.Self] = append(x.hosts.agentsOff[h.Self], vm)
}

// startAgents powers on the agent VMs stopped on h.
func (x *extension) startAgents(ctx *simulator.Context, h *simulator.HostSystem) {
	x.hosts.mu.Lock()
	agents := x.hosts.agentsOff[h.Self]
	delete(x.hosts.agentsOff, h.Self)
	x.hosts.mu.Unlock()
	for _, ref := range agents {
		if vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine); ok {
			ctx.WithLock(vm, func() { setPower(ctx, vm, types.VirtualMachinePowerStatePoweredOn) })
		}
	}
}

func (x *extension) RebootHostTask(ctx *simulator.Context, req *types.RebootHost_Task) soap.HasFault {
	body := new(methods.RebootHost_TaskBody)
	h, ok := target[*simulator.HostSystem](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	ctx.WithLock(h, func() {
		if !connected(h, &body.Fault_) {
			return
		}
		if !req.Force && !h.Runtime.InMaintenanceMode {
			body.Fault_ = simulator.Fault("The operation is not allowed in the current state: the host is not in maintenance mode.", &types.InvalidState{})
			return
		}
		ctx.Update(h, []types.PropertyChange{{Name: "runtime.connectionState", Val: types.HostSystemConnectionStateNotResponding}})
		body.Res = &types.RebootHost_TaskResponse{Returnval: finishTask(ctx, h, "RebootHost_Task", nil, nil)}
	})
	if body.Res == nil {
		return body
	}
	x.powerOffVMs(ctx, h)
	x.hosts.mu.Lock()
	wait := x.hosts.rebootTime
	x.hosts.mu.Unlock()
	time.AfterFunc(wait, func() {
		x.hosts.mu.Lock()
		down := x.hosts.keptDown[h.Self]
		x.hosts.mu.Unlock()
		if !down {
			x.booted(h)
		}
	})
	return body
}

// booted brings a rebooting host back: its pending device changes applied,
// connected, with a new boot time, and its agent VMs started when it is out
// of maintenance mode.
func (x *extension) booted(h *simulator.HostSystem) {
	lctx := newContext(x.reg)
	var ps *pciPassthruSystem
	lctx.WithLock(h, func() {
		if r := h.ConfigManager.PciPassthruSystem; r != nil {
			ps, _ = lctx.Map.Get(*r).(*pciPassthruSystem)
		}
	})
	if ps != nil {
		ps.reboot(lctx)
	}
	lctx.WithLock(h, func() { restartGraphics(lctx, h) })
	inMaintenance := false
	lctx.WithLock(h, func() {
		now := time.Now()
		lctx.Update(h, []types.PropertyChange{
			{Name: "runtime.connectionState", Val: types.HostSystemConnectionStateConnected},
			{Name: "runtime.bootTime", Val: &now},
		})
		inMaintenance = h.Runtime.InMaintenanceMode
	})
	if !inMaintenance {
		x.startAgents(lctx, h)
	}
}

// powerOffVMs powers off the VMs a forced reboot takes down with h.
func (x *extension) powerOffVMs(ctx *simulator.Context, h *simulator.HostSystem) {
	var vms []types.ManagedObjectReference
	ctx.WithLock(h, func() { vms = slices.Clone(h.Vm) })
	for _, ref := range vms {
		if vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine); ok {
			var agent bool
			ctx.WithLock(vm, func() {
				if vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn {
					setPower(ctx, vm, types.VirtualMachinePowerStatePoweredOff)
					agent = isAgentVM(vm)
				}
			})
			if agent {
				x.agentStopped(h, ref)
			}
		}
	}
}

// MaintenanceWindow is one stay of a host in maintenance mode; End is zero
// while the host is still in it.
type MaintenanceWindow struct {
	Host       string
	Start, End time.Time
}

// MaintenanceWindows lists when hosts were in maintenance mode, in the
// order they entered it.
func (l *Lab) MaintenanceWindows() []MaintenanceWindow {
	l.ext.hosts.mu.Lock()
	defer l.ext.hosts.mu.Unlock()
	out := make([]MaintenanceWindow, 0, len(l.ext.hosts.windows))
	for _, w := range l.ext.hosts.windows {
		name := w.host.Value
		for _, h := range l.hosts {
			if h.id == w.host.Value {
				name = h.name
			}
		}
		out = append(out, MaintenanceWindow{Host: name, Start: w.start, End: w.end})
	}
	return out
}

// KeepHostDown keeps a host that reboots from coming back: it stays
// notResponding, as a host whose boot failed does.
func (l *Lab) KeepHostDown(hostName string) {
	l.ext.hosts.mu.Lock()
	defer l.ext.hosts.mu.Unlock()
	l.ext.hosts.keptDown[ref("HostSystem", l.HostID(hostName))] = true
}

// BringHostUp lets a host kept down come back, as a host does once its boot
// is fixed: connected, with a new boot time and its pending device changes
// applied.
func (l *Lab) BringHostUp(hostName string) error {
	h, ok := l.model.Map().Get(ref("HostSystem", l.HostID(hostName))).(*simulator.HostSystem)
	if !ok {
		return fmt.Errorf("vcsimlab: no host %q", hostName)
	}
	l.ext.hosts.mu.Lock()
	delete(l.ext.hosts.keptDown, h.Self)
	l.ext.hosts.mu.Unlock()
	l.ext.booted(h)
	return nil
}
