package vcsimlab

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A DGX H100 host (Options.DGXHosts) has eight H100s, each under one PCIe
// switch with its ConnectX-7 compute card as the DGX H100 User Guide's
// Table 6 pairs them, GPUs 0-3 and their cards on NUMA node 0 and 4-7 on
// node 1; a card's VFs sit behind its bridge. The other hosts keep the
// lab's GPUs and report no topology.
func TestDGXTopology(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{DGXHosts: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	ctx := context.Background()
	props := []string{"hardware.pciDevice", "hardware.numaInfo", "config.pciPassthruInfo"}
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, 1), props, &h)
	devices := map[string]types.HostPciDevice{}
	for _, d := range h.Hardware.PciDevice {
		devices[d.Id] = d
	}
	infos := map[string]bool{}
	for _, p := range h.Config.PciPassthruInfo {
		infos[p.GetHostPciPassthruInfo().Id] = true
	}
	for id := range devices {
		if !infos[id] {
			t.Errorf("%s has no passthrough entry", id)
		}
	}
	node := map[string]byte{}
	if h.Hardware.NumaInfo == nil || len(h.Hardware.NumaInfo.NumaNode) != 2 {
		t.Fatalf("numaInfo: %+v, want two nodes", h.Hardware.NumaInfo)
	}
	for _, n := range h.Hardware.NumaInfo.NumaNode {
		for _, id := range n.PciId {
			node[id] = n.TypeId
		}
	}
	// upstream is the switch's upstream port above a device: its parent's
	// parent, itself under a root port (no parent bridge).
	upstream := func(id string) string {
		up := devices[devices[id].ParentBridge].ParentBridge
		if root := devices[up].ParentBridge; root == "" || devices[root].ParentBridge != "" {
			t.Fatalf("%s: %s is not under a switch below a root port", id, up)
		}
		return up
	}
	cards := []string{"0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0", "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"}
	gpus := []string{"0000:19:00.0", "0000:41:00.0", "0000:50:00.0", "0000:5f:00.0", "0000:9b:00.0", "0000:c1:00.0", "0000:cf:00.0", "0000:dd:00.0"}
	for i := range cards {
		card, gpu := devices[cards[i]], devices[gpus[i]]
		if card.DeviceId != connectX7Device || gpu.VendorId != nvidia || gpu.DeviceId != 0x2330 {
			t.Fatalf("pair %d: card %+v, GPU %+v", i, card, gpu)
		}
		if upstream(cards[i]) != upstream(gpus[i]) {
			t.Errorf("GPU %d and its card are under different switches", i)
		}
		if i > 0 && upstream(gpus[i]) == upstream(gpus[i-1]) {
			t.Errorf("GPUs %d and %d share a switch", i-1, i)
		}
		want := byte(i / dgxSecondSocket)
		if n, ok := node[gpus[i]]; !ok || n != want || node[cards[i]] != want {
			t.Errorf("pair %d: GPU on node %d (listed %t), card on %d, want %d", i, n, ok, node[cards[i]], want)
		}
	}
	for _, id := range []string{"0000:3b:00.0", "0000:af:00.0"} {
		if _, ok := devices[id]; ok {
			t.Errorf("the DGX host still has the lab's GPU %s", id)
		}
	}
	if p := devices["0000:86:00.0"].ParentBridge; p == "" || node["0000:86:00.0"] != 1 {
		t.Errorf("the lab's ConnectX-7 at 86:00.0: parent %q, node %d", p, node["0000:86:00.0"])
	}
	// Every VF the card at 86:00.0 can have (86:00.1 to 86:02.0) keeps the
	// other card's root port, and every parent bridge is a device.
	if err := l.SetHostSRIOV(ctx, l.HostNames()[1], "0000:86:00.0", connectX7MaxVFs); err != nil {
		t.Fatal(err)
	}
	var withVFs mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, 1), props, &withVFs)
	present, class := map[string]int{}, map[string]int16{}
	for _, d := range withVFs.Hardware.PciDevice {
		present[d.Id]++
		class[d.Id] = d.ClassId
	}
	for _, d := range withVFs.Hardware.PciDevice {
		if present[d.Id] != 1 || d.ParentBridge != "" && (present[d.ParentBridge] != 1 || class[d.ParentBridge] != 0x0604) {
			t.Errorf("%s: listed %d times, parent %q listed %d times, class %#x", d.Id, present[d.Id], d.ParentBridge,
				present[d.ParentBridge], class[d.ParentBridge])
		}
	}

	if err := l.SetHostSRIOV(ctx, l.HostNames()[1], cards[4], 2); err != nil {
		t.Fatal(err)
	}
	retrieve(t, l.Client(), hostRef(l, 1), props, &h)
	vfs := 0
	for _, d := range h.Hardware.PciDevice {
		if d.Id == "0000:9a:00.1" || d.Id == "0000:9a:00.2" {
			vfs++
			if d.ParentBridge != devices[cards[4]].ParentBridge {
				t.Errorf("VF %s: parent %q, want its PF's %q", d.Id, d.ParentBridge, devices[cards[4]].ParentBridge)
			}
		}
	}
	if vfs != 2 {
		t.Fatalf("%d VFs of %s, want 2", vfs, cards[4])
	}

	var other mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, 0), props, &other)
	for _, n := range other.Hardware.NumaInfo.NumaNode {
		if len(n.PciId) > 0 {
			t.Errorf("a stock host lists PCI ids on NUMA node %d", n.TypeId)
		}
	}

	if _, err := Start(ctx, Options{DGXHosts: []int{3}}); err == nil {
		t.Error("a DGX host past the cluster's hosts started")
	}
}
