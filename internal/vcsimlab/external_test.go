package vcsimlab

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// targetOf names a simulated lab as an external target would.
func targetOf(l *Lab) Target {
	return Target{
		Server: l.URL.Host, Username: l.Username, Password: l.Password, CAFile: l.CertFile,
		Datacenter: l.DatacenterName(), Cluster: l.ClusterName(),
		Hosts: l.HostNames()[:2], VMs: l.VMNames()[:2],
		RDMANICs: l.RDMANICs(), Vmknic: l.Vmknic(), GPUs: l.GPUs(),
	}
}

func TestConnect(t *testing.T) {
	ctx := context.Background()
	sim := startLab(t)
	ext, err := Connect(ctx, targetOf(sim))
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()

	if !sim.Simulated() || ext.Simulated() {
		t.Fatalf("Simulated: lab %v, target %v", sim.Simulated(), ext.Simulated())
	}
	if ext.DatacenterID() != sim.DatacenterID() || !slices.Equal(ext.HostNames(), sim.HostNames()[:2]) ||
		!slices.Equal(ext.VMNames(), sim.VMNames()[:2]) {
		t.Fatalf("target resolves to dc %s hosts %v VMs %v; the lab has dc %s hosts %v VMs %v",
			ext.DatacenterID(), ext.HostNames(), ext.VMNames(), sim.DatacenterID(), sim.HostNames(), sim.VMNames())
	}
	for _, vm := range ext.VMNames() {
		if ext.VMID(vm) != sim.VMID(vm) || ext.VMUUID(vm) != sim.VMUUID(vm) || ext.VMHostName(vm) != sim.VMHostName(vm) {
			t.Errorf(
				"VM %s: target %s %s on %s, lab %s %s on %s",
				vm,
				ext.VMID(vm),
				ext.VMUUID(vm),
				ext.VMHostName(vm),
				sim.VMID(vm),
				sim.VMUUID(vm),
				sim.VMHostName(vm),
			)
		}
	}
	if ext.Thumbprint != sim.Thumbprint {
		t.Errorf("thumbprint %s, want the lab's %s", ext.Thumbprint, sim.Thumbprint)
	}
	if !slices.Equal(sim.RDMANICs(), []string{"vmnic4", "vmnic5"}) || sim.Vmknic() != "vmk1" ||
		!slices.Equal(sim.GPUs(), []string{"0000:3b:00.0", "0000:5e:00.0"}) {
		t.Errorf("lab hardware by role: %v %s %v", sim.RDMANICs(), sim.Vmknic(), sim.GPUs())
	}

	// Admin changes are plain vSphere calls: they work on a target.
	if err := ext.SetRuleset(ctx, ext.HostNames()[0], "pvrdma", true); err != nil {
		t.Fatal(err)
	}
	// What only the simulator has is refused and recorded.
	if err := ext.RebootHost(ctx, ext.HostNames()[0]); !errors.Is(err, ErrNotSimulated) {
		t.Errorf("RebootHost on a target: %v", err)
	}
	ext.SetPortMTU(ext.HostNames()[0], 1500)
	if got := ext.Calls(); len(got) != 0 {
		t.Errorf("Calls on a target: %v", got)
	}
	if got, want := ext.Unavailable(), []string{"RebootHost", "SetPortMTU", "Calls"}; !slices.Equal(got, want) {
		t.Errorf("Unavailable = %v, want %v", got, want)
	}
	if len(sim.Unavailable()) != 0 {
		t.Errorf("the lab records %v", sim.Unavailable())
	}
}

func TestConnectRefusesAnIncompleteTarget(t *testing.T) {
	sim := startLab(t)
	for name, change := range map[string]func(*Target){
		"no CA":           func(t *Target) { t.CAFile = "" },
		"unknown cluster": func(t *Target) { t.Cluster = "no-such-cluster" },
		"unknown host":    func(t *Target) { t.Hosts = []string{"esx-99"} },
		"unknown VM":      func(t *Target) { t.VMs = []string{"no-such-vm"} },
		"no VMs":          func(t *Target) { t.VMs = nil },
	} {
		target := targetOf(sim)
		change(&target)
		if l, err := Connect(context.Background(), target); err == nil {
			l.Close()
			t.Errorf("%s: Connect succeeded", name)
		}
	}
}

// The footprint changes exactly where an administrator changed something
// the provider manages, and comes back when it is undone.
func TestFootprint(t *testing.T) {
	ctx := context.Background()
	l := startLab(t)
	before, err := l.Footprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	host := l.HostNames()[0]
	if err := l.SetRuleset(ctx, host, "pvrdma", true); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateSwitch(ctx, "left-behind", host, "vmnic4"); err != nil {
		t.Fatal(err)
	}
	if err := l.AttachGPU(ctx, l.VMNames()[0], "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	after, err := l.Footprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, f := range after {
		if !slices.Contains(before, f) {
			added = append(added, f)
		}
	}
	want := []string{
		`host ` + host + ` ruleset pvrdma enabled=true allowed=all`,
		`port group "left-behind-DVUplinks-`,
		`switch "left-behind"`,
		`vm ` + l.VMNames()[0] + ` pci passthrough `,
	}
	if len(added) != len(want) {
		t.Fatalf("footprint added %q, want %d facts like %q", added, len(want), want)
	}
	for i := range want {
		if !startsWith(added[i], want[i]) {
			t.Errorf("fact %d: %q, want %q… (all: %q)", i, added[i], want[i], added)
		}
	}

	if err := l.SetRuleset(ctx, host, "pvrdma", false); err != nil {
		t.Fatal(err)
	}
	if err := l.DestroySwitch(ctx, "left-behind"); err != nil {
		t.Fatal(err)
	}
	if err := l.DetachGPU(ctx, l.VMNames()[0], "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	again, err := l.Footprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, again) {
		t.Errorf("footprint after undoing: %q, want %q", again, before)
	}
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }
