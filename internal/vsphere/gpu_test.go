package vsphere

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestGPUMMIOLifecycle(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vmID := lab.VMUUID("hpc-node-0")

	before, err := c.GPUMMIO(ctx, vmID)
	if err != nil {
		t.Fatal(err)
	}
	if before.Firmware != "bios" || before.Use64bitMMIO || len(before.Devices) != 0 || before.ExtraConfig[mmio.SizeGBKey] != "" {
		t.Fatalf("fresh VM = %+v", before)
	}

	spec := GPUMMIOSpec{GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}, {PCIID: "0000:5e:00.0"}}, MMIOSizeGB: 512}
	if err := c.ApplyGPUMMIO(ctx, vmID, spec); err != nil {
		t.Fatal(err)
	}
	got, err := c.GPUMMIO(ctx, vmID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Firmware != "efi" || !got.Use64bitMMIO || got.MMIOSizeGB != 512 || !got.MemoryLocked || len(got.Devices) != 2 ||
		got.Devices[0].PCIID != "0000:3b:00.0" || got.Devices[0].VendorID != "10de" || got.Devices[0].DeviceID != "2330" {
		t.Fatalf("after apply = %+v", got)
	}

	// One static GPU less, one dynamic one more: only the difference changes.
	spec.GPUs = []GPURequest{{PCIID: "0000:5e:00.0"}, {VendorID: "10de", DeviceID: "2330"}}
	spec.MMIOSizeGB = 1024
	if err := c.ApplyGPUMMIO(ctx, vmID, spec); err != nil {
		t.Fatal(err)
	}
	got, _ = c.GPUMMIO(ctx, vmID)
	static, dynamic := 0, 0
	for _, g := range got.Devices {
		switch {
		case g.Dynamic && g.VendorID == "10de" && g.DeviceID == "2330":
			dynamic++
		case !g.Dynamic && g.PCIID == "0000:5e:00.0":
			static++
		}
	}
	if len(got.Devices) != 2 || static != 1 || dynamic != 1 || got.MMIOSizeGB != 1024 {
		t.Fatalf("after change = %+v", got)
	}

	if err := c.RemoveGPUMMIO(ctx, vmID, before.ExtraConfig, false); err != nil {
		t.Fatal(err)
	}
	got, _ = c.GPUMMIO(ctx, vmID)
	if len(got.Devices) != 0 || got.ExtraConfig[mmio.SizeGBKey] != "" || got.ExtraConfig[mmio.Use64bitMMIOKey] != "" || got.Firmware != "efi" {
		t.Fatalf("after remove = %+v; want no GPUs, keys restored, firmware still EFI", got)
	}
}

func TestGPUMMIOOnARunningVM(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vmID := lab.VMUUID("hpc-node-1")
	if err := lab.AttachGPU(ctx, "hpc-node-1", "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	task, err := vmObject(lab, "hpc-node-1").PowerOn(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	err = c.ApplyGPUMMIO(ctx, vmID, GPUMMIOSpec{GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}}, MMIOSizeGB: 256})
	if !errors.Is(err, ErrInvalidState) {
		t.Fatalf("switching a running VM to EFI: %v, want a refusal", err)
	}
	plan, err := c.PlanGPUMMIO(ctx, GPUMMIOChange{VMID: vmID, GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}}})
	want := []Finding{&PowerOffNeeded{VM: "hpc-node-1 (" + vmID + ")", Change: WhatGPUsNeedOff}}
	if err != nil || !plan.Sized || plan.TotalMemoryGB != 80 || plan.MMIOSizeGB != 256 || !reflect.DeepEqual(plan.Findings, want) {
		t.Fatalf("plan = %+v, %v; want 80 GB sized to 256 GB, refused on the running VM", plan, err)
	}
	other := lab.VMUUID("hpc-node-0")
	plan, err = c.PlanGPUMMIO(ctx, GPUMMIOChange{VMID: other, GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}, {PCIID: "0000:d8:00.0"}}})
	if err != nil || plan.Sized || len(plan.Findings) != 1 {
		t.Fatalf("plan of a GPU on no host = %+v, %v", plan, err)
	}
	if f, ok := plan.Findings[0].(GPUNotOnHost); !ok || f.Index != 1 || f.PCIID != "0000:d8:00.0" || f.OnHost != "" {
		t.Fatalf("finding = %#v, want GPUNotOnHost for the second GPU", plan.Findings[0])
	}
}

func vmObject(lab *vcsimlab.Lab, name string) *object.VirtualMachine {
	return object.NewVirtualMachine(lab.Client().Client, types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(name)})
}

func TestPlanMMIOSize(t *testing.T) {
	t.Parallel()
	size := func(n int64) *int64 { return &n }
	cases := []struct {
		given                *int64
		total                float64
		known, anyGPU, vgpus bool
		want                 int64
		finding              Finding
	}{
		{nil, 80, true, true, false, 256, nil},
		{size(512), 80, true, true, false, 512, nil},
		{size(100), 80, true, true, false, 100, MMIONotPowerOfTwo{Given: 100, Suggested: 256}},
		{size(128), 80, true, true, false, 128, MMIOTooSmall{Given: 128, Rule: 256, TotalGB: 80}},
		{nil, 0, false, true, false, 0, MMIOSizeUnknown{}},
		{nil, 0, true, false, false, 0, NothingToSize{}},
		{size(64), 0, true, false, false, 64, nil},
		// vGPUs alone: NVIDIA's 64 GB; beside passthrough GPUs, the larger.
		{nil, 0, true, false, true, 64, nil},
		{size(32), 0, true, false, true, 32, MMIOTooSmall{Given: 32, Rule: 64, VGPUMinimum: true}},
		{nil, 80, true, true, true, 256, nil},
		{nil, 16, true, true, true, 64, nil},
		// A passthrough GPU's memory unknown beside vGPUs: still unknown.
		{nil, 0, false, true, true, 0, MMIOSizeUnknown{}},
	}
	for _, tc := range cases {
		got, f := PlanMMIOSize(tc.given, tc.total, tc.known, tc.anyGPU, tc.vgpus)
		if got != tc.want || !reflect.DeepEqual(f, tc.finding) {
			t.Errorf("PlanMMIOSize(%v, %v, %v, %v, %v) = %d, %#v; want %d, %#v", tc.given, tc.total, tc.known, tc.anyGPU, tc.vgpus, got, f,
				tc.want, tc.finding)
		}
	}
}

func TestPlanGPUCounts(t *testing.T) {
	t.Parallel()
	h100 := func(pci string, active bool) GPU {
		return GPU{PCIID: pci, VendorID: "10de", DeviceID: "2330", DeviceName: "GH100 [H100 SXM5 80GB]", PassthroughActive: active}
	}
	host := &Host{Name: "esx-1", GPUs: []GPU{h100("0000:3b:00.0", true), h100("0000:5e:00.0", true), h100("0000:86:00.0", false)}}
	dyn := GPURequest{VendorID: "10de", DeviceID: "2330"}
	for _, tc := range []struct {
		name string
		gpus []GPURequest
		want []Finding
	}{
		{"as many as active", []GPURequest{dyn, dyn}, nil},
		{"one too many", []GPURequest{dyn, dyn, dyn}, []Finding{TooFewGPUs{Index: 2, VM: "vm", Host: "esx-1", Vendor: "10de", Device: "2330",
			DeviceName: "GH100 [H100 SXM5 80GB]", Active: 2, Asked: 3}}},
		{"a static GPU of the model counts", []GPURequest{{PCIID: "0000:3b:00.0"}, dyn, dyn}, []Finding{TooFewGPUs{Index: 2, VM: "vm",
			Host: "esx-1", Vendor: "10de", Device: "2330", DeviceName: "GH100 [H100 SXM5 80GB]", Active: 2, Asked: 3}}},
		{"forty", repeatGPU(dyn, 40), []Finding{TooFewGPUs{Index: 2, VM: "vm", Host: "esx-1", Vendor: "10de", Device: "2330",
			DeviceName: "GH100 [H100 SXM5 80GB]", Active: 2, Asked: 40}}},
		{"a model the host lacks is not counted here", []GPURequest{{VendorID: "10de", DeviceID: "ffff"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planGPUCounts("vm", host, tc.gpus); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("planGPUCounts = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func repeatGPU(g GPURequest, n int) []GPURequest {
	out := make([]GPURequest, n)
	for i := range out {
		out[i] = g
	}
	return out
}

// TestPlanGPUMMIOMoreGPUsThanTheHost: the lab's hosts have two H100 each.
func TestPlanGPUMMIOMoreGPUsThanTheHost(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	c := labClient(lab)
	dyn := GPURequest{VendorID: "10de", DeviceID: "2330"}
	p, err := c.PlanGPUMMIO(
		context.Background(),
		GPUMMIOChange{VMID: lab.VMUUID("hpc-node-0"), GPUs: []GPURequest{dyn, dyn, dyn}, PowerOffAllowed: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	var found *TooFewGPUs
	for _, f := range p.Findings {
		if f, ok := f.(TooFewGPUs); ok {
			found = &f
		}
	}
	if found == nil || found.Active != 2 || found.Asked != 3 || found.Index != 2 || found.Host == "" || p.Sized {
		t.Fatalf("findings = %#v, sized %v; want TooFewGPUs 2 of 3 at index 2, unsized", p.Findings, p.Sized)
	}
}

// A plan can be stale: a GPU another VM took since is refused at apply, under
// the host's lock, not shared.
func TestApplyGPUMMIORefusesAGPUTakenSincePlan(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vm := "hpc-node-0"
	var other string
	for _, n := range lab.VMNames() {
		if n != vm && lab.VMHostName(n) == lab.VMHostName(vm) {
			other = n
		}
	}
	if other == "" {
		t.Fatal("no second VM on the host of " + vm)
	}
	// The apply's own plan check reads the host first, as a refresh read:
	// the check under the host's lock must not take its answer from that.
	if _, err := c.SortPassthrough(ctx, lab.VMUUID(vm), nil); err != nil {
		t.Fatal(err)
	}
	if err := lab.AttachGPU(ctx, other, "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	err := c.ApplyGPUMMIO(ctx, lab.VMUUID(vm), GPUMMIOSpec{GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}}, MMIOSizeGB: 256})
	if !errors.Is(err, ErrInUse) ||
		!strings.Contains(err.Error(), "PCI device 0000:3b:00.0 on host "+lab.VMHostName(vm)+" was given to virtual machine "+other) {
		t.Fatalf("apply of a GPU another VM has: %v, want ErrInUse naming %s", err, other)
	}
	got, err := c.GPUMMIO(ctx, lab.VMUUID(vm))
	if err != nil || len(got.Devices) != 0 || got.Firmware == "efi" {
		t.Fatalf("after the refusal: %+v, %v; want the VM unchanged", got, err)
	}
}

// TestAbsentMMIOKeysReadAsUnset: a VM without the MMIO keys, which vCenter
// may answer for config.extraConfig["key"] with an InvalidProperty in the
// missing set, reads as keys unset, and a host without the PVRDMA option as
// no vmknic; another missing property, keyed or not, still fails the read.
func TestAbsentMMIOKeysReadAsUnset(t *testing.T) {
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-42"}
	missing := func(path string) types.MissingProperty {
		return types.MissingProperty{Path: path, Fault: types.LocalizedMethodFault{Fault: &types.InvalidProperty{Name: path}}}
	}
	oc := types.ObjectContent{Obj: ref,
		PropSet: []types.DynamicProperty{{Name: "name", Val: "hpc-node-0"}, {Name: "config.firmware", Val: "efi"}},
		MissingSet: []types.MissingProperty{missing(gpuExtraConfig[0]), missing(gpuExtraConfig[1]), missing(gpuExtraConfig[2]),
			missing(gpuExtraConfig[3])}}
	var vm mo.VirtualMachine
	if err := mo.LoadObjectContent([]types.ObjectContent{withoutAbsentKeys(oc)}, &vm); err != nil {
		t.Fatalf("loading a VM without the MMIO keys: %v", err)
	}
	g := gpuMMIOFromMO(&vm)
	if g.Use64bitMMIO || g.MMIOSizeGB != 0 || g.ExtraConfig[mmio.Use64bitMMIOKey] != "" || g.PeerToPeer || g.Firmware != "efi" {
		t.Fatalf("a VM without the MMIO keys reads as %+v", g)
	}

	for _, other := range []string{"config.hardware.device", `config.extraConfig["guestinfo.userdata"]`} {
		oc := oc
		oc.MissingSet = append(slices.Clone(oc.MissingSet), missing(other))
		if err := mo.LoadObjectContent([]types.ObjectContent{withoutAbsentKeys(oc)}, &vm); err == nil {
			t.Fatalf("a missing %s was dropped with the absent keys", other)
		}
	}

	// A host before ESXi 6.5 has no Net.PVRDMAVmknic and no pvrdma ruleset:
	// no vmknic and the ruleset off, not a failed read.
	host := types.ObjectContent{Obj: types.ManagedObjectReference{Type: "HostSystem", Value: "host-7"},
		PropSet:    []types.DynamicProperty{{Name: "name", Val: "esx-old"}, {Name: "config.network.vnic", Val: types.ArrayOfHostVirtualNic{}}},
		MissingSet: []types.MissingProperty{missing(pvrdmaVmknicPath), missing(pvrdmaRulesetPath)}}
	var h mo.HostSystem
	if err := mo.LoadObjectContent([]types.ObjectContent{withoutAbsentKeys(host)}, &h); err != nil || vmknicOf(&h) != "" {
		t.Fatalf("a host without %s: %v, vmknic %q; want none, read", PVRDMAVmknicOption, err, vmknicOf(&h))
	}
	if got := hostPVRDMAFromMO(&h, vmknicOf(&h)); got.Settings.FirewallEnabled || len(got.Settings.AllowedIPs) != 0 {
		t.Fatalf("a host without the %s ruleset reads as %+v", PVRDMARuleset, got.Settings)
	}
}

// TestMMIOKeysReadByKey: the keys of a GPU setup (the two MMIO keys, the
// two peer-to-peer keys and the NUMA node affinity) read by key come back as set, each alone or
// together, beside a large guestinfo value the read leaves out, in a read of
// one VM, a refresh's read of every VM and a list.
func TestMMIOKeysReadByKey(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	vms := lab.VMNames()
	set := map[string][5]string{ // as gpuExtraConfigKeys
		vms[0]: {"TRUE", "256", "TRUE", "TRUE", "1"},
		vms[1]: {"TRUE", "", "", "TRUE", " 1, 0"},
		vms[2]: {"", "128", "TRUE", "", ""},
		vms[3]: {"", "", "", "", "node0"},
	}
	nodes := map[string]string{vms[0]: "1", vms[1]: "0,1", vms[2]: "", vms[3]: "unreadable"}
	for name, keys := range set {
		if err := lab.SetVMExtraConfig(ctx, name, "guestinfo.userdata", strings.Repeat("x", 4096)); err != nil {
			t.Fatal(err)
		}
		for i, key := range gpuExtraConfigKeys {
			if keys[i] != "" {
				if err := lab.SetVMExtraConfig(ctx, name, key, keys[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	check := func(how string, g *GPUMMIO, name string) {
		t.Helper()
		want := set[name]
		got := [5]string{}
		for i, key := range gpuExtraConfigKeys {
			got[i] = g.ExtraConfig[key]
		}
		if got != want || len(g.ExtraConfig) != len(gpuExtraConfigKeys) || g.PeerToPeer != (want[2] == "TRUE" && want[3] == "TRUE") {
			t.Errorf("%s of %s: extraConfig %v (peer-to-peer %t), want %q of %v only", how, name, g.ExtraConfig, g.PeerToPeer, want, gpuExtraConfigKeys)
		}
		gotNodes := FormatNUMANodes(g.NUMANodeAffinity)
		if g.NUMANodeAffinityUnreadable {
			gotNodes = "unreadable"
		}
		if gotNodes != nodes[name] {
			t.Errorf("%s of %s: NUMA node affinity %q, want %q", how, name, gotNodes, nodes[name])
		}
	}

	c := labClient(lab)
	for name := range set {
		g, err := c.GPUMMIO(ctx, lab.VMID(name))
		if err != nil {
			t.Fatal(err)
		}
		check("a read", g, name)
	}
	refresh := labClient(lab)
	vc, err := refresh.vimClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := refresh.kindPrefetch(ctx, vc, "VirtualMachine", gpuMMIOProps)
	if !f.wait(ctx) {
		t.Fatalf("the refresh's read of every VM failed: %v", f.err)
	}
	for name := range set {
		var vm mo.VirtualMachine
		if !f.object(types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(name)}, &vm) {
			t.Fatalf("the read of every VM has no %s", name)
		}
		check("the read of every VM", gpuMMIOFromMO(&vm), name)
	}
	listed, err := c.ListGPUMMIO(ctx, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, g := range listed {
		if _, ok := set[g.VM.Name]; ok {
			check("a list", g.GPUMMIO, g.VM.Name)
			seen++
		}
	}
	if seen != 3 { // the fourth has no GPU setup
		t.Errorf("the list of GPU setups has %d of %v, want the three with an MMIO key", seen, vms[:4])
	}
}

// TestPeerToPeerKeys: peer-to-peer on sets both keys, off removes them, nil
// leaves them as they are; destroy puts back what was recorded and leaves a
// key the record lacks alone.
func TestPeerToPeerKeys(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vmID := lab.VMUUID("hpc-node-0")
	read := func() *GPUMMIO {
		t.Helper()
		got, err := c.GPUMMIO(ctx, vmID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	on, off := true, false
	spec := GPUMMIOSpec{GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}}, MMIOSizeGB: 256, PeerToPeer: &on}
	if err := c.ApplyGPUMMIO(ctx, vmID, spec); err != nil {
		t.Fatal(err)
	}
	if got := read(); !got.PeerToPeer || got.ExtraConfig[AllowP2PKey] != "TRUE" || got.ExtraConfig[RelaxACSKey] != "TRUE" {
		t.Fatalf("peer-to-peer on: %+v", got.ExtraConfig)
	}
	// One key gone out of band: not peer-to-peer any more.
	if err := lab.SetVMExtraConfig(ctx, "hpc-node-0", RelaxACSKey, ""); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.PeerToPeer {
		t.Fatalf("one key removed, still read as peer-to-peer: %+v", got.ExtraConfig)
	}
	spec.PeerToPeer = nil
	if err := c.ApplyGPUMMIO(ctx, vmID, spec); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.ExtraConfig[AllowP2PKey] != "TRUE" || got.ExtraConfig[RelaxACSKey] != "" {
		t.Fatalf("nil changed the keys: %+v", got.ExtraConfig)
	}
	spec.PeerToPeer = &off
	if err := c.ApplyGPUMMIO(ctx, vmID, spec); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.ExtraConfig[AllowP2PKey] != "" || got.ExtraConfig[RelaxACSKey] != "" {
		t.Fatalf("peer-to-peer off left keys: %+v", got.ExtraConfig)
	}
	if err := lab.SetVMExtraConfig(ctx, "hpc-node-0", AllowP2PKey, "true"); err != nil {
		t.Fatal(err)
	}
	// Destroy: a recorded key goes back, one the record lacks stays.
	if err := c.RemoveGPUMMIO(ctx, vmID, map[string]string{mmio.Use64bitMMIOKey: "", mmio.SizeGBKey: "", RelaxACSKey: "FALSE"}, false); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.ExtraConfig[AllowP2PKey] != "true" || got.ExtraConfig[RelaxACSKey] != "FALSE" || got.ExtraConfig[mmio.SizeGBKey] != "" {
		t.Fatalf("after remove: %+v", got.ExtraConfig)
	}
}

// The plan of a setup whose GPUs and window stay compares peer_to_peer and
// numa_node_affinity with the VM's keys: one that already means what is
// asked, as after an import that adopted neither, needs no power cycle, so
// a running VM is not refused; one that differs does.
func TestPlanGPUMMIOKeysComparedWithTheVM(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vm := "hpc-node-0"
	gpus := []GPURequest{{PCIID: "0000:3b:00.0"}}
	if err := c.ApplyGPUMMIO(ctx, lab.VMUUID(vm), GPUMMIOSpec{GPUs: gpus, MMIOSizeGB: 256}); err != nil {
		t.Fatal(err)
	}
	acctest.Must(t, lab.PowerOnVM(ctx, vm))
	on, off := true, false
	for _, tc := range []struct {
		name     string
		p2p      *bool
		nodes    []int
		refusing bool
	}{
		{"neither managed", nil, nil, false},
		{"peer-to-peer off, as the VM has it", &off, nil, false},
		{"no node affinity, as the VM has none", nil, []int{}, false},
		{"peer-to-peer on", &on, nil, true},
		{"node 0", nil, []int{0}, true},
	} {
		p, err := c.PlanGPUMMIO(ctx, GPUMMIOChange{VMID: lab.VMUUID(vm), GPUs: gpus, Existing: true, CurrentMMIOSizeGB: 256,
			Current64bitMMIO: true, PeerToPeer: tc.p2p, NUMANodeAffinity: tc.nodes})
		if err != nil {
			t.Fatal(err)
		}
		refused := slices.ContainsFunc(p.Findings, func(f Finding) bool { _, ok := f.(*PowerOffNeeded); return ok })
		if refused != tc.refusing {
			t.Errorf("%s: findings %#v; want a refusal for the running VM: %v", tc.name, p.Findings, tc.refusing)
		}
	}
}

// A passthrough device of a backing the provider does not manage (a DVX or
// vendor plugin device, left alone by gpuMMIOFromMO and passthroughChanges)
// is no change of the setup: a running VM whose GPUs and window are as
// planned needs no power-off, as after terraform import or a DRS move.
func TestPlanGPUMMIOUnchangedBesideUnmanagedPassthroughNeedsNoPowerOff(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vm := "hpc-node-0"
	vmID := lab.VMUUID(vm)
	gpus := []GPURequest{{PCIID: "0000:3b:00.0"}}
	acctest.Must(t, c.ApplyGPUMMIO(ctx, vmID, GPUMMIOSpec{GPUs: gpus, MMIOSizeGB: 256}))
	vmObj := object.NewVirtualMachine(lab.Client().Client, types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(vm)})
	acctest.Must(t, vmObj.AddDevice(ctx, &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Key: -1,
		Backing: &types.VirtualPCIPassthroughDvxBackingInfo{DeviceClass: "com.example.dvx"}}}))
	acctest.Must(t, lab.PowerOnVM(ctx, vm))
	p, err := c.PlanGPUMMIO(ctx, GPUMMIOChange{VMID: vmID, GPUs: gpus, Existing: true, CurrentMMIOSizeGB: 256, Current64bitMMIO: true})
	acctest.Must(t, err)
	if i := slices.IndexFunc(p.Findings, func(f Finding) bool { _, ok := f.(*PowerOffNeeded); return ok }); i >= 0 {
		t.Errorf("same GPUs and window beside a DVX device: finding %#v, want no power-off", p.Findings[i])
	}
	// The apply agrees that nothing changes: it makes no reconfigure.
	lab.ResetCalls()
	acctest.Must(t, c.ApplyGPUMMIO(ctx, vmID, GPUMMIOSpec{GPUs: gpus, MMIOSizeGB: 256}))
	if n := lab.Calls()["ReconfigVM_Task"]; n != 0 {
		t.Errorf("the apply of the same setup made %d reconfigures, want none", n)
	}
}
