package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// ModifyPlan checks the GPUs given a type of their own against the host,
// claims the host and those GPUs, and plans reboot_required: whether GPUs
// still wait for the host's graphics to restart after the apply.
func (r *hostGraphicsResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !requireVCenter(r.client, &resp.Diagnostics) ||
		refuseImportOfOther(ctx, r.claims, req, &resp.Diagnostics, "graphics settings", path.Root("host_system_id")) {
		return
	}
	if req.Plan.Raw.IsNull() {
		r.checkDestroy(ctx, req, resp)
		return
	}
	var plan hostGraphicsModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() || plan.HostSystemID.IsUnknown() || plan.DefaultType.IsUnknown() || plan.AssignmentPolicy.IsUnknown() ||
		!fullyKnown(ctx, plan.GPUTypes) {
		return
	}
	settings := plan.settings(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	hostID := plan.HostSystemID.ValueString()
	// One resource per host: a second would undo the first's settings and,
	// on destroy, restore values from before the first. A GPU of its own
	// type is no GPU a host resource of the plan passes through.
	instance := r.claims.instance(ctx, req, resp)
	addClaimConflict(&resp.Diagnostics, path.Root("host_system_id"), r.claims.claim(instance, claim{
		kind: claimHostGraphics, key: hostID, what: "the graphics settings of host " + hostID,
		owner: fmt.Sprintf("a %s with default_graphics_type %s", graphicsType, settings.DefaultType),
	}))
	for _, id := range slices.Sorted(maps.Keys(settings.Devices)) {
		addClaimConflict(&resp.Diagnostics, path.Root("gpu_graphics_types"), r.claims.claim(instance, claim{
			kind: claimHostDevice, key: vsphere.HostDeviceKey(hostID, id), use: useGraphics,
			what:  fmt.Sprintf("PCI device %s of host %s", id, hostID),
			owner: fmt.Sprintf("a %s giving it graphics type %s", graphicsType, settings.Devices[id]),
		}))
	}
	var prior *vsphere.HostGraphicsSettings
	if !req.State.Raw.IsNull() {
		var state hostGraphicsModel
		resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
		s := state.settings(ctx, &resp.Diagnostics)
		prior = &s
		if graphicsSettled(plan, state) {
			// Nothing to set, and no reboot to make: ask vCenter nothing, and
			// keep what the refresh read.
			resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("reboot_required"), state.RebootRequired)...)
			return
		}
	}
	st, err := r.client.HostGraphics(ctx, hostID)
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("host_system_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check the graphics of host "+hostID, err))
		return
	}
	for _, f := range vsphere.PlanHostGraphics(st, settings) {
		addHostGraphicsFinding(&resp.Diagnostics, f)
	}
	pending := graphicsWaiting(st, settings, prior, setInBoot(ctx, req.Private, &resp.Diagnostics))
	if len(pending) > 0 && plan.RebootAllowed.ValueBool() && !resp.Diagnostics.HasError() {
		what := fmt.Sprintf("graphics settings (GPUs %s)", strings.Join(pending, ", "))
		if hr := planReboot(ctx, r.client, r.claims, hostID, what, always, &resp.Diagnostics); hr != nil &&
			r.claims.rebootBesideVMChanges(graphicsType, nil, hr, plan.RebootTimeout, false, &resp.Diagnostics) {
			pending = nil // this apply reboots the host: its GPUs are driven as set after it
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("reboot_required"), len(pending) > 0)...)
	if len(pending) == 0 && slices.ContainsFunc(st.GPUs, func(g vsphere.GPU) bool {
		return !g.PassthroughEnabled && g.GraphicsType != "" && g.GraphicsType != "sharedDirect" &&
			settings.TypeOf(g.PCIID) == "sharedDirect"
	}) {
		// A GPU the apply turns to Shared Direct: the VMs' vGPU checks of
		// this plan wait for the profiles it brings
		// (vsphere.PlannedHostDevices.Graphics).
		r.claims.planSharedDirect(hostID)
	}
	if len(pending) == 0 {
		// GPUs the apply's reboot takes out of Shared Direct: the vGPU
		// checks of this plan's VMs lose the profiles only they offer.
		var leaving []string
		for _, g := range st.GPUs {
			if g.GraphicsType == "sharedDirect" && settings.TypeOf(g.PCIID) != "sharedDirect" {
				leaving = append(leaving, g.PCIID)
			}
		}
		if len(leaving) > 0 {
			r.claims.planLeavingSharedDirect(hostID, leaving)
		}
	}
}

// graphicsSettled: the plan asks the settings state has, and no reboot
// the opt-in would now make is pending.
func graphicsSettled(plan, state hostGraphicsModel) bool {
	return plan.DefaultType.Equal(state.DefaultType) && plan.AssignmentPolicy.Equal(state.AssignmentPolicy) &&
		plan.GPUTypes.Equal(state.GPUTypes) && (!plan.RebootAllowed.ValueBool() || !state.RebootRequired.ValueBool())
}

// checkDestroy plans the reboot a destroy with reboot_allowed makes when
// the settings it puts back change how GPUs are driven.
func (r *hostGraphicsResource) checkDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var state hostGraphicsModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() || !state.RebootAllowed.ValueBool() {
		return
	}
	before, found := state.before(ctx, &resp.Diagnostics)
	hostID := state.HostSystemID.ValueString()
	if !found || resp.Diagnostics.HasError() {
		return
	}
	st, err := r.client.HostGraphics(ctx, hostID)
	if err != nil || len(restoreWaiting(ctx, st, state, before, req.Private, &resp.Diagnostics)) == 0 {
		return // a host gone needs nothing put back; one unreadable fails the destroy itself
	}
	if hr := planDestroyReboot(ctx, r.client, r.claims, hostID, "the graphics settings", always, &resp.Diagnostics); hr != nil {
		r.claims.rebootBesideVMChanges(graphicsType, nil, hr, state.RebootTimeout, true, &resp.Diagnostics)
	}
}
