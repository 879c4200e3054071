package vcsimlab

import (
	"context"
	"testing"

	govmomifind "github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// clusterID is the managed object id of the lab's cluster ("domain-c…").
func clusterID(t *testing.T, l *Lab) string {
	t.Helper()
	for _, e := range l.Model().Map().All("ClusterComputeResource") {
		return e.Reference().Value
	}
	t.Fatal("no cluster")
	return ""
}

// TestClusterAsComputeResource reads and calls the cluster through a
// reference of its supertype, as the vSphere provider does
// (computeresource.StandaloneFromID for a cluster's id).
func TestClusterAsComputeResource(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	id := clusterID(t, l.Lab)
	asBase := types.ManagedObjectReference{Type: "ComputeResource", Value: id}

	// Finder.ObjectReference walks the ancestors (RetrieveProperties).
	obj, err := govmomifind.NewFinder(l.c.Client, false).ObjectReference(ctx, asBase)
	if err != nil {
		t.Fatalf("ObjectReference(%s): %v", asBase, err)
	}
	cr, ok := obj.(*object.ComputeResource)
	if !ok || cr.InventoryPath != "/DC0/host/"+l.ClusterName() {
		t.Fatalf("ObjectReference(%s) = %T %v, want the cluster's path", asBase, obj, obj)
	}

	// All properties, as the vSphere provider's BaseProperties reads them.
	var props mo.ComputeResource
	if err := cr.Properties(ctx, asBase, nil, &props); err != nil {
		t.Fatalf("properties of %s: %v", asBase, err)
	}
	if props.Name != l.ClusterName() || props.EnvironmentBrowser == nil || len(props.Host) != len(l.HostNames()) || props.ResourcePool == nil {
		t.Errorf(
			"properties of %s: name %q, browser %v, %d hosts, pool %v",
			asBase,
			props.Name,
			props.EnvironmentBrowser,
			len(props.Host),
			props.ResourcePool,
		)
	}
	// The cluster's own environment browser answers.
	if _, err := methods.QueryConfigOptionDescriptor(ctx, l.c.Client, &types.QueryConfigOptionDescriptor{This: *props.EnvironmentBrowser}); err != nil {
		t.Errorf("QueryConfigOptionDescriptor: %v", err)
	}
	if pool, err := cr.ResourcePool(ctx); err != nil || pool.Reference() != *props.ResourcePool {
		t.Errorf("ResourcePool: %v, %v", pool, err)
	}

	// RetrievePropertiesEx, with selected properties.
	res, err := methods.RetrievePropertiesEx(ctx, l.c.Client, &types.RetrievePropertiesEx{
		This: property.DefaultCollector(l.c.Client).Reference(),
		SpecSet: []types.PropertyFilterSpec{{
			ObjectSet: []types.ObjectSpec{{Obj: asBase}},
			PropSet:   []types.PropertySpec{{Type: "ComputeResource", PathSet: []string{"name", "summary"}}},
		}},
	})
	if err != nil || res.Returnval == nil || len(res.Returnval.Objects) != 1 {
		t.Fatalf("RetrievePropertiesEx(%s): %+v, %v", asBase, res, err)
	}
	if o := res.Returnval.Objects[0]; o.Obj.Value != id || len(o.PropSet) != 2 || len(o.MissingSet) != 0 {
		t.Errorf("RetrievePropertiesEx(%s): %+v", asBase, o)
	}

	// A property filter (CreateFilter, WaitForUpdatesEx), as property.Wait makes.
	var name string
	err = property.Wait(ctx, property.DefaultCollector(l.c.Client), asBase, []string{"name"}, func(changes []types.PropertyChange) bool {
		for _, c := range changes {
			name, _ = c.Val.(string)
		}
		return name != ""
	})
	if err != nil || name != l.ClusterName() {
		t.Errorf("property.Wait on %s: name %q, %v", asBase, name, err)
	}

	// A method of ComputeResource called on the cluster as ComputeResource.
	task, err := object.NewComputeResource(l.c.Client, asBase).Reconfigure(ctx, &types.ClusterConfigSpecEx{}, true)
	if err != nil {
		t.Fatalf("ReconfigureComputeResource_Task on %s: %v", asBase, err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Errorf("ReconfigureComputeResource_Task on %s: task %v", asBase, err)
	}
	if _, err := object.NewComputeResource(l.c.Client, asBase).Rename(ctx, "renamed"); err != nil {
		t.Errorf("Rename_Task on %s: %v", asBase, err)
	}

	// A reference resolves only to an object of that type or a subtype.
	for _, ref := range []types.ManagedObjectReference{
		{Type: "ComputeResource", Value: "domain-c999999"},
		{Type: "ComputeResource", Value: l.HostID(l.HostNames()[0])},
		{Type: "ClusterComputeResource", Value: l.VMID("hpc-node-0")},
	} {
		var me mo.ManagedEntity
		wantFault(t, "read "+ref.String(), tryRetrieve(l.c, ref, []string{"name"}, &me), &types.ManagedObjectNotFound{})
		_, err := object.NewComputeResource(l.c.Client, ref).Reconfigure(ctx, &types.ClusterConfigSpecEx{}, true)
		wantFault(t, "reconfigure "+ref.String(), err, &types.ManagedObjectNotFound{})
	}
}
