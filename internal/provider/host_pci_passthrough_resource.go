package provider

import (
	"context"
	"errors"
	"fmt"
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
	_ resource.ResourceWithModifyPlan  = (*hostPCIPassthroughResource)(nil)
)

// privatePassthroughBefore is the private-state key holding, per managed
// device, whether passthrough was on before this resource took it; destroy
// and dropping a device from the configuration put that back.
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
}

// tfsdkState is the prior state of a plan.
type tfsdkState interface {
	Get(ctx context.Context, target any) diag.Diagnostics
}

type passthroughMatchModel struct {
	VendorID types.String `tfsdk:"vendor_id"`
	DeviceID types.String `tfsdk:"device_id"`
}

type passthroughDeviceModel struct {
	PCIID      types.String `tfsdk:"pci_id"`
	VendorID   types.String `tfsdk:"vendor_id"`
	DeviceID   types.String `tfsdk:"device_id"`
	DeviceName types.String `tfsdk:"device_name"`
	Enabled    types.Bool   `tfsdk:"enabled"`
	Active     types.Bool   `tfsdk:"active"`
}

var passthroughDeviceType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"pci_id": types.StringType, "vendor_id": types.StringType, "device_id": types.StringType,
	"device_name": types.StringType, "enabled": types.BoolType, "active": types.BoolType,
}}

// NewHostPCIPassthroughResource is the vspherehpc_host_pci_passthrough resource.
func NewHostPCIPassthroughResource() resource.Resource {
	return &hostPCIPassthroughResource{}
}

func (r *hostPCIPassthroughResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_pci_passthrough"
}

func (r *hostPCIPassthroughResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "PCI passthrough turned on for devices of one ESXi host, as Host > Configure > Hardware > PCI Devices > " +
			"Toggle passthrough does: devices given by PCI id, or every device of a vendor and device id (e.g. every H100 of the host). " +
			"Devices not listed are left alone. Destroy, and dropping a device, put back what the host had before.",
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
				}},
			},
			"reboot_required": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "Whether a managed device is enabled but not active yet: the host must reboot before VMs can use it " +
					"(older ESXi, and some devices). Unknown in a plan that turns passthrough on.",
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
func (r *hostPCIPassthroughResource) change(ctx context.Context, m *hostPCIPassthroughModel, before map[string]bool, diags *diag.Diagnostics) vsphere.PassthroughChange {
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

// claimDevices claims the resolved devices of a planned passthrough, so no
// other instance of the plan takes them (a second passthrough, or SR-IOV).
func (r *hostPCIPassthroughResource) claimDevices(instance planInstance, ch vsphere.PassthroughChange, devices []string, diags *diag.Diagnostics) {
	owner := fmt.Sprintf("a vspherehpc_host_pci_passthrough on %s with %s", ch.HostID, strings.Join(devices, ", "))
	for _, id := range devices {
		addClaimConflict(diags, path.Root("pci_ids"), r.claims.claim(instance, claim{
			kind: claimHostDevice, key: hostDeviceKey(ch.HostID, id), use: usePassthrough,
			what: fmt.Sprintf("PCI device %s of host %s", id, ch.HostID), owner: owner,
		}))
	}
}

// ModifyPlan resolves the devices, refuses what cannot be passed through or
// is still in use, and plans each device on; a device not yet active leaves
// reboot_required unknown.
func (r *hostPCIPassthroughResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !requireVCenter(r.client, &resp.Diagnostics) {
		return
	}
	before := map[string]bool{}
	_, ds := getPrivateJSON(ctx, req.Private, privatePassthroughBefore, &before)
	resp.Diagnostics.Append(ds...)
	if req.Plan.Raw.IsNull() {
		var state hostPCIPassthroughModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		ch := vsphere.PassthroughChange{HostID: state.HostSystemID.ValueString(), Disabling: turnedBackOff(before), Leaving: r.claims.leavingUses()}
		if _, _, findings, err := r.client.PlanHostPassthrough(ctx, ch); err == nil {
			addPassthroughFindings(&resp.Diagnostics, findings)
		}
		return
	}
	var plan hostPCIPassthroughModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
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
		return
	}
	ch := r.change(ctx, &plan, before, &resp.Diagnostics)
	if len(ch.PCIIDs) == 0 && len(ch.Match) == 0 {
		resp.Diagnostics.AddError("No devices", "Give the devices to pass through in pci_ids, or select them with match blocks.")
		return
	}
	_, want, findings, err := r.client.PlanHostPassthrough(ctx, ch)
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("host_system_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check PCI passthrough", err))
		return
	}
	addPassthroughFindings(&resp.Diagnostics, findings)
	ids := make([]string, len(want))
	for i, d := range want {
		ids[i] = d.PCIID
	}
	r.claimDevices(instance, ch, ids, &resp.Diagnostics)
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
		})
	}
	devices, ds := types.ListValueFrom(ctx, passthroughDeviceType, planned)
	resp.Diagnostics.Append(ds...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("devices"), devices)...)
	reboot := types.BoolValue(pendingReboot)
	if turningOn {
		reboot = types.BoolUnknown()
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("reboot_required"), reboot)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("id"), ch.HostID)...)
}

// unchanged reports whether the configuration is as in state and every
// managed device has passthrough on and active: then the plan is the state.
// match is resolved again when the configuration changes, not on every plan.
// It returns the managed devices' PCI ids.
func (r *hostPCIPassthroughResource) unchanged(ctx context.Context, plan *hostPCIPassthroughModel, state tfsdkState, diags *diag.Diagnostics) ([]string, bool) {
	var prior hostPCIPassthroughModel
	diags.Append(state.Get(ctx, &prior)...)
	if diags.HasError() || !plan.PCIIDs.Equal(prior.PCIIDs) || !plan.Match.Equal(prior.Match) {
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
	return ids, len(ids) > 0
}

// addPassthroughFindings words the findings of the passthrough planner. At
// plan time a device still used by VMs is a warning: resources of the same
// apply that remove it from the VMs run first, as they refer to this one;
// apply refuses it if they have not.
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
		}
	}
}

func (r *hostPCIPassthroughResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan hostPCIPassthroughModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	before := map[string]bool{}
	r.apply(ctx, &plan, before, resp.Private, &resp.State, &resp.Diagnostics)
}

func (r *hostPCIPassthroughResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan hostPCIPassthroughModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	before := map[string]bool{}
	_, ds := getPrivateJSON(ctx, req.Private, privatePassthroughBefore, &before)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, before, resp.Private, &resp.State, &resp.Diagnostics)
}

// apply turns passthrough on for the planned devices and puts back the
// earlier state of devices no longer listed, recording what each newly
// managed device had before; then it reads the result into state.
func (r *hostPCIPassthroughResource) apply(ctx context.Context, m *hostPCIPassthroughModel, before map[string]bool, p privateState, state stateSetter, diags *diag.Diagnostics) {
	hostID := m.HostSystemID.ValueString()
	host, want, findings, err := r.client.PlanHostPassthrough(ctx, r.change(ctx, m, before, diags))
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot set PCI passthrough on host "+hostID, err))
		return
	}
	if addPassthroughFindings(diags, findings); diags.HasError() {
		return
	}
	set := map[string]bool{}
	managed := map[string]bool{}
	for _, d := range want {
		managed[d.PCIID] = true
		if _, known := before[d.PCIID]; !known {
			before[d.PCIID] = d.Enabled
		}
		if !d.Enabled {
			set[d.PCIID] = true
		}
	}
	for id, was := range before {
		if managed[id] {
			continue
		}
		if d := host.Device(id); d != nil && d.Enabled != was {
			set[id] = was
		}
		delete(before, id)
	}
	diags.Append(setPrivateJSON(ctx, p, privatePassthroughBefore, before)...)
	if err := r.client.SetHostPassthrough(ctx, hostID, set); err != nil {
		diags.Append(vsphereErrorDiag("Cannot set PCI passthrough on host "+hostID, err))
		return
	}
	tflog.Debug(ctx, "Set PCI passthrough", map[string]any{"host_system_id": hostID, "devices": len(want)})
	r.read(ctx, m, keysOf(managed), state, diags)
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// read reads the host back after a change and sets state.
func (r *hostPCIPassthroughResource) read(ctx context.Context, m *hostPCIPassthroughModel, managed []string, state stateSetter, diags *diag.Diagnostics) {
	host, err := r.client.HostPassthrough(ctx, m.HostSystemID.ValueString())
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read the PCI passthrough of host "+m.HostSystemID.ValueString(), err))
		return
	}
	fillPassthrough(ctx, m, host, managed, diags)
	diags.Append(state.Set(ctx, m)...)
}

// fillPassthrough fills m's computed values from the host for the managed
// devices.
func fillPassthrough(ctx context.Context, m *hostPCIPassthroughModel, host *vsphere.HostPassthrough, managed []string, diags *diag.Diagnostics) {
	var devices []passthroughDeviceModel
	reboot := false
	for _, id := range managed {
		d := host.Device(id)
		if d == nil {
			continue
		}
		reboot = reboot || (d.Enabled && !d.Active)
		devices = append(devices, passthroughDeviceModel{
			PCIID: types.StringValue(d.PCIID), VendorID: types.StringValue(d.VendorID), DeviceID: types.StringValue(d.DeviceID),
			DeviceName: types.StringValue(d.DeviceName), Enabled: types.BoolValue(d.Enabled), Active: types.BoolValue(d.Active),
		})
	}
	list, ds := types.ListValueFrom(ctx, passthroughDeviceType, devices)
	diags.Append(ds...)
	m.ID, m.Devices, m.RebootRequired = types.StringValue(host.HostID), list, types.BoolValue(reboot)
}

func (r *hostPCIPassthroughResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state hostPCIPassthroughModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var devices []passthroughDeviceModel
	resp.Diagnostics.Append(state.Devices.ElementsAs(ctx, &devices, true)...)
	var managed []string
	for _, d := range devices {
		managed = append(managed, d.PCIID.ValueString())
	}
	host, err := r.client.HostPassthrough(ctx, state.HostSystemID.ValueString())
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
	// turns it back on (enabled = false -> true). The resource is gone only
	// with its host.
	fillPassthrough(ctx, &state, host, managed, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *hostPCIPassthroughResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state hostPCIPassthroughModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	before := map[string]bool{}
	_, ds := getPrivateJSON(ctx, req.Private, privatePassthroughBefore, &before)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return
	}
	ch := vsphere.PassthroughChange{HostID: state.HostSystemID.ValueString(), Disabling: turnedBackOff(before)}
	_, _, findings, err := r.client.PlanHostPassthrough(ctx, ch)
	if errors.Is(err, vsphere.ErrNotFound) {
		return // the host is gone, and its passthrough with it
	}
	if addPassthroughFindings(&resp.Diagnostics, findings); resp.Diagnostics.HasError() {
		return
	}
	restore := map[string]bool{}
	for _, id := range ch.Disabling {
		restore[id] = false
	}
	err = r.client.SetHostPassthrough(ctx, state.HostSystemID.ValueString(), restore)
	if err != nil && !errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot restore the PCI passthrough of host "+state.HostSystemID.ValueString(), err))
	}
}

// ImportState adopts a host's passthrough: "<host id>" manages every device
// with passthrough on, "<host id>:<pci id>,<pci id>" those devices. Destroy
// leaves them on, as they were found.
func (r *hostPCIPassthroughResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	hostID, list, _ := strings.Cut(req.ID, ":")
	host, err := r.client.HostPassthrough(ctx, hostID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot import the PCI passthrough of host "+hostID, err))
		return
	}
	before := map[string]bool{}
	var ids []string
	for _, d := range host.Devices {
		if d.Enabled && (list == "" || slices.Contains(strings.Split(list, ","), d.PCIID)) {
			before[d.PCIID], ids = true, append(ids, d.PCIID)
		}
	}
	if list != "" && len(ids) != len(strings.Split(list, ",")) {
		resp.Diagnostics.AddError("Nothing to import",
			fmt.Sprintf("Import %q names devices of host %s (%s) that do not have passthrough on; devices with it on: %s.",
				req.ID, host.HostName, hostID, listOrNone(enabledDevices(host))))
		return
	}
	if len(ids) == 0 {
		resp.Diagnostics.AddError("Nothing to import",
			fmt.Sprintf("Host %s (%s) has passthrough on for no PCI device. Create the resource instead.", host.HostName, hostID))
		return
	}
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privatePassthroughBefore, before)...)
	pciIDs, ds := types.SetValueFrom(ctx, types.StringType, ids)
	resp.Diagnostics.Append(ds...)
	devices := make([]passthroughDeviceModel, 0, len(ids))
	for _, id := range ids {
		devices = append(devices, passthroughDeviceModel{PCIID: types.StringValue(id), VendorID: types.StringNull(), DeviceID: types.StringNull(),
			DeviceName: types.StringNull(), Enabled: types.BoolValue(true), Active: types.BoolNull()})
	}
	deviceList, ds := types.ListValueFrom(ctx, passthroughDeviceType, devices)
	resp.Diagnostics.Append(ds...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), host.HostID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("host_system_id"), host.HostID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("pci_ids"), pciIDs)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("devices"), deviceList)...)
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
