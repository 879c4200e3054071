package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
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
	_ resource.Resource                = (*hostGraphicsResource)(nil)
	_ resource.ResourceWithConfigure   = (*hostGraphicsResource)(nil)
	_ resource.ResourceWithImportState = (*hostGraphicsResource)(nil)
	_ resource.ResourceWithIdentity    = (*hostGraphicsResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*hostGraphicsResource)(nil)
)

// graphicsType is the resource's type name, for messages and the reboot
// book (one per host: claimHostGraphics).
const graphicsType = "vspherehpc_host_graphics"

// privateGraphicsSetInBoot is the private-state key of the host's boot time
// when this resource last set its graphics: a GPU not driven as set after a
// later boot waits for no reboot, as the host cannot drive it so.
const privateGraphicsSetInBoot = "graphics_set_in_boot"

// graphicsWaiting lists the GPUs that wait for the host's reboot to be
// driven as settings s say: those the host drives otherwise now, except,
// once the host has booted since the settings before (prior, nil for none)
// were set (setInBoot), the GPUs whose type s leaves as it was: the host
// booted and still does not drive them so (NVIDIA's vGPU manager missing,
// for one), and another reboot would change nothing.
func graphicsWaiting(st *vsphere.HostGraphicsState, s vsphere.HostGraphicsSettings, prior *vsphere.HostGraphicsSettings,
	setInBoot *time.Time) []string {
	pending := s.Pending(st.GPUs)
	if prior == nil || setInBoot == nil || st.BootTime == nil || !st.BootTime.After(*setInBoot) {
		return pending
	}
	return slices.DeleteFunc(pending, func(id string) bool { return s.TypeOf(id) == prior.TypeOf(id) })
}

// setInBoot is the boot the graphics were last set in, from private state;
// nil when none is recorded (an import, a list, state before it).
func setInBoot(ctx context.Context, p privateState, diags *diag.Diagnostics) *time.Time {
	var t time.Time
	found, ds := getPrivateJSON(ctx, p, privateGraphicsSetInBoot, &t)
	diags.Append(ds...)
	if !found {
		return nil
	}
	return &t
}

// notDriven warns of the GPUs the host still does not drive as set after
// booting since they were set.
func notDriven(st *vsphere.HostGraphicsState, waiting []string, diags *diag.Diagnostics) {
	stuck := slices.DeleteFunc(slices.Clone(st.Pending), func(id string) bool { return slices.Contains(waiting, id) })
	if len(stuck) == 0 {
		return
	}
	diags.AddAttributeWarning(path.Root("reboot_required"), "GPUs not driven as set",
		fmt.Sprintf("Host %s (%s) has booted since its graphics were set, and still does not drive GPUs %s as they say (Shared "+
			"Direct needs NVIDIA's vGPU manager, the NVIDIA AI Enterprise host driver, installed on the host, and a GPU it "+
			"supports). Another reboot changes nothing: install the driver, or set these GPUs' type to shared.",
			st.HostName, st.HostID, strings.Join(stuck, ", ")))
}

// The graphics types and policies HostGraphicsConfig takes (vSphere Web
// Services API, HostGraphicsConfigGraphicsType and
// HostGraphicsConfigSharedPassthruAssignmentPolicy).
var (
	graphicsTypes      = []string{"shared", "sharedDirect"}
	assignmentPolicies = []string{"performance", "consolidation"}
)

type hostGraphicsResource struct {
	client *vsphere.Client
	claims *claimBook
}

type hostGraphicsModel struct {
	ID               types.String `tfsdk:"id"`
	HostSystemID     types.String `tfsdk:"host_system_id"`
	DefaultType      types.String `tfsdk:"default_graphics_type"`
	AssignmentPolicy types.String `tfsdk:"assignment_policy"`
	GPUTypes         types.Map    `tfsdk:"gpu_graphics_types"`
	RebootRequired   types.Bool   `tfsdk:"reboot_required"`
	RebootAllowed    types.Bool   `tfsdk:"reboot_allowed"`
	RebootTimeout    types.String `tfsdk:"reboot_timeout"`
	// Before is what destroy restores, kept in state as
	// hostPVRDMASettingsModel.Before is, and for the same reason.
	Before types.Object `tfsdk:"settings_before"`
}

// graphicsBeforeType is the type of settings_before.
var graphicsBeforeType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"default_graphics_type": types.StringType, "assignment_policy": types.StringType,
	"gpu_graphics_types": types.MapType{ElemType: types.StringType},
}}

// NewHostGraphicsResource is the vspherehpc_host_graphics resource.
func NewHostGraphicsResource() resource.Resource {
	return &hostGraphicsResource{}
}

func (r *hostGraphicsResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_graphics"
}

func (r *hostGraphicsResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = hostIdentity.schema
}

func (r *hostGraphicsResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	defer func() {
		maps.Copy(resp.Schema.Attributes, rebootAttributes("a graphics change",
			"every host: ESXi drives its GPUs by new graphics settings only once its graphics restart"))
	}()
	resp.Schema = schema.Schema{
		MarkdownDescription: "The graphics settings of one ESXi host, as Host > Configure > Hardware > Graphics shows them " +
			"(`HostGraphicsManager.UpdateGraphicsConfig`): the default graphics type of its GPUs, the assignment policy for " +
			"shared passthrough (NVIDIA vGPU) VMs, and GPUs with a graphics type of their own. NVIDIA vGPU needs the GPUs in " +
			"*Shared Direct*, the default here. ESXi keeps the settings at once but drives its GPUs by them only once its " +
			"graphics restart: `reboot_required` says so, and `reboot_allowed` lets the apply reboot the host. A GPU passed through " +
			"(`vspherehpc_host_pci_passthrough`) is not the host's to drive: it keeps passthrough whatever the default, and " +
			"cannot have a type of its own. Destroy puts back the settings the host had before (`settings_before`).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The host's managed object id, as `host_system_id`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"host_system_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Managed object id of the ESXi host, e.g. `host-12` (`data.vspherehpc_host.x.id`). Changing it " +
					"replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"default_graphics_type": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("sharedDirect"),
				MarkdownDescription: "How the host drives its GPUs that have no type of their own: `sharedDirect` (*Shared Direct*, " +
					"vendor shared passthrough: NVIDIA vGPU; the default) or `shared` (*Shared*, VMware shared graphics, vSGA). " +
					"ESXi's own default is `shared`.",
				Validators: []validator.String{stringvalidator.OneOf(graphicsTypes...)},
			},
			"assignment_policy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("performance"),
				MarkdownDescription: "How the host places shared passthrough (vGPU) VMs on its GPUs at power on: `performance` " +
					"(spread VMs across GPUs; the default, and ESXi's) or `consolidation` (fill one GPU before the next, leaving whole " +
					"GPUs free). It applies from the next power-on.",
				Validators: []validator.String{stringvalidator.OneOf(assignmentPolicies...)},
			},
			"gpu_graphics_types": schema.MapAttribute{
				ElementType: types.StringType, Optional: true, Computed: true,
				Default: mapdefault.StaticValue(types.MapValueMust(types.StringType, map[string]attr.Value{})),
				MarkdownDescription: "GPUs with a graphics type of their own, overriding `default_graphics_type`: PCI id (e.g. " +
					"`0000:af:00.0`, as `vspherehpc_host`'s `gpus` lists them) to `shared` or `sharedDirect`. Each must be a GPU of the " +
					"host that is not passed through. Empty (the default): every GPU takes the default.",
				Validators: []validator.Map{
					mapvalidator.KeysAre(stringvalidator.RegexMatches(pciIDPattern, "must be a PCI id such as 0000:af:00.0")),
					mapvalidator.ValueStringsAre(stringvalidator.OneOf(graphicsTypes...)),
				},
			},
			"reboot_required": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "Whether GPUs of the host wait for its graphics to restart (a reboot) to be driven as these " +
					"settings say: a GPU that should offer vGPUs and does not yet, or the other way round. Planned `false` when the " +
					"apply reboots the host (`reboot_allowed`; the plan warns, naming it), and when no GPU's driving changes (the " +
					"assignment policy alone applies from the next power-on). A GPU the host still does not drive as set after " +
					"booting since its type was set does not count, as another reboot would change nothing: a warning names it " +
					"(Shared Direct needs NVIDIA's vGPU manager installed on the host).",
			},
			"settings_before": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "What destroy puts back: the host's graphics settings before this resource set them (an import " +
					"records them as found, so destroy leaves them so). Kept in state, so a create that fails half-way, and the " +
					"apply that replaces it, still restore them.",
				PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				Attributes: map[string]schema.Attribute{
					"default_graphics_type": schema.StringAttribute{Computed: true, MarkdownDescription: "The default graphics type before."},
					"assignment_policy":     schema.StringAttribute{Computed: true, MarkdownDescription: "The assignment policy before."},
					"gpu_graphics_types": schema.MapAttribute{
						ElementType: types.StringType, Computed: true, MarkdownDescription: "The GPUs' own graphics types before.",
					},
				},
			},
		},
	}
}

func (r *hostGraphicsResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client, r.claims = resourceDataFrom(req.ProviderData, &resp.Diagnostics)
}

// graphicsSettingsOf are a model's settings (or settings_before's, from
// its attributes) for the service layer.
func graphicsSettingsOf(ctx context.Context, defaultType, policy types.String, gpus types.Map, diags *diag.Diagnostics) vsphere.HostGraphicsSettings {
	s := vsphere.HostGraphicsSettings{DefaultType: defaultType.ValueString(), AssignmentPolicy: policy.ValueString(), Devices: map[string]string{}}
	if !gpus.IsNull() && !gpus.IsUnknown() {
		diags.Append(gpus.ElementsAs(ctx, &s.Devices, false)...)
	}
	return s
}

func (m hostGraphicsModel) settings(ctx context.Context, diags *diag.Diagnostics) vsphere.HostGraphicsSettings {
	return graphicsSettingsOf(ctx, m.DefaultType, m.AssignmentPolicy, m.GPUTypes, diags)
}

// before is what destroy puts back; false when state records nothing
// (state written by hand).
func (m hostGraphicsModel) before(ctx context.Context, diags *diag.Diagnostics) (vsphere.HostGraphicsSettings, bool) {
	if m.Before.IsNull() || m.Before.IsUnknown() {
		return vsphere.HostGraphicsSettings{}, false
	}
	a := m.Before.Attributes()
	defaultType, _ := a["default_graphics_type"].(types.String)
	policy, _ := a["assignment_policy"].(types.String)
	gpus, _ := a["gpu_graphics_types"].(types.Map)
	return graphicsSettingsOf(ctx, defaultType, policy, gpus, diags), true
}

// graphicsBefore is s as settings_before.
func graphicsBefore(s vsphere.HostGraphicsSettings) types.Object {
	return types.ObjectValueMust(graphicsBeforeType.AttrTypes, map[string]attr.Value{
		"default_graphics_type": types.StringValue(s.DefaultType), "assignment_policy": types.StringValue(s.AssignmentPolicy),
		"gpu_graphics_types": stringMap(s.Devices),
	})
}

// graphicsToModel fills m from the host, with the GPUs that wait for its
// reboot.
func graphicsToModel(ctx context.Context, st *vsphere.HostGraphicsState, waiting []string, m *hostGraphicsModel) {
	m.ID = types.StringValue(st.HostID)
	m.HostSystemID = types.StringValue(st.HostID)
	m.DefaultType = types.StringValue(st.Settings.DefaultType)
	m.AssignmentPolicy = types.StringValue(st.Settings.AssignmentPolicy)
	m.GPUTypes = stringMap(st.Settings.Devices)
	m.RebootRequired = types.BoolValue(len(waiting) > 0)
	rebootDefaults(&m.RebootAllowed, &m.RebootTimeout)
	if m.Before.IsUnknown() || len(m.Before.AttributeTypes(ctx)) == 0 {
		m.Before = types.ObjectNull(graphicsBeforeType.AttrTypes) // nothing recorded (a list result)
	}
}

func (r *hostGraphicsResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer hostIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan hostGraphicsModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	hostID := plan.HostSystemID.ValueString()
	end := r.claims.applyingReboot(graphicsType, hostID, nil)
	defer func() { end(resp.Diagnostics) }()
	st, err := r.client.HostGraphics(ctx, hostID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read the graphics of host "+hostID, err))
		return
	}
	plan.Before = graphicsBefore(st.Settings)
	tflog.Debug(ctx, "Recorded the host's graphics settings for destroy", map[string]any{
		"host_system_id": hostID, "default_graphics_type": st.Settings.DefaultType, "assignment_policy": st.Settings.AssignmentPolicy,
	})
	// Track the host before changing it: a failure later leaves the
	// resource in state (tainted), and destroy still restores it.
	tracked := plan
	graphicsToModel(ctx, st, st.Pending, &tracked)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &tracked)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, graphicsRecord{}, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *hostGraphicsResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer hostIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan hostGraphicsModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	if resp.Diagnostics.HasError() {
		return
	}
	var state hostGraphicsModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	prior := state.settings(ctx, &resp.Diagnostics)
	from := graphicsRecord{prior: &prior, setInBoot: setInBoot(ctx, req.Private, &resp.Diagnostics)}
	if resp.Diagnostics.HasError() {
		return
	}
	end := r.claims.applyingReboot(graphicsType, plan.HostSystemID.ValueString(), nil)
	defer func() { end(resp.Diagnostics) }()
	r.apply(ctx, &plan, from, &resp.State, resp.Private, &resp.Diagnostics)
}

// graphicsRecord is what a change of a host's graphics starts from: the
// settings state had (nil for a create) and the boot they were set in, as
// the plan took them, so the apply reads back what the plan said.
type graphicsRecord struct {
	prior     *vsphere.HostGraphicsSettings
	setInBoot *time.Time
}

// apply sets the graphics settings and reads them back into state; with the
// opt-in, GPUs that wait for the host's graphics to restart get it by a
// reboot.
func (r *hostGraphicsResource) apply(ctx context.Context, m *hostGraphicsModel, from graphicsRecord, state stateSetter, private privateState,
	diags *diag.Diagnostics) {
	hostID := m.HostSystemID.ValueString()
	settings := m.settings(ctx, diags)
	if diags.HasError() {
		return
	}
	if err := r.client.SetHostGraphics(ctx, hostID, settings); err != nil {
		diags.Append(vsphereErrorDiag("Cannot set the graphics of host "+hostID, err))
		return
	}
	tflog.Debug(ctx, "Set the host's graphics", map[string]any{
		"host_system_id": hostID, "default_graphics_type": settings.DefaultType, "assignment_policy": settings.AssignmentPolicy,
		"gpu_graphics_types": settings.Devices,
	})
	st, waiting := r.readInto(ctx, m, from, state, diags)
	if st == nil {
		return
	}
	// A GPU's type set in this boot: a GPU not driven so after a later boot
	// cannot be, and waits for no reboot. Settings that change no GPU's type
	// (the policy) keep the boot the types were set in.
	set := graphicsRecord{prior: &settings, setInBoot: from.setInBoot}
	if from.prior == nil || slices.ContainsFunc(st.GPUs, func(g vsphere.GPU) bool { return settings.TypeOf(g.PCIID) != from.prior.TypeOf(g.PCIID) }) {
		set.setInBoot = st.BootTime
	}
	diags.Append(setPrivateJSON(ctx, private, privateGraphicsSetInBoot, set.setInBoot)...)
	if len(waiting) == 0 || !m.RebootAllowed.ValueBool() {
		return
	}
	reboot := deviceReboot{hostID: hostID, allowed: m.RebootAllowed, timeout: m.RebootTimeout, pciIDs: waiting}
	if reboot.run(ctx, r.client, diags) {
		// The reboot restarted the host's graphics: what is still not
		// driven as set cannot be.
		r.readInto(ctx, m, graphicsRecord{prior: &settings, setInBoot: st.BootTime}, state, diags)
	}
}

// readInto reads the host's graphics back after a change from from, and
// sets state; it returns them and the GPUs that wait for a reboot.
func (r *hostGraphicsResource) readInto(ctx context.Context, m *hostGraphicsModel, from graphicsRecord, state stateSetter,
	diags *diag.Diagnostics) (*vsphere.HostGraphicsState, []string) {
	hostID := m.HostSystemID.ValueString()
	st, err := r.client.HostGraphics(ctx, hostID)
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read back the graphics of host "+hostID, err))
		return nil, nil
	}
	waiting := graphicsWaiting(st, st.Settings, from.prior, from.setInBoot)
	notDriven(st, waiting, diags)
	graphicsToModel(ctx, st, waiting, m)
	diags.Append(state.Set(ctx, m)...)
	return st, waiting
}

func (r *hostGraphicsResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	hostIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics)
	var state hostGraphicsModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	hostID := state.HostSystemID.ValueString()
	st, err := r.client.HostGraphics(ctx, hostID)
	if keptAsLastRead(err, "Its graphics settings", &resp.Diagnostics) {
		return
	}
	if errors.Is(err, vsphere.ErrNotFound) {
		tflog.Warn(ctx, "Host is gone; removing its graphics settings from state", map[string]any{"host_system_id": hostID})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read the graphics of host "+hostID, err))
		return
	}
	waiting := graphicsWaiting(st, st.Settings, &st.Settings, setInBoot(ctx, req.Private, &resp.Diagnostics))
	notDriven(st, waiting, &resp.Diagnostics)
	graphicsToModel(ctx, st, waiting, &state)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}

func (r *hostGraphicsResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = vsphere.ForChange(ctx)
	var state hostGraphicsModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	hostID := state.HostSystemID.ValueString()
	before, found := state.before(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if !found {
		resp.Diagnostics.AddWarning("Nothing to restore",
			"The graphics settings host "+hostID+" had before Terraform managed it are unknown, so they are left as they are.")
		return
	}
	err := r.client.SetHostGraphics(ctx, hostID, before)
	if errors.Is(err, vsphere.ErrNotFound) {
		return // the host is gone, and its settings with it
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot restore the graphics of host "+hostID, err))
		return
	}
	tflog.Debug(ctx, "Restored the host's graphics settings", map[string]any{"host_system_id": hostID, "default_graphics_type": before.DefaultType})
	if !state.RebootAllowed.ValueBool() {
		return
	}
	st, err := r.client.HostGraphics(ctx, hostID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read back the graphics of host "+hostID, err))
		return
	}
	if waiting := restoreWaiting(ctx, st, state, before, req.Private, &resp.Diagnostics); len(waiting) > 0 {
		deviceReboot{hostID: hostID, allowed: state.RebootAllowed, timeout: state.RebootTimeout, pciIDs: waiting}.run(ctx, r.client, &resp.Diagnostics)
	}
}

// restoreWaiting lists the GPUs that wait for a reboot to be driven as the
// settings destroy puts back (before) say, coming from what state set: a
// GPU whose type the restore leaves as it was, and that the host could not
// drive so, waits for none (see graphicsWaiting).
func restoreWaiting(ctx context.Context, st *vsphere.HostGraphicsState, state hostGraphicsModel, before vsphere.HostGraphicsSettings,
	private privateState, diags *diag.Diagnostics) []string {
	set := state.settings(ctx, diags)
	return graphicsWaiting(st, before, &set, setInBoot(ctx, private, diags))
}

// ImportState adopts a host's graphics settings as they are, and records
// them as what destroy puts back.
func (r *hostGraphicsResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	defer hostIdentity.adopted(ctx, r.claims, resp)
	target, ok := hostIdentity.target(ctx, req, &resp.Diagnostics)
	if !ok {
		return
	}
	hostID := target.HostSystemID.ValueString()
	st, err := r.client.HostGraphics(ctx, hostID)
	if err != nil {
		lookupFailed(req, &resp.Diagnostics, "Cannot import the graphics settings of host "+hostID, "host_system_id", hostID, err)
		return
	}
	m := hostGraphicsModel{Before: graphicsBefore(st.Settings)}
	graphicsToModel(ctx, st, st.Pending, &m)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &m)...)
}

// addHostGraphicsFinding words one finding of the host graphics planner.
func addHostGraphicsFinding(diags *diag.Diagnostics, f vsphere.Finding) {
	switch f := f.(type) {
	case vsphere.GraphicsDeviceNotGPU:
		diags.AddAttributeError(path.Root("gpu_graphics_types"), "No such GPU",
			fmt.Sprintf("Host %s has no GPU %s, so it cannot have a graphics type of its own. The host's GPUs: %s.",
				f.Host, f.PCIID, listOrNone(f.GPUs)))
	case vsphere.GraphicsDevicePassedThrough:
		users := "No VM is configured with it now, but passthrough is on for it."
		if len(f.VMs) > 0 {
			users = "Virtual machines " + listOrNone(f.VMs) + " are configured with it."
		}
		diags.AddAttributeError(path.Root("gpu_graphics_types"), "GPU passed through",
			fmt.Sprintf("GPU %s (%s) of host %s has passthrough on, so the host's graphics do not drive it: one GPU is either "+
				"passed through whole to one VM or shared by the host, never both. %s To share it, remove it from those VMs and "+
				"turn its passthrough off (its vspherehpc_host_pci_passthrough) first, in an apply of its own; or leave it out of "+
				"gpu_graphics_types.", f.PCIID, f.Name, f.Host, users))
	default:
		unexpectedFinding(diags, f)
	}
}
