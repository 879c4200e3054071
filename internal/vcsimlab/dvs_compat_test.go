package vcsimlab

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// oldHostLab is a lab whose third host runs ESXi 7.0.3.
func oldHostLab(t *testing.T) *lab {
	t.Helper()
	l, err := Start(context.Background(), Options{HostVersions: map[int]string{2: "7.0.3"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return &lab{Lab: l, t: t, c: newClient(t, l)}
}

func (l *lab) hostProduct(i int) (types.AboutInfo, *types.AboutInfo) {
	l.t.Helper()
	var h mo.HostSystem
	retrieve(l.t, l.c, hostRef(l.Lab, i), []string{"config.product", "summary.config.product"}, &h)
	return h.Config.Product, h.Summary.Config.Product
}

func TestHostVersions(t *testing.T) {
	t.Parallel()
	l := oldHostLab(t)
	for i, want := range []string{"8.0.3", "8.0.3", "7.0.3"} {
		cfg, summary := l.hostProduct(i)
		if cfg.Version != want || summary == nil || *summary != cfg || cfg.ProductLineId != "embeddedEsx" || cfg.ApiVersion != want+".0" {
			t.Errorf("host %d: config.product %+v, summary.config.product %+v; want ESXi %s in both", i, cfg, summary, want)
		}
	}
	if cfg, _ := l.hostProduct(0); cfg.Build != "24022510" || cfg.FullName != "VMware ESXi 8.0.3 build-24022510" {
		t.Errorf("ESXi 8.0.3 build %q (%q)", cfg.Build, cfg.FullName)
	}

	for _, opts := range []Options{
		{HostVersions: map[int]string{3: "7.0.3"}},
		{HostVersions: map[int]string{-1: "7.0.3"}},
		{HostVersions: map[int]string{0: "6.7.0"}},
	} {
		if l, err := Start(context.Background(), opts); err == nil {
			l.Close()
			t.Errorf("Start(%v) succeeded, want an error", opts.HostVersions)
		}
	}
}

func TestQueryDvsCompatibleHostSpec(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	query := func(spec *types.DistributedVirtualSwitchProductSpec) []string {
		t.Helper()
		res, err := methods.QueryDvsCompatibleHostSpec(context.Background(), l.c.Client, &types.QueryDvsCompatibleHostSpec{
			This: *l.c.ServiceContent.DvSwitchManager, SwitchProductSpec: spec,
		})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range res.Returnval {
			if p.ProductLineId != "embeddedEsx" {
				t.Errorf("product line %q", p.ProductLineId)
			}
			out = append(out, p.Version)
		}
		return out
	}
	if got := query(&types.DistributedVirtualSwitchProductSpec{Version: "8.0.0"}); !slices.Equal(got, []string{"8.0.0", "8.0.1", "8.0.2", "8.0.3"}) {
		t.Errorf("a switch 8.0.0 accepts %v", got)
	}
	if got := query(&types.DistributedVirtualSwitchProductSpec{Version: "7.0.3"}); !slices.Equal(
		got,
		[]string{"7.0.3", "8.0.0", "8.0.1", "8.0.2", "8.0.3"},
	) {
		t.Errorf("a switch 7.0.3 accepts %v", got)
	}
	// Unset: the version a switch is created with, the newest.
	if got := query(nil); !slices.Equal(got, []string{"8.0.3"}) {
		t.Errorf("the default switch accepts %v", got)
	}
}

func TestQueryCompatibleHosts(t *testing.T) {
	t.Parallel()
	l := oldHostLab(t)
	ctx := context.Background()
	m := *l.c.ServiceContent.DvSwitchManager
	dc := types.ManagedObjectReference{Type: "Datacenter", Value: l.DatacenterID()}
	var names []string
	for i := range l.HostNames() {
		names = append(names, hostRef(l.Lab, i).Value)
	}
	values := func(refs []types.ManagedObjectReference) []string {
		var out []string
		for _, r := range refs {
			out = append(out, r.Value)
		}
		slices.Sort(out)
		return out
	}
	slices.Sort(names)
	newDvs := func(container types.ManagedObjectReference, recursive bool, version string) ([]string, error) {
		res, err := methods.QueryCompatibleHostForNewDvs(ctx, l.c.Client, &types.QueryCompatibleHostForNewDvs{
			This: m, Container: container, Recursive: recursive, SwitchProductSpec: &types.DistributedVirtualSwitchProductSpec{Version: version},
		})
		if err != nil {
			return nil, err
		}
		return values(res.Returnval), nil
	}
	young := []string{hostRef(l.Lab, 0).Value, hostRef(l.Lab, 1).Value}
	slices.Sort(young)
	if got, err := newDvs(dc, true, "8.0.3"); err != nil || !slices.Equal(got, young) {
		t.Errorf("hosts for a new switch 8.0.3: %v, %v; want %v", got, err, young)
	}
	if got, err := newDvs(dc, true, "7.0.3"); err != nil || !slices.Equal(got, names) {
		t.Errorf("hosts for a new switch 7.0.3: %v, %v; want all", got, err)
	}
	// The datacenter's host folder holds the cluster itself: found without
	// recursion too.
	if got, err := newDvs(dc, false, "7.0.3"); err != nil || !slices.Equal(got, names) {
		t.Errorf("hosts of the datacenter's own level: %v, %v; want all", got, err)
	}
	var h mo.HostSystem
	retrieve(t, l.c, hostRef(l.Lab, 0), []string{"parent"}, &h)
	if got, err := newDvs(*h.Parent, false, "8.0.0"); err != nil || !slices.Equal(got, young) {
		t.Errorf("hosts of the cluster for a switch 8.0.0: %v, %v; want %v", got, err, young)
	}
	_, err := newDvs(types.ManagedObjectReference{Type: "Folder", Value: "group-x"}, true, "8.0.3")
	wantFault(t, "unknown container", err, &types.ManagedObjectNotFound{})

	s := l.createDVSVersion("old", "7.0.3")
	res, err := methods.QueryCompatibleHostForExistingDvs(
		ctx,
		l.c.Client,
		&types.QueryCompatibleHostForExistingDvs{This: m, Container: dc, Recursive: true, Dvs: s.Reference()},
	)
	if err != nil || !slices.Equal(values(res.Returnval), names) {
		t.Errorf("hosts for the switch 7.0.3: %v, %v; want all", res, err)
	}
	upgrade(t, l, s, "8.0.0")
	res, err = methods.QueryCompatibleHostForExistingDvs(
		ctx,
		l.c.Client,
		&types.QueryCompatibleHostForExistingDvs{This: m, Container: dc, Recursive: true, Dvs: s.Reference()},
	)
	if err != nil || !slices.Equal(values(res.Returnval), young) {
		t.Errorf("hosts for the switch upgraded to 8.0.0: %v, %v; want %v", res, err, young)
	}
}

// upgrade upgrades a switch and waits; the call's own fault fails the test.
func upgrade(t *testing.T, l *lab, s *object.DistributedVirtualSwitch, version string) {
	t.Helper()
	if err := tryUpgrade(l, s, version); err != nil {
		t.Fatal(err)
	}
}

func tryUpgrade(l *lab, s *object.DistributedVirtualSwitch, version string) error {
	res, err := methods.PerformDvsProductSpecOperation_Task(context.Background(), l.c.Client, &types.PerformDvsProductSpecOperation_Task{
		This: s.Reference(), Operation: "upgrade", ProductSpec: &types.DistributedVirtualSwitchProductSpec{Version: version},
	})
	if err != nil {
		return err
	}
	return object.NewTask(l.c.Client, res.Returnval).Wait(context.Background())
}

// The switch publishes the host products it accepts, and follows upgrades.
func TestDVSCapabilityListsCompatibleHosts(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVSVersion("pvrdma", "8.0.0")
	versions := func() []string {
		var out mo.DistributedVirtualSwitch
		retrieve(t, l.c, s.Reference(), []string{"capability"}, &out)
		var v []string
		for _, p := range out.Capability.CompatibleHostComponentProductInfo {
			v = append(v, p.Version)
		}
		return v
	}
	if got := versions(); !slices.Equal(got, []string{"8.0.0", "8.0.1", "8.0.2", "8.0.3"}) {
		t.Errorf("a switch 8.0.0 lists %v", got)
	}
	upgrade(t, l, s, "8.0.3")
	if got := versions(); !slices.Equal(got, []string{"8.0.3"}) {
		t.Errorf("after the upgrade to 8.0.3: %v", got)
	}
}

// A host older than the switch is refused with NotSupported when the switch
// is created with it, when it is added, and when the switch is upgraded past
// it; nothing changes.
func TestHostTooOldForSwitchIsRefused(t *testing.T) {
	t.Parallel()
	l := oldHostLab(t)
	ctx := context.Background()
	create := func(name, version string, hosts ...int) (*object.DistributedVirtualSwitch, error) {
		spec := types.DVSCreateSpec{ConfigSpec: &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
			Name: name, Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", hosts...),
			UplinkPortPolicy: &types.DVSNameArrayUplinkPortPolicy{UplinkPortName: []string{"uplink1"}},
		}}}
		if version != "" {
			spec.ProductInfo = &types.DistributedVirtualSwitchProductSpec{Version: version}
		}
		task, err := l.networkFolder().CreateDVS(ctx, spec)
		if err != nil {
			return nil, err
		}
		info, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return nil, err
		}
		return object.NewDistributedVirtualSwitch(l.c.Client, info.Result.(types.ManagedObjectReference)), nil
	}
	_, err := create("too-new", "8.0.0", 0, 2)
	wantFault(t, "create 8.0.0 with an ESXi 7.0.3 host", err, &types.NotSupported{})
	if err != nil && !strings.Contains(err.Error(), "The operation is not supported on the object.") {
		t.Errorf("message %q, want vCenter's", err)
	}
	_, err = create("default", "", 2)
	wantFault(t, "create at the newest version with an ESXi 7.0.3 host", err, &types.NotSupported{})
	if n, err := l.CountNetworks(ctx, "too-new*"); err != nil || n != 0 {
		t.Errorf("a refused create left %d networks (%v)", n, err)
	}

	s, err := create("pvrdma", "7.0.3", 0, 2)
	if err != nil {
		t.Fatalf("create 7.0.3 with an ESXi 7.0.3 host: %v", err)
	}
	// The upgrade past the member is refused; the switch stays.
	wantFault(t, "upgrade past a member", tryUpgrade(l, s, "8.0.0"), &types.NotSupported{})
	if v := l.dvs(s).Config.GetDVSConfigInfo().ProductInfo.Version; v != "7.0.3" {
		t.Errorf("a refused upgrade left version %s", v)
	}

	// Adding the old host to a newer switch is refused; a young host joins.
	newer, err := create("newer", "8.0.3", 1)
	if err != nil {
		t.Fatal(err)
	}
	before := l.configVersion(newer)
	add := func(i int) error {
		task, err := newer.Reconfigure(ctx, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
			ConfigVersion: l.configVersion(newer), Host: l.members(types.ConfigSpecOperationAdd, "vmnic5", i),
		}})
		if err != nil {
			return err
		}
		return task.Wait(ctx)
	}
	wantFault(t, "add an ESXi 7.0.3 host to an 8.0.3 switch", add(2), &types.NotSupported{})
	if got := l.dvs(newer); len(got.Summary.HostMember) != 1 || l.configVersion(newer) != before {
		t.Errorf("a refused add changed the switch: members %v, configVersion %s", got.Summary.HostMember, l.configVersion(newer))
	}
	if err := add(0); err != nil {
		t.Fatalf("add an ESXi 8.0.3 host: %v", err)
	}
}
