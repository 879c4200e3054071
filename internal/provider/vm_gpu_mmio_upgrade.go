package provider

import (
	"context"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The gpu and pci_device blocks of vspherehpc_vm_gpu_mmio, by schema
// version:
//   - 0: lists, in the order the VM had its devices, one block per dynamic
//     DirectPath GPU: a configuration listing them in another order planned
//     a swap.
//   - 1: sets, one block per model with a count. Terraform merges identical
//     blocks of a set before the provider sees them, so two copies of a
//     block (how version 0 asked for two GPUs of a model) meant one GPU,
//     silently, and a version-0 state listing a device twice upgraded to a
//     set that failed every plan and destroy with "Duplicate Set Element".
//   - 2: lists compared without regard to order (sameBlocks), so copies stay
//     visible and are refused (ValidateConfig), and the VM's order is never
//     drift (gpuMMIOToModel keeps the state's order).

// vmGPUMMIOModelBefore2 is the state of versions 0 and 1: their blocks are
// a list or a set of objects, without count in version 0.
type vmGPUMMIOModelBefore2 struct {
	ID                  types.String  `tfsdk:"id"`
	VirtualMachineID    types.String  `tfsdk:"virtual_machine_id"`
	GPU                 attr.Value    `tfsdk:"gpu"`
	PCIDevice           attr.Value    `tfsdk:"pci_device"`
	MMIOSizeGB          types.Int64   `tfsdk:"mmio_size_gb"`
	TotalGPUMemoryGB    types.Float64 `tfsdk:"total_gpu_memory_gb"`
	Firmware            types.String  `tfsdk:"firmware"`
	Use64bitMMIO        types.Bool    `tfsdk:"use_64bit_mmio"`
	MemoryLockedToMax   types.Bool    `tfsdk:"memory_reservation_locked_to_max"`
	AllowFirmwareChange types.Bool    `tfsdk:"allow_firmware_change"`
	PowerOffAllowed     types.Bool    `tfsdk:"power_off_allowed"`
}

func (r *vmGPUMMIOResource) UpgradeState(ctx context.Context) map[int64]resource.StateUpgrader {
	var current resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &current)
	gpuAttributes := map[string]schema.Attribute{
		"pci_id": schema.StringAttribute{Optional: true}, "vendor_id": schema.StringAttribute{Optional: true},
		"device_id": schema.StringAttribute{Optional: true},
	}
	deviceAttributes := map[string]schema.Attribute{"pci_id": schema.StringAttribute{Required: true}}
	// Versions 0 and 1 kept what destroy restores in private state, and
	// had no peer-to-peer or NUMA node affinity.
	attributes := maps.Clone(current.Schema.Attributes)
	delete(attributes, "extra_config_before")
	delete(attributes, "peer_to_peer")
	delete(attributes, "numa_node_affinity")
	current.Schema.Attributes = attributes
	v0 := current.Schema
	v0.Version = 0
	v0.Blocks = map[string]schema.Block{
		"gpu":        schema.ListNestedBlock{NestedObject: schema.NestedBlockObject{Attributes: gpuAttributes}},
		"pci_device": schema.ListNestedBlock{NestedObject: schema.NestedBlockObject{Attributes: deviceAttributes}},
	}
	v1 := current.Schema
	v1.Version = 1
	v1.Blocks = map[string]schema.Block{
		"gpu": schema.SetNestedBlock{NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"pci_id": gpuAttributes["pci_id"], "vendor_id": gpuAttributes["vendor_id"], "device_id": gpuAttributes["device_id"],
			"count": schema.Int64Attribute{Optional: true},
		}}},
		"pci_device": schema.SetNestedBlock{NestedObject: schema.NestedBlockObject{Attributes: deviceAttributes}},
	}
	return map[int64]resource.StateUpgrader{
		// Version 0's order was the configuration's: kept.
		0: {PriorSchema: &v0, StateUpgrader: func(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
			upgradeGPUMMIOBefore2(ctx, req, resp, false)
		}},
		// The order a set was stored in says nothing of the configuration's:
		// the blocks come in the order of the PCI ids and models, and a
		// configuration in another order plans an update that changes
		// nothing on the VM.
		1: {PriorSchema: &v1, StateUpgrader: func(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
			upgradeGPUMMIOBefore2(ctx, req, resp, true)
		}},
	}
}

// upgradeGPUMMIOBefore2 makes the blocks of a version 0 or 1 state one per
// GPU and one per model: the dynamic DirectPath blocks of a model (version
// 0 had one per GPU) one block with their count, where the model's first
// block was, and a device given twice (not in a state a plan wrote, but in
// one read from a VM given a device twice out of band) once. sorted puts
// the blocks in the order of their keys.
func upgradeGPUMMIOBefore2(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse, sorted bool) {
	var old vmGPUMMIOModelBefore2
	if resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &old)...); resp.Diagnostics.HasError() {
		return
	}
	m := vmGPUMMIOModel{
		ID: old.ID, VirtualMachineID: old.VirtualMachineID, MMIOSizeGB: old.MMIOSizeGB, TotalGPUMemoryGB: old.TotalGPUMemoryGB,
		Firmware: old.Firmware, Use64bitMMIO: old.Use64bitMMIO, MemoryLockedToMax: old.MemoryLockedToMax,
		AllowFirmwareChange: old.AllowFirmwareChange, PowerOffAllowed: old.PowerOffAllowed, PeerToPeer: types.BoolNull(),
		NUMANodeAffinity:  types.SetNull(types.Int64Type),
		ExtraConfigBefore: types.MapNull(types.StringType),         // read from private state at the next refresh or destroy
		VGPU:              types.ListValueMust(vgpuBlockType, nil), // before vGPUs: the next read finds any
	}
	var gpus []gpuBlockModel
	at := map[string]int{}
	for _, b := range priorBlocks(old.GPU) {
		g := gpuBlockModel{PCIID: priorString(b, "pci_id"), VendorID: priorString(b, "vendor_id"), DeviceID: priorString(b, "device_id"),
			Count: types.Int64Null(), Label: types.StringNull()}
		if count, ok := b["count"].(types.Int64); ok {
			g.Count = count
		}
		i, seen := at[g.key()]
		switch {
		case !seen:
			at[g.key()] = len(gpus)
			gpus = append(gpus, g)
		case g.PCIID.IsNull(): // another block of the model: its GPUs count
			gpus[i].Count = countOf(gpus[i].gpuCount() + g.gpuCount())
		}
	}
	var devs []pciDeviceBlockModel
	seen := map[string]bool{}
	for _, b := range priorBlocks(old.PCIDevice) {
		if id := priorString(b, "pci_id"); !seen[id.ValueString()] {
			seen[id.ValueString()] = true
			devs = append(devs, pciDeviceBlockModel{PCIID: id})
		}
	}
	if sorted {
		gpus = inPriorOrder(gpus, nil, gpuBlockModel.key)
		devs = inPriorOrder(devs, nil, func(d pciDeviceBlockModel) string { return d.PCIID.ValueString() })
	}
	var ds diag.Diagnostics
	m.GPU, ds = types.ListValueFrom(ctx, gpuBlockType, gpus)
	resp.Diagnostics.Append(ds...)
	m.PCIDevice, ds = types.ListValueFrom(ctx, pciDeviceBlockType, devs)
	resp.Diagnostics.Append(ds...)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &m)...)
}

// priorBlocks are the attributes of each block of a prior version's list or
// set of blocks.
func priorBlocks(v attr.Value) []map[string]attr.Value {
	c, ok := v.(interface{ Elements() []attr.Value })
	if !ok {
		return nil
	}
	var out []map[string]attr.Value
	for _, e := range c.Elements() {
		if o, ok := e.(types.Object); ok {
			out = append(out, o.Attributes())
		}
	}
	return out
}

func priorString(attributes map[string]attr.Value, name string) types.String {
	if s, ok := attributes[name].(types.String); ok {
		return s
	}
	return types.StringNull()
}
