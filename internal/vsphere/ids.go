package vsphere

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25"
)

// What an id given for an object looks like, from its form alone: people
// put a name, or another object's id, where an id goes (a datacenter's name
// as datacenter_id, a cluster's id as a datacenter's, a VM's UUID as a
// switch's), and "does not exist" alone leaves them guessing.

// Shape is what an id looks like: the kind of object whose ids have its
// form, and which form; a name when it has the form of no id.
type Shape struct {
	Object Object // "" for a name
	Form   string // "managed object id", "UUID" or "BIOS UUID"; "name" when Object is ""
}

// IsName reports whether the id has the form of no id vCenter gives.
func (s Shape) IsName() bool { return s.Object == "" }

func (s Shape) String() string {
	if s.IsName() {
		return "a name"
	}
	return fmt.Sprintf("%s %s's %s", article(string(s.Object)), s.Object, s.Form)
}

// The objects of ids that are not arguments' own kinds, named only to say
// what an id looks like.
const (
	ObjectCluster         Object = "cluster"
	objectComputeResource Object = "compute resource"
	objectDatastore       Object = "datastore"
	objectFolder          Object = "folder"
	objectResourcePool    Object = "resource pool"
	objectVApp            Object = "vApp"
)

// moidPrefixes are the prefixes of vCenter's managed object ids by kind of
// object, as govmomi's simulator gives them after vCenter
// (simulator/registry.go, refValueMap): the longest first, so "domain-c"
// wins over a shorter one.
var moidPrefixes = []struct {
	prefix string
	object Object
}{
	{"dvportgroup-", ObjectPortGroup},
	{"datacenter-", ObjectDatacenter},
	{"resgroup-v", objectVApp},
	{"datastore-", objectDatastore},
	{"resgroup-", objectResourcePool},
	{"domain-c", ObjectCluster},
	{"domain-s", objectComputeResource},
	{"network-", ObjectNetwork},
	{"group-", objectFolder},
	{"host-", ObjectHost},
	{"dvs-", ObjectSwitch},
	{"vm-", ObjectVirtualMachine},
}

var (
	// A managed object id: a prefix and a number (folders add a letter:
	// group-d1, group-v3).
	moidForm = regexp.MustCompile(`^[a-z]+-[a-z]?\d+$`)
	// A switch's UUID as vCenter writes it: 16 spaced byte pairs with a
	// dash in the middle.
	spacedUUIDForm = regexp.MustCompile(`^[0-9a-fA-F]{2}( [0-9a-fA-F]{2}){7}-[0-9a-fA-F]{2}( [0-9a-fA-F]{2}){7}$`)
)

// ShapeOf is what id looks like. A plain UUID (8-4-4-4-12) is a VM's BIOS
// UUID, what vsphere_virtual_machine.id is; vCenter writes a switch's UUID
// spaced, but govmomi's simulator writes it plain too, so a plain UUID
// given for a switch is looked up, not refused (see notFoundError).
func ShapeOf(id string) Shape {
	switch {
	case vmUUIDPattern.MatchString(id):
		return Shape{ObjectVirtualMachine, "BIOS UUID"}
	case spacedUUIDForm.MatchString(id):
		return Shape{ObjectSwitch, "UUID"}
	case id == "ha-host": // a standalone ESXi host's own ids
		return Shape{ObjectHost, "managed object id"}
	case id == "ha-datacenter":
		return Shape{ObjectDatacenter, "managed object id"}
	case moidForm.MatchString(id):
		for _, p := range moidPrefixes {
			if strings.HasPrefix(id, p.prefix) {
				return Shape{p.object, "managed object id"}
			}
		}
	}
	return Shape{Form: "name"}
}

// Fits reports whether an id of this shape can name an object of kind.
func (s Shape) Fits(kind Object) bool {
	if kind == ObjectSwitch && s.Object == ObjectVirtualMachine && s.Form == "BIOS UUID" {
		return true // the simulator's switch UUIDs are plain
	}
	return s.Object == kind
}

// idForms says what an id of each kind of object is, for the errors that
// name an id of another kind.
var idForms = map[Object]string{
	ObjectDatacenter:     "datacenter ids are managed object ids such as datacenter-3",
	ObjectCluster:        "cluster ids are managed object ids such as domain-c7",
	ObjectHost:           "host ids are managed object ids such as host-12",
	ObjectVirtualMachine: vmIDForms,
	ObjectSwitch:         "a distributed switch's id is its UUID, which vCenter writes as 16 spaced byte pairs (50 2a 6c ... -...)",
	ObjectPortGroup:      "distributed port group ids are managed object ids such as dvportgroup-17",
}

// namedObject is an object of the kind expected whose name an id is.
type namedObject struct{ id string }

// notFoundError is the error for ids of kind that name nothing, each
// worded with what it looks like when that is another kind (see
// idNotFound). A name is looked up among the objects of kind, in one read
// of their names made only then (the read that finds a datacenter, cluster
// or host by name), so the error can say whose name it is; a plain UUID
// given for a switch, among the VMs' UUIDs the command has or reads
// (vmuuid.go), as the simulator writes switch UUIDs plain too.
func (c *Client) notFoundError(ctx context.Context, vc *vim25.Client, op string, kind Object, ids ...string) error {
	var names []string
	for _, id := range ids {
		if ShapeOf(id).IsName() {
			names = append(names, id)
		}
	}
	named := c.namesOf(ctx, vc, kind, names)
	vms := map[string]string{}
	for _, id := range ids {
		if vm := c.vmWithUUID(ctx, vc, kind, id); vm != "" {
			vms[id] = vm
		}
	}
	return wordNotFound(op, kind, ids, named, vms)
}

// idNotFound is notFoundError from the ids' shapes alone, with no read: for
// an object the provider knew, which may simply be gone.
func idNotFound(op string, kind Object, ids ...string) error {
	return wordNotFound(op, kind, ids, nil, nil)
}

// wordNotFound words ids of kind that name nothing: the objects of kind
// each name names (named) and the VMs whose UUIDs they are (vms), else
// what each looks like when that is another kind, and then what an id of
// kind is. An id of kind's own form needs neither: its object is not there.
func wordNotFound(op string, kind Object, ids []string, named map[string][]namedObject, vms map[string]string) error {
	parts := make([]string, len(ids))
	looks := make([]Shape, len(ids))
	allFit := true
	for i, id := range ids {
		looks[i] = ShapeOf(id)
		parts[i] = idAndShape(id, looks[i], kind, named[id], vms[id])
		allFit = allFit && looks[i].Fits(kind) && vms[id] == ""
	}
	var msg string
	switch {
	case len(ids) > 1:
		msg = fmt.Sprintf("%ss %s do not exist", kind, strings.Join(parts, ", "))
	case looks[0].Fits(kind) && strings.HasSuffix(looks[0].Form, "UUID"):
		msg = fmt.Sprintf("no %s has UUID %s", kind, parts[0])
	default:
		msg = fmt.Sprintf("no %s has id %s", kind, parts[0])
	}
	if form := idForms[kind]; form != "" && !allFit {
		msg += "; " + form
	}
	return &Error{Op: op, Kind: ErrNotFound, Object: kind, ID: strings.Join(ids, ", "), IDs: ids, Looks: looks, Message: msg}
}

// idAndShape words an id that names nothing of kind, with whose name it is
// or what it looks like when that is not an id of kind.
func idAndShape(id string, s Shape, kind Object, named []namedObject, vm string) string {
	switch {
	case len(named) == 1:
		return fmt.Sprintf("%q (the name of %s %s)", id, kind, named[0].id)
	case len(named) > 1:
		var list []string
		for _, n := range named {
			list = append(list, n.id)
		}
		return fmt.Sprintf("%q (the name of %d %ss: %s)", id, len(named), kind, strings.Join(list, ", "))
	case vm != "":
		return fmt.Sprintf("%s (the BIOS UUID of virtual machine %s)", id, vm)
	case s.IsName():
		return fmt.Sprintf("%q (it looks like a name, not an id)", id)
	case !s.Fits(kind):
		return fmt.Sprintf("%s (it looks like %s)", id, s)
	}
	return id
}

// namesOf finds, in one read of every object of kind with its name, the
// objects called each of names; none when names is empty, when kind has no
// look-up by name, or when the read fails (the error then says what the ids
// look like, without whose name they are).
func (c *Client) namesOf(ctx context.Context, vc *vim25.Client, kind Object, names []string) map[string][]namedObject {
	moType := map[Object]string{ObjectDatacenter: "Datacenter", ObjectCluster: "ClusterComputeResource", ObjectHost: "HostSystem"}[kind]
	if len(names) == 0 || moType == "" || vc == nil {
		return nil
	}
	objs, err := retrieve(ctx, vc, populationSpec(vc.ServiceContent.RootFolder, moType, []string{"name"}))
	if err != nil {
		c.log.Debug(ctx, "Reading names to word an id that names nothing failed", map[string]any{"kind": string(kind), "error": err.Error()})
		return nil
	}
	out := map[string][]namedObject{}
	for _, o := range objs {
		e, ok := entityOf(o)
		if !ok || e.Self.Type != moType || !slices.Contains(names, EntityName(e.Name)) {
			continue
		}
		out[EntityName(e.Name)] = append(out[EntityName(e.Name)], namedObject{id: e.Self.Value})
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b namedObject) int { return strings.Compare(a.id, b.id) })
	}
	return out
}

// vmWithUUID names the VM whose BIOS UUID a plain UUID given for a switch
// is, from the UUID index of VMs (read once per command: see vmuuid.go);
// "" for any other kind, shape or UUID.
func (c *Client) vmWithUUID(ctx context.Context, vc *vim25.Client, kind Object, id string) string {
	if kind != ObjectSwitch || vc == nil || !vmUUIDPattern.MatchString(id) {
		return ""
	}
	if ref, ok := c.vmUUIDs.lookup(ctx, c, vc, strings.ToLower(id)); ok {
		return ref.Value
	}
	return ""
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
