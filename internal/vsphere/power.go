package vsphere

import (
	"context"
	"fmt"
	"time"

	"github.com/vmware/govmomi/object"
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

// SetVMPower powers a VM on, off (the guest shut down, waiting up to
// shutdownTimeout, then off hard only if hardOffAllowed), or restarts it
// (off, then on). It waits for other changes the client makes to the VM.
// progress is told each step; a VM already in the state asked is told so.
func (c *Client) SetVMPower(ctx context.Context, vmID string, action PowerAction, shutdownTimeout time.Duration, hardOffAllowed bool, progress func(string)) error {
	op := fmt.Sprintf("powering virtual machine %s %s", vmID, action)
	if err := malformedVMID(op, vmID); err != nil {
		return err
	}
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	first, err := c.readVMPropsAs(ctx, vc, op, vmID, []string{"name"}, fresh)
	if err != nil {
		return err
	}
	unlock, err := c.vms.lock(ctx, first.Self.Value)
	if err != nil {
		return translate(op, err)
	}
	defer unlock()
	vm, release, err := c.readVMBesideReboots(ctx, vc, op, first.Self.Value, []string{"name", "runtime.powerState", "runtime.host"})
	if err != nil {
		return err
	}
	defer release()
	obj := object.NewVirtualMachine(vc, vm.Self)
	on := vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
	if on && action != PowerActionOn {
		progress("shutting the guest of " + vm.Name + " down")
		why := ""
		err := obj.ShutdownGuest(ctx)
		if err == nil {
			wait, cancel := context.WithTimeout(ctx, shutdownTimeout)
			err = obj.WaitForPowerState(wait, types.VirtualMachinePowerStatePoweredOff)
			cancel()
			why = "did not shut down within " + shutdownTimeout.String()
		} else {
			// vCenter refused the shutdown at once: no VMware Tools, for one.
			why = "could not be shut down: " + messageOf(translate(op, err))
		}
		if err != nil {
			if !hardOffAllowed {
				return &Error{Op: op, Kind: ErrInvalidState, Cause: ErrGuestDidNotShutDown, Message: fmt.Sprintf(
					"the guest of %s %s", vm.Name, why)}
			}
			progress("the guest did not shut down; powering " + vm.Name + " off")
			task, err := obj.PowerOff(ctx)
			if err == nil {
				_, err = c.waitTask(ctx, op, task)
			}
			if err != nil {
				return translate(op, err)
			}
		}
		on = false
	}
	if action == PowerActionOff {
		if !on {
			progress(vm.Name + " is off")
		}
		return nil
	}
	if on {
		progress(vm.Name + " is already on")
		return nil
	}
	progress("powering " + vm.Name + " on")
	task, err := obj.PowerOn(ctx)
	if err == nil {
		_, err = c.waitTask(ctx, op, task)
	}
	return translate(op, err)
}

// PendingDeviceChanges lists a host's devices whose passthrough or SR-IOV
// change waits for a reboot.
func (c *Client) PendingDeviceChanges(ctx context.Context, hostID string) ([]string, error) {
	h, err := c.HostPassthrough(ctx, hostID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range h.Devices {
		pending := d.Enabled != d.Active
		if sr := d.SRIOV; sr != nil {
			pending = pending || sr.Enabled != sr.Active || (sr.Enabled && sr.VFs != sr.VFsRequested)
		}
		if pending {
			out = append(out, d.PCIID)
		}
	}
	return out, nil
}
