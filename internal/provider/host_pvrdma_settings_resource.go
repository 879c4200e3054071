package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ resource.Resource                = (*hostPVRDMASettingsResource)(nil)
	_ resource.ResourceWithConfigure   = (*hostPVRDMASettingsResource)(nil)
	_ resource.ResourceWithImportState = (*hostPVRDMASettingsResource)(nil)
	_ resource.ResourceWithIdentity    = (*hostPVRDMASettingsResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*hostPVRDMASettingsResource)(nil)
)

// privateBefore is where state written before settings_before existed
// holds that record.
const privateBefore = "before"

type hostPVRDMASettingsResource struct {
	client *vsphere.Client
	claims *claimBook
}

type hostPVRDMASettingsModel struct {
	ID                 types.String  `tfsdk:"id"`
	HostSystemID       types.String  `tfsdk:"host_system_id"`
	Vmknic             types.String  `tfsdk:"vmknic"`
	FirewallEnabled    types.Bool    `tfsdk:"firewall_enabled"`
	FirewallAllowedIPs unorderedList `tfsdk:"firewall_allowed_ips"`
	// Before is what destroy restores. It is kept in state, not private
	// state: Terraform hands a tainted object's private state (a create that
	// failed half-way) to neither its destroy nor its replacement.
	Before types.Object `tfsdk:"settings_before"`
}

// settingsBeforeType is the type of settings_before.
var settingsBeforeType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"vmknic": types.StringType, "firewall_enabled": types.BoolType, "firewall_allowed_ips": types.ListType{ElemType: types.StringType},
}}

// settingsBefore is s as settings_before.
func settingsBefore(s vsphere.PVRDMASettings) types.Object {
	ips := make([]attr.Value, len(s.AllowedIPs))
	for i, ip := range s.AllowedIPs {
		ips[i] = types.StringValue(ip)
	}
	return types.ObjectValueMust(settingsBeforeType.AttrTypes, map[string]attr.Value{
		"vmknic": types.StringValue(s.Vmknic), "firewall_enabled": types.BoolValue(s.FirewallEnabled),
		"firewall_allowed_ips": types.ListValueMust(types.StringType, ips),
	})
}

// NewHostPVRDMASettingsResource is the vspherehpc_host_pvrdma_settings resource.
func NewHostPVRDMASettingsResource() resource.Resource {
	return &hostPVRDMASettingsResource{}
}

func (r *hostPVRDMASettingsResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_pvrdma_settings"
}

func (r *hostPVRDMASettingsResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = hostIdentity.schema
}

func (r *hostPVRDMASettingsResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The host side of PVRDMA on one ESXi host: the VMkernel adapter PVRDMA uses for its control traffic " +
			"(advanced option `" + vsphere.PVRDMAVmknicOption + "`) and the `" + vsphere.PVRDMARuleset + "` firewall ruleset " +
			"(TCP 28250–28761). Destroy puts back the values the host had before.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The host's managed object id, as `host_system_id`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"host_system_id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Managed object id of the ESXi host, e.g. `host-12` (`vsphere_host.id` or `data.vspherehpc_host.x.id`).",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"vmknic": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString("vmk0"),
				MarkdownDescription: "VMkernel adapter for PVRDMA's control traffic (`" + vsphere.PVRDMAVmknicOption + "`). " +
					"It must exist on the host. Default `vmk0`.",
				Validators: []validator.String{stringvalidator.RegexMatches(vmknicPattern,
					"must name a VMkernel adapter such as vmk0 or vmk1")},
			},
			"firewall_enabled": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(true),
				MarkdownDescription: "Whether the `" + vsphere.PVRDMARuleset + "` firewall ruleset is enabled. Default `true`.",
			},
			"firewall_allowed_ips": schema.ListAttribute{
				ElementType: types.StringType,
				// A list with set semantics: a set costs quadratic time
				// per plan in the framework (see unorderedListType).
				CustomType: newUnorderedListType(),
				Optional:   true,
				Computed:   true,
				Default:    listdefault.StaticValue(types.ListValueMust(types.StringType, nil)),
				MarkdownDescription: "IP addresses and CIDR networks (`10.10.0.0/24`) the ruleset admits, e.g. the PVRDMA vmknics of the " +
					"other hosts. Empty (the default) admits all addresses. Each entry at most once; the order does not matter to the host " +
					"(state keeps the configuration's order), though reordering the list plans an update that changes nothing.",
				Validators: []validator.List{uniqueStrings{}, listvalidator.ValueStringsAre(allowedIPValidator{})},
			},
			"settings_before": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "What destroy puts back: the host's settings before this resource set them (an import records " +
					"them as found, so destroy leaves them so). Kept in state, so a create that fails half-way, and the apply that " +
					"replaces it, still restore them.",
				PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				Attributes: map[string]schema.Attribute{
					"vmknic": schema.StringAttribute{
						Computed: true, MarkdownDescription: "`" + vsphere.PVRDMAVmknicOption + "` before; empty when it was not set.",
					},
					"firewall_enabled": schema.BoolAttribute{
						Computed: true, MarkdownDescription: "Whether the `" + vsphere.PVRDMARuleset + "` ruleset was enabled.",
					},
					"firewall_allowed_ips": schema.ListAttribute{
						ElementType: types.StringType, Computed: true,
						MarkdownDescription: "The addresses the ruleset admitted; empty: all.",
					},
				},
			},
		},
	}
}

func (r *hostPVRDMASettingsResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client, r.claims = resourceDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *hostPVRDMASettingsResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer hostIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan hostPVRDMASettingsModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	hostID := plan.HostSystemID.ValueString()
	before, err := r.client.HostPVRDMA(ctx, hostID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read the PVRDMA settings of host "+hostID, err))
		return
	}
	plan.Before = settingsBefore(before.Settings)
	tflog.Debug(
		ctx,
		"Recorded the host's PVRDMA settings for destroy",
		map[string]any{"host_system_id": hostID, "vmknic": before.Settings.Vmknic, "firewall_enabled": before.Settings.FirewallEnabled},
	)
	// Track the host before changing it: if a write fails half-way, the
	// resource stays in state (tainted) and destroy still restores it.
	tracked := plan
	resp.Diagnostics.Append(settingsToModel(ctx, hostID, before.Settings, &tracked)...)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &tracked)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, &resp.State, &resp.Diagnostics)
}

func (r *hostPVRDMASettingsResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer hostIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan hostPVRDMASettingsModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	// Until the host is read back, state stays as it was: on a failure the
	// framework would otherwise record the plan as applied.
	resp.State.Raw = req.State.Raw.Copy()
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, &resp.State, &resp.Diagnostics)
}

// apply writes the planned settings, then reads them back into state.
func (r *hostPVRDMASettingsResource) apply(ctx context.Context, plan *hostPVRDMASettingsModel, state stateSetter, diags *diag.Diagnostics) {
	hostID := plan.HostSystemID.ValueString()
	var allowed []string
	diags.Append(plan.FirewallAllowedIPs.ElementsAs(ctx, &allowed, false)...)
	if diags.HasError() {
		return
	}
	err := r.client.SetHostPVRDMA(ctx, hostID, vsphere.PVRDMASettings{
		Vmknic: plan.Vmknic.ValueString(), FirewallEnabled: plan.FirewallEnabled.ValueBool(), AllowedIPs: allowed,
	})
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot set PVRDMA on host "+hostID, err))
		return
	}
	host, err := r.client.HostPVRDMA(ctx, hostID)
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read back the PVRDMA settings of host "+hostID, err))
		return
	}
	diags.Append(settingsToModel(ctx, hostID, host.Settings, plan)...)
	diags.Append(state.Set(ctx, plan)...)
}

func (r *hostPVRDMASettingsResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	hostIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics)
	var state hostPVRDMASettingsModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	hostID := state.HostSystemID.ValueString()
	host, err := r.client.HostPVRDMA(ctx, hostID)
	if keptAsLastRead(err, "Its PVRDMA settings", &resp.Diagnostics) {
		return
	}
	if errors.Is(err, vsphere.ErrNotFound) {
		tflog.Warn(ctx, "Host is gone; removing its PVRDMA settings from state", map[string]any{"host_system_id": hostID})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read the PVRDMA settings of host "+hostID, err))
		return
	}
	resp.Diagnostics.Append(settingsToModel(ctx, hostID, host.Settings, &state)...)
	if state.Before.IsNull() || state.Before.IsUnknown() {
		if before, found, diags := loadPrevious(ctx, req.Private); found && !diags.HasError() {
			state.Before = settingsBefore(before) // state an older release wrote
		}
	}
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}

func (r *hostPVRDMASettingsResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = vsphere.ForChange(ctx)
	var state hostPVRDMASettingsModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	hostID := state.HostSystemID.ValueString()
	before, found, diags := settingsToRestore(ctx, state, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !found {
		// Only possible for state written by hand: leave the host as it is.
		resp.Diagnostics.AddWarning("Nothing to restore",
			"The settings host "+hostID+" had before Terraform managed it are unknown, so they are left as they are.")
		return
	}
	err := r.client.SetHostPVRDMA(ctx, hostID, before)
	if err != nil && !errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot restore the PVRDMA settings of host "+hostID, err))
		return
	}
	tflog.Debug(
		ctx,
		"Restored the host's PVRDMA settings",
		map[string]any{"host_system_id": hostID, "vmknic": before.Vmknic, "firewall_enabled": before.FirewallEnabled},
	)
}

// ImportState adopts a host's settings as they are, and records them as the
// values destroy puts back.
func (r *hostPVRDMASettingsResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	defer hostIdentity.adopted(ctx, r.claims, resp)
	target, ok := hostIdentity.target(ctx, req, &resp.Diagnostics)
	if !ok {
		return
	}
	hostID := target.HostSystemID.ValueString()
	host, err := r.client.HostPVRDMA(ctx, hostID)
	if err != nil {
		lookupFailed(req, &resp.Diagnostics, "Cannot import the PVRDMA settings of host "+hostID, "host_system_id", hostID, err)
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("settings_before"), settingsBefore(host.Settings))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("host_system_id"), hostID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), hostID)...)
}

// settingsToModel copies read settings into a model.
func settingsToModel(ctx context.Context, hostID string, s vsphere.PVRDMASettings, m *hostPVRDMASettingsModel) diag.Diagnostics {
	allowed, diags := newUnorderedList(ctx, emptyIfNil(s.AllowedIPs))
	m.ID = types.StringValue(hostID)
	m.HostSystemID = types.StringValue(hostID)
	m.Vmknic = types.StringValue(s.Vmknic)
	m.FirewallEnabled = types.BoolValue(s.FirewallEnabled)
	m.FirewallAllowedIPs = allowed
	if len(m.Before.AttributeTypes(ctx)) == 0 { // a model built from nothing (a list result): nothing recorded
		m.Before = types.ObjectNull(settingsBeforeType.AttrTypes)
	}
	return diags
}

func emptyIfNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// settingsToRestore is what destroy puts back: state's record, or, in state
// an older release wrote, private state's.
func settingsToRestore(ctx context.Context, state hostPVRDMASettingsModel, p privateState) (vsphere.PVRDMASettings, bool, diag.Diagnostics) {
	if state.Before.IsNull() || state.Before.IsUnknown() {
		return loadPrevious(ctx, p)
	}
	var diags diag.Diagnostics
	attrs := state.Before.Attributes()
	s := vsphere.PVRDMASettings{}
	if v, ok := attrs["vmknic"].(types.String); ok {
		s.Vmknic = v.ValueString()
	}
	if v, ok := attrs["firewall_enabled"].(types.Bool); ok {
		s.FirewallEnabled = v.ValueBool()
	}
	if v, ok := attrs["firewall_allowed_ips"].(types.List); ok && !v.IsNull() {
		diags.Append(v.ElementsAs(ctx, &s.AllowedIPs, false)...)
	}
	return s, true, diags
}

// loadPrevious reads the record an older release kept in private state.
func loadPrevious(ctx context.Context, p privateState) (vsphere.PVRDMASettings, bool, diag.Diagnostics) {
	var s vsphere.PVRDMASettings
	found, diags := getPrivateJSON(ctx, p, privateBefore, &s)
	return s, found, diags
}

// allowedIPValidator accepts what the ruleset's allowed list takes, in the
// form vSphere reports back, so plans never churn on spelling.
type allowedIPValidator struct{}

func (allowedIPValidator) Description(context.Context) string {
	return "must be an IP address or a CIDR network address"
}

func (v allowedIPValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (allowedIPValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := vsphere.ParseAllowedIP(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid allowed address", "firewall_allowed_ips: "+err.Error()+".")
	}
}
