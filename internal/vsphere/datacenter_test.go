package vsphere

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestDatacenterByName(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)

	for _, name := range []string{"", lab.DatacenterName()} {
		dc, err := c.DatacenterByName(ctx, name)
		if err != nil {
			t.Fatalf("DatacenterByName(%q): %v", name, err)
		}
		if dc.ID != lab.DatacenterID() || dc.Name != lab.DatacenterName() {
			t.Fatalf("DatacenterByName(%q) = %+v", name, dc)
		}
	}
	_, err := c.DatacenterByName(ctx, "nope")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), lab.DatacenterName()) {
		t.Fatalf("missing datacenter error = %v, want ErrNotFound listing the existing ones", err)
	}

	// A second datacenter of the same name, in a folder, as vCenter allows.
	root := object.NewRootFolder(lab.Client().Client)
	folder, err := root.CreateFolder(ctx, "site-b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := folder.CreateDatacenter(ctx, lab.DatacenterName()); err != nil {
		t.Fatal(err)
	}
	// A new command: this one's prefetch predates the second datacenter.
	c = labClient(lab)
	_, err = c.DatacenterByName(ctx, lab.DatacenterName())
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), lab.DatacenterID()) {
		t.Fatalf("duplicate name error = %v, want ErrAmbiguous naming both ids", err)
	}
	if _, err = c.DatacenterByName(ctx, ""); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("default datacenter with two datacenters: error = %v, want ErrAmbiguous", err)
	}
}
