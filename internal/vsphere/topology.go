package vsphere

import (
	"cmp"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25/types"
)

// Where a host's PCI devices sit: its PCIe tree (HostPciDevice.parentBridge)
// and NUMA layout (HostNumaNode.pciId, vSphere API 6.7), and how far apart a
// VM's GPUs and its InfiniBand or RoCE functions are, for GPUDirect RDMA.
//
// NVIDIA's GPUDirect RDMA User Manual: "To achieve the best performance for
// GPUDirect RDMA, it is required that both the HCA and the GPU be
// physically located on the same PCIe IO root complex". NCCL
// (NCCL_NET_GDR_LEVEL, Environment Variables) uses GPUDirect RDMA by
// distance: PIX, the same PCI switch; PXB, through PCI switches; PHB, the
// same NUMA node, through the CPU; SYS, across NUMA nodes (QPI/UPI).

// Proximity is how two devices of a host sit, nearest first.
type Proximity int

const (
	// ProximityUnknown: the host reports no parent bridge for one of them,
	// and no two NUMA nodes.
	ProximityUnknown Proximity = iota
	// SamePCIeSwitch: both are under one PCIe switch (NCCL's PIX or PXB).
	SamePCIeSwitch
	// SameNUMANode: not under one switch, on one NUMA node (PHB): traffic
	// goes through the CPU.
	SameNUMANode
	// NotUnderOneSwitch: not under one switch, and the host reports no
	// NUMA node for one of them.
	NotUnderOneSwitch
	// AcrossNUMANodes: on two NUMA nodes (SYS): traffic crosses the
	// sockets' interconnect.
	AcrossNUMANodes
)

// maxPCIeDepth bounds a walk up the tree, against a host whose parent
// bridges loop.
const maxPCIeDepth = 32

// pciTopology is a host's PCIe tree and NUMA layout. A root port has no
// parent bridge (as ESXi reports it: vcsim's recorded host).
type pciTopology struct {
	parent map[string]string // PCI id (lower case) -> its parent bridge's
	node   map[string]int    // PCI id (lower case) -> NUMA node, where listed
	nodes  int               // the host's NUMA nodes, 0 when not reported
}

func topologyFromMO(hw *types.HostHardwareInfo) pciTopology {
	t := pciTopology{parent: map[string]string{}, node: map[string]int{}}
	if hw == nil {
		return t
	}
	for _, d := range hw.PciDevice {
		id := strings.ToLower(d.Id)
		t.parent[id] = strings.ToLower(d.ParentBridge)
	}
	if hw.NumaInfo != nil {
		t.nodes = int(hw.NumaInfo.NumNodes)
		for _, n := range hw.NumaInfo.NumaNode {
			for _, id := range n.PciId {
				t.node[strings.ToLower(id)] = int(n.TypeId)
			}
		}
	}
	return t
}

// bridges are the bridges above a device, nearest first, the root port
// last; nil when the host reports no parent bridge for it.
func (t pciTopology) bridges(id string) []string {
	var out []string
	for p := t.parent[strings.ToLower(id)]; p != "" && len(out) < maxPCIeDepth; p = t.parent[p] {
		out = append(out, p)
	}
	return out
}

// pcieSwitch is the PCIe switch a device is under: the topmost bridge below
// its root port (the switch's upstream port), "" for a device under its root
// port alone or of unknown place. Two devices under it share the switch,
// whatever switches below it they sit under too (NCCL's PXB).
func (t pciTopology) pcieSwitch(id string) string {
	b := t.bridges(id)
	if len(b) < 2 {
		return ""
	}
	return b[len(b)-2]
}

// numaNode is the NUMA node of a device, or of its nearest bridge the host
// lists on one (a virtual function may be listed only through its PF's
// bridge); -1 when none is.
func (t pciTopology) numaNode(id string) int {
	for _, d := range append([]string{strings.ToLower(id)}, t.bridges(id)...) {
		if n, ok := t.node[d]; ok {
			return n
		}
	}
	return -1
}

// proximity is how devices a and b sit. Two NUMA nodes tell without the
// tree; anything nearer needs both devices' parent bridges, or whether they
// share a switch is not known.
func (t pciTopology) proximity(a, b string) Proximity {
	if s := t.pcieSwitch(a); s != "" && s == t.pcieSwitch(b) {
		return SamePCIeSwitch
	}
	na, nb := t.numaNode(a), t.numaNode(b)
	switch {
	case na >= 0 && nb >= 0 && na != nb:
		return AcrossNUMANodes
	case len(t.bridges(a)) == 0 || len(t.bridges(b)) == 0:
		return ProximityUnknown
	case na >= 0 && nb >= 0:
		return SameNUMANode
	}
	return NotUnderOneSwitch
}

// GPUFarFromCard is a warning: a GPU of the VM has none of the VM's
// InfiniBand or RoCE functions under its PCIe switch. Card is the nearest
// of them. BetterGPU is a free GPU of the host under Card's switch,
// BetterCard an InfiniBand or RoCE card of the host under the GPU's switch ("" when
// there is none).
type GPUFarFromCard struct {
	Index                 int // the GPU's request
	VM, Host              string
	GPU, GPUName, Card    string
	Proximity             Proximity
	GPUNode, CardNode     int // -1 when not reported
	PeerToPeer            bool
	BetterGPU, BetterCard string
}

func (GPUFarFromCard) finding() {}

// planTopology warns of each GPU given by PCI id that has none of the VM's
// InfiniBand or RoCE functions (the setup's devices and the PFs of the VM's
// SR-IOV adapters) under its PCIe switch, where the host reports where they
// sit.
func planTopology(label string, vm *VM, host *Host, ch GPUMMIOChange) []Finding {
	var cards []string
	for _, id := range ch.Devices {
		if host.rdmaFunction(id) {
			cards = append(cards, id)
		}
	}
	for _, d := range host.PCIDevices {
		if slices.ContainsFunc(d.SRIOVAdapters, func(u VMRef) bool { return u.MOID == vm.MOID }) && host.rdmaFunction(d.PCIID) &&
			!slices.Contains(cards, d.PCIID) {
			cards = append(cards, d.PCIID)
		}
	}
	if len(cards) == 0 {
		return nil
	}
	t := host.topology
	var out []Finding
	for i, g := range ch.GPUs {
		if g.Dynamic() {
			continue // placed by vSphere at power on
		}
		nearest, card := ProximityUnknown, ""
		for _, c := range cards {
			if p := t.proximity(g.PCIID, c); p != ProximityUnknown && (nearest == ProximityUnknown || p < nearest) {
				nearest, card = p, c
			}
		}
		if nearest == ProximityUnknown || nearest == SamePCIeSwitch {
			continue
		}
		f := GPUFarFromCard{Index: i, VM: label, Host: host.Name, GPU: g.PCIID, Card: card,
			Proximity: nearest, GPUNode: t.numaNode(g.PCIID), CardNode: t.numaNode(card), PeerToPeer: ch.PeerToPeer != nil && *ch.PeerToPeer}
		for _, h := range host.GPUs {
			if strings.EqualFold(h.PCIID, g.PCIID) {
				f.GPUName = h.DeviceName
			}
		}
		f.BetterGPU = host.freeGPUUnder(t.pcieSwitch(card), vm, ch.GPUs)
		f.BetterCard = host.rdmaCardUnder(t.pcieSwitch(g.PCIID))
		out = append(out, f)
	}
	return out
}

// freeGPUUnder is a GPU under the PCIe switch sw, active for passthrough,
// used by no other VM and not already asked for by the VM; "" when none is.
func (h *Host) freeGPUUnder(sw string, vm *VM, asked []GPURequest) string {
	if sw == "" {
		return ""
	}
	for _, g := range h.GPUs {
		if h.topology.pcieSwitch(g.PCIID) != sw || !g.PassthroughActive ||
			slices.ContainsFunc(asked, func(r GPURequest) bool { return strings.EqualFold(r.PCIID, g.PCIID) }) ||
			slices.ContainsFunc(g.VMs, func(u VMRef) bool { return u.MOID != vm.MOID }) {
			continue
		}
		return g.PCIID
	}
	return ""
}

// rdmaFunction reports whether a device of the host is an InfiniBand or
// RoCE function, the kind GPUDirect RDMA pairs with a GPU: a ConnectX
// card's physical or virtual function (vendor 15b3), a NIC the host lists an
// RDMA device for (config.network.rdmaDevice, paired with its vmnic), or a
// virtual function of one. A plain Ethernet NIC passed through is not.
func (h *Host) rdmaFunction(id string) bool {
	for _, d := range h.PCIDevices {
		if !strings.EqualFold(d.PCIID, id) {
			continue
		}
		pf := cmp.Or(d.PhysicalFunction, d.PCIID)
		return d.VendorID == VendorMellanox ||
			slices.ContainsFunc(h.PhysicalNICs, func(n PhysicalNIC) bool { return n.RDMADevice != "" && strings.EqualFold(n.PCIID, pf) })
	}
	return false
}

// rdmaCardUnder is the first InfiniBand or RoCE physical function (no VF)
// under the PCIe switch sw, "" when none is.
func (h *Host) rdmaCardUnder(sw string) string {
	if sw == "" {
		return ""
	}
	for _, d := range h.PCIDevices {
		if d.PhysicalFunction == "" && h.topology.pcieSwitch(d.PCIID) == sw && h.rdmaFunction(d.PCIID) {
			return d.PCIID
		}
	}
	return ""
}

// NUMA node affinity (numa.nodeAffinity) checked against the host.
type (
	// NUMANodeNotOnHost: the affinity names a node the host does not have.
	NUMANodeNotOnHost struct {
		VM, Host    string
		Node, Nodes int // Nodes: how many the host has, numbered from 0
	}
	// NUMAAffinityMissesDevice is a warning: devices of the VM (GPUs
	// first) are on NUMA nodes the affinity leaves out, so their DMA
	// crosses the sockets. DeviceNodes are their nodes, in order.
	NUMAAffinityMissesDevice struct {
		VM, Host    string
		Devices     []string
		DeviceNodes []int
		Nodes       []int
	}
)

func (NUMANodeNotOnHost) finding()        {}
func (NUMAAffinityMissesDevice) finding() {}

// planNUMAAffinity checks the nodes of a NUMA node affinity against the
// host's, and the VM's devices given by PCI id against the nodes, where
// the host reports them.
func planNUMAAffinity(label string, host *Host, ch GPUMMIOChange) []Finding {
	if ch.NUMANodeAffinity == nil {
		return nil
	}
	var out []Finding
	for _, n := range ch.NUMANodeAffinity {
		if host.topology.nodes > 0 && n >= host.topology.nodes {
			out = append(out, NUMANodeNotOnHost{VM: label, Host: host.Name, Node: n, Nodes: host.topology.nodes})
		}
	}
	if len(out) > 0 || len(ch.NUMANodeAffinity) == 0 {
		return out
	}
	var ids []string
	for _, g := range ch.GPUs {
		if !g.Dynamic() {
			ids = append(ids, g.PCIID)
		}
	}
	f := NUMAAffinityMissesDevice{VM: label, Host: host.Name, Nodes: ch.NUMANodeAffinity}
	for _, id := range append(ids, ch.Devices...) {
		if n := host.topology.numaNode(id); n >= 0 && !slices.Contains(ch.NUMANodeAffinity, n) {
			f.Devices, f.DeviceNodes = append(f.Devices, id), append(f.DeviceNodes, n)
		}
	}
	if len(f.Devices) > 0 {
		out = append(out, f)
	}
	return out
}
