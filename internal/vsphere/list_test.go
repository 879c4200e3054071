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

// Every list is one RetrievePropertiesEx, however many hosts and VMs: at 16
// hosts and 64 VMs, built by hand, each list finds what BuildByHand made
// and every host and VM the lab has.
func TestListsAreOneCallAtFleetSize(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 16, VMs: 64})
	ctx := context.Background()
	if err := lab.BuildByHand(ctx); err != nil {
		t.Fatal(err)
	}
	c := labClient(lab)
	if _, err := c.DatacenterByName(ctx, lab.DatacenterName()); err != nil { // logs in: not the lists' cost
		t.Fatal(err)
	}
	scope := Scope{DatacenterID: lab.DatacenterID()}
	lists := []struct {
		name  string
		count func() (int, error)
		want  int
	}{
		{"switches", func() (int, error) { l, err := c.ListDVS(ctx, scope, ""); return len(l), err }, 2},
		{"host settings", func() (int, error) { l, err := c.ListHostPVRDMA(ctx, scope); return len(l), err }, 16},
		{"host devices", func() (int, error) { l, err := c.ListHostPassthrough(ctx, scope); return len(l), err }, 16},
		{"PVRDMA adapters", func() (int, error) { l, _, err := c.ListPVRDMANICs(ctx, scope); return len(l), err }, 2},
		{"SR-IOV adapters", func() (int, error) { l, _, err := c.ListSRIOVNICs(ctx, scope); return len(l), err }, 1},
		{"GPU setups", func() (int, error) { l, err := c.ListGPUMMIO(ctx, scope); return len(l), err }, 2},
	}
	for _, l := range lists {
		lab.ResetCalls()
		got, err := l.count()
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		if got != l.want {
			t.Errorf("%s: %d listed, want %d", l.name, got, l.want)
		}
		if calls := lab.Calls()["RetrievePropertiesEx"]; calls != 1 {
			t.Errorf("%s: %d RetrievePropertiesEx, want 1 at 16 hosts and %d VMs", l.name, calls, len(lab.VMNames()))
		}
	}
}

// The hosts a scope names come with their own VMs only, and a scope object
// that does not exist is ErrNotFound, whatever its kind.
func TestListScopes(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	if err := lab.BuildByHand(ctx); err != nil {
		t.Fatal(err)
	}
	c := labClient(lab)
	vm := lab.VMNames()[0]
	nics, _, err := c.ListPVRDMANICs(ctx, Scope{HostIDs: []string{lab.HostID(lab.VMHostName(vm))}})
	if err != nil || len(nics) != 1 || nics[0].VM.Name != vm {
		t.Fatalf("adapters on %s's host: %+v, %v; want %s's one", vm, nics, err, vm)
	}
	cluster, err := c.ClusterByName(ctx, lab.DatacenterID(), lab.ClusterName())
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := c.ListHostPVRDMA(ctx, Scope{ClusterID: cluster.ID})
	if err != nil || len(hosts) != len(lab.HostNames()) {
		t.Fatalf("the cluster's hosts: %+v, %v", hosts, err)
	}
	// Each id that names nothing is named, with what it looks like when
	// that is another kind, and whose name it is when it is a name.
	host := lab.HostNames()[0]
	hostID := lab.HostID(host)
	vmID := lab.VMID(vm)
	for scope, want := range map[*Scope]string{
		{DatacenterID: "datacenter-999"}:     "no datacenter has id datacenter-999",
		{DatacenterID: lab.DatacenterName()}: `no datacenter has id "` + lab.DatacenterName() + `" (the name of datacenter ` + lab.DatacenterID() + `)`,
		{DatacenterID: cluster.ID}: "no datacenter has id " + cluster.ID + " (it looks like a cluster's managed object id); " +
			"datacenter ids are managed object ids such as datacenter-3",
		{ClusterID: "domain-c999"}: "no cluster has id domain-c999",
		{ClusterID: hostID}: "no cluster has id " + hostID +
			" (it looks like a host's managed object id); cluster ids are managed object ids such as domain-c7",
		{HostIDs: []string{"host-999"}}:          "no host has id host-999",
		{HostIDs: []string{hostID, "host-9999"}}: "no host has id host-9999",
		{HostIDs: []string{hostID, "x"}}:         `no host has id "x" (it looks like a name, not an id)`,
		{HostIDs: []string{hostID, vmID, host}}: "hosts " + vmID + ` (it looks like a virtual machine's managed object id), "` + host +
			`" (the name of host ` + hostID + `) do not exist; host ids are managed object ids such as host-12`,
	} {
		_, err := c.ListHostPassthrough(ctx, *scope)
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrNotFound || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrNotFound saying %q", scope, err, want)
		} else if len(scope.HostIDs) > 0 && slices.Contains(e.IDs, hostID) {
			t.Errorf("%s: %v names host %s, which exists", scope, err, hostID)
		}
	}
}
