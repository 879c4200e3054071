package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// What the VM resources (vspherehpc_vm_pvrdma_nic, vspherehpc_vm_gpu_mmio)
// share: which VM they act on, and the refusal of a change that needs the VM
// powered off.

// privateVM is the private-state key holding a VM resource's managed object
// id, so reads need no search by UUID.
const privateVM = "vm"

// vmRef is the VM to act on: its remembered managed object id, which needs no
// search, else the configured id.
func vmRef(ctx context.Context, p privateState, configured string, diags *diag.Diagnostics) string {
	var moid string
	_, ds := getPrivateJSON(ctx, p, privateVM, &moid)
	diags.Append(ds...)
	return cmp.Or(moid, configured)
}

// readVM reads a VM through vmRef and, when the remembered id is stale (a
// re-registered VM), through the configured id, then through the BIOS UUID
// that starts the resource's id: a VM given by managed object id has a new
// one once registered again, and only its UUID finds it.
func readVM[T any](
	ctx context.Context,
	p privateState,
	configured string,
	resourceID types.String,
	diags *diag.Diagnostics,
	read func(vmID string) (T, error),
) (T, error) {
	uuid, _, _ := strings.Cut(resourceID.ValueString(), ":")
	var got T
	err := vsphere.ErrNotFound
	var tried []string
	for _, vmID := range []string{vmRef(ctx, p, configured, diags), configured, uuid} {
		if vmID == "" || slices.Contains(tried, vmID) {
			continue
		}
		tried = append(tried, vmID)
		if got, err = read(vmID); !vmNotFound(err) {
			break // found, or the VM is there and what is missing is its device
		}
	}
	return got, err
}

// vmNotFound reports whether err says the VM itself is missing.
func vmNotFound(err error) bool {
	var e *vsphere.Error
	return errors.Is(err, vsphere.ErrNotFound) && errors.As(err, &e) && e.Object == vsphere.ObjectVirtualMachine
}

// followVM is virtual_machine_id after a read found the VM: a managed
// object id the VM no longer has (it was registered again) becomes its new
// one, as a look-up of the VM now gives it; a UUID stays.
func followVM(id types.String, vm vsphere.VMRef) types.String {
	if vsphere.IsVMManagedObjectID(id.ValueString()) && vm.MOID != "" && id.ValueString() != vm.MOID {
		return types.StringValue(vm.MOID)
	}
	return id
}

// replaceOnOtherVM plans a replacement when virtual_machine_id names another
// VM, and reports whether it did. The same VM's UUID and managed object id
// swapped for each other replace nothing. In the plan that follows an
// import of this command, another VM is refused instead (what the import
// adopts is the resource's what, say "GPU setup"): the import named the VM.
func replaceOnOtherVM(ctx context.Context, client *vsphere.Client, claims *claimBook, req resource.ModifyPlanRequest, what string,
	state, plan types.String, resp *resource.ModifyPlanResponse) bool {
	if plan.Equal(state) || (!plan.IsUnknown() && sameVM(ctx, client, state.ValueString(), plan.ValueString())) {
		return false
	}
	if !plan.IsUnknown() && importedHere(ctx, claims, req) {
		refuseOther(&resp.Diagnostics, what, []importedOther{{"virtual_machine_id", state.String(), plan.String()}})
	}
	resp.RequiresReplace = append(resp.RequiresReplace, path.Root("virtual_machine_id"))
	return true
}

// sameVM reports whether two VM ids (UUID or managed object id) name one VM.
func sameVM(ctx context.Context, client *vsphere.Client, a, b string) bool {
	if !client.Configured() {
		return false
	}
	ua, err := client.VMUUID(ctx, a)
	if err != nil {
		return false
	}
	ub, err := client.VMUUID(ctx, b)
	return err == nil && ua == ub
}

// addPowerFinding words a planner's power refusal; it reports false for any
// other finding.
func addPowerFinding(diags *diag.Diagnostics, f vsphere.Finding) bool {
	switch f := f.(type) {
	case *vsphere.VMSuspended:
		diags.AddAttributeError(path.Root("virtual_machine_id"), "Virtual machine is suspended",
			fmt.Sprintf("Virtual machine %s is suspended; resume it or power it off first.", f.VM))
	case *vsphere.PowerOffNeeded:
		diags.AddAttributeError(path.Root("power_off_allowed"), "Virtual machine is powered on", f.Error()+". "+powerOffFix+".")
	default:
		return false
	}
	return true
}

// checkDestroyPower refuses, at plan time, a destroy that needs the VM off
// on a VM that runs, unless power_off_allowed is set in state.
func checkDestroyPower(ctx context.Context, client *vsphere.Client, vmID string, powerOffAllowed bool, change string, diags *diag.Diagnostics) {
	f, err := client.PlanVMPower(ctx, vmID, true, powerOffAllowed, change)
	if err != nil {
		return // a VM that is gone or unreadable takes its devices with it; the apply says more
	}
	switch f := f.(type) {
	case *vsphere.VMSuspended:
		diags.AddError("Virtual machine is suspended", fmt.Sprintf("Virtual machine %s is suspended; resume it or power it off first.", f.VM))
	case *vsphere.PowerOffNeeded:
		diags.AddError("Virtual machine is powered on", f.Error()+". "+powerOffFix+" (set it on the resource and apply before destroying).")
	}
}

// notAnAdapterOf says why key names no adapter of vm of this type (label
// names the type to a reader), listing the ones it has; "" when it does
// name one.
func notAnAdapterOf(vm *vsphere.VM, key int64, adapterType, label string) string {
	var ofType []string
	what := ""
	for _, n := range vm.NetworkAdapters {
		if n.Type == adapterType {
			if n.Key == key {
				return ""
			}
			ofType = append(ofType, fmt.Sprintf("%d (on %s)", n.Key, n.NetworkID))
		} else if n.Key == key {
			what = fmt.Sprintf("Device %d of virtual machine %s is a %s adapter, not a %s one.", key, vm.Name, n.Type, label)
		}
	}
	if what == "" {
		what = fmt.Sprintf("Virtual machine %s has no network adapter with device key %d.", vm.Name, key)
	}
	if len(ofType) == 0 {
		return what + fmt.Sprintf(" It has no %s adapter: create the resource instead.", label)
	}
	return what + fmt.Sprintf(" Its %s adapters have device keys %s; import one of those.", label, strings.Join(ofType, ", "))
}

// importAdapter imports a VM's network adapter of adapterType (label names
// the type to a reader) from "<VM UUID or moid>:<device key>" or an identity.
func importAdapter(
	ctx context.Context,
	client *vsphere.Client,
	req resource.ImportStateRequest,
	resp *resource.ImportStateResponse,
	adapterType, label string,
) {
	target, ok := vmDeviceIdentity.target(ctx, req, &resp.Diagnostics)
	if !ok {
		return
	}
	vmID, key := target.VirtualMachineID.ValueString(), target.DeviceKey.ValueInt64()
	importID := vmID + ":" + strconv.FormatInt(key, 10) // in messages only
	vm, err := client.VM(ctx, vmID)
	if err != nil {
		lookupFailed(req, &resp.Diagnostics, "Cannot import "+label+" adapter "+importID, "virtual_machine_id", vmID, err)
		return
	}
	if detail := notAnAdapterOf(vm, key, adapterType, label); detail != "" {
		resp.Diagnostics.AddError("No such "+label+" adapter", detail)
		return
	}
	uuid := strings.ToLower(vm.ID)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("virtual_machine_id"), uuid)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("device_key"), key)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), uuid+":"+strconv.FormatInt(key, 10))...)
}

// claimStaticMAC claims a MAC address the configuration gives an adapter,
// as soon as it is known: one vSphere generates is vCenter's to keep unique.
func claimStaticMAC(
	ctx context.Context,
	claims *claimBook,
	req resource.ModifyPlanRequest,
	resp *resource.ModifyPlanResponse,
	mac types.String,
	kind string,
	vm types.String,
) {
	if mac.IsUnknown() || mac.IsNull() {
		return
	}
	adapter := "a " + kind + " adapter"
	if !vm.IsUnknown() {
		adapter = fmt.Sprintf("the %s adapter of virtual machine %s", kind, vm.ValueString())
	}
	instance := claims.instance(ctx, req, resp)
	addClaimConflict(&resp.Diagnostics, path.Root("mac_address"), claims.claim(instance, macClaim(mac.ValueString(), adapter)))
}

// noteReplaced warns, in the plan of an adapter of kind that moves to
// another VM with its static MAC, that the old adapter must go first: with
// create_before_destroy Terraform adds the new adapter while the old one
// still holds the MAC, and two adapters with one MAC break each other's
// traffic. Terraform tells a provider neither at plan nor at create whether
// a replacement creates first (the framework gives a create no private
// state, and the apply's plan of the new adapter has no prior object), and
// vCenter takes one static MAC on two VMs; so the plan can only warn.
func noteReplaced(resp *resource.ModifyPlanResponse, kind string, movedFrom *vsphere.AdapterAt, mac, vm types.String) {
	if movedFrom == nil || mac.IsNull() || mac.IsUnknown() {
		return
	}
	resp.Diagnostics.AddAttributeWarning(path.Root("mac_address"), kind+" adapter moves with its MAC address",
		fmt.Sprintf("The %s adapter moves from virtual machine %s to %s and keeps MAC address %s, so the old adapter must be removed "+
			"before the new one is added, as Terraform replaces a resource by default. Do not set create_before_destroy on this "+
			"resource: Terraform would add the new adapter first, and for a moment two adapters would have the one MAC.",
			kind, movedFrom.VMID, vm.ValueString(), mac.ValueString()))
}

// readAdapter is the Read of a VM's network adapter resource (kind "PVRDMA"
// or "SR-IOV"): the adapter by the VM's id, following a re-registered VM,
// or nil once the adapter or its VM is gone (removed from state).
func readAdapter[N any](ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse, kind string, id types.String, vm *types.String,
	read func(vmID string) (*N, error), vmOf func(*N) vsphere.VMRef) *N {
	nic, err := readVM(ctx, req.Private, vm.ValueString(), id, &resp.Diagnostics, read)
	if keptAsLastRead(err, "The "+kind+" adapter", &resp.Diagnostics) {
		return nil
	}
	if errors.Is(err, vsphere.ErrNotFound) {
		tflog.Warn(ctx, kind+" adapter or its VM is gone; removing it from state", map[string]any{"id": id.ValueString()})
		resp.State.RemoveResource(ctx)
		return nil
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read "+kind+" adapter "+id.ValueString(), err))
		return nil
	}
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateVM, vmOf(nic).MOID)...)
	*vm = followVM(*vm, vmOf(nic))
	return nic
}

// deleteAdapter is the Delete of a VM's network adapter resource.
func deleteAdapter(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse, kind string, id, vm types.String,
	remove func(vmID string) error) {
	// Through the VM's remembered id, then the ids that find it after it
	// was registered again (a destroy with -refresh=false has not followed
	// it): a VM found by none is gone, and its adapter with it.
	_, err := readVM(ctx, req.Private, vm.ValueString(), id, &resp.Diagnostics, func(vmID string) (struct{}, error) {
		return struct{}{}, remove(vmID)
	})
	if err != nil && !vmNotFound(err) {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot remove "+kind+" adapter "+id.ValueString(), err))
	}
}

// adapterModel is what the plan of a VM's network adapter needs of its model.
type adapterModel interface {
	vm() types.String
	key() int64
	powerOffAllowed() bool
	leaving() vsphere.VMUse // what destroying the adapter takes from its VM
}

func (m *vmPVRDMANICModel) vm() types.String      { return m.VirtualMachineID }
func (m *vmPVRDMANICModel) key() int64            { return m.DeviceKey.ValueInt64() }
func (m *vmPVRDMANICModel) powerOffAllowed() bool { return m.PowerOffAllowed.ValueBool() }
func (m *vmPVRDMANICModel) leaving() vsphere.VMUse {
	return vsphere.VMUse{VM: m.VirtualMachineID.ValueString(), PortGroupID: m.PortGroupID.ValueString()}
}

func (m *vmSRIOVNICModel) vm() types.String      { return m.VirtualMachineID }
func (m *vmSRIOVNICModel) key() int64            { return m.DeviceKey.ValueInt64() }
func (m *vmSRIOVNICModel) powerOffAllowed() bool { return m.PowerOffAllowed.ValueBool() }
func (m *vmSRIOVNICModel) leaving() vsphere.VMUse {
	return vsphere.VMUse{VM: m.VirtualMachineID.ValueString(), PortGroupID: m.PortGroupID.ValueString(),
		PhysicalFunction: cmp.Or(m.AssignedPhysicalFunction.ValueString(), m.PhysicalFunction.ValueString())}
}

// adapterAt is the adapter an adapter resource's id ("<vm id>:<device
// key>") names; nil for no id.
func adapterAt(id string) *vsphere.AdapterAt {
	vm, key, ok := strings.Cut(id, ":")
	k, err := strconv.ParseInt(key, 10, 32)
	if !ok || err != nil {
		return nil
	}
	return &vsphere.AdapterAt{VMID: vm, Key: int32(k)}
}

// planAdapter starts the plan of a VM's network adapter: it reads the prior
// state (nil for a new adapter, or one moving to another VM, which is
// planned as a replacement, and is then movedFrom) and the plan. A destroy records what it takes
// from the VM and checks the VM's power (change says what needs it off); it
// and any failure return ok false: nothing more to plan.
func planAdapter[M any, PM interface {
	*M
	adapterModel
}](ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, client *vsphere.Client, claims *claimBook,
	change string) (state, plan PM, movedFrom *vsphere.AdapterAt, ok bool) {
	if !req.State.Raw.IsNull() {
		state = new(M)
		resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, state)...)
	}
	if !requireVCenter(client, &resp.Diagnostics) {
		return nil, nil, nil, false
	}
	if req.Plan.Raw.IsNull() {
		if state != nil {
			claims.leave(state.leaving())
			checkDestroyPower(ctx, client, state.vm().ValueString(), state.powerOffAllowed(), change, &resp.Diagnostics)
		}
		return nil, nil, nil, false
	}
	plan = new(M)
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, plan)...)
	if resp.Diagnostics.HasError() {
		return nil, nil, nil, false
	}
	if state != nil && replaceOnOtherVM(ctx, client, claims, req, "adapter", state.vm(), plan.vm(), resp) {
		if resp.Diagnostics.HasError() {
			return nil, nil, nil, false
		}
		// The adapter leaves its VM as a destroy would: it frees what it
		// used there, and its VM's power must allow the removal.
		claims.leave(state.leaving())
		checkDestroyPower(ctx, client, state.vm().ValueString(), state.powerOffAllowed(), change, &resp.Diagnostics)
		movedFrom = &vsphere.AdapterAt{VMID: state.vm().ValueString(), Key: int32(state.key())}
		state = nil // planned as a new adapter on the other VM
	}
	if state == nil && movedFrom == nil {
		// Terraform plans a replacement's create in a second call, without
		// prior state: the first call's adapter is in the instance's id.
		movedFrom = adapterAt(claims.instance(ctx, req, resp).priorID)
	}
	return state, plan, movedFrom, true
}
