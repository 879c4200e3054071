package vsphere

import (
	"context"
	"errors"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// refreshEverything reads, as a refresh does, every kind a configuration
// can name: the datacenter, the cluster, each VM by name and by UUID with
// its GPU setup, the switch and, with hosts, each host by name and its
// PVRDMA settings.
func refreshEverything(t *testing.T, lab *vcsimlab.Lab, c *Client, sw DVSID, hosts bool) {
	t.Helper()
	ctx := context.Background()
	dc, err := c.DatacenterByName(ctx, lab.DatacenterName())
	if err != nil {
		t.Fatal(err)
	}
	if cl, err := c.ClusterByName(ctx, dc.ID, lab.ClusterName()); err != nil || len(cl.Hosts) != len(lab.HostNames()) {
		t.Fatalf("cluster: %+v, %v", cl, err)
	}
	for _, name := range lab.HostNames() {
		if !hosts {
			break
		}
		h, err := c.HostByName(ctx, dc.ID, name)
		if err != nil || h.Name != name || len(h.PCIDevices) == 0 {
			t.Fatalf("host %s: %+v, %v", name, h, err)
		}
		if _, err := c.HostPVRDMA(ctx, h.ID); err != nil {
			t.Fatalf("host %s's settings: %v", name, err)
		}
	}
	for _, name := range lab.VMNames() {
		vm, err := c.VMByName(ctx, dc.ID, name)
		if err != nil || vm.Name != name {
			t.Fatalf("VM %s: %+v, %v", name, vm, err)
		}
		if _, err := c.GPUMMIO(ctx, lab.VMUUID(name)); err != nil {
			t.Fatalf("VM %s's GPU setup: %v", name, err)
		}
	}
	if d, err := c.DVS(ctx, sw, ""); err != nil || d.DatacenterID != dc.ID {
		t.Fatalf("switch: %+v, %v", d, err)
	}
}

// A command's refresh of every kind but hosts is one call after the
// session's: the first read prefetches every kind, the name indexes with
// them. Hosts add one call, the first host read's prefetch of every host,
// which their PVRDMA settings share. With more objects than the bound,
// each kind is read as before.
func TestFirstPrefetchAnswersEveryKind(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 4, VMs: 8})
	ctx := context.Background()
	sw, _, err := labClient(lab).CreateDVS(ctx, labDVSSpec(lab, "pvrdma"))
	if err != nil {
		t.Fatal(err)
	}

	for _, hosts := range []bool{false, true} {
		lab.ResetCalls()
		refreshEverything(t, lab, labClient(lab), sw, hosts)
		calls, want := lab.Calls(), 1
		if hosts {
			want = 2
		}
		if calls["RetrievePropertiesEx"] != want || calls["Login"] != 1 || len(calls) != 3 {
			t.Errorf("a refresh of every kind (hosts: %t) made %v, want the session's two calls and %d RetrievePropertiesEx", hosts, calls, want)
		}
	}

	// Bounded: the first page of every kind's finds too many, and each read
	// goes its own way, as it would with no first prefetch.
	bounded := labClient(lab)
	bounded.prefetch.limit = 4
	lab.ResetCalls()
	refreshEverything(t, lab, bounded, sw, true)
	if calls := lab.Calls(); calls["RetrievePropertiesEx"] < 4 {
		t.Errorf("a refresh with a bound of 4 objects made %v, want the kinds read on their own", calls)
	}
}

// What the first prefetch lacks is read from vCenter: a datacenter, a
// cluster, a host name or a VM created since are found, never reported
// gone on its word.
func TestFirstPrefetchStepsAsideForNewObjects(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	dc, err := c.DatacenterByName(ctx, lab.DatacenterName())
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.CreateVM(ctx, "late-vm", lab.HostNames()[0], 19); err != nil {
		t.Fatal(err)
	}
	if vm, err := c.VMByName(ctx, dc.ID, "late-vm"); err != nil || vm.Name != "late-vm" {
		t.Fatalf("a VM created after the prefetch: %+v, %v", vm, err)
	}
	if _, err := c.VMByName(ctx, dc.ID, "never-vm"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a VM that does not exist: %v, want ErrNotFound", err)
	}
	if _, err := c.DatacenterByName(ctx, "dc-404"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a datacenter that does not exist: %v, want ErrNotFound", err)
	}
}
