package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// ModifyPlan checks the plan against vCenter's inventory: the version on
// offer (and never a downgrade), each host's NIC, and each host's ESXi
// version against the switch's.
func (r *rdmaDVSResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !requireVCenter(r.client, &resp.Diagnostics) || refuseImportOfOther(ctx, r.claims, req, &resp.Diagnostics, "distributed switch",
		path.Root("datacenter_id"), path.Root("name"), path.Root("port_group").AtName("name")) {
		return
	}
	var state *rdmaDVSModel
	if !req.State.Raw.IsNull() {
		state = &rdmaDVSModel{}
		resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, state)...)
	}
	if req.Plan.Raw.IsNull() {
		if state != nil {
			r.claims.noteSwitchRead(state.ID.ValueString())
			r.checkDestroy(ctx, r.dvsID(ctx, state, req.Private, &resp.Diagnostics), &resp.Diagnostics)
		}
		return
	}
	var plan rdmaDVSModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if state != nil {
		if !plan.Name.Equal(state.Name) || (plan.PortGroup != nil && state.PortGroup != nil && !plan.PortGroup.Name.Equal(state.PortGroup.Name)) {
			// A new switch of this plan may take the names it gives up, and
			// Terraform may apply that create first: the create waits for
			// this switch's update (in the apply, whose plan also gets here).
			// Said before the switch is known as this configuration's, which
			// lets the new switch's plan take its names.
			r.client.ExpectSwitchRename(state.ID.ValueString())
		}
		r.claims.noteSwitchRead(state.ID.ValueString())
	}
	if resp.Diagnostics.HasError() {
		return
	}
	instance := r.claims.instance(ctx, req, resp)
	r.claimName(instance, &plan, &resp.Diagnostics)
	r.claimUplinks(ctx, instance, &plan, &resp.Diagnostics)
	var configuredVersion types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("version"), &configuredVersion)...)
	p, err := r.client.PlanDVS(ctx, r.change(ctx, &plan, state, configuredVersion, &resp.Diagnostics))
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("datacenter_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check distributed switch "+plan.Name.ValueString(), err))
		return
	}
	if plan.Version.IsUnknown() && !configuredVersion.IsUnknown() && p.Version != "" {
		// A new switch without a version gets vCenter's newest, shown in the plan.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("version"), p.Version)...)
	}
	w := dvsWording{switchName: plan.Name.ValueString(), datacenter: plan.DatacenterID.ValueString(), existing: state != nil}
	for _, f := range p.Findings {
		addDVSFinding(&resp.Diagnostics, f, w)
	}
	warnTeamingUndone(ctx, state, &plan, &resp.Diagnostics)
	r.planMembers(ctx, &plan, state, &resp.Diagnostics)
}

// planMembers records a change of an existing switch's member hosts, so
// that the plan of an adapter on its port group counts the hosts this plan
// adds or takes off (vSphere refuses the adapter unless every host of its
// VM's cluster is a member). The adapter's plan comes after this one when it
// takes its port group from the switch.
func (r *rdmaDVSResource) planMembers(ctx context.Context, plan, state *rdmaDVSModel, diags *diag.Diagnostics) {
	if state == nil || plan.PortGroupID.IsUnknown() || plan.Hosts.IsUnknown() || plan.Hosts.Equal(state.Hosts) {
		return
	}
	var hosts []dvsHostModel
	diags.Append(plan.Hosts.ElementsAs(ctx, &hosts, false)...)
	ids := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if h.HostSystemID.IsUnknown() {
			return
		}
		ids = append(ids, h.HostSystemID.ValueString())
	}
	r.claims.planSwitchHosts(plan.PortGroupID.ValueString(), ids)
}

// warnTeamingUndone says why a plan takes uplinks off a host that joined the
// switch with several (NIC teaming, which PVRDMA does not support): the one
// change an adopted hand-built switch plans.
func warnTeamingUndone(ctx context.Context, state, plan *rdmaDVSModel, diags *diag.Diagnostics) {
	if state == nil || plan.Hosts.IsUnknown() {
		return
	}
	var before, after []dvsHostModel
	diags.Append(state.Hosts.ElementsAs(ctx, &before, false)...)
	diags.Append(plan.Hosts.ElementsAs(ctx, &after, false)...)
	for _, b := range before {
		if !strings.Contains(b.Vmnic.ValueString(), ",") {
			continue
		}
		for _, a := range after {
			if a.HostSystemID.Equal(b.HostSystemID) && !a.Vmnic.IsUnknown() && !strings.Contains(a.Vmnic.ValueString(), ",") {
				diags.AddAttributeWarning(path.Root("host"), "NIC teaming taken off a host",
					fmt.Sprintf("Host %s is joined to switch %s with the uplinks %s. PVRDMA supports no NIC teaming (the HCA must be the "+
						"switch's only uplink on the host), so this plan keeps %s alone.", b.HostSystemID.ValueString(), plan.Name.ValueString(),
						b.Vmnic.ValueString(), a.Vmnic.ValueString()))
			}
		}
	}
}

// refuseHostsInUse refuses, at apply, an update that takes a host off the
// switch while VMs on it still have adapters on its port groups (those a
// destroy of the same apply removed are gone by now: Terraform applies it
// first). It reports whether the update may go on; it reads vCenter only
// when a host leaves.
func (r *rdmaDVSResource) refuseHostsInUse(ctx context.Context, plan, state *rdmaDVSModel, diags *diag.Diagnostics) bool {
	ch := vsphere.DVSHostsChange{SwitchName: plan.Name.ValueString(), SwitchUUID: state.ID.ValueString(),
		Current: dvsHosts(ctx, state.Hosts, diags), Planned: dvsHosts(ctx, plan.Hosts, diags)}
	if diags.HasError() {
		return false
	}
	w := dvsWording{switchName: plan.Name.ValueString(), datacenter: plan.DatacenterID.ValueString(), existing: true, atApply: true}
	for _, f := range r.client.HostsInUse(ctx, ch) {
		addDVSFinding(diags, f, w)
	}
	return !diags.HasError()
}

// change is what the plan changes of the switch, for its planner to check:
// the names when new or renamed, the version when new or changed (and known:
// one known at apply only is checked then), the hosts when known. Like every
// plan-time check, it asks vCenter only about what changes.
func (r *rdmaDVSResource) change(
	ctx context.Context,
	plan, state *rdmaDVSModel,
	configuredVersion types.String,
	diags *diag.Diagnostics,
) vsphere.DVSChange {
	var ch vsphere.DVSChange
	namesKnown := !plan.DatacenterID.IsUnknown() && !plan.Name.IsUnknown() && plan.PortGroup != nil && !plan.PortGroup.Name.IsUnknown()
	renamed := state == nil || !plan.DatacenterID.Equal(state.DatacenterID) || !plan.Name.Equal(state.Name) ||
		state.PortGroup == nil || !plan.PortGroup.Name.Equal(state.PortGroup.Name)
	if namesKnown && renamed {
		ch.Names = &vsphere.DVSNamesChange{
			DatacenterID: plan.DatacenterID.ValueString(),
			SwitchName:   plan.Name.ValueString(),
			PortGroup:    plan.PortGroup.Name.ValueString(),
		}
		if state != nil {
			ch.Names.SwitchUUID, ch.Names.PortGroupKey = state.ID.ValueString(), state.PortGroupKey.ValueString()
		} else {
			ch.Names.Managed = r.claims.switchesRead()
		}
	}
	version := ""
	switch {
	case state != nil && (plan.Version.IsUnknown() || plan.Version.Equal(state.Version)):
		version = state.Version.ValueString() // unchanged
	case configuredVersion.IsUnknown():
		// known at apply only: checked then
	default:
		ch.Version = &vsphere.DVSVersionChange{Wanted: plan.Version.ValueString()}
		if state != nil {
			ch.Version.Current = state.Version.ValueString()
		}
	}
	if !plan.Hosts.IsUnknown() {
		ch.Hosts = &vsphere.DVSHostsChange{SwitchName: plan.Name.ValueString(), Planned: dvsHosts(ctx, plan.Hosts, diags), Version: version}
		if !plan.DatacenterID.IsUnknown() {
			ch.Hosts.DatacenterID = plan.DatacenterID.ValueString()
		}
		if state != nil {
			ch.Hosts.SwitchUUID, ch.Hosts.Current = state.ID.ValueString(), dvsHosts(ctx, state.Hosts, diags)
			ch.Hosts.CurrentVersion = state.Version.ValueString()
			ch.Hosts.Leaving = r.claims.leavingUses()
		}
	}
	return ch
}

// claimName claims the switch's name and its port group's in its
// datacenter: a second switch of the plan with either name would fail at
// create.
func (r *rdmaDVSResource) claimName(instance planInstance, plan *rdmaDVSModel, diags *diag.Diagnostics) {
	if plan.Name.IsUnknown() || plan.DatacenterID.IsUnknown() {
		return
	}
	name, dc := plan.Name.ValueString(), plan.DatacenterID.ValueString()
	addClaimConflict(diags, path.Root("name"), r.claims.claim(instance, claim{
		kind: claimSwitchName, key: dc + " " + name, what: fmt.Sprintf("the switch name %q in datacenter %s", name, dc),
		owner: "a vspherehpc_rdma_dvs",
	}))
	if plan.PortGroup == nil || plan.PortGroup.Name.IsUnknown() {
		return
	}
	pg := plan.PortGroup.Name.ValueString()
	addClaimConflict(diags, path.Root("port_group").AtName("name"), r.claims.claim(instance, claim{
		kind: claimPortGroup, key: dc + " " + pg, what: fmt.Sprintf("the port group name %q in datacenter %s", pg, dc),
		owner: fmt.Sprintf("the port group of switch %q", name),
	}))
}

// claimUplinks claims each host's NIC for this switch, so two switches of
// one configuration cannot both plan to take it.
func (r *rdmaDVSResource) claimUplinks(ctx context.Context, instance planInstance, plan *rdmaDVSModel, diags *diag.Diagnostics) {
	if plan.Name.IsUnknown() || plan.Hosts.IsUnknown() || plan.DatacenterID.IsUnknown() {
		return
	}
	name := plan.Name.ValueString()
	for _, h := range dvsHosts(ctx, plan.Hosts, diags) {
		addClaimConflict(diags, path.Root("host"), r.claims.claim(instance, claim{
			kind: claimUplink, key: h.HostID + " " + h.Vmnic, what: fmt.Sprintf("%s of host %s", h.Vmnic, h.HostID),
			owner: fmt.Sprintf("distributed switch %q", name),
		}))
	}
}

// checkDestroy refuses, at plan time, to destroy a switch whose port groups
// VM adapters still use once the adapters this plan destroys are gone
// (Terraform plans and applies their destroys first): vCenter would refuse.
func (r *rdmaDVSResource) checkDestroy(ctx context.Context, id vsphere.DVSID, diags *diag.Diagnostics) {
	f, err := r.client.PlanDVSDelete(ctx, id, r.claims.leavingUses())
	if err != nil {
		return // the destroy itself says more
	}
	if f != nil {
		addDVSFinding(diags, f, dvsWording{})
	}
}

// addHostTooOld words a host whose ESXi cannot run the planned switch
// version: one that would join (at host) or a member the upgrade would
// leave behind (at version). existing tells an existing switch, which
// cannot be downgraded, from a new one.
func addHostTooOld(diags *diag.Diagnostics, f vsphere.HostTooOld, switchName string, existing bool) {
	newest := fmt.Sprintf("The newest switch version it can run is %s", f.Newest)
	if f.Newest == "" {
		newest = "It can run no switch version vCenter offers"
	}
	rule := "a distributed switch accepts hosts of its own ESXi version or later"
	switch {
	case f.Member:
		diags.AddAttributeError(path.Root("version"), "Member host too old for the switch version",
			fmt.Sprintf("Switch %s cannot be upgraded to version %s: its member host %s (%s) runs ESXi %s, and %s. %s. Upgrade the host "+
				"to ESXi %s or later first, or keep the switch at a version the host can run.",
				switchName, f.Version, f.Host, f.HostID, f.ESXi, rule, newest, f.Version))
	case existing:
		diags.AddAttributeError(path.Root("host"), "Host too old for the switch",
			fmt.Sprintf("Host %s (%s) runs ESXi %s and cannot join switch %s, at version %s: %s, and a switch cannot be downgraded. "+
				"%s. Upgrade the host to ESXi %s or later, or leave it out of the switch.",
				f.Host, f.HostID, f.ESXi, switchName, f.Version, rule, newest, f.Version))
	default:
		if f.Newest != "" {
			newest += fmt.Sprintf(`: set version = %q,`, f.Newest)
		} else {
			newest += ":"
		}
		diags.AddAttributeError(path.Root("host"), "Host too old for the switch version",
			fmt.Sprintf("Host %s (%s) runs ESXi %s and cannot join a version %s distributed switch: %s. %s upgrade the host to "+
				"ESXi %s or later, or leave it out of the switch.",
				f.Host, f.HostID, f.ESXi, f.Version, rule, newest, f.Version))
	}
}

// dvsWording is what the words for a switch's findings need beside them.
type dvsWording struct {
	switchName, datacenter string
	existing               bool // the switch exists (it cannot be downgraded)
	// atApply: worded for the update itself, not its plan. A host in use is
	// a warning at plan: Terraform gives no order between the plan of this
	// switch and that of a destroy of the adapters that use the host (it
	// applies that destroy first), so the plan may not know yet that they go.
	atApply bool
}

// addDVSFinding words one finding of the switch's planners.
func addDVSFinding(diags *diag.Diagnostics, f vsphere.Finding, w dvsWording) {
	at := path.Root("host")
	freeHint := func(c vsphere.NICChoice) string {
		if len(c.FreeRDMA) == 0 {
			return "It has no free RDMA NIC."
		}
		return "Its free RDMA NICs: " + strings.Join(c.FreeRDMA, ", ") + "."
	}
	switch f := f.(type) {
	case vsphere.HostNotChecked:
		if errors.Is(f.Err, vsphere.ErrNotFound) {
			diags.Append(notFoundDiag(at, f.Err))
			return
		}
		diags.Append(vsphereErrorDiag("Cannot check host "+f.HostID, f.Err))
	case vsphere.NICNotOnHost:
		diags.AddAttributeError(at, "No such NIC",
			fmt.Sprintf("Host %s (%s) has no physical NIC %s; its NICs are %s. %s",
				f.Host, f.HostID, f.NIC, strings.Join(f.NICs, ", "), freeHint(f.NICChoice)))
	case vsphere.NICInUse:
		kind := "standard switch"
		if f.Distributed {
			kind = "distributed switch"
		}
		diags.AddAttributeError(at, "NIC already in use",
			fmt.Sprintf("%s on host %s (%s) is an uplink of %s %q. Free it there, or choose another NIC. %s",
				f.NIC, f.Host, f.HostID, kind, f.Switch, freeHint(f.NICChoice)))
	case vsphere.NICWithoutRDMA:
		diags.AddAttributeWarning(at, "NIC without RDMA",
			fmt.Sprintf("%s on host %s (%s) has no RDMA device, so PVRDMA adapters on this switch fall back to TCP on that host. %s",
				f.NIC, f.Host, f.HostID, freeHint(f.NICChoice)))
	case vsphere.NICLinkDown:
		diags.AddAttributeWarning(at, "NIC link down",
			fmt.Sprintf("%s on host %s (%s) has no link: check its cable and the physical switch port.", f.NIC, f.Host, f.HostID))
	case vsphere.HostTooOld:
		addHostTooOld(diags, f, w.switchName, w.existing)
	case vsphere.HostInUse:
		if !w.atApply {
			diags.AddAttributeWarning(at, "Host in use",
				fmt.Sprintf("Host %s (%s) leaves switch %s, but virtual machines on it have adapters on the switch's port groups: %s. "+
					"Unless a resource of this plan removes them (Terraform removes them before it changes the switch), the apply "+
					"refuses, as vCenter would: remove those adapters first (destroy their vspherehpc_vm_pvrdma_nic or "+
					"vspherehpc_vm_sriov_nic, or remove them in vCenter), or move the VMs to a host that stays.",
					f.Host, f.HostID, w.switchName, vsphere.DescribeSwitchUsers(f.Users)))
			return
		}
		diags.AddAttributeError(at, "Host still in use",
			fmt.Sprintf("Host %s (%s) cannot leave switch %s: virtual machines on it have adapters that this configuration does not "+
				"remove on the switch's port groups: %s. vCenter refuses to remove a host from a switch while they do: remove those "+
				"adapters first (destroy their vspherehpc_vm_pvrdma_nic or vspherehpc_vm_sriov_nic, or remove them in vCenter), or "+
				"move the VMs to a host that stays, then remove the host.",
				f.Host, f.HostID, w.switchName, vsphere.DescribeSwitchUsers(f.Users)))
	case vsphere.HostInOtherDatacenter:
		diags.AddAttributeError(at, "Host of another datacenter",
			fmt.Sprintf("Host %s (%s) is in datacenter %s (%s), not in %s, the datacenter of switch %s: a distributed switch takes the "+
				"hosts of its own datacenter only, and vCenter would refuse the host at apply. Leave the host out of this switch, or give "+
				"it a switch in datacenter %s.", f.Host, f.HostID, f.Datacenter, f.DatacenterID, f.SwitchDatacenterID, f.SwitchName, f.DatacenterID))
	case vsphere.VersionNotOffered:
		diags.AddAttributeError(path.Root("version"), "Switch version not offered",
			fmt.Sprintf("vCenter offers distributed switch versions %s, not %s.", listOrNone(f.Offered), f.Wanted))
	case vsphere.DowngradeRefused:
		diags.AddAttributeError(path.Root("version"), "Switch downgrade refused",
			fmt.Sprintf("Switch %s is at version %s; vSphere cannot downgrade a distributed switch to %s. Keep %s, or replace the "+
				"switch (terraform apply -replace) once no VM uses it.", w.switchName, f.Current, f.Wanted, f.Current))
	case vsphere.NameTaken:
		if f.For == vsphere.ObjectSwitch {
			diags.AddAttributeError(path.Root("name"), "Switch name taken",
				fmt.Sprintf("Datacenter %s already has a distributed switch called %q (%s); vCenter keeps switch names unique in a "+
					"datacenter. Choose another name, or import that switch (terraform import on this resource with its UUID) to "+
					"manage it. If this configuration renames that switch, make this switch depend on the switch's resource "+
					"(depends_on): Terraform then plans and applies the rename first.", w.datacenter, f.Name, f.ID))
			return
		}
		if f.OnSwitch {
			diags.AddAttributeError(path.Root("port_group").AtName("name"), "Port group name taken",
				fmt.Sprintf("Switch %s already has a port group called %q (%s), which this resource does not manage. To manage it, "+
					"import the switch as <UUID>:%s; otherwise choose another port group name.", w.switchName, f.Name, f.ID, f.Name))
			return
		}
		diags.AddAttributeError(path.Root("port_group").AtName("name"), "Port group name taken",
			fmt.Sprintf("Datacenter %s already has a %s called %q (%s); vCenter keeps network names unique in a datacenter, and "+
				"standard port groups such as \"VM Network\" count. Choose another port group name.", w.datacenter, f.TakenBy, f.Name, f.ID))
	case vsphere.SwitchInUse:
		diags.AddError("Switch still in use",
			fmt.Sprintf("VM network adapters that this configuration does not remove still use the port groups of switch %s: %s. "+
				"vCenter refuses to destroy a switch while they do: remove those adapters first (destroy their "+
				"vspherehpc_vm_pvrdma_nic or vspherehpc_vm_sriov_nic, or remove them in vCenter), then destroy the switch.",
				f.Switch, vsphere.DescribeSwitchUsers(f.Users)))
	default:
		unexpectedFinding(diags, f)
	}
}

// uplinkNamesPlan keeps uplink_names known while uplink_count is unchanged.
type uplinkNamesPlan struct{}

func (uplinkNamesPlan) Description(context.Context) string {
	return "uplink_names follow uplink_count"
}

func (p uplinkNamesPlan) MarkdownDescription(ctx context.Context) string { return p.Description(ctx) }

func (uplinkNamesPlan) PlanModifyList(ctx context.Context, req planmodifier.ListRequest, resp *planmodifier.ListResponse) {
	var count types.Int64
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("uplink_count"), &count)...)
	if count.IsUnknown() || count.IsNull() {
		return
	}
	if !req.StateValue.IsNull() && int64(len(req.StateValue.Elements())) == count.ValueInt64() {
		resp.PlanValue = req.StateValue // the count is what is managed; names stay
		return
	}
	names, diags := types.ListValueFrom(ctx, types.StringType, vsphere.UplinkNames(int(count.ValueInt64())))
	resp.Diagnostics.Append(diags...)
	resp.PlanValue = names
}

// autoExpandedPorts keeps the port count vCenter grew by auto-expansion:
// with auto_expand, port_count is a minimum, so more ports is not drift.
type autoExpandedPorts struct{}

func (autoExpandedPorts) Description(context.Context) string {
	return "with auto_expand, ports added by vCenter are kept"
}

func (p autoExpandedPorts) MarkdownDescription(ctx context.Context) string { return p.Description(ctx) }

func (autoExpandedPorts) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if req.StateValue.IsNull() || req.PlanValue.IsUnknown() || req.StateValue.ValueInt64() <= req.PlanValue.ValueInt64() {
		return
	}
	var autoExpand types.Bool
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, req.Path.ParentPath().AtName("auto_expand"), &autoExpand)...)
	if autoExpand.ValueBool() {
		resp.PlanValue = req.StateValue
	}
}
