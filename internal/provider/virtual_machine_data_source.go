package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ datasource.DataSource                     = (*virtualMachineDataSource)(nil)
	_ datasource.DataSourceWithConfigure        = (*virtualMachineDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*virtualMachineDataSource)(nil)
)

type virtualMachineDataSource struct {
	client *vsphere.Client
}

type virtualMachineModel struct {
	VirtualMachineID             types.String            `tfsdk:"virtual_machine_id"`
	Name                         types.String            `tfsdk:"name"`
	DatacenterID                 types.String            `tfsdk:"datacenter_id"`
	ID                           types.String            `tfsdk:"id"`
	MOID                         types.String            `tfsdk:"moid"`
	HardwareVersion              types.Int64             `tfsdk:"hardware_version"`
	Firmware                     types.String            `tfsdk:"firmware"`
	PowerState                   types.String            `tfsdk:"power_state"`
	HostSystemID                 types.String            `tfsdk:"host_system_id"`
	GuestFamily                  types.String            `tfsdk:"guest_family"`
	GuestFullName                types.String            `tfsdk:"guest_full_name"`
	MemoryReservationLockedToMax types.Bool              `tfsdk:"memory_reservation_locked_to_max"`
	NetworkInterfaces            []networkInterfaceModel `tfsdk:"network_interfaces"`
	PCIPassthroughDevices        []pciPassthroughModel   `tfsdk:"pci_passthrough_devices"`
}

type networkInterfaceModel struct {
	Key                   types.Int64  `tfsdk:"key"`
	AdapterType           types.String `tfsdk:"adapter_type"`
	MACAddress            types.String `tfsdk:"mac_address"`
	NetworkID             types.String `tfsdk:"network_id"`
	DistributedSwitchUUID types.String `tfsdk:"distributed_switch_uuid"`
	DeviceProtocol        types.String `tfsdk:"device_protocol"`
	StartConnected        types.Bool   `tfsdk:"start_connected"`
}

type pciPassthroughModel struct {
	Key      types.Int64  `tfsdk:"key"`
	PCIID    types.String `tfsdk:"pci_id"`
	VendorID types.String `tfsdk:"vendor_id"`
	DeviceID types.String `tfsdk:"device_id"`
	Dynamic  types.Bool   `tfsdk:"dynamic"`
	Label    types.String `tfsdk:"label"`
	VGPU     types.String `tfsdk:"vgpu_profile"`
}

// NewVirtualMachineDataSource is the vspherehpc_virtual_machine data source.
func NewVirtualMachineDataSource() datasource.DataSource {
	return &virtualMachineDataSource{}
}

func (d *virtualMachineDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_virtual_machine"
}

func (d *virtualMachineDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Looks up a virtual machine by UUID, managed object id or name, with what PVRDMA and GPU passthrough " +
			"depend on: hardware version, firmware, power state, host, network adapters and passthrough devices.",
		Attributes: map[string]schema.Attribute{
			"virtual_machine_id": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The VM's UUID (what `vsphere_virtual_machine.id` exports) or its managed object id (`vm-42`). " +
					"Give this, or `name` with `datacenter_id`.",
				Validators: []validator.String{
					notEmpty("give the VM's UUID (what vsphere_virtual_machine.id exports) or managed object id, or name with datacenter_id"),
				},
			},
			"name": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "Name of the VM to look up in `datacenter_id`; the VM's name when found by id.",
				Validators: []validator.String{stringvalidator.AlsoRequires(path.MatchRoot("datacenter_id")),
					notEmpty("give the VM's name, or virtual_machine_id")},
			},
			"datacenter_id": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Managed object id of the datacenter to search by `name`.",
				Validators: []validator.String{
					stringvalidator.ConflictsWith(path.MatchRoot("virtual_machine_id")),
					notEmpty("give the datacenter's managed object id, e.g. data.vspherehpc_datacenter.dc.id"),
				},
			},
			"id":               computedString("The VM's UUID."),
			"moid":             computedString("Managed object id of the VM, e.g. `vm-42`."),
			"hardware_version": computedInt64("Virtual hardware version, e.g. `19` for `vmx-19`. PVRDMA needs 13 or later."),
			"firmware":         computedString("`bios` or `efi`."),
			"power_state":      computedString("`on`, `off` or `suspended`."),
			"host_system_id":   computedString("Managed object id of the host the VM is registered on."),
			"guest_family": computedString(
				"Guest OS family as VMware Tools reported it, e.g. `linuxGuest`; empty when no guest OS has been seen.",
			),
			"guest_full_name":                  computedString("Guest OS name as VMware Tools reported it."),
			"memory_reservation_locked_to_max": computedBool("Whether all guest memory is reserved, as PVRDMA and passthrough need."),
			"network_interfaces": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Network adapters in device key order.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key": computedInt64("Device key."),
					"adapter_type": computedString(
						"`vmxnet3`, `vmxnet3vrdma` (PVRDMA), `e1000e`, `e1000`, `sriov`, ... as the vSphere provider names them.",
					),
					"mac_address":             computedString("MAC address."),
					"network_id":              computedString("Managed object id of the port group or network."),
					"distributed_switch_uuid": computedString("UUID of the distributed switch; empty on a standard network."),
					"device_protocol":         computedString("`rocev1` or `rocev2` for PVRDMA adapters; empty otherwise."),
					"start_connected":         computedBool("Whether the adapter connects at power on."),
				}},
			},
			"pci_passthrough_devices": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "PCI passthrough devices in device key order.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":       computedInt64("Device key."),
					"pci_id":    computedString("Host PCI address; for dynamic DirectPath, the device assigned at power on (empty before)."),
					"vendor_id": computedString("PCI vendor id as four hex digits."),
					"device_id": computedString("PCI device id as four hex digits."),
					"dynamic":   computedBool("Whether the device uses dynamic DirectPath (chosen by vendor and device id at power on)."),
					"label":     computedString("Custom label of a dynamic DirectPath device."),
					"vgpu_profile": computedString("The NVIDIA vGPU profile of a shared PCI device (a vGPU), e.g. `grid_a100-20c`; empty " +
						"for any other device, whose `pci_id` the host names."),
				}},
			},
		},
	}
}

func (d *virtualMachineDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.ExactlyOneOf(path.MatchRoot("virtual_machine_id"), path.MatchRoot("name")),
	}
}

func (d *virtualMachineDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *virtualMachineDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var state virtualMachineModel
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var (
		vm  *vsphere.VM
		err error
	)
	if id := state.VirtualMachineID.ValueString(); id != "" {
		vm, err = d.client.VM(ctx, id)
	} else {
		vm, err = d.client.VMByName(ctx, state.DatacenterID.ValueString(), state.Name.ValueString())
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot find virtual machine", err))
		return
	}
	if vm.ID == "" {
		// An inaccessible, invalid or orphaned VM is read with no
		// configuration (vSphere API reference,
		// VirtualMachineConnectionState): outputting an empty UUID, hardware
		// version 0 and no devices would pass for a real VM's values.
		resp.Diagnostics.AddError("Virtual machine inaccessible", fmt.Sprintf(
			"vCenter returns no configuration for virtual machine %q (%s): it is inaccessible, invalid or orphaned "+
				"(its files cannot be read, or it is no longer registered on its host). Reconnect its datastore or host, "+
				"or register it again, then run Terraform again.", vsphere.EntityName(vm.Name), vm.MOID))
		return
	}
	tflog.Debug(ctx, "Found virtual machine", map[string]any{"virtual_machine_id": vm.ID, "moid": vm.MOID, "name": vm.Name})
	state.ID = types.StringValue(vm.ID)
	state.MOID = types.StringValue(vm.MOID)
	state.Name = types.StringValue(vsphere.EntityName(vm.Name))
	state.HardwareVersion = types.Int64Value(vm.HardwareVersion)
	state.Firmware = types.StringValue(vm.Firmware)
	state.PowerState = types.StringValue(string(vm.PowerState))
	state.HostSystemID = types.StringValue(vm.HostID)
	state.GuestFamily = types.StringValue(vm.GuestFamily)
	state.GuestFullName = types.StringValue(vm.GuestFullName)
	state.MemoryReservationLockedToMax = types.BoolValue(vm.MemoryLockedToMax)
	state.NetworkInterfaces = make([]networkInterfaceModel, 0, len(vm.NetworkAdapters))
	for _, n := range vm.NetworkAdapters {
		state.NetworkInterfaces = append(state.NetworkInterfaces, networkInterfaceModel{
			Key: types.Int64Value(n.Key), AdapterType: types.StringValue(n.Type), MACAddress: types.StringValue(n.MAC),
			NetworkID: types.StringValue(n.NetworkID), DistributedSwitchUUID: types.StringValue(n.SwitchUUID),
			DeviceProtocol: types.StringValue(n.DeviceProtocol), StartConnected: types.BoolValue(n.StartConnected),
		})
	}
	state.PCIPassthroughDevices = make([]pciPassthroughModel, 0, len(vm.PCIPassthroughs))
	for _, p := range vm.PCIPassthroughs {
		state.PCIPassthroughDevices = append(state.PCIPassthroughDevices, pciPassthroughModel{
			Key: types.Int64Value(p.Key), PCIID: types.StringValue(p.PCIID), VendorID: types.StringValue(p.VendorID),
			DeviceID: types.StringValue(p.DeviceID), Dynamic: types.BoolValue(p.Dynamic), Label: types.StringValue(p.Label),
			VGPU: types.StringValue(p.VGPU),
		})
	}
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}
