package provider

import (
	"context"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ resource.Resource                = (*vmPVRDMANICResource)(nil)
	_ resource.ResourceWithConfigure   = (*vmPVRDMANICResource)(nil)
	_ resource.ResourceWithImportState = (*vmPVRDMANICResource)(nil)
	_ resource.ResourceWithIdentity    = (*vmPVRDMANICResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*vmPVRDMANICResource)(nil)
)

type vmPVRDMANICResource struct {
	client *vsphere.Client
	claims *claimBook
}

type vmPVRDMANICModel struct {
	ID               types.String `tfsdk:"id"`
	VirtualMachineID types.String `tfsdk:"virtual_machine_id"`
	PortGroupID      types.String `tfsdk:"distributed_port_group_id"`
	DeviceProtocol   types.String `tfsdk:"device_protocol"`
	StartConnected   types.Bool   `tfsdk:"start_connected"`
	MACAddress       types.String `tfsdk:"mac_address"`
	ReserveAllMemory types.Bool   `tfsdk:"reserve_all_memory"`
	PowerOffAllowed  types.Bool   `tfsdk:"power_off_allowed"`
	DeviceKey        types.Int64  `tfsdk:"device_key"`
	AdapterIndex     types.Int64  `tfsdk:"adapter_index"`
}

// NewVMPVRDMANICResource is the vspherehpc_vm_pvrdma_nic resource.
func NewVMPVRDMANICResource() resource.Resource {
	return &vmPVRDMANICResource{}
}

func (r *vmPVRDMANICResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm_pvrdma_nic"
	// A VM's BIOS UUID, and so its identity, changes with uuid.bios.
	resp.ResourceBehavior.MutableIdentity = true
}

func (r *vmPVRDMANICResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = vmDeviceIdentity.schema
}

func (r *vmPVRDMANICResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "One PVRDMA network adapter (`vmxnet3vrdma`) on a virtual machine, on a distributed port group, " +
			"with its RoCE protocol. Several adapters per VM are several resources, on different networks.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`<VM UUID>:<device key>`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"virtual_machine_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The VM's UUID (`vsphere_virtual_machine.id`) or managed object id (`vm-42`). The VM needs hardware " +
					"version 13 or later. Changing it moves the adapter to another VM (replace).",
				// No RequiresReplace here: ModifyPlan replaces only when the id
				// names another VM, not when the same VM's UUID and managed
				// object id are swapped.
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"distributed_port_group_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Managed object id of the distributed port group, e.g. `vspherehpc_rdma_dvs.pvrdma.port_group_id`. " +
					"Every host of the VM's cluster must be a member of its switch. Changed in place.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"device_protocol": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "RoCE version: `rocev2` (default) or `rocev1`, checked against what the VM's hardware version offers. " +
					"Hardware versions that offer PVRDMA with no choice of protocol (public sources name vmx-13 and vmx-20 and later) " +
					"take none: leave it unset there, and the attribute shows what vSphere reports, or null. " +
					"Changing it needs the VM powered off.",
				Validators: []validator.String{stringvalidator.OneOf("rocev1", "rocev2")},
			},
			"start_connected": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Whether the adapter connects when the VM powers on. Default true.",
			},
			"mac_address": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "A static MAC address, in lower case: one from VMware's range for static addresses, `00:50:56:00:00:00` " +
					"to `00:50:56:3f:ff:ff` (the rest of the `00:50:56` prefix is reserved for addresses vCenter generates), or another unicast " +
					"address that is unique on the network (vSphere takes it but cannot check it against machines outside vCenter). " +
					"Multicast addresses are refused. Without it vSphere generates one, shown here.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				Validators:    []validator.String{staticMAC{}},
			},
			"reserve_all_memory": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Reserve all guest memory, as VMware's PVRDMA procedure does. Default true. Destroy leaves the " +
					"reservation in place (GPU passthrough needs it too).",
			},
			"power_off_allowed": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Adding or removing the adapter, or changing its protocol, needs the VM powered off. With `false` " +
					"(the default) the plan fails on a running VM; with `true` the provider shuts the guest down (then powers off hard if " +
					"it does not stop in time), makes the change and powers the VM back on.",
			},
			"device_key": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "The adapter's device key in the VM.",
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"adapter_index": schema.Int64Attribute{
				Computed: true,
				MarkdownDescription: "Position of the adapter among the VM's PVRDMA adapters by device key, from 0. Removing another " +
					"PVRDMA adapter of the VM can change it.",
			},
		},
	}
}

func (r *vmPVRDMANICResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client, r.claims = resourceDataFrom(req.ProviderData, &resp.Diagnostics)
}

// orNone joins a few alternatives, "rocev1 and rocev2", or says "none".
func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, " and ")
}

// listOrNone joins a list of objects, "a, b, c", or says "none".
func listOrNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func (m *vmPVRDMANICModel) spec() vsphere.PVRDMANICSpec {
	mac := ""
	if !m.MACAddress.IsUnknown() {
		mac = m.MACAddress.ValueString()
	}
	return vsphere.PVRDMANICSpec{
		PortGroupID: m.PortGroupID.ValueString(), DeviceProtocol: m.DeviceProtocol.ValueString(),
		StartConnected: m.StartConnected.ValueBool(), MAC: mac,
		ReserveAllMemory: m.ReserveAllMemory.ValueBool(), PowerOffAllowed: m.PowerOffAllowed.ValueBool(),
	}
}

func (r *vmPVRDMANICResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer vmDeviceIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan vmPVRDMANICModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() || !r.claims.awaitReboots(ctx, plan.VirtualMachineID.ValueString(), &resp.Diagnostics) {
		return
	}
	vmID := plan.VirtualMachineID.ValueString()
	if plan.DeviceProtocol.IsUnknown() { // unset, and the VM unknown at plan time
		choice, err := r.client.PVRDMAProtocolChoice(ctx, vmID)
		if err != nil {
			resp.Diagnostics.Append(vsphereErrorDiag("Cannot add a PVRDMA adapter to virtual machine "+vmID, err))
			return
		}
		if choice {
			plan.DeviceProtocol = types.StringValue(defaultProtocol)
		}
	}
	nic, err := r.client.CreatePVRDMANIC(ctx, vmID, plan.spec())
	if nic != nil {
		// The adapter exists: track it even when a later step failed.
		tflog.Debug(ctx, "Added PVRDMA adapter", map[string]any{"virtual_machine_id": vmID, "device_key": nic.Key})
		resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateVM, nic.VM.MOID)...)
		nicToModel(nic, &plan)
		resp.Diagnostics.Append(setModelState(ctx, &resp.State, &plan)...)
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot add a PVRDMA adapter to virtual machine "+vmID, err))
	}
}

// adapter is what the PVRDMA adapter's Read and Update share with
// the SR-IOV adapter's.
func (r *vmPVRDMANICResource) adapter() adapterKind[*vmPVRDMANICModel, vsphere.PVRDMANIC] {
	return adapterKind[*vmPVRDMANICModel, vsphere.PVRDMANIC]{
		name: "PVRDMA", read: r.client.PVRDMANIC, vmOf: func(nic *vsphere.PVRDMANIC) vsphere.VMRef { return nic.VM }, toModel: nicToModel,
		ids: func(m *vmPVRDMANICModel) (*types.String, *types.String) { return &m.ID, &m.VirtualMachineID },
		unknownToNull: func(m *vmPVRDMANICModel) {
			if m.MACAddress.IsUnknown() {
				m.MACAddress = types.StringNull()
			}
			if m.AdapterIndex.IsUnknown() {
				m.AdapterIndex = types.Int64Null()
			}
			if m.DeviceProtocol.IsUnknown() {
				m.DeviceProtocol = types.StringNull()
			}
		},
	}
}

func nicToModel(nic *vsphere.PVRDMANIC, m *vmPVRDMANICModel) {
	m.ID = types.StringValue(strings.ToLower(nic.VM.ID) + ":" + strconv.Itoa(int(nic.Key)))
	m.DeviceKey = types.Int64Value(int64(nic.Key))
	m.AdapterIndex = types.Int64Value(int64(nic.AdapterIndex))
	m.PortGroupID = types.StringValue(nic.PortGroupID)
	m.DeviceProtocol = types.StringNull()
	if nic.DeviceProtocol != "" {
		m.DeviceProtocol = types.StringValue(nic.DeviceProtocol)
	}
	m.StartConnected = types.BoolValue(nic.StartConnected)
	m.MACAddress = types.StringValue(nic.MAC)
	// Only an unlocked reservation the resource asked for is drift; it never
	// unlocks one itself.
	if m.ReserveAllMemory.IsNull() || m.ReserveAllMemory.ValueBool() {
		m.ReserveAllMemory = types.BoolValue(nic.MemoryLocked)
	}
	if m.PowerOffAllowed.IsNull() {
		m.PowerOffAllowed = types.BoolValue(false)
	}
}

func (r *vmPVRDMANICResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state vmPVRDMANICModel
	r.adapter().readState(ctx, req, resp, &state)
}

func (r *vmPVRDMANICResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer vmDeviceIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan, state vmPVRDMANICModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	if resp.Diagnostics.HasError() || !r.claims.awaitReboots(ctx, plan.VirtualMachineID.ValueString(), &resp.Diagnostics) {
		return
	}
	vmID := vmRef(ctx, req.Private, state.VirtualMachineID.ValueString(), &resp.Diagnostics)
	key := int32(state.DeviceKey.ValueInt64())
	needsOff := !plan.DeviceProtocol.IsUnknown() && !plan.DeviceProtocol.Equal(state.DeviceProtocol)
	// Only a MAC in the configuration is set; one vSphere generated stays so.
	var configMAC types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("mac_address"), &configMAC)...)
	spec := plan.spec()
	spec.MAC = configMAC.ValueString()
	plan.DeviceKey = state.DeviceKey
	changed := !plan.PortGroupID.Equal(state.PortGroupID) || needsOff || !plan.StartConnected.Equal(state.StartConnected) ||
		(spec.MAC != "" && spec.MAC != state.MACAddress.ValueString()) ||
		(plan.ReserveAllMemory.ValueBool() && !state.ReserveAllMemory.ValueBool())
	if !changed {
		// Only provider-side settings (power_off_allowed, the id's spelling,
		// no longer reserving memory): nothing to tell vCenter.
		plan.ID, plan.MACAddress, plan.AdapterIndex = state.ID, state.MACAddress, state.AdapterIndex
		resp.Diagnostics.Append(setModelState(ctx, &resp.State, &plan)...)
		return
	}
	if err := r.client.UpdatePVRDMANIC(ctx, vmID, key, spec, needsOff); err != nil {
		r.adapter().failedUpdate(ctx, &plan, state.ID, vmID, err, resp)
		return
	}
	r.adapter().readInto(ctx, &plan, vmID, resp.Private, &resp.State, &resp.Diagnostics)
}

func (r *vmPVRDMANICResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = vsphere.ForChange(ctx)
	var state vmPVRDMANICModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	deleteAdapter(ctx, req, resp, "PVRDMA", state.ID, state.VirtualMachineID, func(vmID string) error {
		return r.client.DeletePVRDMANIC(ctx, vmID, int32(state.DeviceKey.ValueInt64()), state.PowerOffAllowed.ValueBool())
	})
}

// ImportState takes "<VM UUID or moid>:<device key>".
func (r *vmPVRDMANICResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	defer vmDeviceIdentity.adopted(ctx, r.claims, resp)
	importAdapter(ctx, r.client, req, resp, "vmxnet3vrdma", "PVRDMA")
}
