package vsphere

import (
	"context"
	"slices"
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
