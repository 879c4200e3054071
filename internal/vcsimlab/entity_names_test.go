package vcsimlab

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/types"
)

// Switch and port group names are stored as vCenter stores every entity's
// name (ManagedEntity.name): '/', '\' and a '%' that starts no escape
// sequence escaped, an escape sequence kept, on create, reconfigure and
// AddDVPortgroup_Task alike.
func TestSwitchAndPortGroupNamesStoredEscaped(t *testing.T) {
	t.Parallel()
	for given, stored := range map[string]string{
		`ü/x 100%\y`: `ü%2fx 100%25%5cy`,
		"a%2fb":      "a%2fb",
		"a%2Fb%zz":   "a%2Fb%25zz",
		"50%":        "50%25",
		"plain":      "plain",
	} {
		if got := escapeEntityName(given); got != stored {
			t.Errorf("escapeEntityName(%q) = %q, want %q", given, got, stored)
		}
	}

	l := newLab(t)
	ctx := context.Background()
	s := l.createDVS(`sw/1 100%`)
	if got := l.dvs(s); got.Name != "sw%2f1 100%25" || got.Config.GetDVSConfigInfo().Name != "sw%2f1 100%25" || got.Summary.Name != "sw%2f1 100%25" {
		t.Errorf("created switch name %q (config %q, summary %q), want sw%%2f1 100%%25", got.Name, got.Config.GetDVSConfigInfo().Name, got.Summary.Name)
	}
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Name: `sw\2`}}); err != nil {
		t.Fatal(err)
	}
	if got := l.dvs(s).Name; got != "sw%5c2" {
		t.Errorf("renamed switch name %q, want sw%%5c2", got)
	}

	pg := l.createPortgroup(s, "pg/1")
	if got := l.portgroup(pg); got.Name != "pg%2f1" || got.Config.Name != "pg%2f1" {
		t.Errorf("created port group name %q (config %q), want pg%%2f1", got.Name, got.Config.Name)
	}
	if err := l.reconfigurePortgroup(pg, types.DVPortgroupConfigSpec{Name: "pg 5%"}); err != nil {
		t.Fatal(err)
	}
	if got := l.portgroup(pg).Name; got != "pg 5%25" {
		t.Errorf("renamed port group name %q, want pg 5%%25", got)
	}
	res, err := methods.AddDVPortgroup_Task(
		ctx,
		l.c.Client,
		&types.AddDVPortgroup_Task{This: s.Reference(), Spec: []types.DVPortgroupConfigSpec{{Name: `a\b`, NumPorts: 1}}},
	)
	if err == nil {
		err = object.NewTask(l.c.Client, res.Returnval).Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range l.dvs(s).Portgroup {
		found = found || l.portgroup(r).Name == "a%5cb"
	}
	if !found {
		t.Error("AddDVPortgroup_Task stored no port group a%5cb")
	}
}

// A switch or port group renamed gives up its old name: a new switch and
// port group can take it (vcsim's name checks read the entity's name, which
// the lab's rename sets too).
func TestRenamedSwitchAndPortGroupNamesAreFree(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("sw")
	pg := l.createPortgroup(s, "pg")
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Name: "sw-old"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.reconfigurePortgroup(pg, types.DVPortgroupConfigSpec{Name: "pg-old"}); err != nil {
		t.Fatal(err)
	}
	again := l.createDVS("sw") // fails the test when the name is still taken
	l.createPortgroup(again, "pg")
}
