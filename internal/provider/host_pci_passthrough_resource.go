package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ resource.Resource                = (*hostPCIPassthroughResource)(nil)
	_ resource.ResourceWithConfigure   = (*hostPCIPassthroughResource)(nil)
	_ resource.ResourceWithImportState = (*hostPCIPassthroughResource)(nil)
	_ resource.ResourceWithIdentity    = (*hostPCIPassthroughResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*hostPCIPassthroughResource)(nil)
)

// privatePassthroughBefore is the private-state key where state written
// before passthrough_before existed holds that record.
const privatePassthroughBefore = "passthrough_before"

type hostPCIPassthroughResource struct {
	client *vsphere.Client
	claims *claimBook
}

type hostPCIPassthroughModel struct {
	ID             types.String `tfsdk:"id"`
	HostSystemID   types.String `tfsdk:"host_system_id"`
	PCIIDs         types.Set    `tfsdk:"pci_ids"`
	Match          types.Set    `tfsdk:"match"`
	Devices        types.List   `tfsdk:"devices"`
	RebootRequired types.Bool   `tfsdk:"reboot_required"`
	RebootAllowed  types.Bool   `tfsdk:"reboot_allowed"`
	RebootTimeout  types.String `tfsdk:"reboot_timeout"`
	// Before is what destroy restores. It is kept in state, not private
	// state: Terraform hands a tainted object's private state (a create
	// whose reboot failed) to neither its destroy nor its replacement.
	Before types.Map `tfsdk:"passthrough_before"`
	// HardwareLabel is the label every managed device gets; null leaves
	// labels alone. LabelsBefore is what destroy, and dropping a device or
	// the label, put back, kept in state as Before is.
	HardwareLabel types.String `tfsdk:"hardware_label"`
	LabelsBefore  types.Map    `tfsdk:"hardware_labels_before"`
}

type passthroughMatchModel struct {
	VendorID types.String `tfsdk:"vendor_id"`
	DeviceID types.String `tfsdk:"device_id"`
}

type passthroughDeviceModel struct {
	PCIID         types.String `tfsdk:"pci_id"`
	VendorID      types.String `tfsdk:"vendor_id"`
	DeviceID      types.String `tfsdk:"device_id"`
	DeviceName    types.String `tfsdk:"device_name"`
	Enabled       types.Bool   `tfsdk:"enabled"`
	Active        types.Bool   `tfsdk:"active"`
	HardwareLabel types.String `tfsdk:"hardware_label"`
}

var passthroughMatchType = types.ObjectType{AttrTypes: map[string]attr.Type{"vendor_id": types.StringType, "device_id": types.StringType}}

var passthroughDeviceType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"pci_id": types.StringType, "vendor_id": types.StringType, "device_id": types.StringType,
	"device_name": types.StringType, "enabled": types.BoolType, "active": types.BoolType, "hardware_label": types.StringType,
}}

// NewHostPCIPassthroughResource is the vspherehpc_host_pci_passthrough resource.
func NewHostPCIPassthroughResource() resource.Resource {
	return &hostPCIPassthroughResource{}
}

func (r *hostPCIPassthroughResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_pci_passthrough"
	resp.ResourceBehavior.MutableIdentity = true // see its identity's fromState
}

func (r *hostPCIPassthroughResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = passthroughIdentity.schema
}

func (r *hostPCIPassthroughResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	defer func() {
		maps.Copy(resp.Schema.Attributes, rebootAttributes("turning passthrough on or off", deviceRebootHosts))
	}()
	resp.Schema = schema.Schema{
		MarkdownDescription: "PCI passthrough turned on for devices of one ESXi host, as Host > Configure > Hardware > PCI Devices > " +
			"Toggle passthrough does: devices given by PCI id, or every device of a vendor and device id (e.g. every H100 of the host). " +
			"Devices not listed are left alone. Destroy, and dropping a device, put back what the host had in effect before " +
			"(`passthrough_before`).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The host's managed object id.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"host_system_id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Managed object id of the host, e.g. `data.vspherehpc_host.esx.id`. Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"pci_ids": schema.SetAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Devices by PCI id, e.g. `0000:af:00.0` (`vspherehpc_host`'s `gpus`). Each must be on the host and " +
					"passthrough capable, and not a physical NIC the host's switches use.",
				Validators: []validator.Set{setvalidator.ValueStringsAre(stringvalidator.RegexMatches(pciIDPattern, "must be a PCI id such as 0000:3b:00.0"))},
			},
			"devices": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The devices this resource manages, from `pci_ids` and `match`, sorted by PCI id, with their " +
					"passthrough state. A device turned off in vCenter, one or all of them, shows as drift (`enabled = false -> true`) " +
					"and the next apply turns it back on in place.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"pci_id":      schema.StringAttribute{Computed: true, MarkdownDescription: "PCI id."},
					"vendor_id":   schema.StringAttribute{Computed: true, MarkdownDescription: "PCI vendor id, four hex digits."},
					"device_id":   schema.StringAttribute{Computed: true, MarkdownDescription: "PCI device id, four hex digits."},
					"device_name": schema.StringAttribute{Computed: true, MarkdownDescription: "Device name as the host reports it."},
					"enabled":     schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether passthrough is on for the device."},
					"active": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether passthrough is in effect; a device " +
						"enabled but not active waits for the host to reboot."},
					"hardware_label": schema.StringAttribute{Computed: true, MarkdownDescription: "The device's hardware label, " +
						"`\"\"` for none."},
				}},
			},
			"hardware_label": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "A hardware label for every device this resource manages, as host > Configure > Hardware > PCI " +
					"Devices > Hardware Label sets it (`HostPciPassthruConfig.hardwareLabel`, vSphere 7.0 Update 2 and later): the " +
					"devices become a pool that VMs ask for with a `vspherehpc_vm_gpu_mmio` gpu block's `label`, and vSphere picks a " +
					"device of the pool (and, in a DRS cluster, the host) at power on. Set at once, with no reboot. A label changed in " +
					"vCenter shows as drift. Left out, the devices keep the labels they have. Destroy, dropping a device, and leaving " +
					"the label out put back the labels the devices had before (`hardware_labels_before`).",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"hardware_labels_before": schema.MapAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "What destroy, dropping a device, and leaving `hardware_label` out put back: for each device " +
					"this resource labelled (by PCI id), its label before (`\"\"` for none). An import that adopts `hardware_label` " +
					"records the labels as found, so destroy leaves them.",
			},
			"reboot_required": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "Whether a managed device is enabled but not active yet: the host must reboot before VMs can use it " +
					"(older ESXi, and some devices). A plan that turns passthrough on leaves it unknown, unless the apply reboots the " +
					"host (`reboot_allowed` on a host that applies the change only when it reboots; the plan warns, naming the host): " +
					"then it is planned `false`, and the devices `active`.",
			},
			"passthrough_before": schema.MapAttribute{
				ElementType: types.BoolType, Computed: true,
				MarkdownDescription: "What destroy, and dropping a device from the configuration, put back: for each managed device (by " +
					"PCI id), whether passthrough was on before this resource took it. That is the state in effect then, never a change " +
					"still waiting for a reboot; an imported device records on, so destroy leaves it as found. Kept in state, so a create " +
					"that fails (a reboot that fails, for one) and the apply that replaces it still restore it.",
			},
		},
		Blocks: map[string]schema.Block{
			"match": schema.SetNestedBlock{
				MarkdownDescription: "Every passthrough-capable device of the host with this vendor and device id, not used by the host " +
					"as a switch uplink. Resolved when the configuration changes (or a managed device drifts), not on every plan: a card " +
					"installed later joins at the next change.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"vendor_id": schema.StringAttribute{
						Required: true, MarkdownDescription: "PCI vendor id, four lower-case hex digits (`10de` for NVIDIA, `15b3` for Mellanox).",
						Validators: []validator.String{stringvalidator.RegexMatches(hexIDPattern, "must be four lower-case hex digits, such as 10de")},
					},
					"device_id": schema.StringAttribute{
						Required: true, MarkdownDescription: "PCI device id, four lower-case hex digits.",
						Validators: []validator.String{stringvalidator.RegexMatches(hexIDPattern, "must be four lower-case hex digits, such as 2330")},
					},
				}},
			},
		},
	}
}

func (r *hostPCIPassthroughResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client, r.claims = resourceDataFrom(req.ProviderData, &resp.Diagnostics)
}

// change is the planned passthrough of m, with the devices whose
// passthrough will go back off.
func (r *hostPCIPassthroughResource) change(
	ctx context.Context,
	m *hostPCIPassthroughModel,
	before map[string]bool,
	diags *diag.Diagnostics,
) vsphere.PassthroughChange {
	ch := vsphere.PassthroughChange{HostID: m.HostSystemID.ValueString()}
	if !m.PCIIDs.IsNull() {
		diags.Append(m.PCIIDs.ElementsAs(ctx, &ch.PCIIDs, false)...)
	}
	var match []passthroughMatchModel
	if !m.Match.IsNull() {
		diags.Append(m.Match.ElementsAs(ctx, &match, false)...)
	}
	for _, mm := range match {
		ch.Match = append(ch.Match, vsphere.VendorDevice{VendorID: mm.VendorID.ValueString(), DeviceID: mm.DeviceID.ValueString()})
	}
	slices.Sort(ch.PCIIDs)
	ch.Disabling = turnedBackOff(before)
	return ch
}

// turnedBackOff lists the managed devices whose passthrough goes back off
// when the resource lets them go: those it was off for before.
func turnedBackOff(before map[string]bool) []string {
	var out []string
	for id, was := range before {
		if !was {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (r *hostPCIPassthroughResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer passthroughIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan hostPCIPassthroughModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	end := r.claims.applyingReboot(passthroughType, plan.HostSystemID.ValueString(), plannedDevices(ctx, plan))
	defer func() { end(resp.Diagnostics) }()
	r.apply(ctx, &plan, map[string]bool{}, map[string]string{}, true, &resp.State, &resp.Diagnostics)
}

func (r *hostPCIPassthroughResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer passthroughIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan hostPCIPassthroughModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	var state hostPCIPassthroughModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	before := passthroughBefore(ctx, state, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	end := r.claims.applyingReboot(passthroughType, plan.HostSystemID.ValueString(), plannedDevices(ctx, plan))
	defer func() { end(resp.Diagnostics) }()
	r.apply(ctx, &plan, before, stringMapOf(ctx, state.LabelsBefore, &resp.Diagnostics), false, &resp.State, &resp.Diagnostics)
}

// plannedDevices are the PCI ids of the devices a plan manages, sorted.
func plannedDevices(ctx context.Context, m hostPCIPassthroughModel) []string {
	var devices []passthroughDeviceModel
	_ = m.Devices.ElementsAs(ctx, &devices, true) // a plan without them records no reboot
	ids := make([]string, 0, len(devices))
	for _, d := range devices {
		ids = append(ids, d.PCIID.ValueString())
	}
	return ids
}

// passthroughStateSetter is resp.State of create and update.
type passthroughStateSetter interface {
	stateSetter
	SetAttribute(ctx context.Context, p path.Path, val any) diag.Diagnostics
}

// apply turns passthrough on for the planned devices and puts back the
// earlier state of devices no longer listed, recording what each newly
// managed device had in effect before; so for hardware labels, with
// labelsBefore; then it reads the result into state.
func (r *hostPCIPassthroughResource) apply(ctx context.Context, m *hostPCIPassthroughModel, before map[string]bool, labelsBefore map[string]string,
	creating bool, state passthroughStateSetter, diags *diag.Diagnostics) {
	hostID := m.HostSystemID.ValueString()
	checked, err := r.client.PlanHostPassthrough(ctx, r.change(ctx, m, before, diags))
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot set PCI passthrough on host "+hostID, err))
		return
	}
	if addPassthroughFindings(diags, checked.Findings); diags.HasError() {
		return
	}
	host, want := checked.Host, checked.Want
	set := map[string]bool{}
	managed := map[string]bool{}
	for _, d := range want {
		managed[d.PCIID] = true
		if _, known := before[d.PCIID]; !known {
			// What is in effect: a change waiting for a reboot (this
			// resource's own, left by a create that failed) is no original.
			before[d.PCIID] = d.Active
		}
		if !d.Enabled {
			set[d.PCIID] = true
		}
	}
	var dropped, restored []string
	for id, was := range before {
		if managed[id] {
			continue
		}
		if d := host.Device(id); d != nil && d.Enabled != was {
			set[id] = was
			restored = append(restored, id)
		}
		dropped = append(dropped, id)
	}
	labels, unlabelled := labelChanges(m.HardwareLabel, want, host, managed, labelsBefore)
	// Recorded before the change, what each device had: the dropped
	// devices leave the record only once they are put back, so a failed
	// change leaves destroy what it must restore. (A create has no state
	// yet: one whose change fails has made nothing.)
	m.Before, m.LabelsBefore = boolMap(before), stringMap(labelsBefore)
	if !creating {
		diags.Append(state.SetAttribute(ctx, path.Root("passthrough_before"), m.Before)...)
		if diags.Append(state.SetAttribute(ctx, path.Root("hardware_labels_before"), m.LabelsBefore)...); diags.HasError() {
			return
		}
	}
	if err := r.client.SetHostPassthrough(ctx, hostID, set, labels); err != nil {
		diags.Append(vsphereErrorDiag("Cannot set PCI passthrough on host "+hostID, err))
		return
	}
	for _, id := range dropped {
		delete(before, id)
	}
	for _, id := range unlabelled {
		delete(labelsBefore, id)
	}
	m.Before, m.LabelsBefore = boolMap(before), stringMap(labelsBefore)
	tflog.Debug(ctx, "Set PCI passthrough", map[string]any{"host_system_id": hostID, "devices": len(want)})
	// vSphere has changed: until it is read back, state records the plan,
	// so a failed read leaves no orphan.
	planned(m, want)
	diags.Append(state.Set(ctx, m)...)
	now, err := r.read(ctx, m, keysOf(managed), state, diags)
	if err != nil {
		// The change is made and state records it (what destroy restores
		// with it); the next refresh reads the rest.
		if creating {
			diags.AddWarning("PCI passthrough set, not read back", fmt.Sprintf("Passthrough was set on host %s, but reading it "+
				"back failed: %s. State records the planned devices; the next plan reads them from the host.", hostID, errorDetail(err)))
			return
		}
		diags.Append(vsphereErrorDiag("Cannot read the PCI passthrough of host "+hostID, err))
		return
	}
	// State now records what was applied; a reboot makes it active. A
	// device put back off waits for it as one turned on does.
	pending := m.RebootRequired.ValueBool()
	for _, id := range restored {
		if d := now.Device(id); d != nil && d.Enabled != d.Active {
			pending = true
		}
	}
	reboot := deviceReboot{hostID: hostID, allowed: m.RebootAllowed, timeout: m.RebootTimeout, pciIDs: append(keysOf(managed), restored...)}
	if !diags.HasError() && m.RebootAllowed.ValueBool() && pending && reboot.run(ctx, r.client, diags) {
		if _, err := r.read(ctx, m, keysOf(managed), state, diags); err != nil {
			diags.Append(vsphereErrorDiag("Cannot read the PCI passthrough of host "+hostID, err))
		}
	}
}

// labelChanges are the hardware labels an apply sets (by PCI id): label on
// every managed device that lacks it, recording in labelsBefore what a
// device had before it was first labelled; and the label before put back
// on a device the resource no longer labels (dropped, or the label left
// out), whose record goes once it is put back (unlabelled).
func labelChanges(label types.String, want []vsphere.PassthroughDevice, host *vsphere.HostPassthrough, managed map[string]bool,
	labelsBefore map[string]string) (labels map[string]string, unlabelled []string) {
	labels = map[string]string{}
	labelling := !label.IsNull() && !label.IsUnknown()
	if labelling {
		for _, d := range want {
			if _, known := labelsBefore[d.PCIID]; !known {
				labelsBefore[d.PCIID] = d.Label
			}
			if d.Label != label.ValueString() {
				labels[d.PCIID] = label.ValueString()
			}
		}
	}
	for id, was := range labelsBefore {
		if labelling && managed[id] {
			continue
		}
		if d := host.Device(id); d != nil && d.Label != was {
			labels[id] = was
		}
		unlabelled = append(unlabelled, id)
	}
	return labels, unlabelled
}

// read reads the host back after a change and sets state; it returns the
// host as read.
func (r *hostPCIPassthroughResource) read(
	ctx context.Context,
	m *hostPCIPassthroughModel,
	managed []string,
	state stateSetter,
	diags *diag.Diagnostics,
) (*vsphere.HostPassthrough, error) {
	host, err := r.client.HostPassthrough(ctx, m.HostSystemID.ValueString())
	if err != nil {
		return nil, err
	}
	fillPassthrough(ctx, m, host, managed, nil, diags)
	diags.Append(state.Set(ctx, m)...)
	return host, nil
}

func (r *hostPCIPassthroughResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	// The framework wants an identity even from a read that finds the
	// object gone; one that finds it records what it read (the devices
	// may have changed).
	passthroughIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics)
	defer passthroughIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var state hostPCIPassthroughModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var devices []passthroughDeviceModel
	resp.Diagnostics.Append(state.Devices.ElementsAs(ctx, &devices, true)...)
	var managed []string
	prior := map[string]passthroughDeviceModel{}
	for _, d := range devices {
		managed = append(managed, d.PCIID.ValueString())
		prior[d.PCIID.ValueString()] = d
	}
	host, err := r.client.HostPassthrough(ctx, state.HostSystemID.ValueString())
	if keptAsLastRead(err, "Its PCI passthrough", &resp.Diagnostics) {
		return
	}
	if errors.Is(err, vsphere.ErrNotFound) {
		tflog.Warn(ctx, "Host is gone; removing its passthrough from state", map[string]any{"host_system_id": state.HostSystemID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read the PCI passthrough of host "+state.HostSystemID.ValueString(), err))
		return
	}
	// A device turned off out of band, one or every one, is drift: the plan
	// turns it back on (enabled = false -> true); so is one gone from the
	// host, which the plan then refuses, naming it. The resource is gone
	// only with its host.
	fillPassthrough(ctx, &state, host, managed, prior, &resp.Diagnostics)
	if state.Before.IsNull() {
		// State written before passthrough_before existed: the record moves
		// from private state into it.
		state.Before = boolMap(passthroughBefore(ctx, state, req.Private, &resp.Diagnostics))
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privatePassthroughBefore, nil)...)
	}
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}

// passthroughBefore is what destroy restores: passthrough_before, or for
// state written before it existed, the record in private state.
func passthroughBefore(ctx context.Context, m hostPCIPassthroughModel, p privateState, diags *diag.Diagnostics) map[string]bool {
	before := map[string]bool{}
	if !m.Before.IsNull() && !m.Before.IsUnknown() {
		diags.Append(m.Before.ElementsAs(ctx, &before, false)...)
		return before
	}
	_, ds := getPrivateJSON(ctx, p, privatePassthroughBefore, &before)
	diags.Append(ds...)
	return before
}

func (r *hostPCIPassthroughResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = vsphere.ForChange(ctx)
	var state hostPCIPassthroughModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	before := passthroughBefore(ctx, state, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ch := vsphere.PassthroughChange{HostID: state.HostSystemID.ValueString(), Disabling: turnedBackOff(before)}
	p, err := r.client.PlanHostPassthrough(ctx, ch)
	if errors.Is(err, vsphere.ErrNotFound) {
		return // the host is gone, and its passthrough with it
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot restore the PCI passthrough of host "+ch.HostID, err))
		return
	}
	if addPassthroughFindings(&resp.Diagnostics, p.Findings); resp.Diagnostics.HasError() {
		return
	}
	restore := map[string]bool{}
	for _, id := range ch.Disabling {
		restore[id] = false
	}
	labels := map[string]string{}
	for id, was := range stringMapOf(ctx, state.LabelsBefore, &resp.Diagnostics) {
		if d := p.Host.Device(id); d != nil && d.Label != was {
			labels[id] = was
		}
	}
	err = r.client.SetHostPassthrough(ctx, state.HostSystemID.ValueString(), restore, labels)
	if err != nil && !errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot restore the PCI passthrough of host "+state.HostSystemID.ValueString(), err))
		return
	}
	if err == nil {
		deviceReboot{
			hostID:  ch.HostID,
			allowed: state.RebootAllowed,
			timeout: state.RebootTimeout,
			pciIDs:  ch.Disabling,
		}.ifPending(
			ctx,
			r.client,
			&resp.Diagnostics,
		)
	}
}

// ImportState adopts a host's passthrough: "<host id>" manages every device
// with passthrough on, "<host id>:<pci id>,<pci id>" those devices. Destroy
// leaves them on, as they were found.
func (r *hostPCIPassthroughResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	defer passthroughIdentity.adopted(ctx, r.claims, resp)
	target, ok := passthroughIdentity.target(ctx, req, &resp.Diagnostics)
	if !ok {
		return
	}
	hostID, listed := target.HostSystemID.ValueString(), !target.PCIIDs.IsNull()
	host, err := r.client.HostPassthrough(ctx, hostID)
	if err != nil {
		lookupFailed(req, &resp.Diagnostics, "Cannot import the PCI passthrough of host "+hostID, "host_system_id", hostID, err)
		return
	}
	var wanted []string
	if listed {
		var problems []string
		if wanted, problems = importedDevices(host, listStrings(target.PCIIDs)); len(problems) > 0 {
			resp.Diagnostics.AddError("Cannot import these devices",
				fmt.Sprintf("%s: %s. Devices of host %s (%s) with passthrough on: %s.",
					importWords(req), strings.Join(problems, "; "), host.HostName, hostID, listOrNone(enabledDevices(host))))
			return
		}
	}
	before := map[string]bool{}
	var ids []string
	for _, d := range host.Devices {
		if d.Enabled && (!listed || slices.Contains(wanted, d.PCIID)) {
			before[d.PCIID], ids = true, append(ids, d.PCIID)
		}
	}
	if len(ids) == 0 {
		resp.Diagnostics.AddError("Nothing to import",
			fmt.Sprintf("Host %s (%s) has passthrough on for no PCI device. Create the resource instead.", host.HostName, hostID))
		return
	}
	pciIDs, ds := types.SetValueFrom(ctx, types.StringType, ids)
	resp.Diagnostics.Append(ds...)
	devices := make([]passthroughDeviceModel, 0, len(ids))
	for _, id := range ids {
		devices = append(devices, passthroughDeviceModel{PCIID: types.StringValue(id), VendorID: types.StringNull(), DeviceID: types.StringNull(),
			DeviceName: types.StringNull(), Enabled: types.BoolValue(true), Active: types.BoolNull(), HardwareLabel: types.StringNull()})
	}
	// The devices' labels are adopted when they all carry one, and destroy
	// leaves them as found; otherwise they are not the resource's, as for a
	// resource created without hardware_label.
	labelsBefore := map[string]string{}
	if label := adoptedLabel(host, ids); !label.IsNull() {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("hardware_label"), label)...)
		labelsBefore = labelsOf(host, ids)
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("hardware_labels_before"), stringMap(labelsBefore))...)
	deviceList, ds := types.ListValueFrom(ctx, passthroughDeviceType, devices)
	resp.Diagnostics.Append(ds...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), host.HostID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("host_system_id"), host.HostID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("pci_ids"), pciIDs)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("devices"), deviceList)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("passthrough_before"), boolMap(before))...)
}

// importedDevices reads an import's PCI ids (spaces and case as people
// type them) as the host names its devices, and words each entry that
// cannot be imported: one listed twice, one the host lacks, one with
// passthrough off.
func importedDevices(h *vsphere.HostPassthrough, entries []string) (ids, problems []string) {
	for _, entry := range entries {
		id := strings.ToLower(strings.TrimSpace(entry))
		d := h.Device(id)
		switch {
		case id == "":
			problems = append(problems, "an empty entry")
		case d == nil:
			problems = append(problems, fmt.Sprintf("%s is no PCI device of the host", id))
		case slices.Contains(ids, d.PCIID):
			problems = append(problems, fmt.Sprintf("%s is listed twice", d.PCIID))
		case !d.Enabled:
			problems = append(problems, fmt.Sprintf("%s has passthrough off", d.PCIID))
		default:
			ids = append(ids, d.PCIID)
		}
	}
	return ids, problems
}

func enabledDevices(h *vsphere.HostPassthrough) []string {
	var out []string
	for _, d := range h.Devices {
		if d.Enabled {
			out = append(out, d.PCIID)
		}
	}
	return out
}
