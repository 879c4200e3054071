package provider

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// stringMap is m as a map attribute.
func stringMap(m map[string]string) types.Map {
	elems := make(map[string]attr.Value, len(m))
	for k, v := range m {
		elems[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, elems)
}

// gpuMMIOToModel sets m from what was read. A device m lists as a GPU or as
// a pci_device stays where m has it; a device m does not list goes to
// pci_device when it is among others (by PCI id), else to gpu. Dynamic
// DirectPath GPUs are one block per model, with their count. Blocks keep
// m's order (the order the VM has its devices in is never drift); blocks m
// does not have follow, in the order of the PCI ids and models.
func gpuMMIOToModel(ctx context.Context, got *vsphere.GPUMMIO, m *vmGPUMMIOModel, others map[string]bool) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(strings.ToLower(got.VM.ID))
	m.Firmware = types.StringValue(got.Firmware)
	m.Use64bitMMIO = types.BoolValue(got.Use64bitMMIO)
	m.MemoryLockedToMax = types.BoolValue(got.MemoryLocked)
	m.MMIOSizeGB = types.Int64Value(got.MMIOSizeGB)
	switch {
	case m.PeerToPeer.IsNull(): // left out, the keys are not the resource's to read
	case got.PeerToPeerMixed:
		// One key of two is neither on nor off: null, drift from either.
		m.PeerToPeer = types.BoolNull()
		diags.AddWarning("Peer-to-peer keys half set",
			fmt.Sprintf("Virtual machine %s has one of %s and %s TRUE and not the other, which is neither peer-to-peer on nor off. "+
				"The plan sets both as peer_to_peer says.", got.VM.Name, vsphere.AllowP2PKey, vsphere.RelaxACSKey))
	default:
		m.PeerToPeer = types.BoolValue(got.PeerToPeer)
	}
	switch {
	case m.NUMANodeAffinity.IsNull(): // left out, the key is not the resource's to read
	case got.NUMANodeAffinityUnreadable:
		m.NUMANodeAffinity = types.SetNull(types.Int64Type)
		diags.AddWarning("NUMA node affinity unreadable",
			fmt.Sprintf("Virtual machine %s has %s = %q, which is not a list of NUMA node numbers. The plan sets it as "+
				"numa_node_affinity says.", got.VM.Name, vsphere.NUMANodeAffinityKey, got.ExtraConfig[vsphere.NUMANodeAffinityKey]))
	default:
		m.NUMANodeAffinity = int64Set(got.NUMANodeAffinity)
	}
	if m.TotalGPUMemoryGB.IsUnknown() || m.TotalGPUMemoryGB.IsNull() {
		m.TotalGPUMemoryGB = types.Float64Value(0) // known at the next plan
	}
	for _, b := range []*types.Bool{&m.AllowFirmwareChange, &m.PowerOffAllowed} {
		if b.IsNull() || b.IsUnknown() {
			*b = types.BoolValue(false)
		}
	}
	if m.ExtraConfigBefore.ElementType(ctx) == nil { // a model built from nothing (a list result): nothing recorded
		m.ExtraConfigBefore = types.MapNull(types.StringType)
	}
	var priorGPUs []gpuBlockModel
	var priorDevices []pciDeviceBlockModel
	if !m.GPU.IsNull() && !m.GPU.IsUnknown() {
		diags.Append(m.GPU.ElementsAs(ctx, &priorGPUs, false)...)
	}
	if !m.PCIDevice.IsNull() && !m.PCIDevice.IsUnknown() {
		diags.Append(m.PCIDevice.ElementsAs(ctx, &priorDevices, false)...)
	}
	listedAsGPU, listedAsDevice := map[string]bool{}, map[string]bool{}
	for _, g := range priorGPUs {
		listedAsGPU[g.PCIID.ValueString()] = true
	}
	for _, d := range priorDevices {
		listedAsDevice[d.PCIID.ValueString()] = true
	}
	dynamic := map[string]int{} // by model and label, poolKey
	var gpus []gpuBlockModel
	var devs []pciDeviceBlockModel
	// A host device given to the VM twice (out of band: vCenter takes it)
	// keeps the VM from powering on. It is left out, so the plan adds it
	// once, and the apply removes the extra.
	times, warned := map[string]int{}, map[string]bool{}
	for _, h := range got.Devices {
		if !h.Dynamic && h.VGPU == "" {
			times[h.PCIID]++
		}
	}
	vgpuCounts := map[string]int{} // by profile
	var vgpuBlocksRead []vgpuBlockModel
	for _, h := range got.Devices {
		switch {
		case h.VGPU != "":
			if vgpuCounts[h.VGPU] == 0 {
				vgpuBlocksRead = append(vgpuBlocksRead, vgpuBlockModel{Profile: types.StringValue(h.VGPU)})
			}
			vgpuCounts[h.VGPU]++
		case !h.Dynamic && times[h.PCIID] > 1:
			if !warned[h.PCIID] {
				diags.AddWarning("PCI device passed through twice",
					fmt.Sprintf("Virtual machine %s has host PCI device %s passed through %d times, and does not power on so. "+
						"The plan gives it the device once.", got.VM.Name, h.PCIID, times[h.PCIID]))
				warned[h.PCIID] = true
			}
		case h.Narrowed():
			// Not what a gpu block by model asks for: left out, so the plan
			// adds one, and the apply replaces it.
			diags.AddWarning("Dynamic DirectPath GPU narrowed",
				fmt.Sprintf("A Dynamic DirectPath GPU of virtual machine %s takes %d models, not its own alone, so it takes other host "+
					"GPUs than a gpu block by model gives it. The plan replaces it with one for the model alone.", got.VM.Name, h.Models))
		case h.Dynamic:
			key := poolKey(h.VendorID, h.DeviceID, h.Label)
			if dynamic[key] == 0 {
				label := types.StringNull()
				if h.Label != "" {
					label = types.StringValue(h.Label)
				}
				gpus = append(gpus, gpuBlockModel{PCIID: types.StringNull(), VendorID: types.StringValue(h.VendorID),
					DeviceID: types.StringValue(h.DeviceID), Label: label})
			}
			dynamic[key]++
		case listedAsDevice[h.PCIID] || (others[h.PCIID] && !listedAsGPU[h.PCIID]):
			devs = append(devs, pciDeviceBlockModel{PCIID: types.StringValue(h.PCIID)})
		default:
			gpus = append(gpus, gpuBlockModel{PCIID: types.StringValue(h.PCIID), VendorID: types.StringNull(), DeviceID: types.StringNull(),
				Count: types.Int64Null(), Label: types.StringNull()})
		}
	}
	for i := range gpus {
		if gpus[i].PCIID.IsNull() {
			gpus[i].Count = countOf(dynamic[gpus[i].key()])
		}
	}
	gpus = inPriorOrder(gpus, priorGPUs, gpuBlockModel.key)
	devs = inPriorOrder(devs, priorDevices, func(d pciDeviceBlockModel) string { return d.PCIID.ValueString() })
	list, ds := types.ListValueFrom(ctx, gpuBlockType, gpus)
	diags.Append(ds...)
	m.GPU = list
	list, ds = types.ListValueFrom(ctx, pciDeviceBlockType, devs)
	diags.Append(ds...)
	m.PCIDevice = list
	for i := range vgpuBlocksRead {
		vgpuBlocksRead[i].Count = countOf(vgpuCounts[vgpuBlocksRead[i].Profile.ValueString()])
	}
	profile := func(v vgpuBlockModel) string { return v.Profile.ValueString() }
	list, ds = types.ListValueFrom(ctx, vgpuBlockType, inPriorOrder(vgpuBlocksRead, vgpuBlocks(ctx, m.VGPU, &diags), profile))
	diags.Append(ds...)
	m.VGPU = list
	return diags
}

// peerToPeerFound is peer_to_peer as an adopted setup has it: true with
// both keys set, else left out (the keys, if any, stay as found).
func peerToPeerFound(got *vsphere.GPUMMIO) types.Bool {
	if got.PeerToPeer {
		return types.BoolValue(true)
	}
	return types.BoolNull()
}

// maxNUMANode is the highest NUMA node id: a byte (HostNumaNode.typeId).
const maxNUMANode = 255

// numaAffinityFound is numa_node_affinity as an adopted setup has it: the
// nodes numa.nodeAffinity lists, else left out, as when it lists a node
// above maxNUMANode, which the attribute refuses.
func numaAffinityFound(got *vsphere.GPUMMIO) types.Set {
	if len(got.NUMANodeAffinity) == 0 || slices.ContainsFunc(got.NUMANodeAffinity, func(n int) bool { return n < 0 || n > maxNUMANode }) {
		return types.SetNull(types.Int64Type)
	}
	return int64Set(got.NUMANodeAffinity)
}

// int64Set is ns as a set of numbers.
func int64Set(ns []int) types.Set {
	elems := make([]attr.Value, len(ns))
	for i, n := range ns {
		elems[i] = types.Int64Value(int64(n))
	}
	return types.SetValueMust(types.Int64Type, elems)
}

// inPriorOrder orders blocks read from the VM as prior has them; the blocks
// prior does not have follow, by key, so a VM's devices read without prior
// (an import, a list) come in the order of their PCI ids and models.
func inPriorOrder[B any](read, prior []B, key func(B) string) []B {
	rank := map[string]int{}
	for i, b := range prior {
		if _, seen := rank[key(b)]; !seen {
			rank[key(b)] = i
		}
	}
	out := slices.Clone(read)
	slices.SortStableFunc(out, func(a, b B) int {
		ra, aKnown := rank[key(a)]
		rb, bKnown := rank[key(b)]
		switch {
		case aKnown && bKnown:
			return cmp.Compare(ra, rb)
		case aKnown != bKnown:
			if aKnown {
				return -1
			}
			return 1
		}
		return strings.Compare(key(a), key(b))
	})
	return out
}
