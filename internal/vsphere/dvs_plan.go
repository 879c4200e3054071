package vsphere

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// The plan-time rules of a PVRDMA switch: the version on offer, never a
// downgrade, for each joining host a NIC that exists, is free and (as a
// warning) does RDMA with its link up, and for each joining host, and each
// member when the switch is upgraded, an ESXi version that can run the
// switch's.

// The findings of PlanDVSVersion and PlanDVSHosts.
type (
	// VersionNotOffered: vCenter cannot create or upgrade to this version.
	VersionNotOffered struct {
		Wanted  string
		Offered []string
	}
	// DowngradeRefused: vSphere cannot downgrade a distributed switch.
	DowngradeRefused struct {
		Current, Wanted string
	}
	// HostNotChecked: the host could not be read; Err wraps ErrNotFound
	// when it does not exist.
	HostNotChecked struct {
		HostID string
		Err    error
	}
	// NICNotOnHost: the host has no such physical NIC.
	NICNotOnHost struct {
		NICChoice
		NICs []string
	}
	// NICInUse: another switch uses the NIC as an uplink.
	NICInUse struct {
		NICChoice
		Switch      string
		Distributed bool
	}
	// NICWithoutRDMA: the NIC has no RDMA device, so PVRDMA traffic of
	// that host falls back to TCP.
	NICWithoutRDMA struct {
		NICChoice
	}
	// NICLinkDown: the NIC has no link.
	NICLinkDown struct {
		NICChoice
	}
	// HostTooOld: the host's ESXi cannot run the planned switch version:
	// vCenter accepts a host in a switch of its own ESXi version or later,
	// and refuses the others when they join or when the switch is upgraded
	// past them.
	HostTooOld struct {
		HostID, Host string
		ESXi         string // the host's ESXi version, "7.0.3"
		Version      string // the planned switch version
		Newest       string // the newest switch version vCenter offers that the host can run; "" when none
		Member       bool   // a member the switch's upgrade leaves behind, not a host joining
	}
	// HostInUse: a member the plan removes runs VMs whose adapters use the
	// switch's port groups; vCenter refuses to remove it (ResourceInUse).
	HostInUse struct {
		HostID, Host string
		Users        []SwitchUser
	}
	// HostInOtherDatacenter: a joining host is in another datacenter than
	// the switch; a distributed switch spans the hosts of its own datacenter
	// (vSphere Networking, "vSphere Distributed Switch Architecture": a
	// distributed switch is set up at the data center level).
	HostInOtherDatacenter struct {
		HostID, Host                   string
		DatacenterID, Datacenter       string // the host's
		SwitchDatacenterID, SwitchName string
	}
)

// NICChoice is a host's NIC named for a switch, with what the host offers
// instead: its RDMA NICs that no switch uses.
type NICChoice struct {
	HostID, Host, NIC string
	FreeRDMA          []string
}

func (VersionNotOffered) finding()     {}
func (DowngradeRefused) finding()      {}
func (HostNotChecked) finding()        {}
func (NICNotOnHost) finding()          {}
func (NICInUse) finding()              {}
func (NICWithoutRDMA) finding()        {}
func (NICLinkDown) finding()           {}
func (HostTooOld) finding()            {}
func (HostInUse) finding()             {}
func (HostInOtherDatacenter) finding() {}

// DVSChange is a planned switch: each part that changes, to check; nil for
// a part that stays as it is or is not known yet.
type DVSChange struct {
	Names   *DVSNamesChange
	Version *DVSVersionChange
	// Hosts are checked against the version the plan leads to: the checked
	// Version's when there is one, else Hosts.Version as given.
	Hosts *DVSHostsChange
}

// DVSVersionChange is a planned switch version ("" for vCenter's newest)
// and the switch's current one ("" for a new switch).
type DVSVersionChange struct {
	Wanted, Current string
}

// DVSPlan is a checked switch: the version the plan leads to ("" when not
// known yet or refused) and the findings.
type DVSPlan struct {
	Version  string
	Findings []Finding
}

// PlanDVS checks a planned switch, the planner of vspherehpc_rdma_dvs: its
// names (a datacenter that does not exist is ErrNotFound, and nothing else
// is checked), its version, then its hosts against that version.
func (c *Client) PlanDVS(ctx context.Context, ch DVSChange) (*DVSPlan, error) {
	out := &DVSPlan{}
	if ch.Names != nil {
		findings, err := c.planDVSNames(ctx, *ch.Names)
		if err != nil {
			return nil, err
		}
		out.Findings = append(out.Findings, findings...)
	}
	if ch.Version != nil {
		version, f, err := c.planDVSVersion(ctx, ch.Version.Wanted, ch.Version.Current)
		if err != nil {
			return nil, err
		}
		out.Version = version
		if f != nil {
			out.Findings = append(out.Findings, f)
		}
	}
	if ch.Hosts != nil {
		hosts := *ch.Hosts
		if ch.Version != nil {
			hosts.Version = out.Version
		} else {
			out.Version = hosts.Version
		}
		out.Findings = append(out.Findings, c.planDVSHosts(ctx, hosts)...)
	}
	return out, nil
}

// planDVSVersion checks a switch version against what vCenter offers and,
// for an existing switch, against its current version. With want "" it
// returns the newest version, which a new switch gets.
func (c *Client) planDVSVersion(ctx context.Context, want, current string) (string, Finding, error) {
	versions, err := c.DVSVersions(ctx)
	if err != nil || len(versions) == 0 {
		return "", nil, err
	}
	switch {
	case want == "":
		return versions[len(versions)-1], nil, nil
	case !slices.Contains(versions, want):
		return want, VersionNotOffered{Wanted: want, Offered: versions}, nil
	case current != "" && CompareVersions(want, current) < 0:
		return want, DowngradeRefused{Current: current, Wanted: want}, nil
	}
	return want, nil, nil
}

// DVSHostsChange is a switch's planned membership.
type DVSHostsChange struct {
	SwitchName string // as planned
	// DatacenterID is the switch's datacenter: a joining host must be in it.
	// "" when not known yet: not checked.
	DatacenterID string
	SwitchUUID   string    // the existing switch; "" for a new one
	Current      []DVSHost // members as they are; only other members are checked
	Planned      []DVSHost
	// Version is the planned switch version; "" (not known yet) checks no
	// host's ESXi version. CurrentVersion is the existing switch's, "" for
	// a new one.
	Version, CurrentVersion string
	// Leaving are the VMs' adapters the same plan removes: they do not keep
	// a host on the switch.
	Leaving Leaving
}

// planDVSHosts checks each host that joins the switch, or gives it another
// NIC: the NIC exists, no other switch uses it, it does RDMA and has a link.
// A member that stays as it is was checked when it joined; a refresh shows
// any change to it. Then the ESXi version of each host that joins, and of
// every member when the switch is upgraded (checkESXiVersions).
func (c *Client) planDVSHosts(ctx context.Context, ch DVSHostsChange) []Finding {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	var out []Finding
	products := map[string]hostProduct{}
	for _, h := range ch.Planned {
		if slices.Contains(ch.Current, h) {
			continue
		}
		host, product, dc, err := c.planHost(ctx, h.HostID)
		if err != nil {
			out = append(out, HostNotChecked{HostID: h.HostID, Err: err})
			continue
		}
		if ch.DatacenterID != "" && dc.Value != "" && dc.Value != ch.DatacenterID {
			// Nothing else of it matters: it cannot join.
			out = append(out, HostInOtherDatacenter{HostID: h.HostID, Host: product.name, DatacenterID: dc.Value, Datacenter: dc.name,
				SwitchDatacenterID: ch.DatacenterID, SwitchName: ch.SwitchName})
			continue
		}
		products[h.HostID] = product
		out = append(out, planUplink(ch, h, host)...)
	}
	out = append(out, c.checkHostsLeaving(ctx, ch)...)
	return append(out, c.checkESXiVersions(ctx, ch, products)...)
}

// HostsInUse is PlanDVS's check of the members a change removes, for an
// update to run again before it reconfigures the switch: what a plan could
// not know (a destroy of adapters it planned later) is settled by then.
func (c *Client) HostsInUse(ctx context.Context, ch DVSHostsChange) []Finding {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	return c.checkHostsLeaving(ctx, ch)
}

// checkHostsLeaving refuses to remove a member whose VMs have adapters on
// the switch's port groups (but those the plan removes): vCenter would
// refuse the reconfigure with "The resource is in use", naming neither the
// VMs nor the fix. Only when members leave does it cost reads: the switch,
// then its port groups' VMs.
func (c *Client) checkHostsLeaving(ctx context.Context, ch DVSHostsChange) []Finding {
	if ch.SwitchUUID == "" {
		return nil
	}
	leaving := map[string]bool{}
	for _, h := range ch.Current {
		if !slices.ContainsFunc(ch.Planned, func(p DVSHost) bool { return p.HostID == h.HostID }) {
			leaving[h.HostID] = true
		}
	}
	if len(leaving) == 0 {
		return nil
	}
	d, err := c.DVS(ctx, DVSID{UUID: ch.SwitchUUID}, "")
	if err != nil {
		return nil // the apply says more; a plan refuses only what it knows
	}
	users, err := c.switchUsers(ctx, d)
	if err != nil {
		return nil
	}
	byHost := map[string][]SwitchUser{}
	for _, u := range users {
		if leaving[u.HostID] && !ch.Leaving.adapter(u.VM, u.PortGroupID) {
			byHost[u.HostID] = append(byHost[u.HostID], u)
		}
	}
	if len(byHost) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(byHost))
	var names map[string]hostProduct
	if vc, err := c.vimClient(ctx); err == nil {
		names, _ = c.hostProducts(ctx, vc, ids)
	}
	out := make([]Finding, 0, len(ids))
	for _, id := range ids {
		out = append(out, HostInUse{HostID: id, Host: cmp.Or(names[id].name, id), Users: byHost[id]})
	}
	return out
}

// planHost reads a host as the NIC check needs it (its NICs and the switches
// that use them) with its name, ESXi product and datacenter (through its
// parents: compute resource, host folders), in the one round trip the check
// makes per host.
func (c *Client) planHost(ctx context.Context, id string) (*Host, hostProduct, namedRef, error) {
	op := "reading host " + id
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, hostProduct{}, namedRef{}, err
	}
	// A shared read, as Host's: no prefetch of every host for a plan.
	objs, err := c.readShared(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: hostRef(id), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "HostSystem", Path: "parent", SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{Type: "ComputeResource", Path: "parent", SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "hostFolders"}}},
			}},
			&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "hostFolders"}, Type: "Folder", Path: "parent",
				SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "hostFolders"}}},
		}}},
		PropSet: []types.PropertySpec{
			{Type: "HostSystem", PathSet: append(slices.Clone(hostProps), productProps...)},
			{Type: "ComputeResource", PathSet: []string{"parent"}},
			{Type: "Folder", PathSet: []string{"parent"}},
			{Type: "Datacenter", PathSet: []string{"name"}},
		},
	})
	oc, ok := objs[hostRef(id)]
	if errors.Is(translate(op, err), ErrNotFound) || (err == nil && !ok) {
		return nil, hostProduct{}, namedRef{}, c.notFoundError(ctx, vc, op, ObjectHost, id)
	}
	if err != nil {
		return nil, hostProduct{}, namedRef{}, translate(op, err)
	}
	var h mo.HostSystem
	if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &h); err != nil {
		return nil, hostProduct{}, namedRef{}, translate(op, err)
	}
	return hostFromMO(&h, nil, nil), hostProduct{name: h.Name, about: h.Summary.Config.Product}, datacenterAbove(objs, h.Parent), nil
}

// namedRef is a managed object's id and name.
type namedRef struct{ Value, name string }

// datacenterAbove follows parents read in objs from ref up to a datacenter;
// empty when the chain was not read (a parent the user may not see).
func datacenterAbove(objs map[types.ManagedObjectReference]types.ObjectContent, ref *types.ManagedObjectReference) namedRef {
	for seen := 0; ref != nil && seen < 32; seen++ {
		oc, ok := objs[*ref]
		if !ok {
			return namedRef{}
		}
		var e mo.ManagedEntity
		if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &e); err != nil {
			return namedRef{}
		}
		if ref.Type == "Datacenter" {
			return namedRef{Value: ref.Value, name: EntityName(e.Name)}
		}
		ref = e.Parent
	}
	return namedRef{}
}

func planUplink(ch DVSHostsChange, h DVSHost, host *Host) []Finding {
	choice := NICChoice{HostID: h.HostID, Host: host.Name, NIC: h.Vmnic}
	var nic *PhysicalNIC
	var names []string
	for i, n := range host.PhysicalNICs {
		names = append(names, n.Name)
		if n.Name == h.Vmnic {
			nic = &host.PhysicalNICs[i]
		}
		if n.RDMADevice != "" && n.Switch == "" {
			choice.FreeRDMA = append(choice.FreeRDMA, n.Name)
		}
	}
	if nic == nil {
		return []Finding{NICNotOnHost{NICChoice: choice, NICs: names}}
	}
	if nic.Switch != "" && !ownsNIC(ch, nic) {
		return []Finding{NICInUse{NICChoice: choice, Switch: nic.Switch, Distributed: nic.SwitchUUID != ""}}
	}
	var out []Finding
	if nic.RDMADevice == "" {
		out = append(out, NICWithoutRDMA{NICChoice: choice})
	}
	if !nic.LinkUp {
		out = append(out, NICLinkDown{NICChoice: choice})
	}
	return out
}

// ownsNIC: the NICs a switch may take are its own and, when planning a new
// switch, those of a switch with the same name. A replacement (tainted, or
// forced) is planned with no current switch while the old switch still
// holds the NICs; it is destroyed first. Any other same-named switch makes
// the create fail with vCenter's DuplicateName anyway.
func ownsNIC(ch DVSHostsChange, nic *PhysicalNIC) bool {
	if ch.SwitchUUID != "" {
		return nic.SwitchUUID == ch.SwitchUUID
	}
	return nic.SwitchUUID != "" && nic.Switch == ch.SwitchName
}

// The findings of planDVSNames and PlanDVSDelete.
type (
	// NameTaken: another object of the datacenter has the name; vCenter
	// refuses the create or rename with DuplicateName.
	NameTaken struct {
		Name    string
		For     Object // what the name was planned for
		TakenBy Object // what has it
		ID      string // the managed object id of what has it
		// OnSwitch: what has it is a port group of the planned switch
		// itself, which the resource does not manage.
		OnSwitch bool
	}
	// SwitchInUse: VM network adapters still use the switch's port groups,
	// so vCenter refuses to destroy it unless they are removed first.
	SwitchInUse struct {
		Switch string
		Users  []SwitchUser
	}
)

func (NameTaken) finding()   {}
func (SwitchInUse) finding() {}

// DVSNamesChange is the names a switch plans to have in a datacenter.
type DVSNamesChange struct {
	DatacenterID string
	SwitchName   string
	PortGroup    string
	SwitchUUID   string // the existing switch; "" for a new one
	// PortGroupKey is the existing switch's managed port group; "" when it
	// has none yet. Its other port groups' names are taken like any.
	PortGroupKey string
	// Managed lists the UUIDs of switches this configuration manages: a new
	// switch may take the names of one, as the tainted switch it replaces.
	Managed []string
}

// planDVSNames checks, in one round trip, that the datacenter exists and
// that the switch's and port group's names are free in its network folder,
// where vCenter keeps switches, port groups and standard networks under
// unique names. A new switch may take the names of a switch this
// configuration manages (DVSNamesChange.Managed): a replacement (a tainted
// or -replace'd switch, destroyed before the new one is created), or a
// switch the same plan renames (the claims of its new names keep a switch
// that stays from being named twice; the create waits for the rename, see
// dvs_order.go).
func (c *Client) planDVSNames(ctx context.Context, ch DVSNamesChange) ([]Finding, error) {
	op := fmt.Sprintf("checking the names of distributed switch %q", ch.SwitchName)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := networkFolderNames(ctx, vc, ch.DatacenterID)
	if err != nil {
		return nil, c.datacenterError(ctx, vc, op, ch.DatacenterID, err)
	}
	switches := switchesOf(objs)
	// ours tells whether a switch is this one, or the one this one replaces.
	ours := func(s mo.DistributedVirtualSwitch) bool {
		if ch.SwitchUUID != "" {
			return strings.EqualFold(s.Uuid, ch.SwitchUUID)
		}
		return EntityName(s.Name) == ch.SwitchName && slices.ContainsFunc(ch.Managed, func(u string) bool { return strings.EqualFold(u, s.Uuid) })
	}
	var out []Finding
	for _, s := range switches {
		if EntityName(s.Name) == ch.SwitchName && !ours(s) {
			out = append(out, NameTaken{Name: ch.SwitchName, For: ObjectSwitch, TakenBy: ObjectSwitch, ID: s.Self.Value})
		}
	}
	for _, o := range objs {
		switch v := o.(type) {
		case mo.DistributedVirtualPortgroup:
			if EntityName(v.Name) != ch.PortGroup {
				continue
			}
			owner := v.Config.DistributedVirtualSwitch
			onSwitch := owner != nil && ours(switches[*owner])
			if !onSwitch || (ch.SwitchUUID != "" && v.Config.Key != ch.PortGroupKey) {
				out = append(out, NameTaken{Name: ch.PortGroup, For: ObjectPortGroup, TakenBy: ObjectPortGroup, ID: v.Self.Value, OnSwitch: onSwitch})
			}
		case mo.Network:
			if EntityName(v.Name) == ch.PortGroup {
				out = append(out, NameTaken{Name: ch.PortGroup, For: ObjectPortGroup, TakenBy: ObjectNetwork, ID: v.Self.Value})
			}
		}
	}
	return out, nil
}

// PlanDVSDelete tells whether VM network adapters still use the switch's
// port groups once the adapters leaving in the same plan are gone; a switch
// that is gone has nothing to tell.
func (c *Client) PlanDVSDelete(ctx context.Context, id DVSID, leaving Leaving) (Finding, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	current, err := c.DVS(ctx, id, "")
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	users, err := c.switchUsers(ctx, current)
	if err != nil {
		return nil, err
	}
	users = slices.DeleteFunc(users, func(u SwitchUser) bool { return leaving.adapter(u.VM, u.PortGroupID) })
	if len(users) == 0 {
		return nil, nil
	}
	return SwitchInUse{Switch: current.Name, Users: users}, nil
}

// networkFolderNames reads the names of a datacenter's switches, port groups
// (with their switch) and networks, in one round trip.
// switchesOf is the switches among objects networkFolderNames read, by
// reference.
func switchesOf(objs []any) map[types.ManagedObjectReference]mo.DistributedVirtualSwitch {
	out := map[types.ManagedObjectReference]mo.DistributedVirtualSwitch{}
	for _, o := range objs {
		switch v := o.(type) {
		case mo.VmwareDistributedVirtualSwitch:
			out[v.Self] = v.DistributedVirtualSwitch
		case mo.DistributedVirtualSwitch:
			out[v.Self] = v
		}
	}
	return out
}

func networkFolderNames(ctx context.Context, vc *vim25.Client, datacenterID string) ([]any, error) {
	return retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: datacenterRef(datacenterID), Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "Datacenter", Path: "networkFolder", SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderTree"}}},
			folderTree(),
		}}},
		PropSet: []types.PropertySpec{
			{Type: "DistributedVirtualSwitch", PathSet: []string{"name", "uuid"}},
			{Type: "DistributedVirtualPortgroup", PathSet: []string{"name", "config.key", "config.distributedVirtualSwitch"}},
			{Type: "Network", PathSet: []string{"name"}},
		},
	})
}
