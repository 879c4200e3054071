package vsphere

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func labDVSSpec(lab *vcsimlab.Lab, name string) DVSSpec {
	spec := DVSSpec{
		DatacenterID: lab.DatacenterID(), Name: name, Version: "8.0.0", UplinkCount: 4, MTU: 9000,
		PortGroup: PortGroupSpec{Name: name + "-vms", Ports: 8, AutoExpand: true},
	}
	for _, h := range lab.HostNames() {
		spec.Hosts = append(spec.Hosts, DVSHost{HostID: lab.HostID(h), Vmnic: "vmnic4"})
	}
	slices.SortFunc(spec.Hosts, func(a, b DVSHost) int { return strings.Compare(a.HostID, b.HostID) })
	return spec
}

func TestDVSLifecycle(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	spec := labDVSSpec(lab, "pvrdma")

	id, key, err := c.CreateDVS(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.DVS(ctx, DVSID{UUID: id.UUID}, "") // by UUID alone, as after an import
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "pvrdma" || got.MTU != 9000 || got.Version != "8.0.0" || got.NIOC || got.DatacenterID != lab.DatacenterID() ||
		!slices.Equal(got.UplinkNames, UplinkNames(4)) || !slices.Equal(got.Hosts, spec.Hosts) {
		t.Fatalf("created switch = %+v, want %+v", got, spec)
	}
	if got.PortGroup == nil || got.PortGroup.PortGroupSpec != spec.PortGroup || len(got.PortGroups) != 1 || got.PortGroup.Key != key {
		t.Fatalf("port group = %+v, want %+v", got.PortGroup, spec.PortGroup)
	}

	// MTU down and up, a host removed, then back with another NIC; NIOC on;
	// upgrade; port group changed.
	spec.MTU = 1500
	removed := spec.Hosts[2]
	spec.Hosts = spec.Hosts[:2]
	if _, err := c.UpdateDVS(ctx, got, spec); err != nil {
		t.Fatal(err)
	}
	got, _ = c.DVS(ctx, id, got.PortGroup.Key)
	if got.MTU != 1500 || len(got.Hosts) != 2 {
		t.Fatalf("after update: MTU %d, hosts %v", got.MTU, got.Hosts)
	}
	spec.MTU, spec.NIOC, spec.Version = 9000, true, "8.0.3"
	spec.Hosts = append(spec.Hosts, DVSHost{HostID: removed.HostID, Vmnic: "vmnic5"})
	spec.PortGroup.VLANID, spec.PortGroup.Name = 100, "renamed"
	if _, err := c.UpdateDVS(ctx, got, spec); err != nil {
		t.Fatal(err)
	}
	got, _ = c.DVS(ctx, id, got.PortGroup.Key)
	if got.MTU != 9000 || !got.NIOC || got.Version != "8.0.3" || !slices.Equal(got.Hosts, spec.Hosts) ||
		got.PortGroup == nil || got.PortGroup.VLANID != 100 || got.PortGroup.Name != "renamed" {
		t.Fatalf("after second update: %+v (port group %+v)", got, got.PortGroup)
	}
	// Editing a member's NIC in place.
	spec.Hosts[0].Vmnic = "vmnic5"
	if _, err := c.UpdateDVS(ctx, got, spec); err != nil {
		t.Fatal(err)
	}
	got, _ = c.DVS(ctx, id, got.PortGroup.Key)
	if !slices.Equal(got.Hosts, spec.Hosts) {
		t.Fatalf("after NIC edit: %v, want %v", got.Hosts, spec.Hosts)
	}

	if err := c.DeleteDVS(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DVS(ctx, id, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read after delete: %v, want ErrNotFound", err)
	}
	// Nothing left behind: no switch, no port group (the uplink one included).
	networks, err := object.NewSearchIndex(lab.Client().Client).FindByInventoryPath(ctx, "/"+lab.DatacenterName()+"/network/pvrdma-DVUplinks")
	if err != nil || networks != nil {
		t.Fatalf("uplink port group left behind: %v %v", networks, err)
	}
	if err := c.DeleteDVS(ctx, id); err != nil {
		t.Fatalf("deleting a deleted switch: %v", err)
	}
}

func TestDVSReadIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	id, _, err := c.CreateDVS(ctx, labDVSSpec(lab, "pvrdma"))
	if err != nil {
		t.Fatal(err)
	}
	lab.ResetCalls()
	if _, err := c.DVS(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); len(calls) != 1 || calls["RetrievePropertiesEx"] != 1 {
		t.Fatalf("a switch read made %v, want one RetrievePropertiesEx", calls)
	}
}

// A create that fails adding the hosts still returns the switch it made.
func TestCreateDVSFailingHalfWayReturnsTheSwitch(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	lab.FailTaskOnce("ReconfigureDvs_Task", "pvrdma", &types.DvsFault{})
	id, _, err := c.CreateDVS(ctx, labDVSSpec(lab, "pvrdma"))
	if err == nil || id.UUID == "" || id.Ref == "" {
		t.Fatalf("CreateDVS = %+v, %v; want the switch's id and the error", id, err)
	}
	got, err := c.DVS(ctx, id, "")
	if err != nil || len(got.Hosts) != 0 {
		t.Fatalf("the half-made switch: %+v, %v", got, err)
	}
}

func TestDVSVersionsAndPaths(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	versions, err := c.DVSVersions(ctx)
	if err != nil || len(versions) < 2 || CompareVersions(versions[0], versions[len(versions)-1]) >= 0 {
		t.Fatalf("versions = %v, %v", versions, err)
	}
	id, _, err := c.CreateDVS(ctx, labDVSSpec(lab, "pvrdma"))
	if err != nil {
		t.Fatal(err)
	}
	found, err := c.FindDVSByPath(ctx, "/"+lab.DatacenterName()+"/network/pvrdma")
	if err != nil || found.UUID != id.UUID {
		t.Fatalf("FindDVSByPath = %+v, %v; want %s", found, err, id.UUID)
	}
	if _, err := c.FindDVSByPath(ctx, "/"+lab.DatacenterName()+"/network/nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing path: %v", err)
	}
	if !LooksLikeDVSUUID(id.UUID) || !LooksLikeDVSUUID("50 1a 2b 3c 4d 5e 6f 70-81 92 a3 b4 c5 d6 e7 f8") || LooksLikeDVSUUID("/DC0/network/x") {
		t.Fatal("LooksLikeDVSUUID misjudges")
	}
}

// An operation made of several reads is bounded once by the API timeout: the
// switch's host check reads each host, and those reads share one deadline
// instead of each getting the whole timeout (hosts × timeout in the worst
// case).
func TestPlanDVSHostsSharesOneDeadline(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 4})
	ctx := context.Background()
	c := labClient(lab, func(cfg *Config) { cfg.APITimeout = time.Second })
	if _, err := c.DVSVersions(ctx); err != nil { // connect outside the measured operation
		t.Fatal(err)
	}
	var hosts []DVSHost
	for _, h := range lab.HostNames() {
		hosts = append(hosts, DVSHost{HostID: lab.HostID(h), Vmnic: "vmnic4"})
	}
	// Each host read takes 400 ms: within the timeout alone, past it together.
	lab.Delay("RetrievePropertiesEx", 400*time.Millisecond)
	findings := c.PlanDVSHosts(ctx, DVSHostsChange{SwitchName: "rdma", Planned: hosts})
	timedOut := 0
	for _, f := range findings {
		if h, ok := f.(HostNotChecked); ok && errors.Is(h.Err, context.DeadlineExceeded) {
			timedOut++
		}
	}
	if timedOut == 0 {
		t.Fatalf("findings = %#v; want the later hosts refused by the operation's one deadline", findings)
	}
}

func TestPlanDVSNames(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	id, _, err := c.CreateDVS(ctx, labDVSSpec(lab, "rdma"))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(ch DVSNamesChange) []Finding {
		t.Helper()
		ch.DatacenterID = lab.DatacenterID()
		f, err := c.PlanDVSNames(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := plan(DVSNamesChange{SwitchName: "free", PortGroup: "free-vms"}); len(f) != 0 {
		t.Fatalf("free names: %#v", f)
	}
	f := plan(DVSNamesChange{SwitchName: "free", PortGroup: "VM Network"})
	if len(f) != 1 || f[0].(NameTaken).TakenBy != ObjectNetwork || f[0].(NameTaken).For != ObjectPortGroup {
		t.Fatalf(`port group "VM Network": %#v, want NameTaken by the standard network`, f)
	}
	// A switch of the same name that this configuration does not manage is
	// someone else's; one it manages is being replaced.
	if f := plan(DVSNamesChange{SwitchName: "rdma", PortGroup: "rdma-vms"}); len(f) != 2 {
		t.Fatalf("names of an unmanaged switch: %#v, want the switch's and its port group's taken", f)
	}
	c.NoteSwitch(id.UUID)
	if f := plan(DVSNamesChange{SwitchName: "rdma", PortGroup: "rdma-vms"}); len(f) != 0 {
		t.Fatalf("names of the switch being replaced: %#v, want none taken", f)
	}
	if f := plan(DVSNamesChange{SwitchName: "rdma", PortGroup: "rdma-vms", SwitchUUID: id.UUID}); len(f) != 0 {
		t.Fatalf("the switch's own names: %#v", f)
	}
	if _, err := c.PlanDVSNames(ctx, DVSNamesChange{DatacenterID: "DC0", SwitchName: "x", PortGroup: "y"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a datacenter name for its id: %v, want ErrNotFound", err)
	}
}

func TestPlanDVSDelete(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	id, key, err := c.CreateDVS(ctx, labDVSSpec(lab, "rdma"))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := c.PlanDVSDelete(ctx, id); f != nil || err != nil {
		t.Fatalf("unused switch: %#v, %v", f, err)
	}
	d, err := c.DVS(ctx, id, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePVRDMANIC(ctx, lab.VMUUID("hpc-node-0"), PVRDMANICSpec{PortGroupID: d.PortGroup.ID, DeviceProtocol: "rocev2", StartConnected: true}); err != nil {
		t.Fatal(err)
	}
	f, err := c.PlanDVSDelete(ctx, id)
	want := SwitchInUse{Switch: "rdma", Users: []string{`port group "rdma-vms": hpc-node-0 (PVRDMA)`}}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Fatalf("switch in use: %#v, %v; want %#v", f, err, want)
	}
	if f, err := c.PlanDVSDelete(ctx, DVSID{UUID: "00000000-0000-0000-0000-000000000000"}); f != nil || err != nil {
		t.Fatalf("a switch that is gone: %#v, %v; want nothing to say", f, err)
	}
}
