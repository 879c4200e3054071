package vsphere

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// What an id looks like, from its form alone: the managed object id
// prefixes vCenter gives each kind (as govmomi's simulator does after it),
// a VM's BIOS UUID, a switch's spaced UUID, and anything else a name.
func TestShapeOf(t *testing.T) {
	for id, want := range map[string]string{
		"vm-42":                                "a virtual machine's managed object id",
		"4223b7a1-5b2c-8d3e-1f40-9c1e2a3b4c5d": "a virtual machine's BIOS UUID",
		"host-12":                              "a host's managed object id",
		"ha-host":                              "a host's managed object id",
		"domain-c7":                            "a cluster's managed object id",
		"domain-s9":                            "a compute resource's managed object id",
		"datacenter-3":                         "a datacenter's managed object id",
		"ha-datacenter":                        "a datacenter's managed object id",
		"dvportgroup-17":                       "a distributed port group's managed object id",
		"dvs-21":                               "a distributed switch's managed object id",
		"50 2a 6c 3f 9e 7d 4d 8a-b2 8e 16 2b 28 02 7a 6e": "a distributed switch's UUID",
		"network-5":            "a network's managed object id",
		"datastore-14":         "a datastore's managed object id",
		"group-d1":             "a folder's managed object id",
		"resgroup-8":           "a resource pool's managed object id",
		"resgroup-v30":         "a vApp's managed object id",
		"DC0":                  "a name",
		"esx-01":               "a name",
		"esx-01.lab":           "a name",
		"VM Network":           "a name",
		"host-18:0000:3b:00.0": "a name",
		"":                     "a name",
	} {
		if got := ShapeOf(id).String(); got != want {
			t.Errorf("ShapeOf(%q) = %q, want %q", id, got, want)
		}
	}
}

// An id that names nothing is worded with what it looks like when that is
// another kind, or a name, and then what an id of the kind is; one of the
// kind's own form needs neither. A list names each id that names nothing.
func TestWordNotFound(t *testing.T) {
	for _, tc := range []struct {
		kind Object
		ids  []string
		want string
	}{
		{ObjectHost, []string{"host-9999"}, "no host has id host-9999"},
		{ObjectHost, []string{"vm-3"},
			"no host has id vm-3 (it looks like a virtual machine's managed object id); host ids are managed object ids such as host-12"},
		{ObjectHost, []string{"host-9999", "vm-3", "esx-01"},
			`hosts host-9999, vm-3 (it looks like a virtual machine's managed object id), "esx-01" (it looks like a name, not an id) ` +
				`do not exist; host ids are managed object ids such as host-12`},
		{ObjectDatacenter, []string{"domain-c7"},
			"no datacenter has id domain-c7 (it looks like a cluster's managed object id); datacenter ids are managed object ids such as " +
				"datacenter-3"},
		{ObjectCluster, []string{"host-12"},
			"no cluster has id host-12 (it looks like a host's managed object id); cluster ids are managed object ids such as domain-c7"},
		{ObjectVirtualMachine, []string{"4200aaaa-0000-0000-0000-000000000000"}, "no virtual machine has UUID 4200aaaa-0000-0000-0000-000000000000"},
		{ObjectSwitch, []string{"4200aaaa-0000-0000-0000-000000000000"}, "no distributed switch has UUID 4200aaaa-0000-0000-0000-000000000000"},
		{ObjectPortGroup, []string{"network-5"},
			"no distributed port group has id network-5 (it looks like a network's managed object id); distributed port group ids are " +
				"managed object ids such as dvportgroup-17"},
	} {
		err := idNotFound("op", tc.kind, tc.ids...)
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrNotFound || e.Object != tc.kind || !slices.Equal(e.IDs, tc.ids) || len(e.Looks) != len(tc.ids) {
			t.Errorf("%s %v: %#v, want a not-found error of that kind with each id", tc.kind, tc.ids, err)
			continue
		}
		if e.Message != tc.want {
			t.Errorf("%s %v:\n got %q\nwant %q", tc.kind, tc.ids, e.Message, tc.want)
		}
	}
}

// A name given where an id goes is looked up among the objects of the kind
// expected, in one read made only then, and the error says whose name it
// is; a VM's UUID given for a switch says whose UUID it is.
func TestNotFoundErrorLooksNamesUp(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	host := lab.HostNames()[0]
	_, err := c.Host(ctx, host)
	if want := `no host has id "` + host + `" (the name of host ` + lab.HostID(host) + `)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a host's name as its id: %v, want %q", err, want)
	}
	_, err = c.ClusterByName(ctx, lab.DatacenterName(), lab.ClusterName())
	if want := `no datacenter has id "` + lab.DatacenterName() + `" (the name of datacenter ` + lab.DatacenterID() + `)`; err == nil ||
		!strings.Contains(err.Error(), want) {
		t.Errorf("a datacenter's name as its id: %v, want %q", err, want)
	}
	vm := lab.VMNames()[0]
	_, err = c.DVS(ctx, DVSID{UUID: lab.VMUUID(vm)}, "")
	if want := "no distributed switch has UUID " + lab.VMUUID(vm) + " (the BIOS UUID of virtual machine " + lab.VMID(vm) + ")"; err == nil ||
		!strings.Contains(err.Error(), want) {
		t.Errorf("a VM's UUID as a switch's: %v, want %q", err, want)
	}
	_, err = c.Host(ctx, "no-such-host")
	if want := `no host has id "no-such-host" (it looks like a name, not an id)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a name no host has: %v, want %q", err, want)
	}
}
