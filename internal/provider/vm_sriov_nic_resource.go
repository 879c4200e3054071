package provider

import (
	"context"
	"fmt"
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
	_ resource.Resource                = (*vmSRIOVNICResource)(nil)
	_ resource.ResourceWithConfigure   = (*vmSRIOVNICResource)(nil)
	_ resource.ResourceWithImportState = (*vmSRIOVNICResource)(nil)
	_ resource.ResourceWithIdentity    = (*vmSRIOVNICResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*vmSRIOVNICResource)(nil)
)

// automaticPF is how the configuration asks for vCenter's choice of
// physical function.
const automaticPF = "automatic"

type vmSRIOVNICResource struct {
	client *vsphere.Client
	claims *claimBook
}

type vmSRIOVNICModel struct {
	ID                       types.String `tfsdk:"id"`
	VirtualMachineID         types.String `tfsdk:"virtual_machine_id"`
	PortGroupID              types.String `tfsdk:"distributed_port_group_id"`
	PhysicalFunction         types.String `tfsdk:"physical_function"`
	MACAddress               types.String `tfsdk:"mac_address"`
	PowerOffAllowed          types.Bool   `tfsdk:"power_off_allowed"`
	DeviceKey                types.Int64  `tfsdk:"device_key"`
	AssignedPhysicalFunction types.String `tfsdk:"assigned_physical_function"`
	VirtualFunction          types.String `tfsdk:"virtual_function"`
	MemoryLockedToMax        types.Bool   `tfsdk:"memory_reservation_locked_to_max"`
}

// NewVMSRIOVNICResource is the vspherehpc_vm_sriov_nic resource.
func NewVMSRIOVNICResource() resource.Resource {
	return &vmSRIOVNICResource{}
}

func (r *vmSRIOVNICResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm_sriov_nic"
	// A VM's BIOS UUID, and so its identity, changes with uuid.bios.
	resp.ResourceBehavior.MutableIdentity = true
}

func (r *vmSRIOVNICResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = vmDeviceIdentity.schema
}

func (r *vmSRIOVNICResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "One SR-IOV network adapter on a virtual machine: a virtual function of a physical NIC with SR-IOV on " +
			"(`vspherehpc_host_sriov`), on a distributed port group whose policies (VLAN, security) apply to it. Reserves all guest " +
			"memory, as SR-IOV needs. Several adapters per VM are several resources. PCI passthrough devices (GPUs, InfiniBand VFs) are " +
			"`vspherehpc_vm_gpu_mmio`'s; the two never touch each other's devices.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`<VM UUID>:<device key>`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"virtual_machine_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: fmt.Sprintf("The VM's UUID (`vsphere_virtual_machine.id`) or managed object id (`vm-42`). The VM needs "+
					"hardware version %d or later. Naming another VM replaces the resource; spelling the same VM the other way does not.",
					vsphere.MinSRIOVHardwareVersion),
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"distributed_port_group_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Managed object id of the distributed port group, e.g. `vspherehpc_rdma_dvs.pvrdma.port_group_id`. " +
					"The physical function should be an uplink of its switch on the VM's host. Changed in place.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"physical_function": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The physical NIC whose virtual function backs the adapter: its PCI id on the VM's host (e.g. " +
					"`0000:d8:00.0`, `vspherehpc_host`'s `physical_nics`), with SR-IOV active; or `automatic`, vCenter's choice at power on " +
					"among the SR-IOV-active uplinks of the port group's switch (vCenter reports it as `Automatic-<PCI id>`, which reads " +
					"back as `automatic` here, with the choice in `assigned_physical_function`). Changing it needs the VM powered off.",
				Validators: []validator.String{stringvalidator.Any(
					stringvalidator.OneOf(automaticPF),
					stringvalidator.RegexMatches(pciIDPattern, "must be a PCI id such as 0000:d8:00.0"),
				)},
			},
			"mac_address": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "A static MAC address, in lower case (the rules of `vspherehpc_vm_pvrdma_nic`'s `mac_address`). " +
					"Without it vSphere generates one, shown here.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				Validators:    []validator.String{staticMAC{}},
			},
			"power_off_allowed": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Adding or removing the adapter, or changing its physical function, needs the VM powered off. With " +
					"`false` (the default) the plan fails on a running VM; with `true` the provider shuts the guest down, makes the change " +
					"and powers the VM back on.",
			},
			"device_key": schema.Int64Attribute{
				Computed: true, MarkdownDescription: "The adapter's device key in the VM.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"assigned_physical_function": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "PCI id of the physical function in use: the one given, or vCenter's automatic choice; empty until " +
					"the VM's first power on for an automatic choice.",
			},
			"virtual_function": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "PCI id of the virtual function vSphere assigned at power on; empty until the VM powers on.",
			},
			"memory_reservation_locked_to_max": schema.BoolAttribute{
				Computed: true, MarkdownDescription: "Whether all guest memory is reserved, as SR-IOV needs; always planned true. " +
					"Destroy leaves the reservation in place (GPU passthrough and PVRDMA need it too).",
				PlanModifiers: []planmodifier.Bool{alwaysBool(true)},
			},
		},
	}
}

func (r *vmSRIOVNICResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client, r.claims = resourceDataFrom(req.ProviderData, &resp.Diagnostics)
}

// pf is the physical function as the service layer takes it: "" for the
// automatic choice.
func (m *vmSRIOVNICModel) pf() string {
	if pf := m.PhysicalFunction.ValueString(); pf != automaticPF {
		return pf
	}
	return ""
}

func (m *vmSRIOVNICModel) spec() vsphere.SRIOVNICSpec {
	mac := ""
	if !m.MACAddress.IsUnknown() {
		mac = m.MACAddress.ValueString()
	}
	return vsphere.SRIOVNICSpec{
		PortGroupID:      m.PortGroupID.ValueString(),
		PhysicalFunction: m.pf(),
		MAC:              mac,
		PowerOffAllowed:  m.PowerOffAllowed.ValueBool(),
	}
}

func (r *vmSRIOVNICResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer vmDeviceIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan vmSRIOVNICModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() || !r.claims.awaitReboots(ctx, plan.VirtualMachineID.ValueString(), &resp.Diagnostics) {
		return
	}
	vmID := plan.VirtualMachineID.ValueString()
	nic, err := r.client.CreateSRIOVNIC(ctx, vmID, plan.spec())
	if nic != nil {
		// The adapter exists: track it even when a later step failed.
		tflog.Debug(ctx, "Added SR-IOV adapter", map[string]any{"virtual_machine_id": vmID, "device_key": nic.Key})
		resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateVM, nic.VM.MOID)...)
		sriovNICToModel(nic, &plan)
		resp.Diagnostics.Append(setModelState(ctx, &resp.State, &plan)...)
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot add an SR-IOV adapter to virtual machine "+vmID, err))
	}
}

// adapter is what the SR-IOV adapter's Read and Update share with the PVRDMA
// adapter's.
func (r *vmSRIOVNICResource) adapter() adapterKind[*vmSRIOVNICModel, vsphere.SRIOVNIC] {
	return adapterKind[*vmSRIOVNICModel, vsphere.SRIOVNIC]{
		name: "SR-IOV", read: r.client.SRIOVNIC, vmOf: func(nic *vsphere.SRIOVNIC) vsphere.VMRef { return nic.VM }, toModel: sriovNICToModel,
		ids: func(m *vmSRIOVNICModel) (*types.String, *types.String) { return &m.ID, &m.VirtualMachineID },
		unknownToNull: func(m *vmSRIOVNICModel) {
			for _, s := range []*types.String{&m.MACAddress, &m.AssignedPhysicalFunction, &m.VirtualFunction} {
				if s.IsUnknown() {
					*s = types.StringNull()
				}
			}
		},
	}
}

func sriovNICToModel(nic *vsphere.SRIOVNIC, m *vmSRIOVNICModel) {
	m.ID = types.StringValue(strings.ToLower(nic.VM.ID) + ":" + strconv.Itoa(int(nic.Key)))
	m.DeviceKey = types.Int64Value(int64(nic.Key))
	m.PortGroupID = types.StringValue(nic.PortGroupID)
	m.MACAddress = types.StringValue(nic.MAC)
	m.PhysicalFunction = types.StringValue(nic.PhysicalFunction)
	if nic.Automatic {
		m.PhysicalFunction = types.StringValue(automaticPF)
	}
	m.AssignedPhysicalFunction = types.StringValue(nic.PhysicalFunction)
	m.VirtualFunction = types.StringValue(nic.VirtualFunction)
	m.MemoryLockedToMax = types.BoolValue(nic.MemoryLocked)
	if m.PowerOffAllowed.IsNull() {
		m.PowerOffAllowed = types.BoolValue(false)
	}
}

func (r *vmSRIOVNICResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state vmSRIOVNICModel
	r.adapter().readState(ctx, req, resp, &state)
}

func (r *vmSRIOVNICResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer vmDeviceIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan, state vmSRIOVNICModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	if resp.Diagnostics.HasError() || !r.claims.awaitReboots(ctx, plan.VirtualMachineID.ValueString(), &resp.Diagnostics) {
		return
	}
	vmID := vmRef(ctx, req.Private, state.VirtualMachineID.ValueString(), &resp.Diagnostics)
	key := int32(state.DeviceKey.ValueInt64())
	// Only a MAC in the configuration is set; one vSphere generated stays so.
	var configMAC types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("mac_address"), &configMAC)...)
	spec := plan.spec()
	spec.MAC = configMAC.ValueString()
	plan.DeviceKey = state.DeviceKey
	changed := !plan.PortGroupID.Equal(state.PortGroupID) || !plan.PhysicalFunction.Equal(state.PhysicalFunction) ||
		(spec.MAC != "" && spec.MAC != state.MACAddress.ValueString()) || !state.MemoryLockedToMax.ValueBool()
	if !changed {
		// Only power_off_allowed or the id's spelling: nothing to tell vCenter.
		plan.ID, plan.MACAddress = state.ID, state.MACAddress
		resp.Diagnostics.Append(setModelState(ctx, &resp.State, &plan)...)
		return
	}
	if err := r.client.UpdateSRIOVNIC(ctx, vmID, key, spec); err != nil {
		r.adapter().failedUpdate(ctx, &plan, state.ID, vmID, err, resp)
		return
	}
	r.adapter().readInto(ctx, &plan, vmID, resp.Private, &resp.State, &resp.Diagnostics)
}

func (r *vmSRIOVNICResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = vsphere.ForChange(ctx)
	var state vmSRIOVNICModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	deleteAdapter(ctx, req, resp, "SR-IOV", state.ID, state.VirtualMachineID, func(vmID string) error {
		return r.client.DeleteSRIOVNIC(ctx, vmID, int32(state.DeviceKey.ValueInt64()), state.PowerOffAllowed.ValueBool())
	})
}

// ImportState takes "<VM UUID or moid>:<device key>".
func (r *vmSRIOVNICResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	defer vmDeviceIdentity.adopted(ctx, r.claims, resp)
	importAdapter(ctx, r.client, req, resp, "sriov", "SR-IOV")
}
