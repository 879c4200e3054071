package vsphere

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// DVSVersions lists the switch versions vCenter can create, oldest first.
func (c *Client) DVSVersions(ctx context.Context) ([]string, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	if vc.ServiceContent.DvSwitchManager == nil {
		return nil, errNeedsVCenter("listing distributed switch versions")
	}
	res, err := methods.QueryAvailableDvsSpec(ctx, vc, &types.QueryAvailableDvsSpec{This: *vc.ServiceContent.DvSwitchManager})
	if err != nil {
		return nil, translate("listing the distributed switch versions vCenter offers", err)
	}
	var versions []string
	for _, p := range res.Returnval {
		if !slices.Contains(versions, p.Version) {
			versions = append(versions, p.Version)
		}
	}
	slices.SortFunc(versions, CompareVersions)
	return versions, nil
}

// CompareVersions orders dotted versions numerically ("7.0.3" < "8.0.0").
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	part := func(parts []string, i int) int {
		if i >= len(parts) {
			return 0
		}
		n, _ := strconv.Atoi(parts[i]) // a non-numeric part counts as 0
		return n
	}
	for i := 0; i < max(len(pa), len(pb)); i++ {
		if x, y := part(pa, i), part(pb, i); x != y {
			return x - y
		}
	}
	return 0
}

// checkESXiVersions checks that each host that joins the switch, and every
// member when the switch is upgraded, runs an ESXi version that can run the
// planned switch version: one of the host products vCenter lists for it
// (QueryDvsCompatibleHostSpec). The joining hosts' products come with the
// NIC check's reads (read, by host); members are read in one round trip, on
// an upgrade only; vCenter is asked once. Only a host that cannot run the
// version costs more calls, to find the newest version it can. A joining
// host that cannot be read has been reported by the NIC check.
func (c *Client) checkESXiVersions(ctx context.Context, ch DVSHostsChange, read map[string]hostProduct) []Finding {
	if ch.Version == "" {
		return nil
	}
	current := map[string]bool{}
	for _, h := range ch.Current {
		current[h.HostID] = true
	}
	upgrade := ch.CurrentVersion != "" && CompareVersions(ch.Version, ch.CurrentVersion) > 0
	var ids, unread []string
	for _, h := range ch.Planned {
		if (current[h.HostID] && !upgrade) || slices.Contains(ids, h.HostID) {
			continue
		}
		ids = append(ids, h.HostID)
		if _, ok := read[h.HostID]; !ok && current[h.HostID] {
			unread = append(unread, h.HostID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	op := "checking the ESXi versions of the hosts of distributed switch " + ch.SwitchName
	vc, err := c.vimClient(ctx)
	if err != nil || vc.ServiceContent.DvSwitchManager == nil {
		return nil // the other checks report the connection; a host needs vCenter anyway
	}
	products := maps.Clone(read)
	var out []Finding
	if len(unread) > 0 {
		members, failed := c.hostProducts(ctx, vc, unread)
		maps.Copy(products, members)
		for _, id := range unread {
			if err := failed[id]; err != nil {
				out = append(out, HostNotChecked{HostID: id, Err: translate(op, err)})
			}
		}
	}
	accepted, err := compatibleHostSpecs(ctx, vc, ch.Version)
	if err != nil {
		for _, id := range ids {
			if _, ok := products[id]; ok {
				out = append(out, HostNotChecked{HostID: id, Err: translate(op, err)})
			}
		}
		return out
	}
	newest := newestSwitchFinder(c, vc, ch.Version)
	for _, id := range ids {
		p, ok := products[id]
		if !ok || p.about == nil || runsSwitch(accepted, *p.about) {
			continue
		}
		out = append(out, HostTooOld{
			HostID: id, Host: p.name, ESXi: p.about.Version, Version: ch.Version,
			Newest: newest(ctx, *p.about), Member: current[id],
		})
	}
	return out
}

// productProps is where a host reports its ESXi product.
var productProps = []string{"summary.config.product"}

// hostProduct is a host's name and ESXi product.
type hostProduct struct {
	name  string
	about *types.AboutInfo
}

// hostProducts reads the name and product of hosts in one round trip; when
// that fails (a host is gone), each alone, giving each failure its host.
func (c *Client) hostProducts(ctx context.Context, vc *vim25.Client, ids []string) (map[string]hostProduct, map[string]error) {
	props := append([]string{"name"}, productProps...)
	spec := types.PropertyFilterSpec{PropSet: []types.PropertySpec{{Type: "HostSystem", PathSet: props}}}
	for _, id := range ids {
		spec.ObjectSet = append(spec.ObjectSet, types.ObjectSpec{Obj: hostRef(id)})
	}
	out, failed := map[string]hostProduct{}, map[string]error{}
	load := func(id string, oc types.ObjectContent) {
		var h mo.HostSystem
		if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &h); err != nil {
			failed[id] = err
			return
		}
		out[id] = hostProduct{name: h.Name, about: h.Summary.Config.Product}
	}
	if objs, err := c.readShared(ctx, vc, spec); err == nil {
		for _, id := range ids {
			if oc, ok := objs[hostRef(id)]; ok {
				load(id, oc)
			} else {
				failed[id] = soap.WrapVimFault(&types.ManagedObjectNotFound{Obj: hostRef(id)})
			}
		}
		return out, failed
	}
	for _, id := range ids {
		var h mo.HostSystem
		if err := c.readObject(ctx, vc, hostRef(id), props, &h); err != nil {
			failed[id] = err
			continue
		}
		out[id] = hostProduct{name: h.Name, about: h.Summary.Config.Product}
	}
	return out, failed
}

func hostRef(id string) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "HostSystem", Value: id}
}

// compatibleHostSpecs asks vCenter which host products a switch of version
// can have as members.
func compatibleHostSpecs(ctx context.Context, vc *vim25.Client, version string) ([]types.DistributedVirtualSwitchHostProductSpec, error) {
	res, err := methods.QueryDvsCompatibleHostSpec(ctx, vc, &types.QueryDvsCompatibleHostSpec{
		This: *vc.ServiceContent.DvSwitchManager, SwitchProductSpec: &types.DistributedVirtualSwitchProductSpec{Version: version},
	})
	if err != nil {
		return nil, err
	}
	return res.Returnval, nil
}

// runsSwitch tells whether a host product can join a switch that accepts
// the listed products: of the same product line, and of a listed version or
// later, as a switch takes hosts of its own version or later. The reference
// leaves open whether vCenter lists each release ("7.0.3") or version lines
// ("7.0"); a host at or above any listed one runs the switch either way.
func runsSwitch(accepted []types.DistributedVirtualSwitchHostProductSpec, p types.AboutInfo) bool {
	for _, a := range accepted {
		if a.ProductLineId != "" && p.ProductLineId != "" && a.ProductLineId != p.ProductLineId {
			continue
		}
		if a.Version != "" && CompareVersions(p.Version, a.Version) >= 0 {
			return true
		}
	}
	return false
}

// newestSwitchFinder returns a function that finds the newest switch version
// vCenter offers, older than planned, that a host product can run, asking
// vCenter once per version.
func newestSwitchFinder(c *Client, vc *vim25.Client, planned string) func(context.Context, types.AboutInfo) string {
	var versions []string
	listed := false
	accepted := map[string][]types.DistributedVirtualSwitchHostProductSpec{}
	return func(ctx context.Context, p types.AboutInfo) string {
		if !listed {
			versions, _ = c.DVSVersions(ctx)
			listed = true
		}
		for i := len(versions) - 1; i >= 0; i-- {
			v := versions[i]
			if CompareVersions(v, planned) >= 0 {
				continue
			}
			specs, ok := accepted[v]
			if !ok {
				specs, _ = compatibleHostSpecs(ctx, vc, v)
				accepted[v] = specs
			}
			if runsSwitch(specs, p) {
				return v
			}
		}
		return ""
	}
}
