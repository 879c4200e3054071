package vsphere

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// lookUpAll looks every hpc-node VM up by name, one after the other, and
// returns the RetrievePropertiesEx calls that took.
func lookUpAll(t *testing.T, lab *vcsimlab.Lab, c *Client) int {
	t.Helper()
	ctx := context.Background()
	dc, err := c.DatacenterByName(ForChange(ctx), lab.DatacenterName()) // logs in, no prefetch: not the look-ups' cost
	if err != nil {
		t.Fatal(err)
	}
	lab.ResetCalls()
	for i := range lab.VMNames()[:nodes(lab)] {
		name := lab.VMNames()[i]
		vm, err := c.VMByName(ctx, dc.ID, name)
		if err != nil || vm.Name != name {
			t.Fatalf("look-up of %s: %+v, %v", name, vm, err)
		}
	}
	return lab.Calls()["RetrievePropertiesEx"]
}

// nodes is how many of the lab's VMs are hpc-node-N (they come first).
func nodes(lab *vcsimlab.Lab) int {
	return len(lab.VMNames()) - 3
}

// Reads of one kind and property set in one command: the first reads the
// kind's whole population in one call, and the later reads make none, by
// name or by id alike.
func TestPrefetchAnswersLaterReads(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{VMs: 40})
	c := labClient(lab)
	// The command's first prefetch: the names with the VMs.
	if got, want := lookUpAll(t, lab, c), 1; got != want {
		t.Fatalf("%d sequential look-ups took %d RetrievePropertiesEx, want %d", nodes(lab), got, want)
	}

	// By id, with no look-up: the prefetch alone.
	byID := labClient(lab)
	ctx := context.Background()
	if _, err := byID.DatacenterByName(ForChange(ctx), lab.DatacenterName()); err != nil { // logs in, no prefetch
		t.Fatal(err)
	}
	lab.ResetCalls()
	for _, name := range lab.VMNames()[:nodes(lab)] {
		if vm, err := byID.VM(ctx, lab.VMID(name)); err != nil || vm.Name != name {
			t.Fatalf("%s by id: %+v, %v", name, vm, err)
		}
	}
	if got := lab.Calls()["RetrievePropertiesEx"]; got != 1 {
		t.Fatalf("%d reads by id took %d RetrievePropertiesEx, want 1", nodes(lab), got)
	}
	// The same VMs' GPU setups, refreshed with their adapters: the prefetch
	// holds their properties too, so no second call follows the first.
	lab.ResetCalls()
	for _, name := range lab.VMNames()[:nodes(lab)] {
		if _, err := byID.GPUMMIO(ctx, lab.VMID(name)); err != nil {
			t.Fatalf("%s's GPU setup: %v", name, err)
		}
	}
	if calls := lab.Calls(); len(calls) != 0 {
		t.Fatalf("%d GPU setup reads after the VM reads made %v, want none", nodes(lab), calls)
	}

	// Bounded: a population above the limit is not prefetched; the first
	// page of every kind's, then of the VMs', are the calls that find out.
	// The names are then read on their own, and each VM.
	bounded := labClient(lab)
	bounded.prefetch.limit = nodes(lab) // the lab has a few other VMs
	if got, want := lookUpAll(t, lab, bounded), 1+1+1+nodes(lab); got != want {
		t.Fatalf("bounded: %d look-ups took %d RetrievePropertiesEx, want %d", nodes(lab), got, want)
	}
	// Another property set of that kind does not try again.
	lab.ResetCalls()
	if _, err := bounded.GPUMMIO(ctx, lab.VMID(lab.VMNames()[0])); err != nil {
		t.Fatal(err)
	}
	if got := lab.Calls()["RetrievePropertiesEx"]; got != 1 {
		t.Fatalf("bounded: a read of other properties took %d RetrievePropertiesEx, want 1 (the read alone)", got)
	}
}

// A prefetch never answers for what it lacks, nor after the provider has
// changed anything: a VM created since the prefetch is found, and once the
// client writes, a change made out of band shows.
func TestPrefetchStepsAsideForNewObjectsAndAfterWrites(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{VMs: 20})
	ctx := context.Background()
	c := labClient(lab)
	lookUpAll(t, lab, c)
	host := lab.VMHostName("hpc-node-0")

	if err := lab.CreateVM(ctx, "late-node", host, 19); err != nil {
		t.Fatal(err)
	}
	if vm, err := c.VM(ctx, lab.VMID("late-node")); err != nil || vm.Name != "late-node" {
		t.Fatalf("a VM created after the prefetch: %+v, %v", vm, err)
	}

	if err := lab.SetVMFirmware(ctx, "hpc-node-19", "efi"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetHostSRIOV(ctx, lab.HostID(host), "0000:86:00.0", 2); err != nil { // any change ends prefetching
		t.Fatal(err)
	}
	lab.ResetCalls()
	vm, err := c.VM(ctx, lab.VMID("hpc-node-19"))
	if err != nil || vm.Firmware != "efi" {
		t.Fatalf("after a write: %+v, %v; want firmware efi", vm, err)
	}
	if n := lab.Calls()["RetrievePropertiesEx"]; n != 1 {
		t.Fatalf("a read after a write took %d RetrievePropertiesEx, want 1", n)
	}
}

// A change reads its VM under the lock from vCenter, even when the command's
// prefetch holds the VM: here the VM is powered on behind the client's back
// after the prefetch read it, and the change sees it on.
func TestReadUnderALockIsFresh(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{VMs: 20})
	ctx := context.Background()
	c := labClient(lab)
	lookUpAll(t, lab, c) // the name index: the VMs' population
	vc, err := c.vimClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Refresh reads of every node, of what a change reads under the lock:
	// the later ones are answered from a prefetch of them all.
	nodeIDs := make([]string, nodes(lab))
	for i := range nodeIDs {
		nodeIDs[i] = lab.VMID(lab.VMNames()[i])
		if _, err := c.readVMProps(ctx, vc, "refreshing", nodeIDs[i], vmChangeProps); err != nil {
			t.Fatal(err)
		}
	}
	target := lab.VMNames()[len(nodeIDs)-1]
	if err := lab.PowerOnVM(ctx, target); err != nil {
		t.Fatal(err)
	}
	lab.ResetCalls()
	if vm, err := c.readVMProps(ctx, vc, "refreshing", lab.VMID(target), vmChangeProps); err != nil ||
		vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff || lab.Calls()["RetrievePropertiesEx"] != 0 {
		t.Fatalf("a refresh read of %s: %v, %v, %v; want it answered off from the prefetch", target, vm, err, lab.Calls())
	}

	var seen types.VirtualMachinePowerState
	err = c.changeVM(
		ctx,
		vmChange{
			op:   "looking",
			vmID: lab.VMID(target),
			build: func(vm *mo.VirtualMachine, _ *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
				seen = vm.Runtime.PowerState
				return nil, false, nil
			},
		},
	)
	if err != nil || seen != types.VirtualMachinePowerStatePoweredOn {
		t.Fatalf("under the lock, %s read %q (%v); want %q, as vCenter has it", target, seen, err, types.VirtualMachinePowerStatePoweredOn)
	}
}

// BenchmarkVMPrefetch times a refresh's one read of every VM (256, with the
// lab's 64 hosts) in process, the lab's work and the client's decoding
// together, by property group: what the read costs beyond its round trip,
// and what splitting it would save.
func BenchmarkVMPrefetch(b *testing.B) {
	ctx := context.Background()
	lab, err := vcsimlab.Start(ctx, vcsimlab.Options{Hosts: 64, VMs: 256})
	if err != nil {
		b.Fatal(err)
	}
	defer lab.Close()
	vc, err := labClient(lab).vimClient(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var rest []string
	for _, p := range vmRefreshProps {
		if p != "config.hardware.device" && !slices.Contains(gpuExtraConfig, p) {
			rest = append(rest, p)
		}
	}
	for _, group := range []struct {
		name  string
		props []string
	}{
		{"every property", vmRefreshProps},
		{"device lists", []string{"config.hardware.device"}},
		{"the MMIO keys of extraConfig", gpuExtraConfig},
		{"the rest", rest},
	} {
		spec := populationSpec(vc.ServiceContent.RootFolder, "VirtualMachine", group.props)
		b.Run(group.name, func(b *testing.B) {
			for b.Loop() {
				if objs, err := retrieveBounded(ctx, vc, spec, prefetchMax); err != nil || len(objs) < 256 {
					b.Fatalf("%d VMs, %v", len(objs), err)
				}
			}
		})
	}
}

// TestReadsLeavePrefetching: no read ends the command's prefetching, so a
// data source that reads with calls of other kinds (the path MTU's esxcli
// ping, a switch found by UUID or path) does not make the refresh that
// follows read object by object, which would make its calls depend on when
// that data source ran. A change does end it.
func TestReadsLeavePrefetching(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 3})
	ctx := context.Background()
	dvs, _, err := labClient(lab).CreateDVS(ctx, labDVSSpec(lab, "pvrdma"))
	if err != nil {
		t.Fatal(err)
	}
	vm, host := lab.VMID(lab.VMNames()[0]), lab.HostID(lab.HostNames()[0])
	dc := func(c *Client) string {
		d, err := c.DatacenterByName(ctx, lab.DatacenterName())
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	for name, read := range map[string]func(c *Client) error{
		"a VM":                 func(c *Client) error { _, err := c.VM(ctx, vm); return err },
		"a VM by name":         func(c *Client) error { _, err := c.VMByName(ctx, dc(c), lab.VMNames()[0]); return err },
		"a host":               func(c *Client) error { _, err := c.Host(ctx, host); return err },
		"a host's PVRDMA":      func(c *Client) error { _, err := c.HostPVRDMA(ctx, host); return err },
		"a host's passthrough": func(c *Client) error { _, err := c.HostPassthrough(ctx, host); return err },
		"a switch by UUID":     func(c *Client) error { _, err := c.DVS(ctx, DVSID{UUID: dvs.UUID}, ""); return err },
		"a switch by path": func(c *Client) error {
			_, err := c.FindDVSByPath(ctx, "/"+lab.DatacenterName()+"/network/pvrdma")
			return err
		},
		"switch versions":       func(c *Client) error { _, err := c.DVSVersions(ctx); return err },
		"a PVRDMA protocol":     func(c *Client) error { _, err := c.PVRDMAProtocolChoice(ctx, vm); return err },
		"path MTUs (esxcli)":    func(c *Client) error { _, err := c.PathMTUs(ctx, pathMTUSpec(lab, 2)); return err },
		"the GPU setups listed": func(c *Client) error { _, err := c.ListGPUMMIO(ctx, Scope{DatacenterID: dc(c)}); return err },
	} {
		t.Run(name, func(t *testing.T) {
			c := labClient(lab)
			if err := read(c); err != nil {
				t.Fatal(err)
			}
			c.prefetch.mu.Lock()
			defer c.prefetch.mu.Unlock()
			if c.prefetch.changed {
				t.Fatal("the read ended the command's prefetching")
			}
		})
	}
	t.Run("an esxcli command that changes a host", func(t *testing.T) {
		c := labClient(lab)
		c.prefetch.noteCall("ExecuteSoap", &executeSoapBody{Req: &executeSoapRequest{Method: "vim.EsxCLI.network.firewall.ruleset.set"}})
		c.prefetch.mu.Lock()
		defer c.prefetch.mu.Unlock()
		if !c.prefetch.changed {
			t.Fatal("a change through esxcli left prefetching on")
		}
	})
}

// TestChangesReadFresh: a change's reads (ForChange) go to vCenter even
// while the command's prefetch holds the object: a VM's MMIO keys set and a
// host's PVRDMA vmknic changed since the prefetch are seen, where a refresh
// read still answers from the prefetch.
func TestChangesReadFresh(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vmName, hostName := lab.VMNames()[0], lab.HostNames()[0]
	vm, host := lab.VMUUID(vmName), lab.HostID(hostName)
	if _, err := c.GPUMMIO(ctx, vm); err != nil { // the prefetch of every VM
		t.Fatal(err)
	}
	if _, err := c.HostPVRDMA(ctx, host); err != nil { // and of every host
		t.Fatal(err)
	}
	if err := lab.SetVMExtraConfig(ctx, vmName, mmio.SizeGBKey, "64"); err != nil {
		t.Fatal(err)
	}
	if err := lab.SetHostOption(ctx, hostName, "Net.PVRDMAVmknic", "vmk9"); err != nil {
		t.Fatal(err)
	}
	if g, err := c.GPUMMIO(ctx, vm); err != nil || g.ExtraConfig[mmio.SizeGBKey] != "" {
		t.Fatalf("a refresh read: %v, %v; want the prefetch's answer, no window yet", g, err)
	}
	if g, err := c.GPUMMIO(ForChange(ctx), vm); err != nil || g.ExtraConfig[mmio.SizeGBKey] != "64" {
		t.Fatalf("a change's read: %v, %v; want the window set since the prefetch", g, err)
	}
	if h, err := c.HostPVRDMA(ForChange(ctx), host); err != nil || h.Settings.Vmknic != "vmk9" {
		t.Fatalf("a change's read of the host: %+v, %v; want the vmknic set since the prefetch", h, err)
	}
}

// TestAdapterPlanReadsFromThePrefetch: an adapter's plan asks a VM's
// configuration options through its environment browser, which the
// refresh's one read of every VM carries: the plan reads no VM again.
func TestAdapterPlanReadsFromThePrefetch(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	if _, err := c.VM(ctx, lab.VMID(lab.VMNames()[0])); err != nil {
		t.Fatal(err)
	}
	lab.ResetCalls()
	if _, err := c.PVRDMAProtocolChoice(ctx, lab.VMID(lab.VMNames()[1])); err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); calls["RetrievePropertiesEx"] != 0 {
		t.Fatalf("calls = %v, want the VM from the prefetch", calls)
	}
}
