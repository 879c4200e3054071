package vsphere

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// The plan-time rules of a PVRDMA switch: the version on offer, never a
// downgrade, and for each joining host a NIC that exists, is free and (as a
// warning) does RDMA with its link up.

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
)

// NICChoice is a host's NIC named for a switch, with what the host offers
// instead: its RDMA NICs that no switch uses.
type NICChoice struct {
	HostID, Host, NIC string
	FreeRDMA          []string
}

func (VersionNotOffered) finding() {}
func (DowngradeRefused) finding()  {}
func (HostNotChecked) finding()    {}
func (NICNotOnHost) finding()      {}
func (NICInUse) finding()          {}
func (NICWithoutRDMA) finding()    {}
func (NICLinkDown) finding()       {}

// PlanDVSVersion checks a switch version against what vCenter offers and,
// for an existing switch, against its current version. With want "" it
// returns the newest version, which a new switch gets.
func (c *Client) PlanDVSVersion(ctx context.Context, want, current string) (string, Finding, error) {
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
	SwitchName string    // as planned
	SwitchUUID string    // the existing switch; "" for a new one
	Current    []DVSHost // members as they are; only other members are checked
	Planned    []DVSHost
}

// PlanDVSHosts checks each host that joins the switch, or gives it another
// NIC: the NIC exists, no other switch uses it, it does RDMA and has a link.
// A member that stays as it is was checked when it joined; a refresh shows
// any change to it.
func (c *Client) PlanDVSHosts(ctx context.Context, ch DVSHostsChange) []Finding {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	var out []Finding
	for _, h := range ch.Planned {
		if slices.Contains(ch.Current, h) {
			continue
		}
		host, err := c.Host(ctx, h.HostID)
		if err != nil {
			out = append(out, HostNotChecked{HostID: h.HostID, Err: err})
			continue
		}
		out = append(out, planUplink(ch, h, host)...)
	}
	return out
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

// The findings of PlanDVSNames and PlanDVSDelete.
type (
	// NameTaken: another object of the datacenter has the name; vCenter
	// refuses the create or rename with DuplicateName.
	NameTaken struct {
		Name    string
		For     Object // what the name was planned for
		TakenBy Object // what has it
		ID      string // the managed object id of what has it
	}
	// SwitchInUse: VM network adapters still use the switch's port groups,
	// so vCenter refuses to destroy it unless they are removed first.
	SwitchInUse struct {
		Switch string
		Users  []string // one entry per port group: `port group "name": vm-a (PVRDMA), vm-b`
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
}

// PlanDVSNames checks, in one round trip, that the datacenter exists and
// that the switch's and port group's names are free in its network folder,
// where vCenter keeps switches, port groups and standard networks under
// unique names. A new switch may take the names of a switch this
// configuration manages (NoteSwitch): that is a replacement (a tainted or
// -replace'd switch), destroyed before the new one is created.
func (c *Client) PlanDVSNames(ctx context.Context, ch DVSNamesChange) ([]Finding, error) {
	op := fmt.Sprintf("checking the names of distributed switch %q", ch.SwitchName)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := networkFolderNames(ctx, vc, ch.DatacenterID)
	if err != nil {
		return nil, datacenterError(op, ch.DatacenterID, err)
	}
	switches := map[types.ManagedObjectReference]mo.DistributedVirtualSwitch{}
	for _, o := range objs {
		switch v := o.(type) {
		case mo.VmwareDistributedVirtualSwitch:
			switches[v.Self] = v.DistributedVirtualSwitch
		case mo.DistributedVirtualSwitch:
			switches[v.Self] = v
		}
	}
	// ours tells whether a switch is this one, or the one this one replaces.
	ours := func(s mo.DistributedVirtualSwitch) bool {
		if ch.SwitchUUID != "" {
			return strings.EqualFold(s.Uuid, ch.SwitchUUID)
		}
		return s.Name == ch.SwitchName && c.claims.managesSwitch(s.Uuid)
	}
	var out []Finding
	for _, s := range switches {
		if s.Name == ch.SwitchName && !ours(s) {
			out = append(out, NameTaken{Name: s.Name, For: ObjectSwitch, TakenBy: ObjectSwitch, ID: s.Self.Value})
		}
	}
	for _, o := range objs {
		switch v := o.(type) {
		case mo.DistributedVirtualPortgroup:
			if v.Name != ch.PortGroup {
				continue
			}
			if owner := v.Config.DistributedVirtualSwitch; owner == nil || !ours(switches[*owner]) {
				out = append(out, NameTaken{Name: v.Name, For: ObjectPortGroup, TakenBy: ObjectPortGroup, ID: v.Self.Value})
			}
		case mo.Network:
			if v.Name == ch.PortGroup {
				out = append(out, NameTaken{Name: v.Name, For: ObjectPortGroup, TakenBy: ObjectNetwork, ID: v.Self.Value})
			}
		}
	}
	return out, nil
}

// PlanDVSDelete tells whether VM network adapters still use the switch's
// port groups; a switch that is gone has nothing to tell.
func (c *Client) PlanDVSDelete(ctx context.Context, id DVSID) (Finding, error) {
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
	if err != nil || len(users) == 0 {
		return nil, err
	}
	return SwitchInUse{Switch: current.Name, Users: users}, nil
}

// networkFolderNames reads the names of a datacenter's switches, port groups
// (with their switch) and networks, in one round trip.
func networkFolderNames(ctx context.Context, vc *vim25.Client, datacenterID string) ([]any, error) {
	return retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: datacenterRef(datacenterID), Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "Datacenter", Path: "networkFolder", SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderTree"}}},
			folderTree(),
		}}},
		PropSet: []types.PropertySpec{
			{Type: "DistributedVirtualSwitch", PathSet: []string{"name", "uuid"}},
			{Type: "DistributedVirtualPortgroup", PathSet: []string{"name", "config.distributedVirtualSwitch"}},
			{Type: "Network", PathSet: []string{"name"}},
		},
	})
}
