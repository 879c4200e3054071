package vsphere

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// The tree's rules: a root port has no parent bridge; a switch is the
// topmost bridge below it, so devices under nested switches that meet
// there share it (NCCL's PXB); a VF takes its bridge's NUMA node; a loop
// of parent bridges ends; devices without parent bridges are near only
// when their NUMA nodes differ.
func TestPCITopology(t *testing.T) {
	t.Parallel()
	dev := func(id, parent string) types.HostPciDevice {
		return types.HostPciDevice{Id: id, ParentBridge: parent}
	}
	hw := &types.HostHardwareInfo{
		PciDevice: []types.HostPciDevice{
			dev("0000:10:01.0", ""),             // root port
			dev("0000:11:00.0", "0000:10:01.0"), // switch upstream port
			dev("0000:12:00.0", "0000:11:00.0"), // downstream port
			dev("0000:13:00.0", "0000:12:00.0"), // a second switch below it
			dev("0000:14:00.0", "0000:13:00.0"),
			dev("0000:15:00.0", "0000:14:00.0"), // GPU under both switches
			dev("0000:12:01.0", "0000:11:00.0"),
			dev("0000:16:00.0", "0000:12:01.0"), // InfiniBand card
			dev("0000:16:00.1", "0000:12:01.0"), // its VF, listed on no node
			dev("0000:20:01.0", ""),
			dev("0000:21:00.0", "0000:20:01.0"), // GPU under its root port alone
			dev("0000:90:01.0", ""),
			dev("0000:91:00.0", "0000:90:01.0"), // GPU on the other node
			dev("0000:a0:00.0", "0000:a1:00.0"), // loop
			dev("0000:a1:00.0", "0000:a0:00.0"),
			dev("0000:b0:00.0", ""), // no parent reported
			dev("0000:c0:00.0", ""), // no parent reported, listed on node 1
			dev("0000:c1:00.0", ""), // the same
			dev("0000:c2:00.0", ""), // no parent reported, listed on node 0
		},
		NumaInfo: &types.HostNumaInfo{NumaNode: []types.HostNumaNode{
			{TypeId: 0, PciId: []string{"0000:10:01.0", "0000:15:00.0", "0000:16:00.0", "0000:20:01.0", "0000:21:00.0", "0000:c2:00.0"}},
			{TypeId: 1, PciId: []string{"0000:90:01.0", "0000:91:00.0", "0000:c0:00.0", "0000:c1:00.0"}},
		}},
	}
	topo := topologyFromMO(hw)
	for _, c := range []struct {
		a, b string
		want Proximity
	}{
		{"0000:15:00.0", "0000:16:00.0", SamePCIeSwitch},
		{"0000:15:00.0", "0000:16:00.1", SamePCIeSwitch},
		{"0000:21:00.0", "0000:16:00.1", SameNUMANode},
		{"0000:91:00.0", "0000:16:00.1", AcrossNUMANodes},
		{"0000:a0:00.0", "0000:21:00.0", NotUnderOneSwitch},
		{"0000:b0:00.0", "0000:16:00.0", ProximityUnknown},
		{"0000:21:00.0", "0000:ff:00.0", ProximityUnknown},
		// Without parent bridges, one NUMA node does not tell whether the
		// two share a switch; two nodes tell they do not.
		{"0000:c0:00.0", "0000:c1:00.0", ProximityUnknown},
		{"0000:c2:00.0", "0000:21:00.0", ProximityUnknown},
		{"0000:c0:00.0", "0000:c2:00.0", AcrossNUMANodes},
		{"0000:c0:00.0", "0000:21:00.0", AcrossNUMANodes},
	} {
		if got := topo.proximity(c.a, c.b); got != c.want {
			t.Errorf("%s and %s: %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if s := topo.pcieSwitch("0000:15:00.0"); s != "0000:11:00.0" {
		t.Errorf("the switch above the GPU: %q", s)
	}
	if s := topo.pcieSwitch("0000:21:00.0"); s != "" {
		t.Errorf("a GPU under its root port alone is under switch %q", s)
	}
	if n := topo.numaNode("0000:16:00.1"); n != 0 {
		t.Errorf("the VF's node: %d", n)
	}
}

// On a DGX H100 host the plan says nothing of a GPU with a card under its
// switch, and warns of one without: nearest card, how far, the free GPU
// under that card's switch and the card under the GPU's. A host that
// reports no tree gives no warning. No call is added.
func TestPlanTopology(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{DGXHosts: []int{0}})
	ctx := context.Background()
	hosts := lab.HostNames()
	vmOn := func(host string) string {
		for _, vm := range lab.VMNames() {
			if lab.VMHostName(vm) == host {
				return vm
			}
		}
		t.Fatalf("no VM on %s", host)
		return ""
	}
	acctest.Must(t, lab.SetHostSRIOV(ctx, hosts[0], "0000:18:00.0", 2))
	const vf = "0000:18:00.1"
	plan := func(vm string, p2p bool, devices []string, gpus ...string) ([]GPUFarFromCard, int) {
		t.Helper()
		c := labClient(lab)
		lab.ResetCalls()
		var reqs []GPURequest
		for _, g := range gpus {
			reqs = append(reqs, GPURequest{PCIID: g})
		}
		p, err := c.PlanGPUMMIO(ctx, GPUMMIOChange{VMID: lab.VMUUID(vm), GPUs: reqs, Devices: devices, PowerOffAllowed: true, PeerToPeer: &p2p})
		if err != nil {
			t.Fatal(err)
		}
		var out []GPUFarFromCard
		for _, f := range p.Findings {
			if f, ok := f.(GPUFarFromCard); ok {
				out = append(out, f)
			}
		}
		return out, lab.Calls()["RetrievePropertiesEx"]
	}
	dgxVM := vmOn(hosts[0])
	if got, reads := plan(dgxVM, true, []string{vf}, "0000:19:00.0"); len(got) != 0 || reads != 2 {
		t.Fatalf("GPU 0 with its card's VF: %+v, %d reads (want 2: the VM, its host)", got, reads)
	}
	got, _ := plan(dgxVM, false, []string{vf}, "0000:19:00.0", "0000:41:00.0")
	if len(got) != 1 || got[0].Index != 1 || got[0].GPU != "0000:41:00.0" || got[0].Card != vf || got[0].Proximity != SameNUMANode ||
		got[0].GPUNode != 0 || got[0].BetterGPU != "" || got[0].BetterCard != "0000:40:00.0" {
		t.Fatalf("GPUs 0 and 1 with GPU 0's card: %+v", got)
	}
	got, _ = plan(dgxVM, true, []string{vf}, "0000:9b:00.0")
	if len(got) != 1 || got[0].Proximity != AcrossNUMANodes || got[0].GPUNode != 1 || got[0].CardNode != 0 || !got[0].PeerToPeer ||
		got[0].BetterGPU != "0000:19:00.0" || got[0].BetterCard != "0000:9a:00.0" || got[0].GPUName == "" {
		t.Fatalf("GPU 4 with GPU 0's card: %+v", got)
	}
	if got, _ = plan(dgxVM, true, nil, "0000:9b:00.0"); len(got) != 0 {
		t.Fatalf("a GPU and no card: %+v", got)
	}
	// A plain 10 GbE NIC (vcsim's vmnic0, no RDMA device) is no card for
	// GPUDirect RDMA, wherever it sits.
	if got, _ = plan(dgxVM, true, []string{"0000:0b:00.0"}, "0000:19:00.0"); len(got) != 0 {
		t.Fatalf("a GPU and a plain Ethernet NIC: %+v", got)
	}
	// The PF of an SR-IOV adapter the VM has counts as its card: here a
	// ConnectX-6 Dx port (a vmnic, as an SR-IOV adapter's PF must be),
	// under its root port alone on NUMA node 1.
	acctest.Must(t, lab.SetHostSRIOV(ctx, hosts[0], "0000:d8:00.0", 1))
	acctest.Must(t, lab.AddSRIOVAdapter(ctx, dgxVM, "VM Network", "0000:d8:00.0"))
	got, _ = plan(dgxVM, true, nil, "0000:dd:00.0")
	if len(got) != 1 || got[0].Card != "0000:d8:00.0" || got[0].Proximity != SameNUMANode || got[0].GPUNode != 1 || got[0].BetterGPU != "" ||
		got[0].BetterCard != "0000:dc:00.0" {
		t.Fatalf("GPU 7 with an SR-IOV adapter on a ConnectX-6 Dx port: %+v", got)
	}
	stockVM := vmOn(hosts[1])
	acctest.Must(t, lab.SetHostSRIOV(ctx, hosts[1], "0000:86:00.0", 1))
	if got, _ = plan(stockVM, true, []string{"0000:86:00.1"}, lab.GPUs()[0]); len(got) != 0 {
		t.Fatalf("a host that reports no tree: %+v", got)
	}

	// NUMA node affinity: a node past the host's is refused (a stock host
	// has one); devices on nodes it leaves out are named, GPUs first; a
	// dynamic GPU, placed at power on, is not.
	affinity := func(vm string, nodes []int, devices []string, gpus ...GPURequest) []Finding {
		t.Helper()
		p, err := labClient(lab).PlanGPUMMIO(ctx, GPUMMIOChange{VMID: lab.VMUUID(vm), GPUs: gpus, Devices: devices, PowerOffAllowed: true,
			NUMANodeAffinity: nodes})
		if err != nil {
			t.Fatal(err)
		}
		var out []Finding
		for _, f := range p.Findings {
			switch f.(type) {
			case NUMANodeNotOnHost, NUMAAffinityMissesDevice:
				out = append(out, f)
			}
		}
		return out
	}
	if f, ok := onlyFinding[NUMANodeNotOnHost](affinity(stockVM, []int{1}, nil, GPURequest{PCIID: lab.GPUs()[0]})); !ok || f.Node != 1 || f.Nodes != 1 {
		t.Fatalf("node 1 of a stock host: %+v", f)
	}
	f, ok := onlyFinding[NUMAAffinityMissesDevice](affinity(dgxVM, []int{1}, []string{vf}, GPURequest{PCIID: "0000:19:00.0"},
		GPURequest{PCIID: "0000:9b:00.0"}, GPURequest{VendorID: "10de", DeviceID: "2330"}))
	if !ok || !slices.Equal(f.Devices, []string{"0000:19:00.0", vf}) || !slices.Equal(f.DeviceNodes, []int{0, 0}) {
		t.Fatalf("node 1 for GPUs 0 and 4 and GPU 0's card: %+v", f)
	}
	if got := affinity(dgxVM, []int{0}, []string{vf}, GPURequest{PCIID: "0000:19:00.0"}); len(got) != 0 {
		t.Fatalf("node 0 for GPU 0 and its card: %+v", got)
	}
}
