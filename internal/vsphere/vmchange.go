package vsphere

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// This file is the one flow that changes a VM: lock, re-read, build,
// power off when needed, reconfigure, power back on.

// GuestShutdownTimeout bounds the wait for a guest OS to shut down before
// the VM is powered off hard.
var GuestShutdownTimeout = 3 * time.Minute

// What needs a VM powered off, for PowerOffNeeded.
const (
	WhatPVRDMANeedsOff = "adding, removing or changing the protocol of a PVRDMA adapter"
	WhatGPUsNeedOff    = "attaching or detaching GPUs, switching the firmware to EFI, or changing the MMIO window, the peer-to-peer keys " +
		"or the NUMA node affinity"
	WhatSRIOVNeedsOff = "adding or removing an SR-IOV adapter, or changing its physical function"
)

// PowerOffNeeded is a change that needs the VM powered off, planned or asked
// of a running VM without leave to power it off. It is a plan-time finding
// and, wrapped with what was being done, the error of the change itself.
type PowerOffNeeded struct {
	VM     string // the VM as the message names it
	Change string // e.g. WhatPVRDMANeedsOff
}

func (*PowerOffNeeded) finding() {}

func (e *PowerOffNeeded) Error() string {
	return fmt.Sprintf("virtual machine %s is powered on, and %s needs it powered off", e.VM, e.Change)
}

func (*PowerOffNeeded) Unwrap() error { return ErrInvalidState }

// VMSuspended is a change that needs the VM powered off, planned or asked of
// a suspended VM: the provider never resumes or discards a suspended guest.
type VMSuspended struct {
	VM string
}

func (*VMSuspended) finding() {}

func (e *VMSuspended) Error() string {
	return fmt.Sprintf("virtual machine %s is suspended; resume it or power it off first", e.VM)
}

func (*VMSuspended) Unwrap() error { return ErrInvalidState }

// PlanPower is the rule every VM change follows: a change that needs the VM
// off may run on a powered-off VM, or on a running one it may power off. It
// returns the finding that refuses the change, or nil.
func PlanPower(vm string, state PowerState, needsOff, powerOffAllowed bool, change string) Finding {
	switch {
	case !needsOff:
		return nil
	case state == Suspended:
		return &VMSuspended{VM: vm}
	case state == PoweredOn && !powerOffAllowed:
		return &PowerOffNeeded{VM: vm, Change: change}
	}
	return nil
}

// ErrNotPoweredBackOn: the change was made, but the VM, powered off for
// it, did not power back on. Callers record the change and report the error.
var ErrNotPoweredBackOn = errors.New("the change is made, but the virtual machine did not power back on")

// objectLocks serializes the changes a provider instance makes to one
// object: to a VM, so resources sharing it never race on its configuration
// or power state; to a host, so two VMs never both take one of its GPUs.
// A host's lock is taken only while holding a VM's, never the other way.
type objectLocks struct {
	mu    sync.Mutex
	locks map[string]chan struct{}
}

// lock waits for the VM's lock, or for ctx to end.
func (l *objectLocks) lock(ctx context.Context, moid string) (func(), error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]chan struct{}{}
	}
	ch, ok := l.locks[moid]
	if !ok {
		ch = make(chan struct{}, 1)
		l.locks[moid] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// vmChange is one change to a VM, described by what it needs.
type vmChange struct {
	op              string
	vmID            string   // UUID or managed object id
	props           []string // properties build needs beyond vmChangeProps
	change          string   // what needs the VM off, e.g. WhatPVRDMANeedsOff
	powerOffAllowed bool
	configTarget    bool // build needs the host's passthrough offer
	hostLock        bool // hold the VM's host's lock too: the change takes host devices
	// build returns the spec (nil: nothing to do) and whether it needs the
	// VM powered off. target is nil unless configTarget.
	build func(vm *mo.VirtualMachine, target *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error)
	// after, when set, sees the VM as reconfigured (vmChangeProps: what an
	// adapter's read takes, so a create needs no read back), with the
	// device keys from before, and reports whether it found its change
	// there: the VM read with the task's end may be a moment older (see
	// waitTaskReading), and is then read again.
	after func(vm *mo.VirtualMachine, before []int32) bool
}

// vmChangeProps are what every change reads under the lock.
var vmChangeProps = []string{"name", "config.uuid", "config.hardware.device", "config.memoryReservationLockedToMax",
	"runtime.powerState", "runtime.host"}

// changeVM runs a change serialized with every other change this client
// makes to the VM: it reads the VM again under the lock, builds the spec
// and reconfigures, powering the VM off and back on when the change needs it
// and may. The change is reported to after also when only the power-on
// failed (ErrNotPoweredBackOn).
func (c *Client) changeVM(ctx context.Context, ch vmChange) error {
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	// The VM's managed object id, known from the plan's reads (or given):
	// no call. The lock is the client's own; the VM is read under it.
	ref, err := c.resolveVM(ctx, vc, ch.op, ch.vmID)
	if err != nil {
		return err
	}
	// Waiting for another resource's change to the VM does not count against
	// this change's timeout; the caller's own context still bounds it.
	unlock, err := c.vms.lock(ctx, ref.Value)
	if err != nil {
		return fmt.Errorf("%s: waiting for another change to %s: %w", ch.op, ch.vmID, err)
	}
	defer unlock()
	// With the VM's recent tasks: those before the change tell the one a
	// reconfigure whose answer is lost started (startedTask). Not in
	// vmChangeProps: an adapter's refresh reads those, with every VM's.
	vm, release, err := c.readVMBesideReboots(ctx, vc, ch.op, ch.vmID, append(slices.Concat(vmChangeProps, []string{"recentTask"}), ch.props...))
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	if vm.Config == nil {
		return vmInaccessible(ch.op, vm.Name, vm.Self.Value)
	}
	if ch.hostLock && vm.Runtime.Host != nil {
		unlockHost, err := c.hosts.lock(ctx, vm.Runtime.Host.Value)
		if err != nil {
			return fmt.Errorf("%s: waiting for another change on the host of %s: %w", ch.op, vm.Name, err)
		}
		defer unlockHost()
	}
	var target *types.ConfigTarget
	if ch.configTarget && vm.Runtime.Host != nil {
		if target, err = configTarget(ctx, vc, vm); err != nil {
			return translate(ch.op+": reading the host's passthrough devices", err)
		}
	}
	spec, needsOff, err := ch.build(vm, target)
	if err != nil || spec == nil {
		return err
	}
	var before []int32
	for _, dev := range vm.Config.Hardware.Device {
		before = append(before, dev.GetVirtualDevice().Key)
	}
	done, err := c.reconfigureVM(ctx, vc, ch, vm, *spec, needsOff)
	lost := errors.As(err, new(*taskLost))
	if err != nil && !errors.Is(err, ErrNotPoweredBackOn) && !lost {
		return err
	}
	if lost {
		// A task still running makes its change after a look now would
		// miss it: whoever looks does so once it has ended.
		c.settle(ctx, vc, vm.Self)
	}
	if ch.after != nil && (done == nil || !ch.after(done, before)) {
		readCtx := ctx
		if lost {
			// The task may have made the change: look, even when ctx is
			// what ran out, so that the caller tracks what it made.
			var cancel context.CancelFunc
			readCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), lookupAfterFailureTimeout)
			defer cancel()
		}
		var again mo.VirtualMachine
		if rerr := c.readObjectAs(readCtx, vc, vm.Self, vmChangeProps, &again, fresh); rerr != nil {
			return errors.Join(err, translate(ch.op, rerr))
		}
		ch.after(&again, before)
	}
	return err
}

// readVMBesideReboots reads the VM (props, with runtime.host) for a change
// and takes a share of its host's gate (see hostGates): a reboot of the
// host by this client, under way, is waited for (its time does not count
// against the change's), and the VM read again after it, as DRS may have
// moved it. release gives the share back.
func (c *Client) readVMBesideReboots(ctx context.Context, vc *vim25.Client, op, vmID string, props []string) (*mo.VirtualMachine, func(), error) {
	read := func() (*mo.VirtualMachine, error) {
		ctx, cancel := c.withTimeout(ctx)
		defer cancel()
		return c.readVMPropsAs(ctx, vc, op, vmID, props, fresh)
	}
	vm, err := read()
	for err == nil && vm.Runtime.Host != nil {
		host := vm.Runtime.Host.Value
		release, waited, gateErr := c.hostGates.share(ctx, host)
		if gateErr != nil {
			return nil, nil, fmt.Errorf("%s: waiting for the reboot of host %s: %w", op, host, gateErr)
		}
		if !waited {
			return vm, release, nil
		}
		c.log.Debug(ctx, "Waited for the reboot of the VM's host", map[string]any{"vm": vm.Name, "host_system_id": host})
		if vm, err = read(); err == nil && (vm.Runtime.Host == nil || vm.Runtime.Host.Value == host) {
			return vm, release, nil
		}
		release() // moved to another host while this one rebooted: that one's gate
	}
	if err != nil {
		return nil, nil, err
	}
	return vm, func() {}, nil
}

// ErrTaskLost is the Cause of a change whose task's end could not be read
// (the call failed, or the time ran out): vCenter may have made the change
// or not, and only a read of the object tells.
var ErrTaskLost = errors.New("the end of vCenter's task could not be read")

// taskLost is the error of a task whose end could not be read.
type taskLost struct{ error }

func (e *taskLost) Unwrap() []error { return []error{e.error, ErrTaskLost} }

func configTarget(ctx context.Context, vc *vim25.Client, vm *mo.VirtualMachine) (*types.ConfigTarget, error) {
	return configTargetOn(ctx, vc, vm.Self, *vm.Runtime.Host)
}

// configTargetOn is what host offers a VM (its environment browser's
// QueryConfigTarget).
func configTargetOn(ctx context.Context, vc *vim25.Client, vm, host types.ManagedObjectReference) (*types.ConfigTarget, error) {
	browser, err := object.NewVirtualMachine(vc, vm).EnvironmentBrowser(ctx)
	if err != nil {
		return nil, err
	}
	return browser.QueryConfigTarget(ctx, object.NewHostSystem(vc, host))
}

// reconfigureVM applies spec to a VM read under its lock. When needsOff and
// the VM runs, it refuses unless the change may power it off; then it shuts
// the guest down (bounded, then a hard power-off), reconfigures and powers
// the VM back on, also when the reconfigure failed. When the change has an
// after and no power cycle, it returns the VM (vmChangeProps) as read with
// the task's end; else nil.
func (c *Client) reconfigureVM(
	ctx context.Context,
	vc *vim25.Client,
	ch vmChange,
	vm *mo.VirtualMachine,
	spec types.VirtualMachineConfigSpec,
	needsOff bool,
) (*mo.VirtualMachine, error) {
	obj := object.NewVirtualMachine(vc, vm.Self)
	state := powerStateOf(vm.Runtime.PowerState)
	if refusal := PlanPower(vm.Name, state, needsOff, ch.powerOffAllowed, ch.change); refusal != nil {
		return nil, fmt.Errorf("%s: %w", ch.op, refusal.(error))
	}
	cycled := needsOff && state == PoweredOn
	if cycled {
		// The guest shut down, bounded; then off hard: the leave to power the
		// VM off (ch.powerOffAllowed) allows both.
		progress := func(step string) {
			c.log.Debug(ctx, "Powering the VM off for a change that needs it off", map[string]any{"vm": vm.Name, "step": step})
		}
		if err := c.shutDown(ctx, guestShutdown{op: ch.op, vm: obj, name: vm.Name, timeout: GuestShutdownTimeout, hardOffAllowed: true,
			progress: progress}); err != nil {
			return nil, err
		}
	}
	if reflect.ValueOf(spec).IsZero() {
		return nil, nil // nothing to change: no task, no power cycle
	}
	var done *mo.VirtualMachine
	var readDone func(context.Context) error
	if ch.after != nil && !cycled {
		// A failed read is not the task's failure: changeVM reads again.
		readDone = func(ctx context.Context) error {
			done = new(mo.VirtualMachine)
			if c.readObject(ctx, vc, vm.Self, vmChangeProps, done) != nil {
				done = nil
			}
			return nil
		}
	}
	task, err := obj.Reconfigure(ctx, spec)
	if answerLost(err) {
		// vCenter may have started the task: wait for it, if it did.
		if started, ferr := c.startedTask(ctx, vc, vm.Self, vm.RecentTask); ferr != nil {
			err = &taskLost{translate(ch.op, errors.Join(err, ferr))}
		} else if started != nil {
			task, err = started, nil
		}
	}
	if err == nil {
		var info *types.TaskInfo
		if info, err = c.waitTaskReading(ctx, ch.op, task, readDone); err != nil && info == nil {
			err = &taskLost{err}
		}
	} else if !errors.As(err, new(*taskLost)) {
		err = translate(ch.op, err)
	}
	if err != nil {
		done = nil
	}
	if cycled {
		if perr := c.powerOn(ctx, ch.op, obj, vm.Name); perr != nil {
			if err == nil { // the change is made; only the VM is off
				return nil, fmt.Errorf("%w: %w", ErrNotPoweredBackOn, perr)
			}
			return nil, errors.Join(err, perr)
		}
	}
	return done, err
}

// powerOn powers a VM back on that a change powered off, whatever happened
// to the change and even past its deadline: the VM was running before.
func (c *Client) powerOn(ctx context.Context, op string, vm *object.VirtualMachine, name string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.apiTimeout())
	defer cancel()
	c.log.Debug(ctx, "Powering the VM back on", map[string]any{"vm": name})
	return c.startVM(ctx, op+": powering "+name+" back on", vm)
}

// PlanVMPower reads a VM's power state and applies PlanPower to a change of
// it, naming the VM as "name (id as given)".
func (c *Client) PlanVMPower(ctx context.Context, vmID string, needsOff, powerOffAllowed bool, change string) (Finding, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vm, err := c.VM(ctx, vmID)
	if err != nil {
		return nil, err
	}
	return PlanPower(fmt.Sprintf("%s (%s)", vm.Name, vmID), vm.PowerState, needsOff, powerOffAllowed, change), nil
}
