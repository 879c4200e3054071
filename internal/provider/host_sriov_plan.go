package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// ModifyPlan checks the function and the count when either changes, and a
// destroy's restore against the VMs' use of the virtual functions.
func (r *hostSRIOVResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !requireVCenter(r.client, &resp.Diagnostics) ||
		refuseImportOfOther(ctx, r.claims, req, &resp.Diagnostics, "SR-IOV function", path.Root("host_system_id"), path.Root("pci_id")) {
		return
	}
	if req.Plan.Raw.IsNull() {
		r.checkDestroy(ctx, req, resp)
		return
	}
	var plan hostSRIOVModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() || plan.HostSystemID.IsUnknown() || plan.PCIID.IsUnknown() || plan.VFs.IsUnknown() {
		return
	}
	instance := r.claims.instance(ctx, req, resp)
	hostID, pciID := plan.HostSystemID.ValueString(), plan.PCIID.ValueString()
	addClaimConflict(&resp.Diagnostics, path.Root("pci_id"), r.claims.claim(instance, claim{
		kind: claimHostDevice, key: vsphere.HostDeviceKey(hostID, pciID), use: useSRIOV,
		what:  fmt.Sprintf("PCI device %s of host %s", pciID, hostID),
		owner: fmt.Sprintf("a vspherehpc_host_sriov with %d virtual functions", plan.VFs.ValueInt64()),
	}))
	// What the same plan's SR-IOV adapters count on: the count once it is
	// in effect in this apply, not one waiting for a reboot.
	inEffect := func() { r.claims.planVFs(vsphere.HostDeviceKey(hostID, pciID), int(plan.VFs.ValueInt64())) }
	if !req.State.Raw.IsNull() {
		var state hostSRIOVModel
		resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
		if sriovSettled(plan, state) {
			inEffect()
			// Nothing changes on the host (only reboot_allowed or
			// reboot_timeout may): ask vCenter nothing, and keep what state
			// knows, so dependants on virtual_function_ids plan no change.
			for p, v := range map[string]attr.Value{
				"active_virtual_functions": state.ActiveVFs, "virtual_function_ids": state.VFIDs, "reboot_required": state.RebootRequired,
			} {
				resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(p), v)...)
			}
			return
		}
	}
	p, err := r.client.PlanHostSRIOV(ctx, plan.HostSystemID.ValueString(), plan.PCIID.ValueString(), int(plan.VFs.ValueInt64()))
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("host_system_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check SR-IOV", err))
		return
	}
	for _, f := range p.Findings {
		addHostSRIOVFinding(&resp.Diagnostics, f, "Keep enough virtual functions, or remove the adapters (vspherehpc_vm_sriov_nic) or "+
			"passed-through functions (vspherehpc_vm_gpu_mmio) first.")
	}
	if d := p.Device; d != nil && d.SRIOV != nil {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("max_virtual_functions"), int64(d.SRIOV.MaxVFs))...)
	}
	appliesNow := p.AppliesNow
	if !appliesNow && plan.RebootAllowed.ValueBool() && !resp.Diagnostics.HasError() {
		what := fmt.Sprintf("SR-IOV of %s with %d virtual functions", pciID, plan.VFs.ValueInt64())
		hr := planReboot(ctx, r.client, r.claims, hostID, what, withoutRebind, &resp.Diagnostics)
		// This apply reboots the host: the virtual functions exist after it.
		appliesNow = hr != nil && r.claims.rebootBesideVMChanges(sriovType, []string{pciID}, hr, plan.RebootTimeout, false, &resp.Diagnostics)
	}
	if appliesNow && !resp.Diagnostics.HasError() {
		inEffect()
	}
	switch {
	case resp.Diagnostics.HasError():
	case !req.State.Raw.IsNull():
		r.planVFs(ctx, p.Device, int(plan.VFs.ValueInt64()), appliesNow, resp)
	case appliesNow:
		// New, and applied in this apply: the VFs exist after it, their ids
		// known then.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("active_virtual_functions"), plan.VFs.ValueInt64())...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("reboot_required"), false)...)
	}
}

// sriovType is the resource's type name, for messages.
const sriovType = "vspherehpc_host_sriov"

// sriovSettled: the plan asks the count state has, and the host has it in
// effect, with no reboot pending: applying it changes nothing on the host.
func sriovSettled(plan, state hostSRIOVModel) bool {
	return plan.VFs.Equal(state.VFs) && state.ActiveVFs.Equal(state.VFs) && !state.RebootRequired.ValueBool()
}

// planVFs plans what an update leaves of the virtual functions, so only
// what changes is unknown: applied now (or by this apply's reboot), VF k
// keeps its PCI id and only VFs beyond those that exist are new; waiting
// for a reboot, the VFs that exist stay as they are.
func (r *hostSRIOVResource) planVFs(ctx context.Context, d *vsphere.PassthroughDevice, want int, appliesNow bool, resp *resource.ModifyPlanResponse) {
	if d == nil || d.SRIOV == nil || len(d.SRIOV.VFIDs) != d.SRIOV.VFs {
		return // the VFs' ids are ambiguous (see vfIDsCaveat): leave them unknown
	}
	have := d.SRIOV.VFIDs
	ids := make([]attr.Value, 0, want)
	active, reboot := int64(want), false
	if appliesNow {
		for i := range want {
			if i < len(have) {
				ids = append(ids, types.StringValue(have[i]))
			} else {
				ids = append(ids, types.StringUnknown())
			}
		}
	} else {
		for _, id := range have {
			ids = append(ids, types.StringValue(id))
		}
		active, reboot = int64(d.SRIOV.VFs), true
	}
	list, ds := types.ListValue(types.StringType, ids)
	resp.Diagnostics.Append(ds...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("virtual_function_ids"), list)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("active_virtual_functions"), active)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("reboot_required"), reboot)...)
}

// addVFsInUse words the VMs that would be left without their virtual
// functions.
func addVFsInUse(diags *diag.Diagnostics, at path.Path, f vsphere.VFsInUse, fix string) {
	var users []string
	if f.Adapters > 0 {
		users = append(users, fmt.Sprintf("%d SR-IOV adapters of virtual machines %s, each needing a virtual function of its own at power on",
			f.Adapters, strings.Join(f.VMs, ", ")))
	}
	for _, p := range f.Pinned {
		users = append(users, fmt.Sprintf("virtual function %d (%s), passed through to %s", p.Index, p.PCIID, strings.Join(p.VMs, ", ")))
	}
	diags.AddAttributeError(at, "Virtual functions in use",
		fmt.Sprintf("Physical function %s of host %s serves %s. %d virtual functions would leave some VM without its own, and such "+
			"a VM does not power on. %s", f.PCIID, f.Host, strings.Join(users, "; "), f.Wanted, fix))
}

const restoreFix = "Destroy puts back what the function had before this resource: remove the VMs' use of its virtual functions first."

// checkDestroy refuses, at plan time, a restore that would take virtual
// functions from VMs, once the uses this plan destroys are gone (Terraform
// plans and applies their destroys first).
func (r *hostSRIOVResource) checkDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	state, before := restoreOf(ctx, req.State, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	f, err := r.client.PlanSRIOVRestore(ctx, state.HostSystemID.ValueString(), state.PCIID.ValueString(), before, r.claims.leavingUses())
	if f != nil && err == nil {
		addHostSRIOVFinding(&resp.Diagnostics, f, restoreFix)
		return
	}
	if err == nil && state.RebootAllowed.ValueBool() && int64(before) != state.VFs.ValueInt64() {
		what := "SR-IOV of " + state.PCIID.ValueString()
		if hr := planDestroyReboot(ctx, r.client, r.claims, state.HostSystemID.ValueString(), what, withoutRebind, &resp.Diagnostics); hr != nil {
			r.claims.rebootBesideVMChanges(sriovType, []string{state.PCIID.ValueString()}, hr, state.RebootTimeout, true, &resp.Diagnostics)
		}
	}
}

// addHostSRIOVFinding words one finding of the SR-IOV planner; fix says how
// to keep VMs their virtual functions.
func addHostSRIOVFinding(diags *diag.Diagnostics, f vsphere.Finding, fix string) {
	switch f := f.(type) {
	case vsphere.DeviceNotOnHost:
		diags.AddAttributeError(path.Root("pci_id"), "No such PCI device",
			fmt.Sprintf("Host %s has no PCI device %s. Its SR-IOV capable devices: %s.", f.Host, f.PCIID, listOrNone(f.Capable)))
	case vsphere.NotSRIOVCapable:
		diags.AddAttributeError(path.Root("pci_id"), "Not an SR-IOV function",
			fmt.Sprintf("PCI device %s (%s) of host %s is not SR-IOV capable (for a ConnectX card, enable SR-IOV in its firmware "+
				"with mlxconfig and reboot). Its SR-IOV capable devices: %s.", f.PCIID, f.Name, f.Host, listOrNone(f.Capable)))
	case vsphere.TooManyVFs:
		diags.AddAttributeError(path.Root("num_virtual_functions"), "Too many virtual functions",
			fmt.Sprintf("PCI device %s of host %s supports at most %d virtual functions, not %d.", f.PCIID, f.Host, f.Max, f.Wanted))
	case vsphere.PassedThroughWhole:
		users := "No VM is configured with it now, but passthrough is on for it."
		if len(f.VMs) > 0 {
			users = "Virtual machines " + strings.Join(f.VMs, ", ") + " are configured with it and would lose it."
		}
		diags.AddAttributeError(path.Root("pci_id"), "Device passed through whole",
			fmt.Sprintf("PCI device %s (%s) of host %s is passed through whole. %s A card is either passed through whole or split "+
				"into SR-IOV virtual functions, never both: remove the device from those VMs and from its "+
				"vspherehpc_host_pci_passthrough first (one apply), then turn SR-IOV on.", f.PCIID, f.Name, f.Host, users))
	case vsphere.VFsInUse:
		addVFsInUse(diags, path.Root("num_virtual_functions"), f, fix)
	default:
		unexpectedFinding(diags, f)
	}
}
