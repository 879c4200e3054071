package vsphere

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func pciDevice(id string, vendor, device int16) types.HostPciDevice {
	return types.HostPciDevice{Id: id, VendorId: vendor, DeviceId: device}
}

// A PF's VFs are read from PCI order: each PF, in PCI order, takes the next
// VF-like functions of its vendor after it; an order that does not add up
// gives no PF of that vendor any VF rather than wrong ones.
func TestVirtualFunctions(t *testing.T) {
	const mlx, intel, nvidia = 0x15b3, -0x7f7a, 0x10de // 0x8086 as vSphere sends it
	sriov := func(vfs map[string]int32) map[string]*types.HostSriovInfo {
		out := map[string]*types.HostSriovInfo{}
		for id, n := range vfs {
			out[id] = &types.HostSriovInfo{HostPciPassthruInfo: types.HostPciPassthruInfo{Id: id}, SriovCapable: true, NumVirtualFunction: n}
		}
		return out
	}
	// A dual-port card: both PFs first, then port 0's VFs, then port 1's;
	// the host lists devices in no particular order.
	dualPort := []types.HostPciDevice{
		pciDevice("0000:d8:01.3", mlx, 0x101e), pciDevice("0000:d8:00.0", mlx, 0x101d), pciDevice("0000:d8:00.1", mlx, 0x101d),
		pciDevice("0000:d8:00.2", mlx, 0x101e), pciDevice("0000:d8:00.3", mlx, 0x101e), pciDevice("0000:d8:01.2", mlx, 0x101e),
		pciDevice("0000:3b:00.0", nvidia, 0x2330),
	}
	// An Intel card whose VFs sit on the next bus, and a second ConnectX on
	// its own bus with VFs before the dual-port card's.
	mixed := append(slices.Clone(dualPort),
		pciDevice("0000:17:00.0", intel, 0x1572), pciDevice("0000:18:02.0", intel, 0x154c), pciDevice("0000:18:02.1", intel, 0x154c),
		pciDevice("0000:86:00.0", mlx, 0x1021), pciDevice("0000:86:00.1", mlx, 0x101e),
	)
	for _, tc := range []struct {
		name    string
		devices []types.HostPciDevice
		vfs     map[string]int32
		want    map[string][]string
	}{
		{"dual port", dualPort, map[string]int32{"0000:d8:00.0": 2, "0000:d8:00.1": 2},
			map[string][]string{"0000:d8:00.0": {"0000:d8:00.2", "0000:d8:00.3"}, "0000:d8:00.1": {"0000:d8:01.2", "0000:d8:01.3"}}},
		{"one port of two", dualPort[1:5], map[string]int32{"0000:d8:00.0": 2, "0000:d8:00.1": 0},
			map[string][]string{"0000:d8:00.0": {"0000:d8:00.2", "0000:d8:00.3"}}},
		{"counts do not add up", dualPort, map[string]int32{"0000:d8:00.0": 2, "0000:d8:00.1": 1}, map[string][]string{}},
		{"vendors apart", mixed, map[string]int32{"0000:d8:00.0": 2, "0000:d8:00.1": 2, "0000:17:00.0": 2, "0000:86:00.0": 1},
			map[string][]string{
				"0000:d8:00.0": {"0000:d8:00.2", "0000:d8:00.3"}, "0000:d8:00.1": {"0000:d8:01.2", "0000:d8:01.3"},
				"0000:17:00.0": {"0000:18:02.0", "0000:18:02.1"}, "0000:86:00.0": {"0000:86:00.1"},
			}},
		{"one vendor ambiguous", mixed, map[string]int32{"0000:d8:00.0": 2, "0000:d8:00.1": 2, "0000:17:00.0": 3, "0000:86:00.0": 1},
			map[string][]string{
				"0000:d8:00.0": {"0000:d8:00.2", "0000:d8:00.3"}, "0000:d8:00.1": {"0000:d8:01.2", "0000:d8:01.3"}, "0000:86:00.0": {"0000:86:00.1"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := virtualFunctions(tc.devices, sriov(tc.vfs))
			if !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRoutingKey(t *testing.T) {
	for id, want := range map[string]string{"0000:d8:1.2": "0000:d8:01.2", "0000:D8:00.0": "0000:d8:00.0", "not a PCI id": "not a PCI id"} {
		if got := routingKey(id); got != want {
			t.Errorf("routingKey(%q) = %q, want %q", id, got, want)
		}
	}
}

// On the lab, whose VFs follow the PCIe rule, a PF's VF ids come back in
// order, each VF names its PF, and fewer VFs than VMs use is refused:
// SR-IOV adapters need one each, a VF passed through is needed itself.
func TestSRIOVVirtualFunctionsAndUse(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vm := lab.VMNames()[0]
	hostName := lab.VMHostName(vm)
	hostID := lab.HostID(hostName)
	const ib, eth = "0000:86:00.0", "0000:d8:00.0"
	if err := c.SetHostSRIOV(ctx, hostID, ib, 4); err != nil {
		t.Fatal(err)
	}
	if err := c.SetHostSRIOV(ctx, hostID, eth, 2); err != nil {
		t.Fatal(err)
	}
	h, err := c.HostPassthrough(ctx, hostID)
	if err != nil {
		t.Fatal(err)
	}
	wantIB := []string{"0000:86:00.1", "0000:86:00.2", "0000:86:00.3", "0000:86:00.4"}
	if got := h.Device(ib).SRIOV.VFIDs; !slices.Equal(got, wantIB) {
		t.Fatalf("VFs of %s = %v, want %v", ib, got, wantIB)
	}
	if got := h.Device(eth).SRIOV.VFIDs; !slices.Equal(got, []string{"0000:d8:00.2", "0000:d8:00.3"}) {
		t.Fatalf("VFs of %s = %v", eth, got)
	}
	if pf := h.Device(wantIB[3]).PhysicalFunction; pf != ib {
		t.Fatalf("PF of %s = %q, want %s", wantIB[3], pf, ib)
	}

	if err := c.SetHostPassthrough(ctx, hostID, map[string]bool{wantIB[3]: true}, nil); err != nil {
		t.Fatal(err)
	}
	if err := lab.AttachGPU(ctx, vm, wantIB[3]); err != nil {
		t.Fatal(err)
	}
	label := fmt.Sprintf("%s (%s)", hostName, hostID)
	for _, tc := range []struct {
		vfs  int
		want Finding
	}{
		{4, nil},
		{3, VFsInUse{Host: label, PCIID: ib, Wanted: 3, Pinned: []PinnedVF{{PCIID: wantIB[3], Index: 3, VMs: []string{vm}}}}},
	} {
		p, err := c.PlanHostSRIOV(ctx, hostID, ib, tc.vfs)
		if err != nil {
			t.Fatal(err)
		}
		if got := firstFinding(p.Findings); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Fatalf("%d VFs: %+v, want %+v", tc.vfs, got, tc.want)
		}
	}

	// One adapter and one pinned VF need two VFs, even when the pinned one
	// is VF 0.
	if err := lab.AddSRIOVAdapter(ctx, vm, "VM Network", eth); err != nil {
		t.Fatal(err)
	}
	if err := c.SetHostPassthrough(ctx, hostID, map[string]bool{"0000:d8:00.2": true}, nil); err != nil {
		t.Fatal(err)
	}
	if err := lab.AttachGPU(ctx, vm, "0000:d8:00.2"); err != nil {
		t.Fatal(err)
	}
	p, err := c.PlanHostSRIOV(ctx, hostID, eth, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := VFsInUse{Host: label, PCIID: eth, Wanted: 1, Adapters: 1, VMs: []string{vm},
		Pinned: []PinnedVF{{PCIID: "0000:d8:00.2", Index: 0, VMs: []string{vm}}}}
	if got := firstFinding(p.Findings); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("1 VF: %+v, want %+v", got, want)
	}
	if p, _ := c.PlanHostSRIOV(ctx, hostID, eth, 2); len(p.Findings) != 0 {
		t.Fatalf("2 VFs: %+v, want none", p.Findings)
	}
}

func firstFinding(fs []Finding) Finding {
	if len(fs) == 0 {
		return nil
	}
	return fs[0]
}
