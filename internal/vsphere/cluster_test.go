package vsphere

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestClusterByName(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 4})
	ctx := context.Background()
	c := labClient(lab)

	cl, err := c.ClusterByName(ctx, lab.DatacenterID(), lab.ClusterName())
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(lab.HostNames()))
	var names []string
	for _, h := range cl.Hosts {
		names = append(names, h.Name)
		if h.ID != lab.HostID(h.Name) {
			t.Errorf("host %s: id %s, want %s", h.Name, h.ID, lab.HostID(h.Name))
		}
	}
	if !slices.Equal(names, want) || !strings.HasPrefix(cl.ID, "domain-c") {
		t.Fatalf("cluster = %+v, want id domain-c… and hosts %v", cl, want)
	}

	// A cluster in a folder, with no hosts yet.
	finder := find.NewFinder(lab.Client().Client)
	dc, err := finder.Datacenter(ctx, lab.DatacenterName())
	if err != nil {
		t.Fatal(err)
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := folders.HostFolder.CreateFolder(ctx, "gpu")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.CreateCluster(ctx, "gpu-cluster", types.ClusterConfigSpecEx{}); err != nil {
		t.Fatal(err)
	}
	empty, err := c.ClusterByName(ctx, lab.DatacenterID(), "gpu-cluster")
	if err != nil || len(empty.Hosts) != 0 {
		t.Fatalf("cluster in a folder = %+v, %v; want it found, with no hosts", empty, err)
	}

	_, err = c.ClusterByName(ctx, lab.DatacenterID(), "nope")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"`+lab.ClusterName()+`" (`+cl.ID+`)`) ||
		!strings.Contains(err.Error(), `"gpu-cluster"`) {
		t.Fatalf("missing cluster error = %v, want ErrNotFound listing the clusters", err)
	}
	_, err = c.ClusterByName(ctx, lab.DatacenterName(), lab.ClusterName())
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"`+lab.DatacenterName()+`" (the name of datacenter `+lab.DatacenterID()+`)`) {
		t.Fatalf("datacenter name for its id: error = %v, want ErrNotFound explaining datacenter_id", err)
	}

	// The look-up of a command, logged in: one round trip, the command's
	// first prefetch, whether it is answered from it or reads on its own.
	for _, f := range []func(context.Context) context.Context{func(ctx context.Context) context.Context { return ctx }, ForChange} {
		c := labClient(lab)
		if _, err := c.DatacenterByName(ForChange(ctx), lab.DatacenterName()); err != nil { // logs in, no prefetch
			t.Fatal(err)
		}
		lab.ResetCalls()
		if _, err := c.ClusterByName(f(ctx), lab.DatacenterID(), lab.ClusterName()); err != nil {
			t.Fatal(err)
		}
		if calls := lab.Calls(); len(calls) != 1 || calls["RetrievePropertiesEx"] != 1 {
			t.Fatalf("a cluster look-up made %v, want exactly one RetrievePropertiesEx", calls)
		}
	}
}
