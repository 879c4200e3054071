package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// claimDevices claims the resolved devices of a planned passthrough, so no
// other instance of the plan takes them (a second passthrough, or SR-IOV).
func (r *hostPCIPassthroughResource) claimDevices(instance planInstance, ch vsphere.PassthroughChange, devices []string, diags *diag.Diagnostics) {
	owner := fmt.Sprintf("a vspherehpc_host_pci_passthrough on %s with %s", ch.HostID, strings.Join(devices, ", "))
	for _, id := range devices {
		addClaimConflict(diags, path.Root("pci_ids"), r.claims.claim(instance, claim{
			kind: claimHostDevice, key: vsphere.HostDeviceKey(ch.HostID, id), use: usePassthrough,
			what: fmt.Sprintf("PCI device %s of host %s", id, ch.HostID), owner: owner,
		}))
	}
}

// ModifyPlan resolves the devices, refuses what cannot be passed through or
// is still in use, and plans each device on; a device turned on now leaves
// reboot_required unknown, unless this apply reboots the host: then it is
// planned false and the devices active.
func (r *hostPCIPassthroughResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !requireVCenter(r.client, &resp.Diagnostics) ||
		refuseImportOfOther(ctx, r.claims, req, &resp.Diagnostics, "passthrough", path.Root("host_system_id"), path.Root("pci_ids")) {
		return
	}
	var state hostPCIPassthroughModel
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	}
	before := passthroughBefore(ctx, state, req.Private, &resp.Diagnostics)
	labelsBefore := stringMapOf(ctx, state.LabelsBefore, &resp.Diagnostics)
	if req.Plan.Raw.IsNull() {
		ch := vsphere.PassthroughChange{HostID: state.HostSystemID.ValueString(), Disabling: turnedBackOff(before), Leaving: r.claims.leavingUses()}
		if p, err := r.client.PlanHostPassthrough(ctx, ch); err == nil {
			addPassthroughFindings(&resp.Diagnostics, p.Findings)
			if !resp.Diagnostics.HasError() && state.RebootAllowed.ValueBool() && len(ch.Disabling) > 0 {
				if hr := planDestroyReboot(ctx, r.client, r.claims, ch.HostID, "the passthrough", withoutRebind, &resp.Diagnostics); hr != nil {
					r.claims.rebootBesideVMChanges(passthroughType, ch.Disabling, hr, state.RebootTimeout, true, &resp.Diagnostics)
				}
			}
		}
		return
	}
	var plan hostPCIPassthroughModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() || plan.HostSystemID.IsUnknown() || !fullyKnown(ctx, plan.PCIIDs) || !fullyKnown(ctx, plan.Match) {
		return
	}
	instance := r.claims.instance(ctx, req, resp)
	if req.State.Raw.IsNull() {
		before = nil // a new resource turns nothing off
	} else if devices, ok := r.unchanged(ctx, &plan, req.State, &resp.Diagnostics); ok {
		// Like every plan-time check, ask vCenter only about what changes;
		// the devices are still this resource's claim.
		r.claimDevices(instance, r.change(ctx, &plan, nil, &resp.Diagnostics), devices, &resp.Diagnostics)
		r.planLabels(plan, devices)
		planBefore(ctx, before, devices, resp)
		return
	}
	ch := r.change(ctx, &plan, before, &resp.Diagnostics)
	if len(ch.PCIIDs) == 0 && len(ch.Match) == 0 {
		resp.Diagnostics.AddError("No devices", "Give the devices to pass through in pci_ids, or select them with match blocks.")
		return
	}
	p, err := r.client.PlanHostPassthrough(ctx, ch)
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("host_system_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check PCI passthrough", err))
		return
	}
	addPassthroughFindings(&resp.Diagnostics, p.Findings)
	want := p.Want
	ids := make([]string, len(want))
	for i, d := range want {
		ids[i] = d.PCIID
	}
	r.claimDevices(instance, ch, ids, &resp.Diagnostics)
	r.planLabels(plan, ids)
	planned := make([]passthroughDeviceModel, 0, len(want))
	turningOn, pendingReboot := false, false
	for _, d := range want {
		// A device turned on now may need a reboot: unknown. One already on
		// keeps what the host says, so waiting for a reboot is no diff.
		active := types.BoolUnknown()
		if d.Enabled {
			active = types.BoolValue(d.Active)
			pendingReboot = pendingReboot || !d.Active
		} else {
			turningOn = true
		}
		planned = append(planned, passthroughDeviceModel{
			PCIID: types.StringValue(d.PCIID), VendorID: types.StringValue(d.VendorID), DeviceID: types.StringValue(d.DeviceID),
			DeviceName: types.StringValue(d.DeviceName), Enabled: types.BoolValue(true), Active: active,
			HardwareLabel: types.StringValue(plannedLabel(plan.HardwareLabel, d, labelsBefore)),
		})
		if plan.HardwareLabel.IsUnknown() { // known once the apply's plan has it
			planned[len(planned)-1].HardwareLabel = types.StringUnknown()
		}
	}
	reboot := types.BoolValue(pendingReboot)
	if turningOn {
		reboot = types.BoolUnknown()
	}
	// Only what changes now reboots: a device turned on, one waiting for a
	// reboot, one dropped that the apply puts back. A device still listed,
	// however it was before this resource took it, changes nothing.
	puttingBack := false
	for id, was := range before {
		if d := p.Host.Device(id); d != nil && d.Enabled != was && !slices.Contains(ids, id) {
			puttingBack = true
		}
	}
	if (turningOn || pendingReboot || puttingBack) && plan.RebootAllowed.ValueBool() && !resp.Diagnostics.HasError() &&
		r.rebootPlanned(ids, planReboot(ctx, r.client, r.claims, ch.HostID, "passthrough changes", withoutRebind, &resp.Diagnostics), plan.RebootTimeout,
			&resp.Diagnostics) {
		// This apply reboots the host: what it turns on is active after it.
		reboot = types.BoolValue(false)
		for i := range planned {
			planned[i].Active = types.BoolValue(true)
		}
	}
	if !req.State.Raw.IsNull() { // a new resource's record is read at apply, from what is in effect then
		planBefore(ctx, before, ids, resp)
	}
	devices, ds := types.ListValueFrom(ctx, passthroughDeviceType, planned)
	resp.Diagnostics.Append(ds...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("devices"), devices)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("reboot_required"), reboot)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("id"), ch.HostID)...)
}

// planLabels records the hardware label the plan gives the devices (PCI
// ids), for the pools of VM resources planned after this one.
func (r *hostPCIPassthroughResource) planLabels(plan hostPCIPassthroughModel, devices []string) {
	if plan.HardwareLabel.IsNull() || plan.HardwareLabel.IsUnknown() {
		return
	}
	keys := make([]string, len(devices))
	for i, id := range devices {
		keys[i] = vsphere.HostDeviceKey(plan.HostSystemID.ValueString(), id)
	}
	r.claims.planLabels(keys, plan.HardwareLabel.ValueString())
}

// passthroughType is the resource's type name, for messages.
const passthroughType = "vspherehpc_host_pci_passthrough"

// rebootPlanned records a reboot planReboot decided (hr, nil for none) for
// the devices (by PCI id, sorted) beside the VM changes of the plan, and
// reports whether it stands.
func (r *hostPCIPassthroughResource) rebootPlanned(devices []string, hr *vsphere.HostReboot, timeout types.String, diags *diag.Diagnostics) bool {
	return hr != nil && r.claims.rebootBesideVMChanges(passthroughType, devices, hr, timeout, false, diags)
}

// planBefore plans what destroy restores after an update that manages
// devices: known when they are all recorded already (the devices dropped
// leave the record), else read at apply, from what is in effect then.
func planBefore(ctx context.Context, before map[string]bool, devices []string, resp *resource.ModifyPlanResponse) {
	after := map[string]bool{}
	for _, id := range devices {
		was, ok := before[id]
		if !ok {
			resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("passthrough_before"), types.MapUnknown(types.BoolType))...)
			return
		}
		after[id] = was
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("passthrough_before"), boolMap(after))...)
}

// unchanged reports whether the configuration is as in state and every
// managed device has passthrough on and active: then the plan is the state.
// match is resolved again when the configuration changes, not on every plan.
// It returns the managed devices' PCI ids.
func (r *hostPCIPassthroughResource) unchanged(
	ctx context.Context,
	plan *hostPCIPassthroughModel,
	state tfsdk.State,
	diags *diag.Diagnostics,
) ([]string, bool) {
	var prior hostPCIPassthroughModel
	diags.Append(getModel(ctx, state.Schema, state.Raw, &prior)...)
	if diags.HasError() || !plan.PCIIDs.Equal(prior.PCIIDs) || !plan.Match.Equal(prior.Match) || !plan.HardwareLabel.Equal(prior.HardwareLabel) {
		return nil, false
	}
	var devices []passthroughDeviceModel
	diags.Append(prior.Devices.ElementsAs(ctx, &devices, true)...)
	ids := make([]string, 0, len(devices))
	for _, d := range devices {
		if !d.Enabled.ValueBool() || !d.Active.ValueBool() {
			return nil, false
		}
		ids = append(ids, d.PCIID.ValueString())
	}
	// Every listed device must be managed: one missing from devices (state
	// written before gone devices were kept) is checked again.
	var listed []string
	if !plan.PCIIDs.IsNull() {
		diags.Append(plan.PCIIDs.ElementsAs(ctx, &listed, false)...)
	}
	for _, id := range listed {
		if !slices.Contains(ids, id) {
			return nil, false
		}
	}
	return ids, len(ids) > 0
}

// addPassthroughFindings words the findings of the passthrough planner, at
// plan and again at apply (for what changed in between).
func addPassthroughFindings(diags *diag.Diagnostics, findings []vsphere.Finding) {
	for _, f := range findings {
		switch f := f.(type) {
		case vsphere.DeviceNotOnHost:
			diags.AddAttributeError(path.Root("pci_ids"), "No such PCI device",
				fmt.Sprintf("Host %s has no PCI device %s. Its devices that can be passed through: %s.", f.Host, f.PCIID, listOrNone(f.Capable)))
		case vsphere.DeviceNotCapable:
			diags.AddAttributeError(path.Root("pci_ids"), "Device cannot be passed through",
				fmt.Sprintf("PCI device %s (%s) on host %s cannot be passed through (ESXi reports it not passthrough-capable). "+
					"Choose a device with passthrough_capable = true in data.vspherehpc_host's pci_devices; if this one should be "+
					"capable, check that VT-d or AMD-Vi (IOMMU) is on in the host's firmware.", f.PCIID, strings.TrimSpace(f.Name), f.Host))
		case vsphere.DeviceUsedByHost:
			diags.AddAttributeError(path.Root("pci_ids"), "Device used by the host",
				fmt.Sprintf("PCI device %s of host %s is %s, an uplink of switch %q: passing it through takes it from the host's "+
					"network. Move the switch to another NIC first, or choose another device.", f.PCIID, f.Host, f.NIC, f.Switch))
		case vsphere.NoDeviceMatches:
			diags.AddAttributeError(path.Root("match"), "No device matches",
				fmt.Sprintf("Host %s has no device with vendor id %s and device id %s that can be passed through; vspherehpc_host "+
					"lists its devices.", f.Host, f.VendorID, f.DeviceID))
		case vsphere.DeviceServesVFs:
			users := ""
			if len(f.VMs) > 0 {
				users = " Virtual machines " + strings.Join(f.VMs, ", ") + " use its virtual functions and would lose them."
			}
			diags.AddAttributeError(path.Root("pci_ids"), "Device serves SR-IOV virtual functions",
				fmt.Sprintf("PCI device %s (%s) of host %s has SR-IOV on with %d virtual functions.%s A card is either passed through "+
					"whole or split into virtual functions, never both: turn SR-IOV off first (destroy its vspherehpc_host_sriov, once "+
					"no VM uses its virtual functions), or pass through one of its virtual functions instead.", f.PCIID, f.Name, f.Host, f.VFs, users))
		case vsphere.DeviceUsedByVMs:
			diags.AddError("Device still used by VMs",
				fmt.Sprintf("Passthrough of PCI device %s of host %s would go back off, but virtual machines %s are configured "+
					"with it and would not power on. Remove the device from them first (their vspherehpc_vm_gpu_mmio, in an apply of "+
					"its own: a host's change is applied before its VMs'), or keep it listed.", f.PCIID, f.Host, strings.Join(f.VMs, ", ")))
		case vsphere.DeviceSharedAsVGPUs:
			addSharedAsVGPUs(diags, f)
		default:
			unexpectedFinding(diags, f)
		}
	}
}

// addSharedAsVGPUs words passthrough of a GPU in Shared Direct: a refusal
// while VMs' vGPUs run on it, as they would not power on again; else a
// warning, as the host's graphics settings still share it.
func addSharedAsVGPUs(diags *diag.Diagnostics, f vsphere.DeviceSharedAsVGPUs) {
	gpu := fmt.Sprintf("GPU %s (%s) of host %s is shared as NVIDIA vGPUs (graphics type Shared Direct). Passed through, it is "+
		"taken whole from the host's vGPU manager: one GPU is either passed through to one VM or shared as vGPUs, never both.",
		f.PCIID, strings.TrimSpace(f.Name), f.Host)
	graphics := "take the GPU out of Shared Direct first, in an apply of its own: vspherehpc_host_graphics with gpu_graphics_types = { \"" +
		f.PCIID + "\" = \"shared\" } (or default_graphics_type = \"shared\") and the host's reboot"
	if len(f.VMs) == 0 {
		diags.AddWarning("GPU shared as vGPUs", fmt.Sprintf("%s No running VM has a vGPU on it now, but none will get one there "+
			"any more. To pass it through, %s; to keep sharing it, leave it out of pci_ids and match.", gpu, graphics))
		return
	}
	diags.AddError("GPU shared as vGPUs", fmt.Sprintf("%s The vGPUs of running virtual machines %s are on it: once the host applies "+
		"the passthrough, those VMs do not power on again. Move them to another host that offers their vGPU profiles, or remove "+
		"their vGPUs (their vspherehpc_vm_gpu_mmio), or power them off if they are not to run here again; then %s. Or leave the GPU "+
		"out of pci_ids and match.", gpu, strings.Join(f.VMs, ", "), graphics))
}
