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

func (l *lab) portgroup(ref types.ManagedObjectReference) mo.DistributedVirtualPortgroup {
	l.t.Helper()
	var pg mo.DistributedVirtualPortgroup
	retrieve(l.t, l.Client(), ref, []string{"name", "config", "host"}, &pg)
	return pg
}

func (l *lab) reconfigurePortgroup(ref types.ManagedObjectReference, spec types.DVPortgroupConfigSpec) error {
	l.t.Helper()
	if spec.ConfigVersion == "" {
		spec.ConfigVersion = l.portgroup(ref).Config.ConfigVersion
	}
	task, err := object.NewDistributedVirtualPortgroup(l.c.Client, ref).Reconfigure(context.Background(), spec)
	if err != nil {
		l.t.Fatalf("ReconfigureDVPortgroup_Task call: %v", err)
	}
	return task.Wait(context.Background())
}

func TestCreateDVPortgroupReturnsReference(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s, ref := l.switchWithHosts("pvrdma-dvs")
	pg := l.portgroup(ref)
	if pg.Name != "pvrdma-dvs-pg" || pg.Config.NumPorts != 8 || pg.Config.ConfigVersion != "1" || len(pg.Host) != 3 {
		t.Errorf("port group %q: %d ports, configVersion %q, %d hosts", pg.Name, pg.Config.NumPorts, pg.Config.ConfigVersion, len(pg.Host))
	}
	// A duplicate name fails the task.
	res, err := methods.CreateDVPortgroup_Task(
		context.Background(),
		l.c.Client,
		&types.CreateDVPortgroup_Task{This: s.Reference(), Spec: types.DVPortgroupConfigSpec{Name: "pvrdma-dvs-pg"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	wantFault(t, "duplicate name", object.NewTask(l.c.Client, res.Returnval).Wait(context.Background()), &types.DuplicateName{})

	// AddDVPortgroup_Task starts at configVersion 1 too.
	task, err := s.AddPortgroup(context.Background(), []types.DVPortgroupConfigSpec{{Name: "added", NumPorts: 1, ConfigVersion: "7"}})
	if err == nil {
		err = task.Wait(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.dvs(s).Portgroup {
		if pg := l.portgroup(r); pg.Name == "added" && pg.Config.ConfigVersion != "1" {
			t.Errorf("added port group configVersion %q, want 1", pg.Config.ConfigVersion)
		}
	}
}

func TestReconfigureDVPortgroupMerges(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s, ref := l.switchWithHosts("pvrdma-dvs")
	err := l.reconfigurePortgroup(ref, types.DVPortgroupConfigSpec{
		Description:       "before",
		DefaultPortConfig: &types.VMwareDVSPortSetting{Vlan: &types.VmwareDistributedVirtualSwitchVlanIdSpec{VlanId: 100}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.reconfigurePortgroup(ref, types.DVPortgroupConfigSpec{Name: "renamed", NumPorts: 16}); err != nil {
		t.Fatal(err)
	}
	pg := l.portgroup(ref)
	c := pg.Config
	setting, _ := c.DefaultPortConfig.(*types.VMwareDVSPortSetting)
	if pg.Name != "renamed" || c.Name != "renamed" || c.NumPorts != 16 || c.Description != "before" || c.Type != "earlyBinding" ||
		c.ConfigVersion != "3" {
		t.Errorf(
			"after partial reconfigure: name %q/%q ports %d description %q type %q configVersion %q",
			pg.Name,
			c.Name,
			c.NumPorts,
			c.Description,
			c.Type,
			c.ConfigVersion,
		)
	}
	if setting == nil || setting.Vlan.(*types.VmwareDistributedVirtualSwitchVlanIdSpec).VlanId != 100 || setting.UplinkTeamingPolicy == nil {
		t.Errorf("default port config %+v, want VLAN 100 kept and teaming kept", setting)
	}
	if !slices.Contains(l.dvs(s).Summary.PortgroupName, "renamed") {
		t.Errorf("switch summary lists %v", l.dvs(s).Summary.PortgroupName)
	}
	// Setting only the teaming policy keeps the VLAN.
	err = l.reconfigurePortgroup(ref, types.DVPortgroupConfigSpec{DefaultPortConfig: &types.VMwareDVSPortSetting{
		UplinkTeamingPolicy: &types.VmwareUplinkPortTeamingPolicy{Policy: &types.StringPolicy{Value: "failover_explicit"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	setting = l.portgroup(ref).Config.DefaultPortConfig.(*types.VMwareDVSPortSetting)
	if setting.Vlan == nil || setting.UplinkTeamingPolicy.Policy.Value != "failover_explicit" {
		t.Errorf("port setting %+v, want the VLAN kept and the teaming changed", setting)
	}

	wantFault(
		t,
		"stale configVersion",
		l.reconfigurePortgroup(ref, types.DVPortgroupConfigSpec{ConfigVersion: "1", Description: "x"}),
		&types.ConcurrentAccess{},
	)
	uplink := l.dvs(s).Config.GetDVSConfigInfo().UplinkPortgroup[0]
	wantFault(t, "duplicate name", l.reconfigurePortgroup(ref, types.DVPortgroupConfigSpec{Name: l.portgroup(uplink).Name}), &types.DuplicateName{})
}

func TestDestroyDVPortgroup(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	s, ref := l.switchWithHosts("pvrdma-dvs")
	l.addVrdma("hpc-node-0", s, ref, "rocev2")
	pg := object.NewDistributedVirtualPortgroup(l.c.Client, ref)
	task, err := pg.Destroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantFault(t, "destroy a port group in use", task.Wait(ctx), &types.ResourceInUse{})

	l.removeVrdma("hpc-node-0")
	if task, err = pg.Destroy(ctx); err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	var e mo.ManagedEntity
	wantFault(t, "read after destroy", tryRetrieve(l.c, ref, []string{"name"}, &e), &types.ManagedObjectNotFound{})
	for i := range l.HostNames() {
		var h mo.HostSystem
		retrieve(t, l.Client(), hostRef(l.Lab, i), []string{"network"}, &h)
		if slices.Contains(h.Network, ref) {
			t.Errorf("host %d still lists the port group", i)
		}
	}
	if slices.Contains(l.dvs(s).Portgroup, ref) {
		t.Error("the switch still lists the port group")
	}
}

func (l *lab) createPortgroup(s *object.DistributedVirtualSwitch, name string) types.ManagedObjectReference {
	l.t.Helper()
	ctx := context.Background()
	res, err := methods.CreateDVPortgroup_Task(ctx, l.c.Client, &types.CreateDVPortgroup_Task{This: s.Reference(), Spec: types.DVPortgroupConfigSpec{
		Name: name, Type: string(types.DistributedVirtualPortgroupPortgroupTypeEarlyBinding), NumPorts: 8,
	}})
	if err != nil {
		l.t.Fatal(err)
	}
	info, err := object.NewTask(l.c.Client, res.Returnval).WaitForResult(ctx, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	ref, ok := info.Result.(types.ManagedObjectReference)
	if !ok || ref.Type != "DistributedVirtualPortgroup" {
		l.t.Fatalf("CreateDVPortgroup_Task result %#v, want a port group reference", info.Result)
	}
	return ref
}
