package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// ModifyPlan checks the vmknic against the host's adapters while planning,
// so a typo fails the plan with the adapters listed, not the apply.
func (r *hostPVRDMASettingsResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !requireVCenter(r.client, &resp.Diagnostics) || req.Plan.Raw.IsNull() ||
		refuseImportOfOther(ctx, r.claims, req, &resp.Diagnostics, "PVRDMA settings", path.Root("host_system_id")) {
		return
	}
	var plan hostPVRDMASettingsModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() || plan.HostSystemID.IsUnknown() || plan.Vmknic.IsUnknown() {
		return
	}
	// One resource per host: a second would undo the first's settings and,
	// on destroy, restore values from before the first.
	instance := r.claims.instance(ctx, req, resp)
	hostID := plan.HostSystemID.ValueString()
	addClaimConflict(&resp.Diagnostics, path.Root("host_system_id"), r.claims.claim(instance, claim{
		kind: claimHostSettings, key: hostID, what: "the PVRDMA settings of host " + hostID,
		owner: fmt.Sprintf("a vspherehpc_host_pvrdma_settings with vmknic %s", plan.Vmknic.ValueString()),
	}))
	if !req.State.Raw.IsNull() {
		var state hostPVRDMASettingsModel
		resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
		if plan.Vmknic.Equal(state.Vmknic) {
			return // the refresh just read it from the host: nothing to check
		}
	}
	findings, err := r.client.PlanHostPVRDMA(ctx, plan.HostSystemID.ValueString(), vsphere.PVRDMASettings{Vmknic: plan.Vmknic.ValueString()})
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("host_system_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check the PVRDMA settings", err))
		return
	}
	for _, f := range findings {
		addHostPVRDMAFinding(&resp.Diagnostics, f)
	}
}

// addHostPVRDMAFinding words one finding of the host settings' planner.
func addHostPVRDMAFinding(diags *diag.Diagnostics, f vsphere.Finding) {
	switch f := f.(type) {
	case vsphere.NoSuchVmknic:
		diags.AddAttributeError(path.Root("vmknic"), "No such VMkernel adapter",
			fmt.Sprintf("Host %s (%s) has no VMkernel adapter %s; its adapters are %s. Set vmknic to the adapter on the network "+
				"the hosts' PVRDMA traffic uses.", f.Host, f.HostID, f.Vmknic, listOrNone(f.Vmknics)))
	default:
		unexpectedFinding(diags, f)
	}
}
