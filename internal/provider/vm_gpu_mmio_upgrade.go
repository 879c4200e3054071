package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Version 0 of vspherehpc_vm_gpu_mmio kept gpu and pci_device as lists, in
// the order the VM had its devices: a configuration listing them in another
// order planned a swap. Version 1 keeps them as sets, dynamic DirectPath
// GPUs as one block per model with a count.

// vmGPUMMIOModelV0 is version 0's state.
type vmGPUMMIOModelV0 struct {
	ID                  types.String  `tfsdk:"id"`
	VirtualMachineID    types.String  `tfsdk:"virtual_machine_id"`
	GPU                 types.List    `tfsdk:"gpu"`
	PCIDevice           types.List    `tfsdk:"pci_device"`
	MMIOSizeGB          types.Int64   `tfsdk:"mmio_size_gb"`
	TotalGPUMemoryGB    types.Float64 `tfsdk:"total_gpu_memory_gb"`
	Firmware            types.String  `tfsdk:"firmware"`
	Use64bitMMIO        types.Bool    `tfsdk:"use_64bit_mmio"`
	MemoryLockedToMax   types.Bool    `tfsdk:"memory_reservation_locked_to_max"`
	AllowFirmwareChange types.Bool    `tfsdk:"allow_firmware_change"`
	PowerOffAllowed     types.Bool    `tfsdk:"power_off_allowed"`
}

type gpuBlockModelV0 struct {
	PCIID    types.String `tfsdk:"pci_id"`
	VendorID types.String `tfsdk:"vendor_id"`
	DeviceID types.String `tfsdk:"device_id"`
}

func (r *vmGPUMMIOResource) UpgradeState(ctx context.Context) map[int64]resource.StateUpgrader {
	var current resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &current)
	prior := current.Schema
	prior.Version = 0
	prior.Blocks = map[string]schema.Block{
		"gpu": schema.ListNestedBlock{NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"pci_id": schema.StringAttribute{Optional: true}, "vendor_id": schema.StringAttribute{Optional: true},
			"device_id": schema.StringAttribute{Optional: true},
		}}},
		"pci_device": schema.ListNestedBlock{NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"pci_id": schema.StringAttribute{Required: true},
		}}},
	}
	return map[int64]resource.StateUpgrader{0: {PriorSchema: &prior, StateUpgrader: upgradeGPUMMIOFromV0}}
}

// upgradeGPUMMIOFromV0 turns version 0's lists into sets: a GPU by PCI id
// stays a block, the dynamic DirectPath blocks of one model become one
// block with their count, and a device listed twice (refused at plan, so
// not in any state) would be one.
func upgradeGPUMMIOFromV0(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	var old vmGPUMMIOModelV0
	if resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &old)...); resp.Diagnostics.HasError() {
		return
	}
	m := vmGPUMMIOModel{
		ID: old.ID, VirtualMachineID: old.VirtualMachineID, MMIOSizeGB: old.MMIOSizeGB, TotalGPUMemoryGB: old.TotalGPUMemoryGB,
		Firmware: old.Firmware, Use64bitMMIO: old.Use64bitMMIO, MemoryLockedToMax: old.MemoryLockedToMax,
		AllowFirmwareChange: old.AllowFirmwareChange, PowerOffAllowed: old.PowerOffAllowed,
		GPU: types.SetNull(gpuBlockType), PCIDevice: types.SetNull(pciDeviceBlockType),
	}
	if !old.GPU.IsNull() {
		var blocks []gpuBlockModelV0
		resp.Diagnostics.Append(old.GPU.ElementsAs(ctx, &blocks, false)...)
		type model struct{ vendor, device string }
		counts := map[model]int{}
		var order []model
		var gpus []gpuBlockModel
		for _, b := range blocks {
			if !b.PCIID.IsNull() {
				gpus = append(gpus, gpuBlockModel{PCIID: b.PCIID, VendorID: b.VendorID, DeviceID: b.DeviceID, Count: types.Int64Null()})
				continue
			}
			key := model{b.VendorID.ValueString(), b.DeviceID.ValueString()}
			if counts[key] == 0 {
				order = append(order, key)
			}
			counts[key]++
		}
		for _, key := range order {
			gpus = append(gpus, gpuBlockModel{PCIID: types.StringNull(), VendorID: types.StringValue(key.vendor),
				DeviceID: types.StringValue(key.device), Count: countOf(counts[key])})
		}
		set, ds := types.SetValueFrom(ctx, gpuBlockType, gpus)
		resp.Diagnostics.Append(ds...)
		m.GPU = set
	}
	if !old.PCIDevice.IsNull() {
		var devs []pciDeviceBlockModel
		resp.Diagnostics.Append(old.PCIDevice.ElementsAs(ctx, &devs, false)...)
		set, ds := types.SetValueFrom(ctx, pciDeviceBlockType, devs)
		resp.Diagnostics.Append(ds...)
		m.PCIDevice = set
	}
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &m)...)
}
