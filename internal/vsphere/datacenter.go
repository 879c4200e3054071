package vsphere

import (
	"context"
	"errors"
	"fmt"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
)

// Datacenter is a vSphere datacenter.
type Datacenter struct {
	ID   string // managed object id, e.g. "datacenter-3"
	Name string
}

// DatacenterByName finds the one datacenter called name. With an empty name
// it returns the only datacenter, as vCenter's default.
func (c *Client) DatacenterByName(ctx context.Context, name string) (*Datacenter, error) {
	op := fmt.Sprintf("finding datacenter %q", name)
	if name == "" {
		op = "finding the default datacenter"
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	spec := types.PropertySpec{Type: "Datacenter", PathSet: []string{"name"}}
	if all := c.prefetchAllFor(ctx, vc, spec); all != nil {
		// A datacenter the prefetch lacks is looked for in vCenter.
		if dc, err := datacenterNamed(op, name, all.objectsOf("Datacenter")); !errors.Is(err, ErrNotFound) {
			return dc, err
		}
	}
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: vc.ServiceContent.RootFolder, Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{folderTree()}}},
		PropSet:   []types.PropertySpec{spec},
	})
	if err != nil {
		return nil, translate(op, err)
	}
	return datacenterNamed(op, name, objs)
}

// datacenterNamed finds the one datacenter called name among objs, or the
// only one when name is empty.
func datacenterNamed(op, name string, objs []any) (*Datacenter, error) {
	var all, matches []Datacenter
	for _, o := range objs {
		if e, ok := entityOf(o); ok && e.Self.Type == "Datacenter" {
			dc := Datacenter{ID: e.Self.Value, Name: e.Name}
			all = append(all, dc)
			if name == "" || EntityName(e.Name) == name {
				matches = append(matches, dc)
			}
		}
	}
	switch {
	case len(matches) == 1:
		return &matches[0], nil
	case len(matches) == 0 && name == "":
		return nil, notFound(op, "vCenter has no datacenter")
	case len(matches) == 0:
		return nil, notFound(op, "no datacenter is called %q; vCenter has %s", name, datacenterList(all))
	case name == "":
		return nil, &Error{
			Op:      op,
			Kind:    ErrAmbiguous,
			Message: fmt.Sprintf("vCenter has %d datacenters (%s): name the one you mean", len(all), datacenterList(all)),
		}
	default:
		return nil, &Error{
			Op:   op,
			Kind: ErrAmbiguous,
			Message: fmt.Sprintf(
				"%d datacenters are called %q (%s), in different folders: rename one, or use its id",
				len(matches),
				name,
				datacenterList(matches),
			),
		}
	}
}

func datacenterList(dcs []Datacenter) string {
	return namesAndIDs(dcs, func(dc Datacenter) (string, string) { return dc.Name, dc.ID })
}

func datacenterRef(id string) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "Datacenter", Value: id}
}

// datacenterError explains a search below a datacenter that does not exist,
// often a datacenter's name, or another object's id, given where its id
// belongs.
func (c *Client) datacenterError(ctx context.Context, vc *vim25.Client, op, datacenterID string, err error) error {
	err = translate(op, err)
	if errors.Is(err, ErrNotFound) {
		return c.notFoundError(ctx, vc, op, ObjectDatacenter, datacenterID)
	}
	return err
}
