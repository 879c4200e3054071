package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// ValidateConfig: each GPU is a PCI id or a vendor and device id (with a
// count, one block per model), no GPU, model, vGPU profile or device is
// given twice, no more vGPUs than a VM takes, and no PCI id is both a GPU
// and a pci_device (a VM given one device twice does not boot, with no
// error to say why).
func (r *vmGPUMMIOResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateVGPUBlocks(ctx, req, resp)
	var gpus, devices types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("gpu"), &gpus)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("pci_device"), &devices)...)
	if resp.Diagnostics.HasError() || gpus.IsUnknown() || devices.IsUnknown() {
		return
	}
	var list []gpuBlockModel
	var devs []pciDeviceBlockModel
	resp.Diagnostics.Append(gpus.ElementsAs(ctx, &list, true)...)
	resp.Diagnostics.Append(devices.ElementsAs(ctx, &devs, true)...)
	asGPU := map[string]bool{}
	blocksOf := map[string][]int{} // the blocks naming each GPU or model, by key
	var keys []string
	for i, g := range list {
		if g.PCIID.IsUnknown() || g.VendorID.IsUnknown() || g.DeviceID.IsUnknown() || g.Count.IsUnknown() || g.Label.IsUnknown() {
			continue
		}
		at := path.Root("gpu").AtListIndex(i)
		static, dynamic := !g.PCIID.IsNull(), !g.VendorID.IsNull() || !g.DeviceID.IsNull()
		switch {
		case static && dynamic:
			resp.Diagnostics.AddAttributeError(at, "Invalid GPU",
				fmt.Sprintf("A gpu block gives both pci_id = %q and vendor_id/device_id. Give a GPU either as pci_id (a device on the VM's "+
					"host) or as vendor_id and device_id (dynamic DirectPath: vSphere picks a device of that model at power on), not both.",
					g.PCIID.ValueString()))
			continue
		case !static && !dynamic:
			resp.Diagnostics.AddAttributeError(at, "Invalid GPU",
				"A gpu block is empty. Give pci_id (a device on the VM's host, e.g. 0000:3b:00.0), or vendor_id and "+
					"device_id (dynamic DirectPath, e.g. 10de and 2330); vspherehpc_host lists a host's GPUs with both.")
			continue
		case dynamic && g.DeviceID.IsNull():
			resp.Diagnostics.AddAttributeError(at.AtName("device_id"), "Missing device_id",
				fmt.Sprintf("A gpu block has vendor_id = %q but no device_id. Dynamic DirectPath needs both: add the GPU model's "+
					"device_id (four hex digits, e.g. 2330 for an H100 SXM5; vspherehpc_host lists its GPUs' ids), "+
					"or give pci_id instead.", g.VendorID.ValueString()))
			continue
		case dynamic && g.VendorID.IsNull():
			resp.Diagnostics.AddAttributeError(at.AtName("vendor_id"), "Missing vendor_id",
				fmt.Sprintf("A gpu block has device_id = %q but no vendor_id. Dynamic DirectPath needs both: add the GPU's "+
					"vendor_id (four hex digits, e.g. 10de for NVIDIA; vspherehpc_host lists its GPUs' ids), or give pci_id instead.", g.DeviceID.ValueString()))
			continue
		case static && !g.Label.IsNull():
			resp.Diagnostics.AddAttributeError(at.AtName("label"), "Hardware label of one GPU",
				fmt.Sprintf("The gpu block of %s names one device, and a hardware label picks among devices: it is for dynamic "+
					"DirectPath (vendor_id and device_id), where vSphere takes a device of the model with that label at power on. "+
					"Leave label out, or give the GPU by vendor_id and device_id.", g.PCIID.ValueString()))
		case static && !g.Count.IsNull():
			resp.Diagnostics.AddAttributeError(at.AtName("count"), "count of one GPU",
				fmt.Sprintf("The gpu block of %s names one device: count is for dynamic DirectPath (vendor_id and device_id). Leave it out.",
					g.PCIID.ValueString()))
		}
		if static {
			asGPU[g.PCIID.ValueString()] = true
		}
		if len(blocksOf[g.key()]) == 0 {
			keys = append(keys, g.key())
		}
		blocksOf[g.key()] = append(blocksOf[g.key()], i)
	}
	for _, key := range keys {
		if blocks := blocksOf[key]; len(blocks) > 1 {
			addGivenTwice(&resp.Diagnostics, list, blocks)
		}
	}
	seen := map[string]int{}
	for i, d := range devs {
		if d.PCIID.IsUnknown() || d.PCIID.IsNull() {
			continue
		}
		id, at := d.PCIID.ValueString(), path.Root("pci_device").AtListIndex(i)
		if first, twice := seen[id]; twice {
			resp.Diagnostics.AddAttributeError(at, "PCI device listed twice",
				fmt.Sprintf("PCI device %s is in pci_device blocks %d and %d. A device passes through once: remove the copy.", id, first+1, i+1))
			continue
		}
		seen[id] = i
		if asGPU[id] {
			resp.Diagnostics.AddAttributeError(at, "PCI device listed twice",
				fmt.Sprintf("PCI device %s is listed both in a gpu block and in a pci_device block. A VM given the same device twice "+
					"does not boot, with no error: list it once (GPUs in gpu blocks, so their memory sizes the MMIO window).", id))
		}
	}
}

// validateVGPUBlocks refuses two vgpu blocks of one profile (one block per
// profile, with its count) and more vGPUs in all than a VM takes.
func validateVGPUBlocks(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var l types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("vgpu"), &l)...)
	if resp.Diagnostics.HasError() || l.IsUnknown() {
		return
	}
	var blocks []vgpuBlockModel
	resp.Diagnostics.Append(l.ElementsAs(ctx, &blocks, true)...)
	first, total, counted := map[string]int{}, 0, true
	for i, b := range blocks {
		if b.Count.IsUnknown() {
			counted = false
		}
		total += b.vgpuCount()
		if b.Profile.IsUnknown() || b.Profile.IsNull() {
			continue
		}
		p := b.Profile.ValueString()
		if j, twice := first[p]; twice {
			resp.Diagnostics.AddAttributeError(path.Root("vgpu").AtListIndex(i), "vGPU profile given twice",
				fmt.Sprintf("vgpu blocks %d and %d both ask for profile %s. The vGPUs of a profile are one block with their count.", j+1, i+1, p))
			continue
		}
		first[p] = i
	}
	if counted && total > vsphere.MaxVGPUsPerVM {
		resp.Diagnostics.AddAttributeError(path.Root("vgpu"), "Too many vGPUs",
			fmt.Sprintf("The vgpu blocks ask for %d vGPUs; vSphere 8 gives a VM at most %d.", total, vsphere.MaxVGPUsPerVM))
	}
}

// addGivenTwice refuses the gpu blocks (their indexes) that name one GPU or
// one model: a GPU passes through once, and the GPUs of a model are one
// block with their count. Counted as configurations written before count
// existed meant them: one GPU per block.
func addGivenTwice(diags *diag.Diagnostics, list []gpuBlockModel, blocks []int) {
	g := list[blocks[0]]
	numbers := make([]string, len(blocks))
	total := 0
	for i, b := range blocks {
		numbers[i] = strconv.Itoa(b + 1)
		total += list[b].gpuCount()
	}
	which := strings.Join(numbers, ", ")
	at := path.Root("gpu").AtListIndex(blocks[1])
	if !g.PCIID.IsNull() {
		diags.AddAttributeError(at, "GPU listed twice",
			fmt.Sprintf("GPU %s is in gpu blocks %s. A GPU passes through to a VM once: remove the copies.", g.PCIID.ValueString(), which))
		return
	}
	fix := fmt.Sprintf("give one block with count = %d", total)
	if total > maxPassthroughDevices {
		fix = fmt.Sprintf("give one block with count (at most %d, the most passthrough devices a VM takes)", maxPassthroughDevices)
	}
	what, one := "model "+g.key(), "a model"
	if !g.Label.IsNull() {
		what = fmt.Sprintf("model %s:%s labelled %q", g.VendorID.ValueString(), g.DeviceID.ValueString(), g.Label.ValueString())
		one = "a model and label"
	}
	diags.AddAttributeError(at, "GPU model given twice",
		fmt.Sprintf("gpu blocks %s all ask for GPUs of %s, %d in all. The GPUs of %s are one block: %s.", which, what, total, one, fix))
}

// maxPassthroughDevices is the most PCI passthrough devices a VM takes
// (ESXi 8.0 U2, hardware version 21; Broadcom KB 309986).
const maxPassthroughDevices = 128

// gpuCountRange checks a gpu block's count, saying what a count of one
// means instead of the range alone.
type gpuCountRange struct{}

func (gpuCountRange) Description(context.Context) string {
	return fmt.Sprintf("from 2 to %d; left out for one GPU", maxPassthroughDevices)
}

func (v gpuCountRange) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (gpuCountRange) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	switch n := req.ConfigValue.ValueInt64(); {
	case n == 1:
		resp.Diagnostics.AddAttributeError(req.Path, "count of one GPU",
			"count = 1 asks for one GPU of the model: leave count out for one GPU (count is for two or more).")
	case n < 2 || n > maxPassthroughDevices:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid count",
			fmt.Sprintf("count = %d: a gpu block asks for 2 to %d GPUs of its model (the most passthrough devices a VM takes, on "+
				"ESXi 8.0 U2); leave count out for one.", n, maxPassthroughDevices))
	}
}
