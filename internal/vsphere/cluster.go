package vsphere

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Cluster is a vSphere cluster (ClusterComputeResource) and its hosts.
type Cluster struct {
	ID    string // managed object id, e.g. "domain-c7"
	Name  string
	Hosts []ClusterHost // sorted by name
}

// ClusterHost is one host of a cluster.
type ClusterHost struct {
	ID   string // managed object id, e.g. "host-12"
	Name string
}

// ClusterByName finds the cluster called name in a datacenter, with the names
// of its hosts, in one property-collector round trip: every cluster's name and
// hosts, and those hosts' names.
func (c *Client) ClusterByName(ctx context.Context, datacenterID, name string) (*Cluster, error) {
	op := fmt.Sprintf("finding cluster %q in datacenter %s", name, datacenterID)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	props := []types.PropertySpec{
		{Type: "ClusterComputeResource", PathSet: []string{"name", "host"}},
		{Type: "HostSystem", PathSet: []string{"name"}},
	}
	if all := c.prefetchAllFor(ctx, vc, props...); all != nil {
		// A cluster the prefetch lacks is looked for in vCenter.
		if objs, ok := all.clustersOf(datacenterRef(datacenterID)); ok {
			if cl, err := clusterNamed(op, datacenterID, name, objs); !errors.Is(err, ErrNotFound) {
				return cl, err
			}
		}
	}
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: datacenterRef(datacenterID), Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "Datacenter", Path: "hostFolder", SelectSet: []types.BaseSelectionSpec{
				&types.SelectionSpec{Name: "folderTree"}, &types.SelectionSpec{Name: "clusterHosts"},
			}},
			folderTreeWith(&types.SelectionSpec{Name: "clusterHosts"}),
			&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "clusterHosts"}, Type: "ClusterComputeResource", Path: "host"},
		}}},
		PropSet: props,
	})
	if err != nil {
		return nil, c.datacenterError(ctx, vc, op, datacenterID, err)
	}
	return clusterNamed(op, datacenterID, name, objs)
}

// clusterNamed finds the cluster called name among objs, a datacenter's
// clusters and their hosts.
func clusterNamed(op, datacenterID, name string, objs []any) (*Cluster, error) {
	hostNames := map[string]string{}
	var all, matches []Cluster
	hostsOf := map[string][]types.ManagedObjectReference{}
	for _, o := range objs {
		e, ok := entityOf(o)
		if !ok {
			continue
		}
		switch e.Self.Type {
		case "HostSystem":
			hostNames[e.Self.Value] = e.Name
		case "ClusterComputeResource":
			cl := Cluster{ID: e.Self.Value, Name: e.Name}
			all = append(all, cl)
			if EntityName(e.Name) == name {
				matches = append(matches, cl)
			}
			if cr, ok := o.(mo.ClusterComputeResource); ok {
				hostsOf[cl.ID] = cr.Host
			}
		}
	}
	switch len(matches) {
	case 0:
		return nil, notFound(op, "datacenter %s has no cluster called %q; it has %s", datacenterID, name, clusterList(all))
	case 1:
	default:
		return nil, &Error{
			Op:      op,
			Kind:    ErrAmbiguous,
			Message: fmt.Sprintf("%d clusters are called %q (%s), in different folders: rename one", len(matches), name, clusterList(matches)),
		}
	}
	cl := matches[0]
	for _, ref := range hostsOf[cl.ID] {
		// A host being added or removed can be listed before its name is readable.
		if n, ok := hostNames[ref.Value]; ok {
			cl.Hosts = append(cl.Hosts, ClusterHost{ID: ref.Value, Name: n})
		}
	}
	sort.Slice(cl.Hosts, func(i, j int) bool { return cl.Hosts[i].Name < cl.Hosts[j].Name })
	return &cl, nil
}

func clusterList(cls []Cluster) string {
	return namesAndIDs(cls, func(cl Cluster) (string, string) { return cl.Name, cl.ID })
}
