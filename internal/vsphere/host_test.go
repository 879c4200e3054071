package vsphere

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestHost(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	name := lab.HostNames()[1]

	h, err := c.HostByName(ctx, lab.DatacenterID(), name)
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != lab.HostID(name) || h.Name != name || h.ClusterName != lab.ClusterName() || h.ClusterID == "" {
		t.Fatalf("host identity = %+v", h)
	}
	nics := map[string]PhysicalNIC{}
	for _, n := range h.PhysicalNICs {
		nics[n.Name] = n
	}
	if n := nics["vmnic4"]; n.RDMADevice == "" || !n.RoCEv2 || n.SpeedMbps != 100000 || !n.LinkUp || n.Switch != "" {
		t.Errorf("vmnic4 = %+v, want a free 100 GbE RoCE v2 NIC", n)
	}
	if n := nics["vmnic0"]; n.RDMADevice != "" || n.Switch != "vSwitch0" {
		t.Errorf("vmnic0 = %+v, want a non-RDMA uplink of vSwitch0", n)
	}
	if len(h.VMKernelNICs) < 1 || h.VMKernelNICs[0].Name != "vmk0" {
		t.Errorf("vmknics = %+v, want vmk0 first", h.VMKernelNICs)
	}
	gpus := map[string]GPU{}
	for _, g := range h.GPUs {
		gpus[g.PCIID] = g
	}
	if len(gpus) < 2 {
		t.Fatalf("gpus = %+v, want the lab's GPUs", h.GPUs)
	}
	var active, inactive int
	for _, g := range h.GPUs {
		if g.VendorID != "10de" || g.MemoryGB <= 0 {
			t.Errorf("gpu %+v: want an NVIDIA GPU with its memory reported", g)
		}
		if g.PassthroughActive {
			active++
		} else {
			inactive++
		}
	}
	if active == 0 || inactive == 0 {
		t.Errorf("want both passthrough-active and inactive GPUs, got %d and %d", active, inactive)
	}

	_, err = c.HostByName(ctx, lab.DatacenterID(), "no-such-host")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing host error = %v, want ErrNotFound", err)
	}
	_, err = c.Host(ctx, "host-99999")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no host has id host-99999") {
		t.Fatalf("missing host id error = %v, want ErrNotFound naming the id", err)
	}
	// A datacenter name where its id belongs is the common mistake.
	_, err = c.HostByName(ctx, lab.DatacenterName(), name)
	if !errors.Is(err, ErrNotFound) ||
		!strings.Contains(err.Error(), `no datacenter has id "`+lab.DatacenterName()+`" (the name of datacenter `+lab.DatacenterID()+`)`) {
		t.Fatalf("datacenter name as id: error = %v, want an explanation", err)
	}
}

func TestHostReadsArePrefetchedWithEveryVM(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	id := lab.HostID(lab.HostNames()[0])
	if _, err := c.DatacenterByName(ForChange(ctx), lab.DatacenterName()); err != nil { // logs in, no prefetch
		t.Fatal(err)
	}
	// The first host read of a command reads every host with its cluster
	// and, at once, every VM with the command's first prefetch (see
	// prefetch_all.go); the next hosts' reads make no call, nor do the VM
	// reads the first prefetch answers.
	for i, want := range []int{2, 0} {
		lab.ResetCalls()
		if _, err := c.Host(ctx, lab.HostID(lab.HostNames()[i])); err != nil {
			t.Fatal(err)
		}
		calls := lab.Calls()
		total := 0
		for _, n := range calls {
			total += n
		}
		if total != want || calls["RetrievePropertiesEx"] != want {
			t.Fatalf("host read %d made %v, want %d RetrievePropertiesEx", i+1, calls, want)
		}
	}
	lab.ResetCalls()
	if vm, err := c.VM(ctx, lab.VMID(lab.VMNames()[0])); err != nil || vm.Name != lab.VMNames()[0] {
		t.Fatalf("VM read: %+v, %v", vm, err)
	}
	if calls := lab.Calls(); len(calls) != 0 {
		t.Fatalf("a VM read after the hosts' made %v, want none", calls)
	}
	// A read a change is built from goes to vCenter.
	lab.ResetCalls()
	if _, err := c.HostPassthrough(ctx, id); err != nil || lab.Calls()["RetrievePropertiesEx"] != 1 {
		t.Fatalf("a passthrough read made %v (%v), want one RetrievePropertiesEx", lab.Calls(), err)
	}
}

func TestGPUUsers(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	vmName := lab.VMNames()[0]
	vm, err := c.VM(ctx, lab.VMUUID(vmName))
	if err != nil {
		t.Fatal(err)
	}
	host, err := c.Host(ctx, vm.HostID)
	if err != nil {
		t.Fatal(err)
	}
	var gpu *GPU
	for i := range host.GPUs {
		if host.GPUs[i].PassthroughActive {
			gpu = &host.GPUs[i]
			break
		}
	}
	if gpu == nil {
		t.Fatal("no passthrough-active GPU on the VM's host")
	}
	if err := lab.AttachGPU(context.Background(), vmName, gpu.PCIID); err != nil {
		t.Fatal(err)
	}

	// The next command (a client each) sees the GPU taken.
	host, err = labClient(lab).Host(ctx, vm.HostID)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range host.GPUs {
		if g.PCIID == gpu.PCIID {
			if len(g.VMs) != 1 || g.VMs[0].Name != vmName || g.VMs[0].ID != vm.ID || g.VMs[0].PowerState != PoweredOff {
				t.Fatalf("users of %s = %+v, want powered-off %s", g.PCIID, g.VMs, vmName)
			}
			return
		}
	}
	t.Fatalf("GPU %s vanished", gpu.PCIID)
}

func TestHexID(t *testing.T) {
	t.Parallel()
	// vSphere reports ids as int16: Intel's 0x8086 arrives negative.
	for in, want := range map[int16]string{0x10de: "10de", -32634: "8086", 0: "0000"} {
		if got := HexID(in); got != want {
			t.Errorf("HexID(%d) = %q, want %q", in, got, want)
		}
	}
	if got := normalizeHex("2330"); got != "2330" {
		t.Errorf("normalizeHex = %q", got)
	}
}
