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
	_ datasource.DataSource                     = (*hostDataSource)(nil)
	_ datasource.DataSourceWithConfigure        = (*hostDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*hostDataSource)(nil)
)

type hostDataSource struct {
	client *vsphere.Client
}

type hostModel struct {
	HostSystemID    types.String           `tfsdk:"host_system_id"`
	DatacenterID    types.String           `tfsdk:"datacenter_id"`
	Name            types.String           `tfsdk:"name"`
	ID              types.String           `tfsdk:"id"`
	ClusterID       types.String           `tfsdk:"cluster_id"`
	ClusterName     types.String           `tfsdk:"cluster_name"`
	ConnectionState types.String           `tfsdk:"connection_state"`
	MaintenanceMode types.Bool             `tfsdk:"maintenance_mode"`
	AllPCIDevices   types.Bool             `tfsdk:"all_pci_devices"`
	PhysicalNICs    []physicalNICModel     `tfsdk:"physical_nics"`
	VMKernelNICs    []vmkernelNICModel     `tfsdk:"vmkernel_nics"`
	GPUs            []hostGPUModel         `tfsdk:"gpus"`
	PCIDevices      []pciDeviceModel       `tfsdk:"pci_devices"`
	Graphics        *hostGraphicsDataModel `tfsdk:"graphics"`
	VGPUProfiles    []vgpuProfileModel     `tfsdk:"vgpu_profiles"`
}

type hostGraphicsDataModel struct {
	DefaultGraphicsType types.String `tfsdk:"default_graphics_type"`
	AssignmentPolicy    types.String `tfsdk:"assignment_policy"`
}

type vgpuProfileModel struct {
	Name                    types.String `tfsdk:"name"`
	FrameBufferGB           types.Int64  `tfsdk:"frame_buffer_gb"`
	MigrateSupported        types.Bool   `tfsdk:"migrate_supported"`
	SuspendSupported        types.Bool   `tfsdk:"suspend_supported"`
	DiskSnapshotSupported   types.Bool   `tfsdk:"disk_snapshot_supported"`
	MemorySnapshotSupported types.Bool   `tfsdk:"memory_snapshot_supported"`
	Available               types.Int64  `tfsdk:"available"`
}

type pciDeviceModel struct {
	PCIID              types.String   `tfsdk:"pci_id"`
	VendorID           types.String   `tfsdk:"vendor_id"`
	DeviceID           types.String   `tfsdk:"device_id"`
	VendorName         types.String   `tfsdk:"vendor_name"`
	DeviceName         types.String   `tfsdk:"device_name"`
	ConnectX           types.Bool     `tfsdk:"connectx"`
	PhysicalNIC        types.String   `tfsdk:"physical_nic"`
	UplinkOf           types.String   `tfsdk:"uplink_of"`
	PassthroughCapable types.Bool     `tfsdk:"passthrough_capable"`
	PassthroughEnabled types.Bool     `tfsdk:"passthrough_enabled"`
	PassthroughActive  types.Bool     `tfsdk:"passthrough_active"`
	SRIOVCapable       types.Bool     `tfsdk:"sriov_capable"`
	SRIOVEnabled       types.Bool     `tfsdk:"sriov_enabled"`
	SRIOVActive        types.Bool     `tfsdk:"sriov_active"`
	VFsRequested       types.Int64    `tfsdk:"virtual_functions_requested"`
	VFs                types.Int64    `tfsdk:"virtual_functions"`
	MaxVFs             types.Int64    `tfsdk:"max_virtual_functions"`
	VFIDs              []types.String `tfsdk:"virtual_function_ids"`
	PhysicalFunction   types.String   `tfsdk:"physical_function"`
	HardwareLabel      types.String   `tfsdk:"hardware_label"`
	ParentBridge       types.String   `tfsdk:"parent_bridge"`
	PCIeSwitch         types.String   `tfsdk:"pcie_switch"`
	NUMANode           types.Int64    `tfsdk:"numa_node"`
	UsedBy             []gpuUserModel `tfsdk:"used_by"`
}

type physicalNICModel struct {
	Name                  types.String `tfsdk:"name"`
	MACAddress            types.String `tfsdk:"mac_address"`
	PCIID                 types.String `tfsdk:"pci_id"`
	Driver                types.String `tfsdk:"driver"`
	SpeedMbps             types.Int64  `tfsdk:"speed_mbps"`
	LinkUp                types.Bool   `tfsdk:"link_up"`
	RDMADevice            types.String `tfsdk:"rdma_device"`
	RDMACapable           types.Bool   `tfsdk:"rdma_capable"`
	RoCEv1                types.Bool   `tfsdk:"rocev1"`
	RoCEv2                types.Bool   `tfsdk:"rocev2"`
	Switch                types.String `tfsdk:"switch"`
	DistributedSwitchUUID types.String `tfsdk:"distributed_switch_uuid"`
}

type vmkernelNICModel struct {
	Name                  types.String `tfsdk:"name"`
	MTU                   types.Int64  `tfsdk:"mtu"`
	IPAddress             types.String `tfsdk:"ip_address"`
	MACAddress            types.String `tfsdk:"mac_address"`
	PortGroup             types.String `tfsdk:"port_group"`
	DistributedSwitchUUID types.String `tfsdk:"distributed_switch_uuid"`
	Netstack              types.String `tfsdk:"netstack"`
}

type hostGPUModel struct {
	PCIID              types.String    `tfsdk:"pci_id"`
	VendorID           types.String    `tfsdk:"vendor_id"`
	DeviceID           types.String    `tfsdk:"device_id"`
	VendorName         types.String    `tfsdk:"vendor_name"`
	DeviceName         types.String    `tfsdk:"device_name"`
	MemoryGB           types.Float64   `tfsdk:"memory_gb"`
	PassthroughCapable types.Bool      `tfsdk:"passthrough_capable"`
	PassthroughEnabled types.Bool      `tfsdk:"passthrough_enabled"`
	PassthroughActive  types.Bool      `tfsdk:"passthrough_active"`
	HardwareLabel      types.String    `tfsdk:"hardware_label"`
	PCIeSwitch         types.String    `tfsdk:"pcie_switch"`
	NUMANode           types.Int64     `tfsdk:"numa_node"`
	GraphicsType       types.String    `tfsdk:"graphics_type"`
	ConfiguredType     types.String    `tfsdk:"configured_graphics_type"`
	UsedBy             []gpuUserModel  `tfsdk:"used_by"`
	VGPUs              []vgpuUserModel `tfsdk:"vgpus"`
}

type vgpuUserModel struct {
	VirtualMachineID types.String   `tfsdk:"virtual_machine_id"`
	MOID             types.String   `tfsdk:"moid"`
	Name             types.String   `tfsdk:"name"`
	Profiles         []types.String `tfsdk:"profiles"`
}

type gpuUserModel struct {
	VirtualMachineID types.String `tfsdk:"virtual_machine_id"`
	MOID             types.String `tfsdk:"moid"`
	Name             types.String `tfsdk:"name"`
	PoweredOn        types.Bool   `tfsdk:"powered_on"`
}

// NewHostDataSource is the vspherehpc_host data source.
func NewHostDataSource() datasource.DataSource {
	return &hostDataSource{}
}

func (d *hostDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host"
}

// vfIDsCaveat says where a virtual function's physical function comes from.
const vfIDsCaveat = "vSphere links no virtual function to its physical function: the provider derives the link from PCI order " +
	"(a function's virtual functions follow it, where the PCIe SR-IOV capability places them) and leaves it empty when the host's " +
	"devices do not fit that order."

// stringValues are ss as Terraform strings, an empty list for none.
func stringValues(ss []string) []types.String {
	out := make([]types.String, 0, len(ss))
	for _, s := range ss {
		out = append(out, types.StringValue(s))
	}
	return out
}

func computedString(desc string) schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
}

func computedBool(desc string) schema.BoolAttribute {
	return schema.BoolAttribute{Computed: true, MarkdownDescription: desc}
}

func computedInt64(desc string) schema.Int64Attribute {
	return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
}

func (d *hostDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Looks up an ESXi host by name or id and lists what the PVRDMA and GPU resources need: its physical NICs " +
			"(speed, link, RDMA capability and the switch that claims each), its VMkernel adapters, and its GPUs with their " +
			"passthrough state and the VMs using them. It replaces the manual \"note which NIC is the 100GbE NIC\" and " +
			"\"note the PCI address of the GPU\" steps.",
		Attributes: map[string]schema.Attribute{
			"host_system_id": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Managed object id of the host, e.g. `host-12`: what `vsphere_host.id` and the `host_system_id` of " +
					"`vsphere_virtual_machine` and `vspherehpc_virtual_machine` export. Give this, or `name` with `datacenter_id`.",
				Validators: []validator.String{notEmpty("give the host's managed object id (what vsphere_host.id exports), or name with datacenter_id")},
			},
			"datacenter_id": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Managed object id of the datacenter to search by `name`, e.g. `data.vspherehpc_datacenter.dc.id`.",
				Validators: []validator.String{
					stringvalidator.ConflictsWith(path.MatchRoot("host_system_id")),
					notEmpty("give the datacenter's managed object id, e.g. data.vspherehpc_datacenter.dc.id"),
				},
			},
			"name": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "Name of the host as vCenter shows it (often its FQDN or IP address); the host's name when found by id.",
				Validators: []validator.String{stringvalidator.AlsoRequires(path.MatchRoot("datacenter_id")),
					notEmpty("give the host's name as vCenter shows it, or host_system_id")},
			},
			"id":               computedString("Managed object id of the host, e.g. `host-12` (the same id `vsphere_host.id` exports)."),
			"cluster_id":       computedString("Managed object id of the host's cluster; empty for a standalone host."),
			"cluster_name":     computedString("Name of the host's cluster; empty for a standalone host."),
			"connection_state": computedString("`connected`, `disconnected` or `notResponding`."),
			"maintenance_mode": computedBool("Whether the host is in maintenance mode."),
			"physical_nics": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Physical NICs (vmnics), ordered by name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":                    computedString("Device name, e.g. `vmnic4`."),
					"mac_address":             computedString("MAC address."),
					"pci_id":                  computedString("PCI address of the NIC."),
					"driver":                  computedString("Driver, e.g. `nmlx5_core`."),
					"speed_mbps":              computedInt64("Link speed in Mb/s; 0 when the link is down."),
					"link_up":                 computedBool("Whether the link is up."),
					"rdma_device":             computedString("The paired RDMA device (e.g. `vmrdma0`); empty when the NIC has no RDMA function."),
					"rdma_capable":            computedBool("Whether the NIC has an RDMA device, i.e. can carry PVRDMA."),
					"rocev1":                  computedBool("Whether the RDMA device supports RoCE v1."),
					"rocev2":                  computedBool("Whether the RDMA device supports RoCE v2."),
					"switch":                  computedString("Name of the standard or distributed switch using this NIC as an uplink; empty when the NIC is free."),
					"distributed_switch_uuid": computedString("UUID of the distributed switch using this NIC; empty otherwise."),
				}},
			},
			"vmkernel_nics": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "VMkernel adapters (vmknics), ordered by name: candidates for `Net.PVRDMAVmknic`.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":                    computedString("Device name, e.g. `vmk0`."),
					"mtu":                     computedInt64("MTU of the adapter."),
					"ip_address":              computedString("IPv4 address; empty when DHCP has not assigned one."),
					"mac_address":             computedString("MAC address."),
					"port_group":              computedString("Standard port group name; empty on a distributed switch."),
					"distributed_switch_uuid": computedString("UUID of the distributed switch the adapter is on; empty on a standard switch."),
					"netstack":                computedString("TCP/IP stack, e.g. `defaultTcpipStack`."),
				}},
			},
			"gpus": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "GPUs of the host: display-class PCI devices that can be passed through or that the host reports " +
					"as graphics devices (onboard VGA is left out).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"pci_id": computedString(
						"PCI address, e.g. `0000:3b:00.0`: what `vspherehpc_vm_gpu_mmio` and `vsphere_virtual_machine.pci_device_id` take.",
					),
					"vendor_id":   computedString("PCI vendor id as four hex digits, e.g. `10de` for NVIDIA."),
					"device_id":   computedString("PCI device id as four hex digits, e.g. `2330`."),
					"vendor_name": computedString("Vendor name."),
					"device_name": computedString("Device name."),
					"memory_gb": schema.Float64Attribute{
						Computed:            true,
						MarkdownDescription: "Framebuffer memory in GB as the host reports it; 0 when it does not.",
					},
					"passthrough_capable": computedBool("Whether the device can be passed through."),
					"passthrough_enabled": computedBool("Whether passthrough is enabled for the device."),
					"passthrough_active":  computedBool("Whether passthrough is active (enabled and the host rebooted since), so VMs can use the device."),
					"hardware_label":      computedString(hardwareLabelDescription),
					"pcie_switch":         computedString(pcieSwitchDescription),
					"numa_node":           computedInt64(numaNodeDescription),
					"graphics_type": computedString("How the host drives the GPU now: `direct` (passed through), `sharedDirect` (NVIDIA vGPU " +
						"shares it between VMs), `shared` (VMware shared graphics) or `basic` (no host driver). Empty when the host does not " +
						"list the device as a graphics device."),
					"configured_graphics_type": computedString("The graphics type the host's configuration gives the GPU, its own or the " +
						"host's default: `shared` or `sharedDirect`. `graphics_type` follows it when the host's graphics restart (a reboot); a " +
						"GPU passed through stays `direct`. Empty when the host reports no graphics configuration."),
					"used_by": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "VMs on this host configured with this device. More than one means at most one of them can power on.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"virtual_machine_id": computedString("UUID of the VM."),
							"moid":               computedString("Managed object id of the VM."),
							"name":               computedString("Name of the VM."),
							"powered_on":         computedBool("Whether the VM is powered on."),
						}},
					},
					"vgpus": schema.ListNestedAttribute{
						Computed: true,
						MarkdownDescription: "Powered-on VMs whose NVIDIA vGPUs run on this GPU, as the host lists them. A VM's vGPUs are " +
							"placed on a GPU when it powers on, so a powered-off VM is on none.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"virtual_machine_id": computedString("UUID of the VM."),
							"moid":               computedString("Managed object id of the VM."),
							"name":               computedString("Name of the VM."),
							"profiles": schema.ListAttribute{
								Computed: true, ElementType: types.StringType,
								MarkdownDescription: "The VM's vGPU profiles, in the order of its devices.",
							},
						}},
					},
				}},
			},
			"graphics": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "The host's graphics settings, as Configure > Graphics > Host Graphics shows them. Null when the host " +
					"reports none (disconnected).",
				Attributes: map[string]schema.Attribute{
					"default_graphics_type": computedString("`shared` (VMware shared graphics) or `sharedDirect` (vendor shared passthrough: " +
						"NVIDIA vGPU): the type of every GPU that has none of its own."),
					"assignment_policy": computedString("How the host places vGPU VMs on its GPUs: `performance` (spread them across " +
						"GPUs) or `consolidation` (fill one GPU before the next)."),
				},
			},
			"vgpu_profiles": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The NVIDIA vGPU profiles the host offers, in its order: those of its GPUs in `sharedDirect`. Empty " +
					"while no GPU is shared.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": computedString("The profile as vSphere names it, e.g. `grid_a100-20c`."),
					"frame_buffer_gb": computedInt64("The profile's GPU memory in GB, from its name (`grid_a100-20c`: 20); 0 when the " +
						"name does not follow NVIDIA's pattern."),
					"migrate_supported":         computedBool("Whether a VM with this profile can be migrated with vMotion."),
					"suspend_supported":         computedBool("Whether a VM with this profile can be suspended and resumed."),
					"disk_snapshot_supported":   computedBool("Whether the host can take disk-only snapshots of a running VM with this profile."),
					"memory_snapshot_supported": computedBool("Whether the host can take memory snapshots of a VM with this profile."),
					"available": computedInt64("How many more vGPUs of this profile the host's GPUs hold now, beside the vGPUs of its " +
						"running VMs, in ESXi's default equal-size mode (a GPU holds vGPUs of one frame buffer size only): which hosts " +
						"of a cluster can take a VM's vGPUs. Null when the host cannot say: its GPUs in Shared Direct are of more than " +
						"one model (the host does not list which model offers which profile), the name gives no frame buffer, or the host " +
						"places the profile's vGPUs by another rule: a MIG-backed profile, or GPUs in mixed-size or MIG mode."),
				}},
			},
			"all_pci_devices": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "List every PCI device of the host in `pci_devices`, bridges, root ports and controllers that can never be " +
					"passed through included. Default `false`: `pci_devices` lists the devices a configuration can act on. A host reports a " +
					"hundred or more devices, and every plan carries what this data source lists, so leave it off unless you need them.",
			},
			"pci_devices": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The host's PCI devices a configuration can act on, sorted by PCI id, with passthrough and SR-IOV state " +
					"and the VMs using each: what `vspherehpc_host_pci_passthrough` and `vspherehpc_host_sriov` take. They are the devices that " +
					"can be passed through or are passed through, SR-IOV physical and virtual functions, GPUs, physical NICs (vmnics) and " +
					"devices a VM is configured with. With `all_pci_devices = true`, every device ESXi reports a passthrough state for " +
					"(it reports one for each device, bridges and controllers with `passthrough_capable = false` among them). " +
					"Select, e.g., every ConnectX card: `[for d in data.vspherehpc_host.esx.pci_devices : d.pci_id if d.connectx]`.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"pci_id":       computedString("PCI address, e.g. `0000:3b:00.0`."),
					"vendor_id":    computedString("PCI vendor id as four hex digits (`10de` NVIDIA, `15b3` Mellanox/NVIDIA networking)."),
					"device_id":    computedString("PCI device id as four hex digits."),
					"vendor_name":  computedString("Vendor name."),
					"device_name":  computedString("Device name."),
					"connectx":     computedBool("Whether it is a Mellanox/NVIDIA ConnectX card (vendor `15b3`): Ethernet RDMA or InfiniBand."),
					"physical_nic": computedString("The vmnic the device is; empty when it is none."),
					"uplink_of": computedString(
						"The switch that uses the device as an uplink; empty when none does (such a device cannot be passed through).",
					),
					"passthrough_capable":         computedBool("Whether the device can be passed through."),
					"passthrough_enabled":         computedBool("Whether passthrough is enabled."),
					"passthrough_active":          computedBool("Whether passthrough is in effect (enabled, and the host rebooted since when it needed to)."),
					"sriov_capable":               computedBool("Whether the device is an SR-IOV physical function."),
					"sriov_enabled":               computedBool("Whether SR-IOV is enabled."),
					"sriov_active":                computedBool("Whether SR-IOV is in effect."),
					"virtual_functions_requested": computedInt64("Virtual functions requested; they exist once SR-IOV is active."),
					"virtual_functions":           computedInt64("Virtual functions that exist."),
					"max_virtual_functions":       computedInt64("Most virtual functions the device supports."),
					"virtual_function_ids": schema.ListAttribute{
						Computed: true, ElementType: types.StringType,
						MarkdownDescription: "PCI ids of the virtual functions that exist, VF 0 first. " + vfIDsCaveat,
					},
					"physical_function": computedString("For a virtual function, the PCI id of its physical function; empty for other devices. " + vfIDsCaveat),
					"hardware_label":    computedString(hardwareLabelDescription),
					"parent_bridge": computedString("PCI id of the bridge the device sits under (`HostPciDevice.parentBridge`): a PCIe switch's " +
						"port or a root port. Empty when the host reports none. `all_pci_devices = true` lists the bridges too."),
					"pcie_switch": computedString(pcieSwitchDescription),
					"numa_node":   computedInt64(numaNodeDescription),
					"used_by": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "VMs on this host configured with the device.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"virtual_machine_id": computedString("UUID of the VM."),
							"moid":               computedString("Managed object id of the VM."),
							"name":               computedString("Name of the VM."),
							"powered_on":         computedBool("Whether the VM is powered on."),
						}},
					},
				}},
			},
		},
	}
}

func (d *hostDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.ExactlyOneOf(path.MatchRoot("host_system_id"), path.MatchRoot("name")),
	}
}

func (d *hostDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *hostDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var state hostModel
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var (
		h   *vsphere.Host
		err error
	)
	if id := state.HostSystemID.ValueString(); id != "" {
		h, err = d.client.Host(ctx, id)
	} else {
		h, err = d.client.HostByName(ctx, state.DatacenterID.ValueString(), state.Name.ValueString())
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot find host", err))
		return
	}
	tflog.Debug(ctx, "Found host", map[string]any{
		"host_system_id": h.ID, "name": h.Name, "gpus": len(h.GPUs), "physical_nics": len(h.PhysicalNICs), "pci_devices": len(h.PCIDevices),
	})
	state.ID = types.StringValue(h.ID)
	state.Name = types.StringValue(vsphere.EntityName(h.Name))
	state.ClusterID = types.StringValue(h.ClusterID)
	state.ClusterName = types.StringValue(vsphere.EntityName(h.ClusterName))
	state.ConnectionState = types.StringValue(h.ConnectionState)
	state.MaintenanceMode = types.BoolValue(h.InMaintenance)
	state.PhysicalNICs = make([]physicalNICModel, 0, len(h.PhysicalNICs))
	for _, n := range h.PhysicalNICs {
		state.PhysicalNICs = append(state.PhysicalNICs, physicalNICModel{
			Name: types.StringValue(n.Name), MACAddress: types.StringValue(n.MAC), PCIID: types.StringValue(n.PCIID),
			Driver: types.StringValue(n.Driver), SpeedMbps: types.Int64Value(n.SpeedMbps), LinkUp: types.BoolValue(n.LinkUp),
			RDMADevice: types.StringValue(n.RDMADevice), RDMACapable: types.BoolValue(n.RDMADevice != ""),
			RoCEv1: types.BoolValue(n.RoCEv1), RoCEv2: types.BoolValue(n.RoCEv2),
			Switch: types.StringValue(n.Switch), DistributedSwitchUUID: types.StringValue(n.SwitchUUID),
		})
	}
	state.VMKernelNICs = make([]vmkernelNICModel, 0, len(h.VMKernelNICs))
	for _, n := range h.VMKernelNICs {
		state.VMKernelNICs = append(state.VMKernelNICs, vmkernelNICModel{
			Name: types.StringValue(n.Name), MTU: types.Int64Value(n.MTU), IPAddress: types.StringValue(n.IPAddress),
			MACAddress: types.StringValue(n.MAC), PortGroup: types.StringValue(n.PortGroup),
			DistributedSwitchUUID: types.StringValue(n.SwitchUUID), Netstack: types.StringValue(n.Netstack),
		})
	}
	state.GPUs = make([]hostGPUModel, 0, len(h.GPUs))
	for _, g := range h.GPUs {
		users := vmUsers(g.VMs)
		state.GPUs = append(state.GPUs, hostGPUModel{
			PCIID: types.StringValue(g.PCIID), VendorID: types.StringValue(g.VendorID), DeviceID: types.StringValue(g.DeviceID),
			VendorName: types.StringValue(g.VendorName), DeviceName: types.StringValue(g.DeviceName),
			MemoryGB:           types.Float64Value(g.MemoryGB),
			PassthroughCapable: types.BoolValue(g.PassthroughCapable), PassthroughEnabled: types.BoolValue(g.PassthroughEnabled),
			PassthroughActive: types.BoolValue(g.PassthroughActive), HardwareLabel: types.StringValue(g.HardwareLabel),
			PCIeSwitch: types.StringValue(g.PCIeSwitch), NUMANode: numaNode(g.NUMANode),
			GraphicsType: types.StringValue(g.GraphicsType), ConfiguredType: types.StringValue(g.ConfiguredGraphicsType),
			UsedBy: users, VGPUs: vgpuUsers(g.VGPUs),
		})
	}
	state.Graphics = nil
	if h.Graphics != (vsphere.HostGraphics{}) {
		state.Graphics = &hostGraphicsDataModel{
			DefaultGraphicsType: types.StringValue(h.Graphics.DefaultType), AssignmentPolicy: types.StringValue(h.Graphics.AssignmentPolicy),
		}
	}
	state.VGPUProfiles = make([]vgpuProfileModel, 0, len(h.VGPUProfiles))
	for _, p := range h.VGPUProfiles {
		state.VGPUProfiles = append(state.VGPUProfiles, vgpuProfileModel{
			Name: types.StringValue(p.Name), FrameBufferGB: types.Int64Value(p.FrameBufferGB),
			MigrateSupported: types.BoolValue(p.MigrateSupported), SuspendSupported: types.BoolValue(p.SuspendSupported),
			DiskSnapshotSupported: types.BoolValue(p.DiskSnapshotSupported), MemorySnapshotSupported: types.BoolValue(p.MemorySnapshotSupported),
			Available: types.Int64PointerValue(p.Available),
		})
	}
	state.PCIDevices = make([]pciDeviceModel, 0, len(h.PCIDevices))
	for _, p := range h.PCIDevices {
		if !state.AllPCIDevices.ValueBool() && !h.Actionable(p) {
			continue
		}
		sr := vsphere.SRIOV{}
		if p.SRIOV != nil {
			sr = *p.SRIOV
		}
		state.PCIDevices = append(state.PCIDevices, pciDeviceModel{
			PCIID: types.StringValue(p.PCIID), VendorID: types.StringValue(p.VendorID), DeviceID: types.StringValue(p.DeviceID),
			VendorName: types.StringValue(p.VendorName), DeviceName: types.StringValue(p.DeviceName),
			ConnectX: types.BoolValue(p.VendorID == vsphere.VendorMellanox), PhysicalNIC: types.StringValue(p.NIC), UplinkOf: types.StringValue(p.UplinkOf),
			PassthroughCapable: types.BoolValue(p.Capable), PassthroughEnabled: types.BoolValue(p.Enabled), PassthroughActive: types.BoolValue(p.Active),
			SRIOVCapable: types.BoolValue(sr.Capable), SRIOVEnabled: types.BoolValue(sr.Enabled), SRIOVActive: types.BoolValue(sr.Active),
			VFsRequested: types.Int64Value(int64(sr.VFsRequested)), VFs: types.Int64Value(int64(sr.VFs)), MaxVFs: types.Int64Value(int64(sr.MaxVFs)),
			VFIDs: stringValues(sr.VFIDs), PhysicalFunction: types.StringValue(p.PhysicalFunction), UsedBy: vmUsers(p.VMs),
			HardwareLabel: types.StringValue(p.Label), ParentBridge: types.StringValue(p.ParentBridge),
			PCIeSwitch: types.StringValue(p.PCIeSwitch), NUMANode: numaNode(p.NUMANode),
		})
	}
	if h.ConnectionState != "connected" { // HostSystemConnectionState
		// vCenter returns no configuration or hardware for a host it is not
		// connected to (vSphere API reference, HostSystem): empty lists
		// here would pass for a host without NICs or devices.
		resp.Diagnostics.AddWarning("Host not connected", fmt.Sprintf("Host %s (%s) is %s in vCenter, which then returns no "+
			"configuration or hardware for it: physical_nics, vmkernel_nics, gpus and pci_devices are empty or out of date. "+
			"Reconnect the host in vCenter (right-click it > Connection > Connect), then run Terraform again.",
			h.Name, h.ID, cmpOr(h.ConnectionState, "in an unknown connection state")))
	}
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}

// The topology attributes' descriptions, for gpus and pci_devices alike.
const (
	hardwareLabelDescription = "The device's hardware label (vSphere 7.0 Update 2 and later): the pool a dynamic DirectPath device " +
		"asks for with `label`. Empty for none."
	pcieSwitchDescription = "PCI id of the PCIe switch the device sits under (the switch's upstream port, the topmost bridge below " +
		"the root port). Devices with the same `pcie_switch` talk without crossing the CPU: pair a GPU with the InfiniBand card " +
		"(or its virtual functions) under its switch for GPUDirect RDMA. Empty when the device sits under its root port alone or " +
		"the host reports no parent bridges."
	numaNodeDescription = "The NUMA node (on most servers, a CPU socket) the host lists the device on (`hardware.numaInfo`, vSphere 6.7 and later), " +
		"or the node of the nearest bridge above it; null when the host lists none."
)

// numaNode is a NUMA node, null for -1 (not reported).
func numaNode(n int) types.Int64 {
	if n < 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(n))
}

// vgpuUsers lists the VMs whose vGPUs run on a GPU.
func vgpuUsers(users []vsphere.VGPUUser) []vgpuUserModel {
	out := make([]vgpuUserModel, 0, len(users))
	for _, u := range users {
		out = append(out, vgpuUserModel{
			VirtualMachineID: types.StringValue(u.VM.ID), MOID: types.StringValue(u.VM.MOID),
			Name: types.StringValue(vsphere.EntityName(u.VM.Name)), Profiles: stringValues(u.Profiles),
		})
	}
	return out
}

// vmUsers lists the VMs configured with a device.
func vmUsers(vms []vsphere.VMRef) []gpuUserModel {
	users := make([]gpuUserModel, 0, len(vms))
	for _, vm := range vms {
		users = append(users, gpuUserModel{
			VirtualMachineID: types.StringValue(vm.ID), MOID: types.StringValue(vm.MOID),
			Name: types.StringValue(vsphere.EntityName(vm.Name)), PoweredOn: types.BoolValue(vm.PowerState == vsphere.PoweredOn),
		})
	}
	return users
}
