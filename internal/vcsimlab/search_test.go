package vcsimlab

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/cli/esx"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestFindByUUIDAfterEsxcli(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	c := l.Client().Client
	// The first esxcli call registers the host's executer, which made
	// vcsim's own FindByUuid panic.
	if _, err := esx.NewExecutor(ctx, c, object.NewHostSystem(c, hostRef(l, 0))); err != nil {
		t.Fatal(err)
	}

	si := object.NewSearchIndex(c)
	vm := l.VMNames()[0]
	dc := object.NewDatacenter(c, types.ManagedObjectReference{Type: "Datacenter", Value: l.DatacenterID()})
	got, err := si.FindByUuid(ctx, nil, l.VMUUID(vm), true, types.NewBool(false))
	if err != nil || got == nil || got.Reference().Value != l.VMID(vm) {
		t.Fatalf("FindByUuid(%s) = %v, %v; want %s", l.VMUUID(vm), got, err, l.VMID(vm))
	}
	if got, err := si.FindByUuid(ctx, dc, l.VMUUID(vm), true, nil); err != nil || got == nil {
		t.Fatalf("within its datacenter: %v, %v", got, err)
	}
	other := object.NewDatacenter(c, types.ManagedObjectReference{Type: "Datacenter", Value: "datacenter-999"})
	if got, err := si.FindByUuid(ctx, other, l.VMUUID(vm), true, nil); err != nil || got != nil {
		t.Fatalf("in another datacenter: %v, %v; want nothing", got, err)
	}
	if got, err := si.FindByUuid(ctx, nil, "4216aaaa-0000-0000-0000-000000000000", true, nil); err != nil || got != nil {
		t.Fatalf("unknown UUID: %v, %v; want nothing", got, err)
	}
	all, err := si.FindAllByUuid(ctx, nil, l.VMUUID(vm), true, nil)
	if err != nil || len(all) != 1 {
		t.Fatalf("FindAllByUuid = %v, %v; want one VM", all, err)
	}

	// Hosts are found by their hardware UUID.
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, 1), []string{"summary.hardware"}, &h)
	found, err := si.FindByUuid(ctx, nil, h.Summary.Hardware.Uuid, false, nil)
	if err != nil || found == nil || found.Reference() != hostRef(l, 1) {
		t.Fatalf("host by UUID = %v, %v; want %v", found, err, hostRef(l, 1))
	}
}
