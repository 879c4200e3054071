package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ resource.Resource                = (*hostSRIOVResource)(nil)
	_ resource.ResourceWithConfigure   = (*hostSRIOVResource)(nil)
	_ resource.ResourceWithImportState = (*hostSRIOVResource)(nil)
	_ resource.ResourceWithIdentity    = (*hostSRIOVResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*hostSRIOVResource)(nil)
)

// privateSRIOVBefore is the private-state key where state written before
// virtual_functions_before existed holds that record.
const privateSRIOVBefore = "sriov_before"

type hostSRIOVResource struct {
	client *vsphere.Client
	claims *claimBook
}

type hostSRIOVModel struct {
	ID             types.String `tfsdk:"id"`
	HostSystemID   types.String `tfsdk:"host_system_id"`
	PCIID          types.String `tfsdk:"pci_id"`
	VFs            types.Int64  `tfsdk:"num_virtual_functions"`
	ActiveVFs      types.Int64  `tfsdk:"active_virtual_functions"`
	MaxVFs         types.Int64  `tfsdk:"max_virtual_functions"`
	VFIDs          types.List   `tfsdk:"virtual_function_ids"`
	RebootRequired types.Bool   `tfsdk:"reboot_required"`
	RebootAllowed  types.Bool   `tfsdk:"reboot_allowed"`
	RebootTimeout  types.String `tfsdk:"reboot_timeout"`
	// VFsBefore is what destroy restores, kept in state as
	// hostPCIPassthroughModel.Before is, and for the same reason.
	VFsBefore types.Int64 `tfsdk:"virtual_functions_before"`
}

// NewHostSRIOVResource is the vspherehpc_host_sriov resource.
func NewHostSRIOVResource() resource.Resource {
	return &hostSRIOVResource{}
}

func (r *hostSRIOVResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_sriov"
}

func (r *hostSRIOVResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = hostDeviceIdentity.schema
}

func (r *hostSRIOVResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	defer func() { maps.Copy(resp.Schema.Attributes, rebootAttributes("an SR-IOV change", deviceRebootHosts)) }()
	resp.Schema = schema.Schema{
		MarkdownDescription: "SR-IOV on one physical function of an ESXi host (a ConnectX card, for InfiniBand or Ethernet virtual " +
			"functions), with a number of virtual functions, as Host > Configure > Hardware > PCI Devices > Configure SR-IOV does. " +
			"The card's firmware must allow SR-IOV first (`mlxconfig ... SRIOV_EN=1 NUM_OF_VFS=<n>`); that step is outside vCenter. " +
			"Destroy puts back what the function had in effect before (`virtual_functions_before`).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "`<host id>:<PCI id>`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"host_system_id": schema.StringAttribute{
				Required: true, MarkdownDescription: "Managed object id of the host, e.g. `data.vspherehpc_host.esx.id`. Changing it replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"pci_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "PCI id of the physical function, e.g. `0000:86:00.0` (`vspherehpc_host`'s `pci_devices` with " +
					"`sriov_capable`). Changing it replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.RegexMatches(pciIDPattern, "must be a PCI id such as 0000:86:00.0")},
			},
			"num_virtual_functions": schema.Int64Attribute{
				Required: true, CustomType: wholeNumber(1, 1024),
				MarkdownDescription: "Virtual functions to create, 1 up to what the function supports (`max_virtual_functions`), and " +
					"not fewer than VMs use: each SR-IOV network adapter on the function (`vspherehpc_vm_sriov_nic`) takes one at power on, " +
					"and a virtual function passed through as a PCI device (`vspherehpc_vm_gpu_mmio`'s `pci_device`) is needed itself; lowering " +
					"the count removes the highest-numbered virtual functions.",
				Validators: []validator.Int64{int64validator.Between(1, 1024)},
			},
			"active_virtual_functions": schema.Int64Attribute{
				Computed: true, MarkdownDescription: "Virtual functions that exist now; fewer than asked until the host reboots when it must.",
			},
			"max_virtual_functions": schema.Int64Attribute{
				Computed: true, MarkdownDescription: "Most virtual functions the function supports.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"virtual_function_ids": schema.ListAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "PCI ids of the virtual functions that exist now, VF 0 first: what `vspherehpc_vm_gpu_mmio`'s " +
					"`pci_device` takes. Empty until the host reboots when it must. " + vfIDsCaveat,
			},
			"reboot_required": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "Whether the change waits for a host reboot: the virtual functions appear only then. Planned " +
					"`false` when the change takes effect in the apply: on a host that applies it at once, or when the apply reboots the " +
					"host (`reboot_allowed`; the plan warns, naming the host). A change that waits for a reboot plans it `true` on an " +
					"existing resource and leaves it unknown on a new one. An existing resource's plan leaves it unknown too when the " +
					"provider cannot link the virtual functions to the function by PCI order (see `virtual_function_ids`).",
			},
			"virtual_functions_before": schema.Int64Attribute{
				Computed: true,
				MarkdownDescription: "What destroy puts back: the virtual functions the function had in effect before this resource " +
					"(0: SR-IOV off), never a change still waiting for a reboot; an import records the count found, so destroy leaves " +
					"it as found. Kept in state, so a create that fails (a reboot that fails, for one) and the apply that replaces it " +
					"still restore it.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
		},
	}
}

func (r *hostSRIOVResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client, r.claims = resourceDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *hostSRIOVResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer hostDeviceIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan hostSRIOVModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	hostID, pciID := plan.HostSystemID.ValueString(), plan.PCIID.ValueString()
	end := r.claims.applyingReboot(sriovType, hostID, []string{pciID})
	defer func() { end(resp.Diagnostics) }()
	p, err := r.client.PlanHostSRIOV(ctx, hostID, pciID, int(plan.VFs.ValueInt64()))
	var d *vsphere.PassthroughDevice
	if err == nil {
		d = p.Device
	}
	if err != nil || d == nil || d.SRIOV == nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot set SR-IOV of "+pciID+" on host "+hostID, cmpErr(err, "the device has no SR-IOV state")))
		return
	}
	// What is in effect: a change waiting for a reboot (this resource's
	// own, left by a create that failed) is no original.
	before := 0
	if d.SRIOV.Active {
		before = d.SRIOV.VFs
	}
	plan.VFsBefore = types.Int64Value(int64(before))
	r.apply(ctx, &plan, &resp.State, &resp.Diagnostics, true)
}

func (r *hostSRIOVResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer hostDeviceIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan hostSRIOVModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	var state hostSRIOVModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	end := r.claims.applyingReboot(sriovType, plan.HostSystemID.ValueString(), []string{plan.PCIID.ValueString()})
	defer func() { end(resp.Diagnostics) }()
	if sriovSettled(plan, state) && !plan.ActiveVFs.IsUnknown() && !plan.VFIDs.IsUnknown() && !plan.RebootRequired.IsUnknown() {
		// Only reboot_allowed or reboot_timeout change: the plan kept the
		// rest from state (ModifyPlan), and the host needs no call.
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	r.apply(ctx, &plan, &resp.State, &resp.Diagnostics, false)
}

// apply sets SR-IOV and reads it back into state; with the opt-in, a change
// that waits for a reboot is then made active by one.
func (r *hostSRIOVResource) apply(ctx context.Context, m *hostSRIOVModel, state stateSetter, diags *diag.Diagnostics, creating bool) {
	hostID, pciID := m.HostSystemID.ValueString(), m.PCIID.ValueString()
	if err := r.client.SetHostSRIOV(ctx, hostID, pciID, int(m.VFs.ValueInt64())); err != nil {
		diags.Append(vsphereErrorDiag("Cannot set SR-IOV of "+pciID+" on host "+hostID, err))
		return
	}
	tflog.Debug(ctx, "Set SR-IOV", map[string]any{"host_system_id": hostID, "pci_id": pciID, "virtual_functions": m.VFs.ValueInt64()})
	if creating {
		// The host has changed: record the resource now, with what destroy
		// restores, so a failed read back leaves no orphan. That failure is
		// a warning: the change is made and recorded.
		recorded := *m
		recorded.ID = types.StringValue(hostID + ":" + pciID)
		sriovKnownOrNull(&recorded)
		diags.Append(state.Set(ctx, &recorded)...)
		var read diag.Diagnostics
		if r.readInto(ctx, m, state, &read); read.HasError() {
			diags.AddWarning("SR-IOV set, not read back", fmt.Sprintf("SR-IOV of %s was set on host %s, but reading it back failed: %s "+
				"State records the planned count; the next plan reads the host.", pciID, hostID, diagText(read)))
			return
		}
		diags.Append(read...)
	} else {
		r.readInto(ctx, m, state, diags)
	}
	reboot := deviceReboot{hostID: hostID, allowed: m.RebootAllowed, timeout: m.RebootTimeout, pciIDs: []string{pciID}}
	if !diags.HasError() && m.RebootAllowed.ValueBool() && m.RebootRequired.ValueBool() && reboot.run(ctx, r.client, diags) {
		r.readInto(ctx, m, state, diags)
	}
}

// readInto reads the function back after a change and sets state.
func (r *hostSRIOVResource) readInto(ctx context.Context, m *hostSRIOVModel, state stateSetter, diags *diag.Diagnostics) {
	hostID, pciID := m.HostSystemID.ValueString(), m.PCIID.ValueString()
	h, err := r.client.HostPassthrough(ctx, hostID)
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read back SR-IOV of "+pciID+" on host "+hostID, err))
		return
	}
	if !sriovToModel(ctx, h, m, diags) {
		diags.AddError("SR-IOV not applied", fmt.Sprintf("Host %s reports no SR-IOV state for %s after the change.", hostID, pciID))
		return
	}
	diags.Append(state.Set(ctx, m)...)
}

// sriovKnownOrNull replaces the values a plan leaves unknown with nulls, as
// state cannot hold unknowns; the next read fills them.
func sriovKnownOrNull(m *hostSRIOVModel) {
	if m.ActiveVFs.IsUnknown() {
		m.ActiveVFs = types.Int64Null()
	}
	if m.MaxVFs.IsUnknown() {
		m.MaxVFs = types.Int64Null()
	}
	if m.VFIDs.IsUnknown() || slices.ContainsFunc(m.VFIDs.Elements(), attr.Value.IsUnknown) {
		m.VFIDs = types.ListNull(types.StringType)
	}
	if m.RebootRequired.IsUnknown() {
		m.RebootRequired = types.BoolNull()
	}
	rebootDefaults(&m.RebootAllowed, &m.RebootTimeout)
}

// sriovToModel fills m from the host; false when the function has no
// SR-IOV state, or SR-IOV is off with no virtual function left. Turned off
// with its virtual functions still there (the change waits for the host's
// reboot), it is not gone but asks for none: drift the plan turns back on,
// and what a destroy that failed before its reboot finishes, rebooting.
func sriovToModel(ctx context.Context, h *vsphere.HostPassthrough, m *hostSRIOVModel, diags *diag.Diagnostics) bool {
	d := h.Device(m.PCIID.ValueString())
	if d == nil || d.SRIOV == nil || !d.SRIOV.Enabled && !d.SRIOV.Active {
		return false
	}
	asked := 0
	if d.SRIOV.Enabled {
		asked = d.SRIOV.VFsRequested
	}
	m.ID = types.StringValue(h.HostID + ":" + d.PCIID)
	m.VFs = types.Int64Value(int64(asked))
	m.ActiveVFs = types.Int64Value(int64(d.SRIOV.VFs))
	m.MaxVFs = types.Int64Value(int64(d.SRIOV.MaxVFs))
	ids, ds := types.ListValueFrom(ctx, types.StringType, append([]string{}, d.SRIOV.VFIDs...)) // none: empty, not null
	diags.Append(ds...)
	m.VFIDs = ids
	m.RebootRequired = types.BoolValue(d.SRIOV.Enabled != d.SRIOV.Active || d.SRIOV.VFs != asked)
	rebootDefaults(&m.RebootAllowed, &m.RebootTimeout)
	return true
}

// sriovBefore is what destroy restores: virtual_functions_before, or for
// state written before it existed, the record in private state (0 when it
// has none: SR-IOV off).
func sriovBefore(ctx context.Context, m hostSRIOVModel, p privateState, diags *diag.Diagnostics) int {
	if !m.VFsBefore.IsNull() && !m.VFsBefore.IsUnknown() {
		return int(m.VFsBefore.ValueInt64())
	}
	before := 0
	_, ds := getPrivateJSON(ctx, p, privateSRIOVBefore, &before)
	diags.Append(ds...)
	return before
}

func (r *hostSRIOVResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	hostDeviceIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics)
	var state hostSRIOVModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	h, err := r.client.HostPassthrough(ctx, state.HostSystemID.ValueString())
	if keptAsLastRead(err, "Its SR-IOV", &resp.Diagnostics) {
		return
	}
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read SR-IOV of host "+state.HostSystemID.ValueString(), err))
		return
	}
	if !sriovToModel(ctx, h, &state, &resp.Diagnostics) {
		// SR-IOV turned off out of band: what this resource made is gone.
		tflog.Warn(ctx, "SR-IOV is off; removing it from state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if state.VFsBefore.IsNull() {
		// State written before virtual_functions_before existed: the record
		// moves from private state into it.
		state.VFsBefore = types.Int64Value(int64(sriovBefore(ctx, state, req.Private, &resp.Diagnostics)))
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateSRIOVBefore, nil)...)
	}
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}

// restoreOf is what a destroy puts back: the resource's function, and the
// count of virtual functions it had before this resource.
func restoreOf(ctx context.Context, state tfsdk.State, p privateState, diags *diag.Diagnostics) (hostSRIOVModel, int) {
	var m hostSRIOVModel
	diags.Append(getModel(ctx, state.Schema, state.Raw, &m)...)
	return m, sriovBefore(ctx, m, p, diags)
}

func (r *hostSRIOVResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = vsphere.ForChange(ctx)
	state, before := restoreOf(ctx, req.State, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	// Checked again against vCenter: the plan may be stale.
	f, err := r.client.PlanSRIOVRestore(ctx, state.HostSystemID.ValueString(), state.PCIID.ValueString(), before, nil)
	if errors.Is(err, vsphere.ErrNotFound) {
		return // the host is gone, and its SR-IOV with it
	}
	if err != nil { // a disconnected host, for one: said as such, not as vCenter's refusal of the change
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot restore SR-IOV of "+state.PCIID.ValueString(), err))
		return
	}
	if f != nil {
		addHostSRIOVFinding(&resp.Diagnostics, f, restoreFix)
		return
	}
	err = r.client.SetHostSRIOV(ctx, state.HostSystemID.ValueString(), state.PCIID.ValueString(), before)
	if err != nil && !errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot restore SR-IOV of "+state.PCIID.ValueString(), err))
		return
	}
	if err == nil {
		deviceReboot{hostID: state.HostSystemID.ValueString(), allowed: state.RebootAllowed, timeout: state.RebootTimeout,
			pciIDs: []string{state.PCIID.ValueString()}}.ifPending(ctx, r.client, &resp.Diagnostics)
	}
}

// ImportState takes "<host id>:<PCI id>"; destroy then leaves SR-IOV as found.
func (r *hostSRIOVResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	defer hostDeviceIdentity.adopted(ctx, r.claims, resp)
	target, ok := hostDeviceIdentity.target(ctx, req, &resp.Diagnostics)
	if !ok {
		return
	}
	hostID, pciID := target.HostSystemID.ValueString(), strings.ToLower(target.PCIID.ValueString())
	importID := hostID + ":" + pciID // in messages only
	h, err := r.client.HostPassthrough(ctx, hostID)
	if err != nil {
		lookupFailed(req, &resp.Diagnostics, "Cannot import SR-IOV "+importID, "host_system_id", hostID, err)
		return
	}
	m := hostSRIOVModel{HostSystemID: types.StringValue(hostID), PCIID: types.StringValue(pciID)}
	if !sriovToModel(ctx, h, &m, &resp.Diagnostics) || m.VFs.ValueInt64() == 0 {
		// Creating the resource is the fix only for an SR-IOV function with
		// SR-IOV off; the planner tells the other cases apart.
		p, err := r.client.PlanHostSRIOV(ctx, hostID, pciID, 0)
		if err != nil {
			resp.Diagnostics.Append(vsphereErrorDiag("Cannot import SR-IOV "+importID, err))
			return
		}
		for _, f := range p.Findings {
			switch f := f.(type) {
			case vsphere.DeviceNotOnHost:
				resp.Diagnostics.AddError("No such PCI device", fmt.Sprintf("Host %s has no PCI device %s. Its SR-IOV capable devices: %s.",
					f.Host, f.PCIID, listOrNone(f.Capable)))
				return
			case vsphere.NotSRIOVCapable:
				resp.Diagnostics.AddError("Not an SR-IOV function", fmt.Sprintf("PCI device %s (%s) of host %s is not SR-IOV capable, so "+
					"vspherehpc_host_sriov cannot manage it: there is nothing to import, and nothing to create. To pass the whole device "+
					"through to a VM, as a GPU is, use vspherehpc_host_pci_passthrough; a ConnectX card needs SR-IOV enabled in its "+
					"firmware (mlxconfig) and a reboot first. Its SR-IOV capable devices: %s.", f.PCIID, strings.TrimSpace(f.Name), f.Host, listOrNone(f.Capable)))
				return
			case vsphere.PassedThroughWhole:
				resp.Diagnostics.AddError("Nothing to import", fmt.Sprintf("SR-IOV is off for PCI device %s (%s) of host %s, which is passed "+
					"through whole. A card is either passed through whole or split into SR-IOV virtual functions, never both: to split "+
					"it, turn its passthrough off first (remove it from its VMs and its vspherehpc_host_pci_passthrough), then create "+
					"this resource.", f.PCIID, f.Name, f.Host))
				return
			case vsphere.TooManyVFs, vsphere.VFsInUse:
				// About the count asked (none), not the function: one to create.
			default:
				resp.Diagnostics.AddError("Unexpected finding", fmt.Sprintf("Importing %s found %T, which the provider has no words for. "+
					"Please report this issue to the provider developers.", importID, f))
				return
			}
		}
		resp.Diagnostics.AddError("Nothing to import", fmt.Sprintf("SR-IOV is off for PCI device %s of host %s (%s); create the resource "+
			"instead, which turns it on.", pciID, h.HostName, hostID))
		return
	}
	m.VFsBefore = m.VFs
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &m)...)
}

// cmpErr is err, or an error saying what when there is none.
func cmpErr(err error, what string) error {
	if err != nil {
		return err
	}
	return errors.New(what)
}
