package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
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

// ModifyPlan checks a new adapter, or a changed port group, function or
// MAC, against the VM, its host and the port group's switch, and refuses a
// change that needs a running VM off unless power_off_allowed.
func (r *vmSRIOVNICResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var state *vmSRIOVNICModel
	if !req.State.Raw.IsNull() {
		state = &vmSRIOVNICModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if !requireVCenter(r.client, &resp.Diagnostics) {
		return
	}
	if req.Plan.Raw.IsNull() {
		if state != nil {
			r.claims.leave(vsphere.VMUse{VM: state.VirtualMachineID.ValueString(), PortGroupID: state.PortGroupID.ValueString(),
				PhysicalFunction: cmp.Or(state.AssignedPhysicalFunction.ValueString(), state.PhysicalFunction.ValueString())})
			checkDestroyPower(ctx, r.client, state.VirtualMachineID.ValueString(), state.PowerOffAllowed.ValueBool(), vsphere.WhatSRIOVNeedsOff, &resp.Diagnostics)
		}
		return
	}
	var plan vmSRIOVNICModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if state != nil && replaceOnOtherVM(ctx, r.client, state.VirtualMachineID, plan.VirtualMachineID, resp) {
		state = nil // planned as a new adapter on the other VM
	}
	newPF := state != nil && !plan.PhysicalFunction.Equal(state.PhysicalFunction)
	if state != nil && !newPF {
		// The function and its VF stay as they are.
		plan.AssignedPhysicalFunction, plan.VirtualFunction = state.AssignedPhysicalFunction, state.VirtualFunction
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	}
	var configMAC types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("mac_address"), &configMAC)...)
	claimStaticMAC(ctx, r.claims, req, resp, configMAC, "SR-IOV", plan.VirtualMachineID)
	if plan.VirtualMachineID.IsUnknown() || plan.PortGroupID.IsUnknown() || plan.PhysicalFunction.IsUnknown() {
		return
	}
	change := vsphere.SRIOVNICChange{
		VMID: plan.VirtualMachineID.ValueString(), PortGroupID: plan.PortGroupID.ValueString(), PhysicalFunction: plan.pf(),
		NewPF: newPF, PowerOffAllowed: plan.PowerOffAllowed.ValueBool(), Planned: r.claims.deviceInputs(),
	}
	if !configMAC.IsUnknown() && (state == nil || !configMAC.Equal(state.MACAddress)) {
		change.MAC = configMAC.ValueString()
	}
	if state != nil {
		change.Key = int32(state.DeviceKey.ValueInt64())
		if plan.PortGroupID.Equal(state.PortGroupID) && !newPF && change.MAC == "" {
			return // nothing vCenter needs to be asked about
		}
	}
	findings, err := r.client.PlanSRIOVNIC(ctx, change)
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(argumentOf(err, map[vsphere.Object]string{
			vsphere.ObjectVirtualMachine: "virtual_machine_id", vsphere.ObjectPortGroup: "distributed_port_group_id",
		}), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check the SR-IOV adapter", err))
		return
	}
	for _, f := range findings {
		if free, ok := f.(vsphere.FreeVFs); ok {
			r.takeVF(ctx, req, resp, plan, free)
			continue
		}
		addSRIOVNICFinding(&resp.Diagnostics, f)
	}
}

// takeVF counts the new adapters of this plan on a physical function against
// its free virtual functions: one VM more than there are does not power on.
func (r *vmSRIOVNICResource) takeVF(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, plan vmSRIOVNICModel, f vsphere.FreeVFs) {
	takers := r.claims.takeVF(r.claims.instance(ctx, req, resp), hostDeviceKey(f.HostID, f.PCIID), "virtual machine "+plan.VirtualMachineID.ValueString())
	if len(takers) <= f.Free {
		return
	}
	resp.Diagnostics.AddAttributeError(path.Root("physical_function"), "Not enough free virtual functions",
		fmt.Sprintf("Physical function %s (%s) of host %s has %d virtual functions, %d of them free, and this configuration adds %d "+
			"SR-IOV adapters on it (%s). Each takes a virtual function of its own at power on, so a VM would not power on: raise "+
			"num_virtual_functions of its vspherehpc_host_sriov (in an apply before), or put an adapter on another function.",
			f.PCIID, f.NIC, f.Host, f.VFs, f.Free, len(takers), strings.Join(takers, ", ")))
}

// addSRIOVNICFinding words one finding of the adapter's planner.
func addSRIOVNICFinding(diags *diag.Diagnostics, f vsphere.Finding) {
	pfPath, groupPath := path.Root("physical_function"), path.Root("distributed_port_group_id")
	switch f := f.(type) {
	case vsphere.HardwareTooOld:
		diags.AddAttributeError(path.Root("virtual_machine_id"), "Hardware version too old for SR-IOV",
			fmt.Sprintf("Virtual machine %s has hardware version %d (vmx-%d); SR-IOV adapters need vmx-%d (ESXi 5.5 compatibility) or "+
				"later. Upgrade the VM's compatibility while it is powered off.", f.VM, f.Version, f.Version, f.Minimum))
	case vsphere.StandardNetwork:
		diags.AddAttributeError(groupPath, "Not a distributed port group",
			fmt.Sprintf("%s (%s) is a standard network; this resource puts SR-IOV adapters on distributed port groups, such as the "+
				"port_group_id of a vspherehpc_rdma_dvs.", f.NetworkID, f.Name))
	case vsphere.DeviceNotOnHost:
		diags.AddAttributeError(pfPath, "No such physical function",
			fmt.Sprintf("The VM's host %s has no PCI device %s. Its SR-IOV capable devices: %s.", f.Host, f.PCIID, listOrNone(f.Capable)))
	case vsphere.NotSRIOVCapable:
		diags.AddAttributeError(pfPath, "Not an SR-IOV function",
			fmt.Sprintf("PCI device %s (%s) of the VM's host %s is not SR-IOV capable. Its SR-IOV capable devices: %s.",
				f.PCIID, strings.TrimSpace(f.Name), f.Host, listOrNone(f.Capable)))
	case vsphere.PFNotNIC:
		diags.AddAttributeError(pfPath, "Not a network adapter",
			fmt.Sprintf("PCI device %s (%s) of host %s is no network adapter of the host (it has no vmnic), so its virtual "+
				"functions cannot back an SR-IOV network adapter. Pass such a VF through as a pci_device of vspherehpc_vm_gpu_mmio "+
				"instead, or choose one of the host's SR-IOV capable NICs: %s.", f.PCIID, f.Name, f.Host, listOrNone(f.NICs)))
	case vsphere.SRIOVNotActive:
		if f.TurnedOnAtReboot {
			diags.AddAttributeError(pfPath, "SR-IOV active only after a host reboot", fmt.Sprintf(turnedOnAtReboot, "SR-IOV of", f.PCIID, f.Host))
			return
		}
		if f.Enabled {
			diags.AddAttributeError(pfPath, "SR-IOV waits for a host reboot",
				fmt.Sprintf("SR-IOV of %s (%s) on host %s is enabled but not active yet: the host must reboot first "+
					"(vspherehpc_host_sriov shows reboot_required). Reboot the host, then apply again.", f.PCIID, f.NIC, f.Host))
			return
		}
		diags.AddAttributeError(pfPath, "SR-IOV is off",
			fmt.Sprintf("SR-IOV of %s (%s) on host %s is off, so it has no virtual function to give. Turn it on with "+
				"vspherehpc_host_sriov (in this configuration or before it), or choose another physical function.", f.PCIID, f.NIC, f.Host))
	case vsphere.PFNotUplink:
		where := "is no uplink of any switch"
		if f.UplinkOf != "" {
			where = "is an uplink of switch " + f.UplinkOf
		}
		diags.AddAttributeWarning(pfPath, "Physical function not an uplink of the port group's switch",
			fmt.Sprintf("%s on host %s %s, not of %s. vSphere applies the port group's policies (VLAN, MAC security) to the virtual "+
				"function through the switch its physical NIC backs: make the NIC an uplink of %s, or choose one that is.",
				f.NIC, f.Host, where, f.Switch, f.Switch))
	case vsphere.VMHostNotOnSwitch:
		diags.AddAttributeError(groupPath, "The VM's host is not on the switch",
			fmt.Sprintf("Virtual machine %s runs on host %s, which is no member of switch %s (port group %s): vCenter gives an SR-IOV "+
				"adapter a port of the switch on the VM's own host. Add the host to the switch (a host block of its vspherehpc_rdma_dvs), "+
				"or move the VM to a member host.", f.VM, f.Host, f.Switch, f.PortGroup))
	case vsphere.NoSRIOVPool:
		diags.AddAttributeError(pfPath, "Nothing for vCenter to choose from",
			fmt.Sprintf("physical_function = \"automatic\" lets vCenter choose, at power on, among the SR-IOV-active uplinks of switch "+
				"%s on the VM's host %s, and it has none. Turn SR-IOV on for an uplink of %s on that host (vspherehpc_host_sriov), "+
				"or give a physical function.", f.Switch, f.Host, f.Switch))
	case vsphere.MACInUse:
		diags.AddAttributeError(path.Root("mac_address"), "MAC address in use",
			fmt.Sprintf("Virtual machine %s already has a network adapter with MAC address %s. Two adapters with one MAC break each "+
				"other's traffic: choose another address, or leave mac_address out to let vSphere generate one.", f.VM, f.MAC))
	default:
		addPowerFinding(diags, f)
	}
}

func (m *vmSRIOVNICModel) spec() vsphere.SRIOVNICSpec {
	mac := ""
	if !m.MACAddress.IsUnknown() {
		mac = m.MACAddress.ValueString()
	}
	return vsphere.SRIOVNICSpec{PortGroupID: m.PortGroupID.ValueString(), PhysicalFunction: m.pf(), MAC: mac, PowerOffAllowed: m.PowerOffAllowed.ValueBool()}
}

func (r *vmSRIOVNICResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan vmSRIOVNICModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	vmID := plan.VirtualMachineID.ValueString()
	key, err := r.client.CreateSRIOVNIC(ctx, vmID, plan.spec())
	if key != 0 {
		// The adapter exists: track it even when a later step failed.
		tflog.Debug(ctx, "Added SR-IOV adapter", map[string]any{"virtual_machine_id": vmID, "device_key": key})
		plan.DeviceKey = types.Int64Value(int64(key))
		r.readInto(ctx, &plan, vmID, resp.Private, &resp.State, &resp.Diagnostics)
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot add an SR-IOV adapter to virtual machine "+vmID, err))
	}
}

// readInto reads the adapter back into m and sets state; when it cannot,
// it records the adapter by key so it is not lost.
func (r *vmSRIOVNICResource) readInto(ctx context.Context, m *vmSRIOVNICModel, vmID string, p privateState, state stateSetter, diags *diag.Diagnostics) {
	nic, err := r.client.SRIOVNIC(ctx, vmID, int32(m.DeviceKey.ValueInt64()))
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read back the SR-IOV adapter of virtual machine "+vmID, err))
		m.ID = types.StringValue(vmID + ":" + strconv.FormatInt(m.DeviceKey.ValueInt64(), 10))
		for _, s := range []*types.String{&m.MACAddress, &m.AssignedPhysicalFunction, &m.VirtualFunction} {
			if s.IsUnknown() {
				*s = types.StringNull()
			}
		}
		diags.Append(state.Set(ctx, m)...)
		return
	}
	diags.Append(setPrivateJSON(ctx, p, privateVM, nic.VM.MOID)...)
	sriovNICToModel(nic, m)
	diags.Append(state.Set(ctx, m)...)
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
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	nic, err := readVM(ctx, req.Private, state.VirtualMachineID.ValueString(), state.ID, &resp.Diagnostics, func(vmID string) (*vsphere.SRIOVNIC, error) {
		return r.client.SRIOVNIC(ctx, vmID, int32(state.DeviceKey.ValueInt64()))
	})
	if errors.Is(err, vsphere.ErrNotFound) {
		tflog.Warn(ctx, "SR-IOV adapter or its VM is gone; removing it from state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read SR-IOV adapter "+state.ID.ValueString(), err))
		return
	}
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateVM, nic.VM.MOID)...)
	state.VirtualMachineID = followVM(state.VirtualMachineID, nic.VM)
	sriovNICToModel(nic, &state)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *vmSRIOVNICResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state vmSRIOVNICModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	if resp.Diagnostics.HasError() {
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
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	if err := r.client.UpdateSRIOVNIC(ctx, vmID, key, spec); err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot change SR-IOV adapter "+state.ID.ValueString(), err))
		if nic, rerr := r.client.SRIOVNIC(ctx, vmID, key); rerr == nil {
			sriovNICToModel(nic, &plan)
			resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		}
		return
	}
	r.readInto(ctx, &plan, vmID, resp.Private, &resp.State, &resp.Diagnostics)
}

func (r *vmSRIOVNICResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state vmSRIOVNICModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	vmID := vmRef(ctx, req.Private, state.VirtualMachineID.ValueString(), &resp.Diagnostics)
	if err := r.client.DeleteSRIOVNIC(ctx, vmID, int32(state.DeviceKey.ValueInt64()), state.PowerOffAllowed.ValueBool()); err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot remove SR-IOV adapter "+state.ID.ValueString(), err))
	}
}

// ImportState takes "<VM UUID or moid>:<device key>".
func (r *vmSRIOVNICResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importAdapter(ctx, r.client, req, resp, "sriov", "SR-IOV")
}
