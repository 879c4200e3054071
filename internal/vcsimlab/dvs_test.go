package vcsimlab

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func (l *lab) networkFolder() *object.Folder {
	l.t.Helper()
	fs, err := object.NewDatacenter(l.c.Client, types.ManagedObjectReference{Type: "Datacenter", Value: l.DatacenterID()}).Folders(context.Background())
	if err != nil {
		l.t.Fatal(err)
	}
	return fs.NetworkFolder
}

// createDVS creates a switch version 8.0.0 with 4 uplinks and MTU 9000.
func (l *lab) createDVS(name string) *object.DistributedVirtualSwitch {
	l.t.Helper()
	return l.createDVSVersion(name, "8.0.0")
}

// createDVSVersion creates a switch of the given version; "" sends no
// productInfo.
func (l *lab) createDVSVersion(name, version string) *object.DistributedVirtualSwitch {
	l.t.Helper()
	ctx := context.Background()
	spec := types.DVSCreateSpec{
		ConfigSpec: &types.VMwareDVSConfigSpec{
			DVSConfigSpec: types.DVSConfigSpec{
				Name:             name,
				UplinkPortPolicy: &types.DVSNameArrayUplinkPortPolicy{UplinkPortName: []string{"uplink1", "uplink2", "uplink3", "uplink4"}},
			},
			MaxMtu: 9000,
		},
	}
	if version != "" {
		spec.ProductInfo = &types.DistributedVirtualSwitchProductSpec{Version: version}
	}
	task, err := l.networkFolder().CreateDVS(ctx, spec)
	if err != nil {
		l.t.Fatal(err)
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	return object.NewDistributedVirtualSwitch(l.c.Client, info.Result.(types.ManagedObjectReference))
}

func (l *lab) dvs(s *object.DistributedVirtualSwitch) mo.DistributedVirtualSwitch {
	l.t.Helper()
	var out mo.DistributedVirtualSwitch
	retrieve(l.t, l.Client(), s.Reference(), []string{"name", "config", "summary", "portgroup"}, &out)
	return out
}

func (l *lab) configVersion(s *object.DistributedVirtualSwitch) string {
	return l.dvs(s).Config.GetDVSConfigInfo().ConfigVersion
}

// reconfigure sends spec with the switch's current configVersion and waits.
func (l *lab) reconfigure(s *object.DistributedVirtualSwitch, spec *types.VMwareDVSConfigSpec) error {
	l.t.Helper()
	if spec.ConfigVersion == "" {
		spec.ConfigVersion = l.configVersion(s)
	}
	task, err := s.Reconfigure(context.Background(), spec)
	if err != nil {
		l.t.Fatalf("ReconfigureDvs_Task call: %v", err)
	}
	return task.Wait(context.Background())
}

// switchWithHosts creates a switch with every host on vmnic4 and a port
// group, and returns the port group.
func (l *lab) switchWithHosts(name string) (*object.DistributedVirtualSwitch, types.ManagedObjectReference) {
	l.t.Helper()
	s := l.createDVS(name)
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", l.allHosts()...),
	}}); err != nil {
		l.t.Fatal(err)
	}
	return s, l.createPortgroup(s, name+"-pg")
}

// A switch created without a version gets the newest vCenter supports, as
// vCenter does, in config and summary alike.
func TestCreateDVSWithoutVersionGetsTheNewest(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.dvs(l.createDVSVersion("no-version", ""))
	cfg := s.Config.GetDVSConfigInfo()
	if cfg.ProductInfo.Version != "8.0.3" || s.Summary.ProductInfo == nil || s.Summary.ProductInfo.Version != "8.0.3" ||
		cfg.ProductInfo.Vendor != "VMware, Inc." {
		t.Fatalf("productInfo %+v, summary %+v; want version 8.0.3", cfg.ProductInfo, s.Summary.ProductInfo)
	}
}

func TestCreateDVSFillsConfig(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.dvs(l.createDVS("pvrdma-dvs"))
	cfg := s.Config.(*types.VMwareDVSConfigInfo)
	if cfg.ProductInfo.Version != "8.0.0" || cfg.ConfigVersion != "1" || cfg.MaxMtu != 9000 {
		t.Errorf("config: version %q configVersion %q maxMtu %d", cfg.ProductInfo.Version, cfg.ConfigVersion, cfg.MaxMtu)
	}
	if len(cfg.UplinkPortgroup) != 1 || !slices.Contains(s.Portgroup, cfg.UplinkPortgroup[0]) {
		t.Fatalf("uplinkPortgroup %v, portgroups %v", cfg.UplinkPortgroup, s.Portgroup)
	}
	var uplink mo.DistributedVirtualPortgroup
	retrieve(t, l.Client(), cfg.UplinkPortgroup[0], []string{"config"}, &uplink)
	if uplink.Config.Uplink == nil || !*uplink.Config.Uplink {
		t.Error("the uplink port group is not marked as such")
	}
}

func TestCreateDVSWithHosts(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	create := func(name, version string, hosts []types.DistributedVirtualSwitchHostMemberConfigSpec) (types.ManagedObjectReference, error) {
		spec := types.DVSCreateSpec{
			ConfigSpec:  &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Name: name, Host: hosts}},
			ProductInfo: &types.DistributedVirtualSwitchProductSpec{Version: version},
		}
		task, err := l.networkFolder().CreateDVS(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		info, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return types.ManagedObjectReference{}, err
		}
		return info.Result.(types.ManagedObjectReference), nil
	}
	ref, err := create("with-hosts", "8.0.3", l.members(types.ConfigSpecOperationAdd, "vmnic5", l.allHosts()...))
	if err != nil {
		t.Fatal(err)
	}
	s := l.dvs(object.NewDistributedVirtualSwitch(l.c.Client, ref))
	if n := len(s.Config.GetDVSConfigInfo().Host); n != 3 || len(s.Summary.HostMember) != 3 {
		t.Errorf("%d members in config, %d in summary; want 3", n, len(s.Summary.HostMember))
	}
	if ps := l.proxySwitches(2); len(ps) != 1 || !slices.Equal(ps[0].Pnic, []string{"key-vim.host.PhysicalNic-vmnic5"}) {
		t.Errorf("host 2 proxy switches %+v, want the switch on vmnic5", ps)
	}
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l.Lab, 0), []string{"network"}, &h)
	if !slices.Contains(h.Network, s.Portgroup[0]) {
		t.Errorf("host networks %v lack the uplink port group", h.Network)
	}

	_, err = create("bad-pnic", "8.0.3", l.members(types.ConfigSpecOperationAdd, "vmnic5", 0))
	wantFault(t, "uplink of another switch", err, &types.ResourceInUse{})
	_, err = create("bad-version", "6.0.0", nil)
	wantFault(t, "unsupported version", err, &types.InvalidArgument{})
	_, err = create("with-hosts", "8.0.3", nil)
	wantFault(t, "duplicate name", err, &types.DuplicateName{})
}

func TestReconfigureDVSAppliesConfig(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("pvrdma-dvs")
	err := l.reconfigure(s, &types.VMwareDVSConfigSpec{
		DVSConfigSpec: types.DVSConfigSpec{
			Name:             "renamed",
			Description:      "for PVRDMA",
			UplinkPortPolicy: &types.DVSNameArrayUplinkPortPolicy{UplinkPortName: []string{"hca"}},
		},
		MaxMtu: 1500,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := l.dvs(s)
	cfg := got.Config.(*types.VMwareDVSConfigInfo)
	names := cfg.UplinkPortPolicy.(*types.DVSNameArrayUplinkPortPolicy).UplinkPortName
	if cfg.MaxMtu != 1500 || cfg.Description != "for PVRDMA" || !slices.Equal(names, []string{"hca"}) || cfg.ConfigVersion != "2" {
		t.Errorf("after reconfigure: mtu %d description %q uplinks %v configVersion %q", cfg.MaxMtu, cfg.Description, names, cfg.ConfigVersion)
	}
	if got.Name != "renamed" || cfg.Name != "renamed" || got.Summary.Name != "renamed" {
		t.Errorf("rename: entity %q config %q summary %q", got.Name, cfg.Name, got.Summary.Name)
	}
	// Unset fields keep their value.
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Description: "again"}}); err != nil {
		t.Fatal(err)
	}
	if cfg := l.dvs(s).Config.(*types.VMwareDVSConfigInfo); cfg.MaxMtu != 1500 || cfg.Name != "renamed" {
		t.Errorf("a partial spec reset fields: mtu %d name %q", cfg.MaxMtu, cfg.Name)
	}
}

func TestReconfigureDVSChecksConfigVersion(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("pvrdma-dvs")
	stale := l.configVersion(s)
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{MaxMtu: 9000}); err != nil {
		t.Fatal(err)
	}
	err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{ConfigVersion: stale}, MaxMtu: 1500})
	wantFault(t, "stale configVersion", err, &types.ConcurrentAccess{})
	if mtu := l.dvs(s).Config.(*types.VMwareDVSConfigInfo).MaxMtu; mtu != 9000 {
		t.Errorf("a refused reconfigure changed the MTU to %d", mtu)
	}
	for _, mtu := range []int32{1279, 9001} {
		wantFault(t, "MTU out of range", l.reconfigure(s, &types.VMwareDVSConfigSpec{MaxMtu: mtu}), &types.InvalidArgument{})
	}
}

func TestEnableNetworkResourceManagement(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("pvrdma-dvs")
	for _, on := range []bool{true, false} {
		req := &types.EnableNetworkResourceManagement{This: s.Reference(), Enable: on}
		if _, err := methods.EnableNetworkResourceManagement(context.Background(), l.c.Client, req); err != nil {
			t.Fatal(err)
		}
		if got := l.dvs(s).Config.GetDVSConfigInfo().NetworkResourceManagementEnabled; got != on {
			t.Errorf("NIOC = %v, want %v", got, on)
		}
	}
}

func TestUpgradeDVS(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("pvrdma-dvs")
	upgrade := func(op, version string) error {
		res, err := methods.PerformDvsProductSpecOperation_Task(context.Background(), l.c.Client, &types.PerformDvsProductSpecOperation_Task{
			This: s.Reference(), Operation: op, ProductSpec: &types.DistributedVirtualSwitchProductSpec{Version: version},
		})
		if err != nil {
			t.Fatal(err)
		}
		return object.NewTask(l.c.Client, res.Returnval).Wait(context.Background())
	}
	if err := upgrade("upgrade", "8.0.3"); err != nil {
		t.Fatal(err)
	}
	got := l.dvs(s)
	if got.Config.GetDVSConfigInfo().ProductInfo.Version != "8.0.3" || got.Summary.ProductInfo.Version != "8.0.3" {
		t.Errorf("after upgrade: config %q summary %q", got.Config.GetDVSConfigInfo().ProductInfo.Version, got.Summary.ProductInfo.Version)
	}
	wantFault(t, "downgrade", upgrade("upgrade", "8.0.0"), &types.InvalidArgument{})
	wantFault(t, "same version", upgrade("upgrade", "8.0.3"), &types.InvalidArgument{})
	wantFault(t, "unknown version", upgrade("upgrade", "9.9.9"), &types.InvalidArgument{})
	wantFault(t, "other operation", upgrade("preInstall", "8.0.3"), &types.NotSupported{})
}

func TestDestroyDVS(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	s, pg := l.switchWithHosts("pvrdma-dvs")
	uplink := l.dvs(s).Config.GetDVSConfigInfo().UplinkPortgroup[0]
	l.addVrdma("hpc-node-0", s, pg, "rocev2")

	task, err := s.Destroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantFault(t, "destroy a switch in use", task.Wait(ctx), &types.ResourceInUse{})

	l.removeVrdma("hpc-node-0")
	task, err = s.Destroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []types.ManagedObjectReference{s.Reference(), uplink, pg} {
		var e mo.ManagedEntity
		err := tryRetrieve(l.c, ref, []string{"name"}, &e)
		wantFault(t, "read "+ref.String()+" after destroy", err, &types.ManagedObjectNotFound{})
	}
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l.Lab, 0), []string{"network"}, &h)
	if slices.Contains(h.Network, pg) || slices.Contains(h.Network, uplink) || len(l.proxySwitches(0)) != 0 {
		t.Errorf("host 0 still lists the switch: networks %v, proxy switches %v", h.Network, l.proxySwitches(0))
	}
}

func TestDVSManagerQueries(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	s := l.createDVS("pvrdma-dvs")
	uuid := l.dvs(s).Config.GetDVSConfigInfo().Uuid
	m := *l.c.ServiceContent.DvSwitchManager
	res, err := methods.QueryDvsByUuid(ctx, l.c.Client, &types.QueryDvsByUuid{This: m, Uuid: uuid})
	if err != nil || res.Returnval == nil || *res.Returnval != s.Reference() {
		t.Errorf("QueryDvsByUuid = %v, %v; want %v", res, err, s.Reference())
	}
	_, err = methods.QueryDvsByUuid(ctx, l.c.Client, &types.QueryDvsByUuid{This: m, Uuid: "00 00"})
	wantFault(t, "unknown UUID", err, &types.NotFound{})

	specs, err := methods.QueryAvailableDvsSpec(ctx, l.c.Client, &types.QueryAvailableDvsSpec{This: m})
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, p := range specs.Returnval {
		versions = append(versions, p.Version)
	}
	if !slices.Contains(versions, "8.0.3") || !slices.Contains(versions, "8.0.0") {
		t.Errorf("available versions %v", versions)
	}
}
