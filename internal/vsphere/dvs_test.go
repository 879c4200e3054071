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

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
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
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	spec := labDVSSpec(lab, "pvrdma")

	id, key, err := c.CreateDVS(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.DVS(ctx, DVSID{UUID: id.UUID}, "") // by UUID alone: no port group picked
	if err != nil {
		t.Fatal(err)
	}
	if got.PortGroup != nil {
		t.Fatalf("a read with no key picked port group %+v", got.PortGroup)
	}
	got.OnlyPortGroup() // as an import that names none does
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
	lab := acctest.StartLab(t, vcsimlab.Options{})
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
	lab := acctest.StartLab(t, vcsimlab.Options{})
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

// A create whose task's end is not read still returns the switch the task
// made, found by its name, with the error.
func TestCreateDVSUnconfirmedReturnsTheSwitch(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	lab.FailRead("Task", &types.HostNotConnected{}, 1) // the create's task: its first read
	id, _, err := c.CreateDVS(ctx, labDVSSpec(lab, "pvrdma"))
	if err == nil || id.UUID == "" || id.Ref == "" {
		t.Fatalf("CreateDVS = %+v, %v; want the switch's id and the error", id, err)
	}
	got, err := c.DVS(ctx, id, "")
	if err != nil || got.Name != "pvrdma" {
		t.Fatalf("the unconfirmed switch: %+v, %v", got, err)
	}
}

// A create whose CreateDVS_Task call lost its answer goes on with the
// switch vCenter made, found by its name once its task ended: the port
// group and hosts are added, with no error. One lost on its way fails, and
// made nothing.
func TestCreateDVSAnswerLost(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	lab.LoseConnection("CreateDVS_Task", 1, false)
	if id, _, err := c.CreateDVS(ctx, labDVSSpec(lab, "lost")); err == nil || id.UUID != "" {
		t.Fatalf("a create lost on its way: %+v, %v; want no switch and the error", id, err)
	}
	vc, err := c.vimClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, found := c.createdDVS(ctx, vc, lab.DatacenterID(), "lost"); found {
		t.Fatal("a create lost on its way made a switch")
	}
	lab.LoseConnection("CreateDVS_Task", 1, true)
	id, key, err := c.CreateDVS(ctx, labDVSSpec(lab, "pvrdma"))
	if err != nil || id.UUID == "" || key == "" {
		t.Fatalf("a create whose answer was lost: %+v, %q, %v; want the switch made, with its port group", id, key, err)
	}
	got, err := c.DVS(ctx, id, "")
	if err != nil || got.Name != "pvrdma" || len(got.Hosts) != len(lab.HostNames()) {
		t.Fatalf("the switch: %+v, %v; want all hosts on it", got, err)
	}
}

func TestDVSVersionsAndPaths(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
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
	lab := acctest.StartLab(t, vcsimlab.Options{Hosts: 4})
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
	findings := c.planDVSHosts(ctx, DVSHostsChange{SwitchName: "rdma", Planned: hosts})
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
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	id, key, err := c.CreateDVS(ctx, labDVSSpec(lab, "rdma"))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(ch DVSNamesChange) []Finding {
		t.Helper()
		ch.DatacenterID = lab.DatacenterID()
		f, err := c.planDVSNames(ctx, ch)
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
	if f := plan(DVSNamesChange{SwitchName: "rdma", PortGroup: "rdma-vms", Managed: []string{strings.ToUpper(id.UUID)}}); len(f) != 0 {
		t.Fatalf("names of the switch being replaced: %#v, want none taken", f)
	}
	if f := plan(DVSNamesChange{SwitchName: "rdma", PortGroup: "rdma-vms", SwitchUUID: id.UUID, PortGroupKey: key}); len(f) != 0 {
		t.Fatalf("the switch's own names: %#v", f)
	}
	// Adopted without its port group, the switch's port groups are not the
	// resource's: their names are taken.
	if f := plan(DVSNamesChange{SwitchName: "rdma", PortGroup: "rdma-vms", SwitchUUID: id.UUID}); len(f) != 1 ||
		f[0].(NameTaken).For != ObjectPortGroup {
		t.Fatalf("a port group of the switch that the resource does not manage: %#v, want its name taken", f)
	}
	if _, err := c.planDVSNames(ctx, DVSNamesChange{DatacenterID: "DC0", SwitchName: "x", PortGroup: "y"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a datacenter name for its id: %v, want ErrNotFound", err)
	}
}

func TestPlanDVSDelete(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	id, key, err := c.CreateDVS(ctx, labDVSSpec(lab, "rdma"))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := c.PlanDVSDelete(ctx, id, nil); f != nil || err != nil {
		t.Fatalf("unused switch: %#v, %v", f, err)
	}
	d, err := c.DVS(ctx, id, key)
	if err != nil {
		t.Fatal(err)
	}
	spec := PVRDMANICSpec{PortGroupID: d.PortGroup.ID, DeviceProtocol: "rocev2", StartConnected: true}
	if _, err := c.CreatePVRDMANIC(ctx, lab.VMUUID("hpc-node-0"), spec); err != nil {
		t.Fatal(err)
	}
	f, err := c.PlanDVSDelete(ctx, id, nil)
	inUse, ok := f.(SwitchInUse)
	if err != nil || !ok || inUse.Switch != "rdma" || DescribeSwitchUsers(inUse.Users) != `port group "rdma-vms": hpc-node-0 (PVRDMA)` {
		t.Fatalf("switch in use: %#v, %v", f, err)
	}
	// The adapter destroyed in the same plan leaves nothing in use; one on
	// another port group does not count.
	vm := lab.VMUUID("hpc-node-0")
	if f, err := c.PlanDVSDelete(ctx, id, Leaving{{VM: strings.ToUpper(vm), PortGroupID: d.PortGroup.ID}}); f != nil || err != nil {
		t.Fatalf("the adapter leaves: %#v, %v; want nothing in use", f, err)
	}
	if f, _ := c.PlanDVSDelete(ctx, id, Leaving{{VM: vm, PortGroupID: "dvportgroup-0"}}); f == nil {
		t.Fatal("an adapter on another port group leaves: want the switch in use")
	}
	if f, err := c.PlanDVSDelete(ctx, DVSID{UUID: "00000000-0000-0000-0000-000000000000"}, nil); f != nil || err != nil {
		t.Fatalf("a switch that is gone: %#v, %v; want nothing to say", f, err)
	}
}

// The ESXi check: a host joins only a switch of its ESXi version or older,
// and a switch is upgraded only to a version all its members run; the
// finding names the host, its ESXi and the newest version it can run. A plan
// that changes no membership and no version asks vCenter nothing.
func TestPlanDVSHostsChecksESXiVersions(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{HostVersions: map[int]string{2: "7.0.3"}})
	ctx := context.Background()
	c := labClient(lab)
	spec := labDVSSpec(lab, "rdma")
	old := lab.HostNames()[2]
	oldID := lab.HostID(old)
	tooOld := func(version, newest string, member bool) HostTooOld {
		return HostTooOld{HostID: oldID, Host: old, ESXi: "7.0.3", Version: version, Newest: newest, Member: member}
	}
	versionFindings := func(ch DVSHostsChange) []Finding {
		t.Helper()
		var out []Finding
		for _, f := range c.planDVSHosts(ctx, ch) {
			switch f.(type) {
			case HostTooOld, HostNotChecked:
				out = append(out, f)
			}
		}
		return out
	}

	// A new switch.
	lab.ResetCalls()
	got := versionFindings(DVSHostsChange{SwitchName: "rdma", Planned: spec.Hosts, Version: "8.0.3"})
	if want := []Finding{tooOld("8.0.3", "7.0.3", false)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("new switch 8.0.3: %#v, want %#v", got, want)
	}
	if got := versionFindings(DVSHostsChange{SwitchName: "rdma", Planned: spec.Hosts, Version: "7.0.3"}); len(got) != 0 {
		t.Fatalf("new switch 7.0.3: %#v, want none", got)
	}
	lab.ResetCalls()
	versionFindings(DVSHostsChange{SwitchName: "rdma", Planned: spec.Hosts, Version: "7.0.3"})
	// The hosts' ESXi comes with the NIC check's one read per host.
	if calls := lab.Calls(); calls["QueryDvsCompatibleHostSpec"] != 1 || calls["QueryAvailableDvsSpec"] != 0 ||
		calls["RetrievePropertiesEx"] != len(spec.Hosts) {
		t.Errorf("a passing check made %v; want the NIC check's reads and one query", calls)
	}

	// An existing switch at 7.0.3 with every host: no upgrade past the old one.
	spec.Version = "7.0.3"
	id, _, err := c.CreateDVS(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.DVS(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	upgrade := DVSHostsChange{SwitchName: "rdma", SwitchUUID: id.UUID, Current: d.Hosts, Planned: d.Hosts, CurrentVersion: "7.0.3", Version: "8.0.0"}
	lab.ResetCalls()
	if got, want := versionFindings(upgrade), []Finding{tooOld("8.0.0", "7.0.3", true)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("upgrade to 8.0.0: %#v, want %#v", got, want)
	}
	// The members are read in one round trip.
	if n := lab.Calls()["RetrievePropertiesEx"]; n != 1 {
		t.Errorf("the upgrade's check read the members in %d calls, want 1", n)
	}
	lab.ResetCalls()
	same := upgrade
	same.Version = "7.0.3"
	if got := versionFindings(same); len(got) != 0 || len(lab.Calls()) != 0 {
		t.Fatalf("no change: %#v, calls %v; want nothing asked", got, lab.Calls())
	}
	if err := c.DeleteDVS(ctx, id); err != nil {
		t.Fatal(err)
	}

	// An existing switch at 8.0.3 without the old host: it cannot join.
	spec.Version = "8.0.3"
	spec.Hosts = slices.DeleteFunc(spec.Hosts, func(h DVSHost) bool { return h.HostID == oldID })
	id, _, err = c.CreateDVS(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	d, err = c.DVS(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	add := DVSHostsChange{
		SwitchName:     "rdma",
		SwitchUUID:     id.UUID,
		Current:        d.Hosts,
		Planned:        append(slices.Clone(d.Hosts), DVSHost{HostID: oldID, Vmnic: "vmnic4"}),
		CurrentVersion: "8.0.3",
		Version:        "8.0.3",
	}
	if got, want := versionFindings(add), []Finding{tooOld("8.0.3", "7.0.3", false)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("add the old host: %#v, want %#v", got, want)
	}
	// A host that does not exist is the NIC check's to report, once.
	add.Planned = append(add.Planned[:len(add.Planned)-1], DVSHost{HostID: "host-99999", Vmnic: "vmnic4"})
	if got := versionFindings(add); len(got) != 1 || !errors.Is(got[0].(HostNotChecked).Err, ErrNotFound) {
		t.Fatalf("a missing host: %#v, want one HostNotChecked", got)
	}
}

// Which host products a switch accepts: those of a listed version or later,
// whether vCenter lists releases or version lines.
func TestRunsSwitch(t *testing.T) {
	t.Parallel()
	esxi := func(v string) types.AboutInfo { return types.AboutInfo{ProductLineId: "embeddedEsx", Version: v} }
	spec := func(v string) types.DistributedVirtualSwitchHostProductSpec {
		return types.DistributedVirtualSwitchHostProductSpec{ProductLineId: "embeddedEsx", Version: v}
	}
	for _, tc := range []struct {
		accepted []types.DistributedVirtualSwitchHostProductSpec
		host     types.AboutInfo
		want     bool
	}{
		{[]types.DistributedVirtualSwitchHostProductSpec{spec("8.0.3")}, esxi("8.0.3"), true},
		{[]types.DistributedVirtualSwitchHostProductSpec{spec("8.0.3")}, esxi("8.0.2"), false},
		{[]types.DistributedVirtualSwitchHostProductSpec{spec("8.0")}, esxi("8.0.2"), true},
		{[]types.DistributedVirtualSwitchHostProductSpec{spec("8.0")}, esxi("8.0"), true},
		{[]types.DistributedVirtualSwitchHostProductSpec{spec("8.0")}, esxi("7.0.3"), false},
		{[]types.DistributedVirtualSwitchHostProductSpec{spec("7.0.0"), spec("8.0.3")}, esxi("7.0.3"), true},
		{[]types.DistributedVirtualSwitchHostProductSpec{spec("8.0.3")}, esxi("9.0.0"), true},
		{[]types.DistributedVirtualSwitchHostProductSpec{{ProductLineId: "other", Version: "8.0.3"}}, esxi("8.0.3"), false},
		{nil, esxi("8.0.3"), false},
	} {
		if got := runsSwitch(tc.accepted, tc.host); got != tc.want {
			t.Errorf("runsSwitch(%v, %s) = %v, want %v", tc.accepted, tc.host.Version, got, tc.want)
		}
	}
}

// A switch created with the names of a switch that this process renames
// (its plan said so) waits for that switch's update to end, whatever order
// the two are applied in: created first, it would be refused with
// DuplicateName. A failed update fails the create, naming the switch.
func TestCreateDVSWaitsForTheSwitchWhoseNamesItTakes(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	createTaking := func(spec DVSSpec, holder DVSID) <-chan error {
		t.Helper()
		c.ExpectSwitchRename(holder.UUID) // as the holder's plan does
		for i := range spec.Hosts {
			spec.Hosts[i].Vmnic = "vmnic5"
		}
		created := make(chan error, 1)
		go func() { _, _, err := c.CreateDVS(ctx, spec); created <- err }()
		// Until the create waits (or, without waiting, ends): no timing.
		for c.applies.waiting(holder.UUID) == 0 {
			select {
			case err := <-created:
				t.Fatalf("the create of %s did not wait for switch %s: %v", spec.Name, holder.UUID, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		return created
	}
	rename := func(id DVSID, spec DVSSpec, name string) error {
		t.Helper()
		current, err := c.DVS(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		current.OnlyPortGroup()
		spec.Name, spec.PortGroup.Name = name, name+"-vms"
		_, err = c.UpdateDVS(ctx, current, spec)
		return err
	}

	spec := labDVSSpec(lab, "rdma")
	id, _, err := c.CreateDVS(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	created := createTaking(spec, id)
	if err := rename(id, spec, "rdma-old"); err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatalf("the create waiting for the rename: %v", err)
	}
	for name, want := range map[string]int{"rdma": 1, "rdma-old": 1, "rdma-vms": 1, "rdma-old-vms": 1} {
		if got, err := lab.CountNetworks(ctx, name); err != nil || got != want {
			t.Errorf("%d networks named %s (%v), want %d", got, name, err, want)
		}
	}

	// The holder's update fails: so does the create, naming it.
	spec = labDVSSpec(lab, "other")
	spec.Hosts = nil
	other, _, err := c.CreateDVS(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	created = createTaking(spec, other)
	lab.FailTaskOnce("ReconfigureDvs_Task", "other", &types.DvsFault{})
	if err := rename(other, spec, "other-old"); err == nil {
		t.Fatal("the failing rename: no error")
	}
	if err := <-created; err == nil ||
		!strings.Contains(err.Error(), "switch "+other.UUID+", whose name (or port group name) this switch takes, was not renamed: its update failed") {
		t.Fatalf("the create after a failed rename: %v", err)
	}
}
