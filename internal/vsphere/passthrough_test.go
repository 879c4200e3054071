package vsphere

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A host's passthrough, with the NICs the host uses and the VMs using each
// device, is one property-collector round trip: a refresh's whole cost.
func TestHostPassthrough(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	name := lab.HostNames()[0]
	if _, err := c.DVSVersions(ctx); err != nil { // connect first: login is not the read's cost
		t.Fatal(err)
	}
	lab.ResetCalls()
	h, err := c.HostPassthrough(ctx, lab.HostID(name))
	if err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); calls["RetrievePropertiesEx"]+calls["RetrieveProperties"] != 1 || len(calls) != 1 {
		t.Fatalf("calls = %v, want one property-collector read", calls)
	}
	a100 := h.Device("0000:af:00.0")
	if a100 == nil || !a100.Capable || a100.Enabled || a100.DeviceID != "20f1" || a100.VendorID != "10de" {
		t.Fatalf("A100 = %+v, want capable and off", a100)
	}
	if nic := h.Device("0000:0b:00.0"); nic == nil || nic.NIC != "vmnic0" || nic.UplinkOf != "vSwitch0" {
		t.Fatalf("vmnic0's device = %+v, want the uplink of vSwitch0", nic)
	}
}

func TestPlanHostPassthrough(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	id := lab.HostID(lab.HostNames()[0])
	p, err := c.PlanHostPassthrough(ctx, PassthroughChange{HostID: id, Match: []VendorDevice{{VendorID: "10de", DeviceID: "2330"}}})
	if err != nil || len(p.Findings) != 0 || len(p.Want) != 2 || p.Want[0].PCIID != "0000:3b:00.0" || p.Want[1].PCIID != "0000:5e:00.0" {
		t.Fatalf("every H100: %+v, %v", p, err)
	}
	p, err = c.PlanHostPassthrough(ctx, PassthroughChange{HostID: id, PCIIDs: []string{"0000:99:00.0", "0000:0b:00.0"}})
	if err != nil || len(p.Findings) != 2 {
		t.Fatalf("findings = %#v, %v", p, err)
	}
	f := p.Findings
	missing, ok := f[0].(DeviceNotOnHost)
	if !ok || !slices.Contains(missing.Capable, "0000:af:00.0 (GA100 [A100 PCIe 40GB])") ||
		slices.ContainsFunc(missing.Capable, func(s string) bool { return s[:12] == "0000:0b:00.0" }) {
		t.Fatalf("missing device: %#v, want the capable devices listed, the host's uplink not", f[0])
	}
	if used, ok := f[1].(DeviceUsedByHost); !ok || used.Switch != "vSwitch0" || used.NIC != "vmnic0" {
		t.Fatalf("uplink: %#v, want DeviceUsedByHost naming vSwitch0", f[1])
	}
}

// An UpdatePassthruConfig whose answer is lost (the connection closed after
// the host recorded it) is done when the host has the configuration: a read
// tells, and the change is not reported failed (a create would record
// nothing of a change it made). One lost on its way fails.
func TestUpdatePassthruConfigAnswerLost(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	host := lab.HostID(lab.HostNames()[0])
	const a100, ib = "0000:af:00.0", "0000:86:00.0"
	state := func() (passthrough bool, vfs int) {
		t.Helper()
		h, err := c.HostPassthrough(ctx, host)
		if err != nil {
			t.Fatal(err)
		}
		if d := h.Device(ib); d != nil && d.SRIOV != nil && d.SRIOV.Enabled {
			vfs = d.SRIOV.VFsRequested
		}
		return h.Device(a100).Enabled, vfs
	}
	lab.LoseConnection("UpdatePassthruConfig", 1, false)
	if err := c.SetHostPassthrough(ctx, host, map[string]bool{a100: true}, nil); err == nil {
		t.Fatal("a change lost on its way: no error")
	}
	if on, _ := state(); on {
		t.Fatal("a change lost on its way was made")
	}
	lab.LoseConnection("UpdatePassthruConfig", 1, true)
	if err := c.SetHostPassthrough(ctx, host, map[string]bool{a100: true}, nil); err != nil {
		t.Fatalf("passthrough whose answer was lost: %v, want it done", err)
	}
	lab.LoseConnection("UpdatePassthruConfig", 1, true)
	if err := c.SetHostSRIOV(ctx, host, ib, 4); err != nil {
		t.Fatalf("SR-IOV whose answer was lost: %v, want it done", err)
	}
	if on, vfs := state(); !on || vfs != 4 {
		t.Fatalf("after the changes whose answers were lost: passthrough %t, %d virtual functions; want on and 4", on, vfs)
	}
}

// A passthrough or SR-IOV change keeps the labels of the devices it does
// not relabel (the host's configuration of a device is its whole state, so
// each carries its label), and a label given is set or cleared.
func TestHardwareLabelsKeptAndSet(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	name := lab.HostNames()[0]
	host := lab.HostID(name)
	const a100, ib = "0000:af:00.0", "0000:86:00.0"
	gpu := lab.GPUs()[0]
	labels := func() map[string]string {
		t.Helper()
		h, err := c.HostPassthrough(ctx, host)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, d := range h.Devices {
			if d.Label != "" {
				out[d.PCIID] = d.Label
			}
		}
		return out
	}
	acctest.Must(t, lab.SetHardwareLabel(ctx, name, gpu, "training"))
	acctest.Must(t, lab.SetHardwareLabel(ctx, name, ib, "fabric"))
	if _, err := c.HostPassthrough(ctx, host); err != nil { // the session and the host's managers, read once
		t.Fatal(err)
	}
	lab.ResetCalls()
	if err := c.SetHostPassthrough(ctx, host, map[string]bool{gpu: true, a100: true}, map[string]string{a100: "inference"}); err != nil {
		t.Fatal(err)
	}
	// One read of the devices' state (the labels they keep), one change.
	if calls := lab.Calls(); calls["RetrievePropertiesEx"] != 1 || calls["UpdatePassthruConfig"] != 1 {
		t.Fatalf("a passthrough change made %v, want 1 RetrievePropertiesEx and 1 UpdatePassthruConfig", calls)
	}
	if err := c.SetHostSRIOV(ctx, host, ib, 4); err != nil {
		t.Fatal(err)
	}
	if got := labels(); got[gpu] != "training" || got[ib] != "fabric" || got[a100] != "inference" || len(got) != 3 {
		t.Fatalf("labels %v, want %s training, %s fabric and %s inference", got, gpu, ib, a100)
	}
	if err := c.SetHostPassthrough(ctx, host, nil, map[string]string{gpu: ""}); err != nil {
		t.Fatal(err)
	}
	h, err := c.HostPassthrough(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(); got[gpu] != "" || !h.Device(gpu).Enabled {
		t.Fatalf("after clearing %s's label: labels %v, passthrough %t; want no label, passthrough kept", gpu, got, h.Device(gpu).Enabled)
	}
}

// Passthrough of a GPU NVIDIA's vGPU manager drives (Shared Direct) takes it
// whole from the vGPUs: the plan says so, by PCI id or by match, and names
// the VMs whose vGPUs run on it (not one powered off), from the same single
// read of the host.
func TestPlanHostPassthroughOfAGPUSharedAsVGPUs(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	const a100 = "0000:af:00.0"
	acctest.Must(t, lab.ConfigureGraphics(ctx, host, "sharedDirect", "performance", nil))
	acctest.Must(t, lab.RebootHost(ctx, host))
	_, err := c.DVSVersions(ctx) // connect first: login is not the read's cost
	acctest.Must(t, err)
	plan := func(ch PassthroughChange) []Finding {
		t.Helper()
		ch.HostID = lab.HostID(host)
		lab.ResetCalls()
		p, err := c.PlanHostPassthrough(ctx, ch)
		acctest.Must(t, err)
		if calls := lab.Calls(); calls["RetrievePropertiesEx"]+calls["RetrieveProperties"] != 1 || len(calls) != 1 {
			t.Errorf("calls = %v, want one property-collector read", calls)
		}
		return p.Findings
	}
	shared := func(findings []Finding, vms ...string) {
		t.Helper()
		if len(findings) != 1 {
			t.Fatalf("findings %#v, want one DeviceSharedAsVGPUs", findings)
		}
		f, ok := findings[0].(DeviceSharedAsVGPUs)
		if !ok || f.PCIID != a100 || f.Name == "" || !strings.HasPrefix(f.Host, host+" (") || !slices.Equal(f.VMs, vms) {
			t.Errorf("finding %#v, want DeviceSharedAsVGPUs of %s on %s with VMs %v", findings[0], a100, host, vms)
		}
	}
	shared(plan(PassthroughChange{PCIIDs: []string{a100}}))
	shared(plan(PassthroughChange{Match: []VendorDevice{{VendorID: "10de", DeviceID: "20f1"}}}))
	// The H100s are passed through already: not shared, nothing to say.
	if f := plan(PassthroughChange{PCIIDs: []string{"0000:3b:00.0"}}); len(f) != 0 {
		t.Errorf("an H100 passed through: findings %#v, want none", f)
	}

	acctest.Must(t, lab.AttachVGPU(ctx, vm, "grid_a100-20c"))
	shared(plan(PassthroughChange{PCIIDs: []string{a100}})) // powered off: its vGPU is on no GPU
	acctest.Must(t, lab.PowerOnVM(ctx, vm))
	shared(plan(PassthroughChange{PCIIDs: []string{a100}}), vm)
	shared(plan(PassthroughChange{Match: []VendorDevice{{VendorID: "10de", DeviceID: "20f1"}}}), vm)
	// A VM whose passthrough devices the same plan removes first is no user.
	shared(plan(PassthroughChange{PCIIDs: []string{a100}, Leaving: Leaving{{VM: lab.VMUUID(vm), Passthrough: true}}}))
}
