package vcsimlab

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// The PCIe tree and NUMA layout of a host built as an NVIDIA DGX H100
// (Options.DGXHosts), for GPUDirect RDMA: which GPU sits next to which
// ConnectX-7 card.
//
// Sources:
//   - NVIDIA DGX H100 User Guide, "Network Modules" (Table 6): eight
//     single-port ConnectX-7 compute cards, each with its interface name,
//     which gives its PCI bus (ibp24s0 is bus 0x18, ibp64s0 0x40, ibp79s0
//     0x4f, ibp94s0 0x5e, ibp154s0 0x9a, ibp192s0 0xc0, ibp206s0 0xce,
//     ibp220s0 0xdc), the GPU it serves (GPU 0 with ibp24s0, 1 with
//     ibp64s0, 2 with ibp79s0, 3 with ibp94s0, 4 with ibp154s0, 5 with
//     ibp192s0, 6 with ibp206s0, 7 with ibp220s0) and its CPU (GPUs 0-3 and
//     their cards on CPU 0, 4-7 on CPU 1).
//   - The vSphere API reference: HostPciDevice.parentBridge ("The parent
//     bridge of this PCI"), HostNumaNode.pciId (API 6.7, "Information about
//     each of the pci devices associated with the node", SBDF strings).
//     vcsim's recorded ESXi host (simulator/esx/host_hardware_info.go) shows
//     root ports with no parent bridge and endpoints naming their root port.
//
// The lab's choices, where the guide draws no PCIe tree: each GPU and its
// card share one PCIe switch (NVIDIA's pairing is by PCIe affinity; the
// guide does not name the switch), enumerated as firmware numbers buses,
// depth first: the root port on bus n-3, the switch's upstream port on bus
// n-2, its downstream ports on bus n-1, the card on bus n (the guide's) and
// the GPU on bus n+1. The GPUs' buses are therefore the lab's, not NVIDIA's.
// The host keeps the other lab hosts' NICs (the ConnectX-6 Dx ports and the
// two ConnectX-7 cards at 0x86 and 0x87), each under a root port of its
// own; NUMA node 0 has every device on a bus below 0x80, node 1 the rest,
// which is how the guide's table splits the cards.

// dgxCardBuses are the buses of the DGX H100's compute ConnectX-7 cards, by
// the GPU each serves (index = GPU number), from the guide's Table 6.
var dgxCardBuses = []uint8{0x18, 0x40, 0x4f, 0x5e, 0x9a, 0xc0, 0xce, 0xdc}

// dgxSecondSocket is the first GPU (and card) on CPU 1, and the first bus
// of NUMA node 1.
const (
	dgxSecondSocket = 4
	dgxNode1Bus     = 0x80
)

// dgxCards are the compute cards as SR-IOV PFs, configured as the lab's
// other ConnectX-7 cards (ibPFs): offset 1, stride 1, 16 VFs.
func dgxCards() []sriovPF {
	out := make([]sriovPF, 0, len(dgxCardBuses))
	for _, bus := range dgxCardBuses {
		out = append(out, sriovPF{id: pciID(bus, 0, 0), bus: bus, offset: 1, stride: 1, maxVFs: connectX7MaxVFs})
	}
	return out
}

// dgxGPUs are the DGX H100's eight H100 SXM5 80GB, active for passthrough
// as the other hosts' H100s are.
func dgxGPUs() []gpu {
	out := make([]gpu, 0, len(dgxCardBuses))
	for _, bus := range dgxCardBuses {
		out = append(out, gpu{id: pciID(bus+1, 0, 0), bus: bus + 1, device: 0x2330, name: "GH100 [H100 SXM5 80GB]", memKB: 80 << 20, enabled: true})
	}
	return out
}

func pciID(bus, slot, function uint8) string {
	return fmt.Sprintf("0000:%02x:%02x.%d", bus, slot, function)
}

// bridge is a PCI-to-PCI bridge of the lab's topology: a root port or a
// switch port.
func bridge(bus, slot uint8, name, parent string) types.HostPciDevice {
	return types.HostPciDevice{
		Id:              pciID(bus, slot, 0),
		ClassId:         0x0604, // PCI bridge
		Bus:             bus,
		Slot:            slot,
		DeviceName:      name,
		DeviceClassName: "PCI bridge",
		ParentBridge:    parent,
	}
}

// dgxTopology is the hardware a DGX H100 host has beside the lab host's
// devices (the bridges and the compute cards, with their parent bridges),
// and the parent bridges of the GPUs and the lab's other NICs.
func dgxTopology() (devices []types.HostPciDevice, parents map[string]string) {
	parents = map[string]string{}
	cards, gpus := dgxCards(), dgxGPUs()
	for i, bus := range dgxCardBuses {
		root := bridge(bus-3, 1, "PCI Express Root Port", "")
		upstream := bridge(bus-2, 0, "PCIe switch upstream port", root.Id)
		toCard := bridge(bus-1, 0, "PCIe switch downstream port", upstream.Id)
		toGPU := bridge(bus-1, 1, "PCIe switch downstream port", upstream.Id)
		card := ibPFDevice(cards[i])
		card.ParentBridge = toCard.Id
		parents[gpus[i].id] = toGPU.Id
		devices = append(devices, root, upstream, toCard, toGPU, card)
	}
	// The lab's other NICs, each card under a root port of its own: the
	// ConnectX-7 cards' on the root bus before the first (a root port on a
	// card's own bus would take the id of one of its VFs).
	for i, pf := range ibPFs {
		root := bridge(ibPFs[0].bus-1, uint8(i+1), "PCI Express Root Port", "")
		devices = append(devices, root)
		parents[pf.id] = root.Id
	}
	cx6Root := bridge(connectXBus-1, 1, "PCI Express Root Port", "")
	devices = append(devices, cx6Root)
	for _, n := range rdmaNICs {
		parents[n.pci] = cx6Root.Id
	}
	return devices, parents
}

// useDGXTopology makes a host of the lab a DGX H100: the GPUs above instead
// of the lab's, the compute cards and the bridges added, parent bridges set,
// and two NUMA nodes.
func useDGXTopology(h *mo.HostSystem, ps *mo.HostPciPassthruSystem) {
	useGPUs(h, ps, dgxGPUs())
	added, parents := dgxTopology()
	devices := slices.Clone(h.Hardware.PciDevice)
	for i, d := range devices {
		if p, ok := parents[d.Id]; ok {
			devices[i].ParentBridge = p
		}
	}
	// Sorted by address, as ESXi lists them.
	h.Hardware.PciDevice = append(devices, added...)
	slices.SortFunc(h.Hardware.PciDevice, func(a, b types.HostPciDevice) int { return cmp.Compare(a.Id, b.Id) })

	// Every device has a passthrough entry (see passthruInfo): the bridges
	// not capable, the cards as the lab's other ConnectX-7 PFs.
	infos := func() []types.BaseHostPciPassthruInfo {
		var out []types.BaseHostPciPassthruInfo
		for _, d := range added {
			if d.ClassId == 0x0604 {
				out = append(out, &types.HostPciPassthruInfo{Id: d.Id})
			}
		}
		for _, pf := range dgxCards() {
			out = append(out, sriovInfo(pf))
		}
		return out
	}
	h.Config.PciPassthruInfo = append(h.Config.PciPassthruInfo, infos()...)
	ps.PciPassthruInfo = append(ps.PciPassthruInfo, infos()...)

	nodes := []types.HostNumaNode{{TypeId: 0, CpuID: []int16{0}}, {TypeId: 1, CpuID: []int16{1}}}
	if old := h.Hardware.NumaInfo; old != nil && len(old.NumaNode) > 0 {
		nodes[0].MemoryRangeBegin, nodes[0].MemoryRangeLength = old.NumaNode[0].MemoryRangeBegin, old.NumaNode[0].MemoryRangeLength
	}
	for _, d := range h.Hardware.PciDevice {
		n := &nodes[0]
		if d.Bus >= dgxNode1Bus {
			n = &nodes[1]
		}
		n.PciId = append(n.PciId, d.Id)
	}
	h.Hardware.NumaInfo = &types.HostNumaInfo{Type: "NUMA", NumNodes: int32(len(nodes)), NumaNode: nodes}
}
