package vsphere

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// PowerAction is what vspherehpc_vm_power does to a VM.
type PowerAction string

// The power actions.
const (
	PowerActionOn      PowerAction = "on"
	PowerActionOff     PowerAction = "off"
	PowerActionRestart PowerAction = "restart"
)

// ErrGuestDidNotShutDown is the Cause of an "off" whose guest did not shut
// down in time when a hard power off is not allowed.
var ErrGuestDidNotShutDown = fmt.Errorf("the guest did not shut down")

// What an action does to a VM in each power state, from what vSphere does:
//   - on: powers on a VM that is off, and resumes one that is suspended
//     (PowerOnVM_Task "If the virtual machine is suspended, this method
//     resumes execution from the suspend point": vSphere Web Services SDK
//     Programming Guide, Performing Virtual Machine Power Operations).
//   - off: shuts the guest of a running VM down (a hard power off only with
//     leave). A suspended VM's guest does not run, so cannot shut down, and
//     powering the VM off (PowerOffVM_Task; the vSphere Automation API's
//     power stop "Powers off a powered-on or suspended virtual machine")
//     discards the state its suspend kept, as a hard power off discards a
//     running guest's: it takes the same leave (NotShutDownSuspended).
//   - restart: restarts a running VM (its guest shut down, then powered
//     on). A VM that is off or suspended is left as it is (NotRestarted):
//     starting it is not restarting it, and vSphere's own restarts need it
//     running (RebootGuest; the Automation API's power reset "Resets a
//     powered-on virtual machine").

// NotRestarted is a restart of a VM that is not running: it is left off or
// suspended, never powered on or resumed.
type NotRestarted struct {
	VM    string
	State PowerState // PoweredOff or Suspended
}

func (*NotRestarted) finding() {}

// NotShutDownSuspended is an "off" of a suspended VM without leave to power
// it off hard.
type NotShutDownSuspended struct {
	VM string
}

func (*NotShutDownSuspended) finding() {}

func (e *NotShutDownSuspended) Error() string {
	return fmt.Sprintf("virtual machine %s is suspended: its guest cannot shut down, and powering it off discards the state its suspend kept", e.VM)
}

func (*NotShutDownSuspended) Unwrap() error { return ErrInvalidState }

// PlanPowerAction is the rule of a power action on a VM (named vm) in
// state: the finding when it will not do what it asks, or nil.
func PlanPowerAction(vm string, state PowerState, action PowerAction, hardOffAllowed bool) Finding {
	switch {
	case action == PowerActionRestart && (state == PoweredOff || state == Suspended):
		return &NotRestarted{VM: vm, State: state}
	case action == PowerActionOff && state == Suspended && !hardOffAllowed:
		return &NotShutDownSuspended{VM: vm}
	}
	return nil
}

// PlanVMPowerAction checks a power action at plan time: the VM exists (an
// error says what a VM's id looks like), and PlanPowerAction's finding for
// its power state now.
func (c *Client) PlanVMPowerAction(ctx context.Context, vmID string, action PowerAction, hardOffAllowed bool) (Finding, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vm, err := c.VM(ctx, vmID)
	if err != nil {
		return nil, err
	}
	return PlanPowerAction(fmt.Sprintf("%s (%s)", vm.Name, vmID), vm.PowerState, action, hardOffAllowed), nil
}

// SetVMPower powers a VM on (resuming a suspended one), off (the guest shut
// down, waiting up to shutdownTimeout, then off hard only if
// hardOffAllowed; a suspended VM off only if hardOffAllowed), or restarts a
// running one (off, then on). It waits for other changes the client makes
// to the VM. progress is told each step; a VM already in the state asked is
// told so. A restart of a VM that is not running returns NotRestarted, and
// does nothing.
func (c *Client) SetVMPower(
	ctx context.Context,
	vmID string,
	action PowerAction,
	shutdownTimeout time.Duration,
	hardOffAllowed bool,
	progress func(string),
) (Finding, error) {
	op := fmt.Sprintf("powering virtual machine %s %s", vmID, action)
	if err := malformedVMID(op, vmID); err != nil {
		return nil, err
	}
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	first, err := c.readVMPropsAs(ctx, vc, op, vmID, []string{"name"}, fresh)
	if err != nil {
		return nil, err
	}
	unlock, err := c.vms.lock(ctx, first.Self.Value)
	if err != nil {
		return nil, translate(op, err)
	}
	defer unlock()
	vm, release, err := c.readVMBesideReboots(ctx, vc, op, first.Self.Value, []string{"name", "runtime.powerState", "runtime.host"})
	if err != nil {
		return nil, err
	}
	defer release()
	obj := object.NewVirtualMachine(vc, vm.Self)
	state := powerStateOf(vm.Runtime.PowerState)
	switch f := PlanPowerAction(vm.Name, state, action, hardOffAllowed).(type) {
	case *NotRestarted:
		return f, nil
	case *NotShutDownSuspended:
		return nil, f
	}
	switch state {
	case PoweredOn:
		if action == PowerActionOn {
			progress(vm.Name + " is already on")
			return nil, nil
		}
		if err := c.shutDown(ctx, guestShutdown{op: op, vm: obj, name: vm.Name, timeout: shutdownTimeout, hardOffAllowed: hardOffAllowed,
			progress: progress}); err != nil {
			return nil, err
		}
		if action == PowerActionOff {
			progress(vm.Name + " is off")
			return nil, nil
		}
	case PoweredOff:
		if action == PowerActionOff {
			progress(vm.Name + " is already off")
			return nil, nil
		}
	case Suspended:
		if action == PowerActionOff {
			progress("powering " + vm.Name + " off; it was suspended, and the state its suspend kept is discarded")
			return nil, c.hardPowerOff(ctx, op, obj)
		}
	default:
		return nil, &Error{Op: op, Kind: ErrInvalidState, Object: ObjectVirtualMachine, ID: vmID, Message: fmt.Sprintf(
			"vCenter gives virtual machine %s the power state %q, neither on, off nor suspended", vm.Name, state)}
	}
	if state == Suspended {
		progress("resuming " + vm.Name + ", which is suspended")
	} else {
		progress("powering " + vm.Name + " on")
	}
	return nil, c.startVM(ctx, op, obj)
}

// startVM powers a VM on, or resumes it, and waits.
func (c *Client) startVM(ctx context.Context, op string, obj *object.VirtualMachine) error {
	task, err := obj.PowerOn(ctx)
	if err == nil {
		_, err = c.waitTask(ctx, op, task)
	}
	if err != nil && c.inPowerState(ctx, obj, types.VirtualMachinePowerStatePoweredOn) {
		return nil
	}
	return translate(op, err)
}

// guestShutdown is a running VM's guest shut down: within timeout, else,
// when hardOffAllowed, the VM powered off hard. progress is told each step.
type guestShutdown struct {
	op             string
	vm             *object.VirtualMachine
	name           string // the VM's
	timeout        time.Duration
	hardOffAllowed bool
	progress       func(string)
}

// shutDown shuts the guest of s.vm down, waiting up to s.timeout, and powers
// the VM off hard if that did not work and s.hardOffAllowed.
func (c *Client) shutDown(ctx context.Context, s guestShutdown) error {
	s.progress("shutting the guest of " + s.name + " down")
	why := ""
	err := s.vm.ShutdownGuest(ctx)
	if err == nil || answerLost(err) { // lost, the shutdown may have started: the wait tells
		wait, cancel := context.WithTimeout(ctx, s.timeout)
		for {
			// A wait whose connection is lost is waited again: the guest
			// goes on shutting down.
			err = s.vm.WaitForPowerState(wait, types.VirtualMachinePowerStatePoweredOff)
			if !answerLost(err) || wait.Err() != nil {
				break
			}
		}
		cancel()
		why = "did not shut down within " + s.timeout.String()
	} else {
		// vCenter refused the shutdown at once: no VMware Tools, for one.
		why = "could not be shut down: " + messageOf(translate(s.op, err))
	}
	if err == nil {
		return nil
	}
	if !s.hardOffAllowed {
		return &Error{Op: s.op, Kind: ErrInvalidState, Cause: ErrGuestDidNotShutDown, Message: fmt.Sprintf("the guest of %s %s", s.name, why)}
	}
	s.progress("the guest did not shut down; powering " + s.name + " off")
	return c.hardPowerOff(ctx, s.op, s.vm)
}

// hardPowerOff powers a VM off, without a guest shutdown.
func (c *Client) hardPowerOff(ctx context.Context, op string, obj *object.VirtualMachine) error {
	task, err := obj.PowerOff(ctx)
	if err == nil {
		_, err = c.waitTask(ctx, op, task)
	}
	if err != nil && c.inPowerState(ctx, obj, types.VirtualMachinePowerStatePoweredOff) {
		return nil
	}
	return translate(op, err)
}

// inPowerState reports whether a VM whose power call failed is in the state
// asked all the same, once its tasks have ended: the call's answer was lost,
// or vCenter refused it (InvalidPowerState) because the VM got there another
// way, as a guest whose shutdown ends while it is powered off hard.
func (c *Client) inPowerState(ctx context.Context, obj *object.VirtualMachine, want types.VirtualMachinePowerState) bool {
	vc := obj.Client()
	c.settle(ctx, vc, obj.Reference())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupAfterFailureTimeout)
	defer cancel()
	var vm mo.VirtualMachine
	err := c.readObjectAs(ctx, vc, obj.Reference(), []string{"runtime.powerState"}, &vm, fresh)
	return err == nil && vm.Runtime.PowerState == want
}

// PendingDeviceChanges lists a host's devices whose passthrough, SR-IOV or
// graphics change waits for a reboot.
func (c *Client) PendingDeviceChanges(ctx context.Context, hostID string) ([]string, error) {
	op := "reading the PCI passthrough of host " + hostID
	mh, _, vms, err := c.readHost(ctx, op, hostID, fresh)
	if err != nil {
		return nil, err
	}
	if mh.Hardware == nil || mh.Config == nil {
		return nil, hostDisconnected(op, mh)
	}
	var out []string
	for _, d := range hostPassthroughFromMO(mh, vms, topologyFromMO(mh.Hardware)).Devices {
		pending := d.Enabled != d.Active
		if sr := d.SRIOV; sr != nil {
			pending = pending || sr.Enabled != sr.Active || (sr.Enabled && sr.VFs != sr.VFsRequested)
		}
		if pending {
			out = append(out, d.PCIID)
		}
	}
	for _, id := range pendingGraphics(mh) {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}
