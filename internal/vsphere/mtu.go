package vsphere

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mtu"
)

// defaultMTU is a vmknic's or switch's MTU when vSphere leaves it unset.
const defaultMTU = 1500

// PathMTUSpec asks for the largest unfragmented packet between hosts, over
// one vmknic on each, along the paths Paths chooses.
type PathMTUSpec struct {
	HostIDs     []string
	Paths       PathChoice
	VMKernelNIC string
	Min, Max    int           // search bounds, as packet sizes
	Timeout     time.Duration // how long a host waits for a reply to one probe
	Retries     int           // re-probes of the boundary before it counts as too big
	Concurrency int           // pairs probed at once
}

// PathMTU is one ordered pair's answer.
type PathMTU struct {
	SourceHostID, SourceHostName string
	TargetHostID, TargetHostName string
	TargetAddress                string
	MTU                          int // the largest packet that got through
	ConfiguredMTU                int // the search's upper bound: what the vmknics and their switches allow, capped by Max
	Probes                       int // pings sent, retries included
}

// pathEnd is a host's end of the fabric: the vmknic's address and the MTU its
// configuration allows.
type pathEnd struct {
	hostID, name string
	address      string
	configured   int
}

// PathChoice is which ordered pairs of hosts are probed.
type PathChoice string

// The path choices; "" is PathsAll.
const (
	// PathsAll probes every ordered pair: k(k-1) paths.
	PathsAll PathChoice = "all"
	// PathsStar probes the first host to every other and back: 2(k-1).
	PathsStar PathChoice = "star"
	// PathsRing probes each host to the next, the last to the first: k.
	PathsRing PathChoice = "ring"
)

// pairs lists the ordered pairs of k hosts (indexes) a choice probes,
// source-major.
func (p PathChoice) pairs(k int) [][2]int {
	var out [][2]int
	switch p {
	case PathsStar:
		for j := 1; j < k; j++ {
			out = append(out, [2]int{0, j})
		}
		for i := 1; i < k; i++ {
			out = append(out, [2]int{i, 0})
		}
	case PathsRing:
		for i := range k {
			if j := (i + 1) % k; j != i {
				out = append(out, [2]int{i, j})
			}
		}
	default:
		for i := range k {
			for j := range k {
				if i != j {
					out = append(out, [2]int{i, j})
				}
			}
		}
	}
	return out
}

// PathMTUs probes the chosen ordered pairs of hosts with don't-fragment pings
// run on the source host (esxcli network diag ping), searching for the
// largest packet that crosses. Pairs run concurrently; the result keeps the
// order of HostIDs (source-major; a star's hub first).
func (c *Client) PathMTUs(ctx context.Context, spec PathMTUSpec) ([]PathMTU, error) {
	ends, vc, err := c.pathEnds(ctx, spec.HostIDs, spec.VMKernelNIC)
	if err != nil {
		return nil, err
	}
	pairs := spec.Paths.pairs(len(ends))
	pingers := make([]*pinger, len(ends))
	for _, pr := range pairs {
		if pingers[pr[0]] != nil {
			continue
		}
		if pingers[pr[0]], err = newPinger(ctx, c, vc, ends[pr[0]], spec); err != nil {
			return nil, err
		}
	}
	paths := make([]mtu.Path, len(pairs))
	for i, pr := range pairs {
		paths[i] = pingers[pr[0]].path(ends[pr[1]])
	}
	bounds := mtu.Options{Min: spec.Min, Max: spec.Max, Retries: spec.Retries}
	results := make([]PathMTU, len(pairs))
	errs := make([]error, len(pairs))
	for i, found := range mtu.SearchPaths(ctx, paths, bounds, spec.Concurrency) {
		results[i], errs[i] = pingers[pairs[i][0]].result(ends[pairs[i][1]], paths[i].Limit, found, spec.VMKernelNIC)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}

// pathEnds reads every host's vmknic, its port group's switch and MTUs in one
// property-collector round trip.
func (c *Client) pathEnds(ctx context.Context, hostIDs []string, vmknic string) ([]pathEnd, *vim25.Client, error) {
	op := "reading the hosts' " + vmknic
	rctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(rctx)
	if err != nil {
		return nil, nil, err
	}
	var objects []types.ObjectSpec
	for _, id := range hostIDs {
		objects = append(objects, types.ObjectSpec{Obj: types.ManagedObjectReference{Type: "HostSystem", Value: id}})
	}
	objs, err := retrieve(rctx, vc, types.PropertyFilterSpec{
		ObjectSet: objects,
		PropSet: []types.PropertySpec{{Type: "HostSystem", PathSet: []string{
			"name", "config.network.vnic", "config.network.portgroup", "config.network.vswitch", "config.network.proxySwitch"}}},
		// Hosts that do not exist are left out of the result instead of
		// failing the call with the first one, so all can be named
		// (PropertyFilterSpec.reportMissingObjectsInResults, vSphere API 6.5).
		ReportMissingObjectsInResults: types.NewBool(true),
	})
	if err != nil {
		return nil, nil, translate(op, err)
	}
	byID := map[string]mo.HostSystem{}
	for _, o := range objs {
		if h, ok := o.(mo.HostSystem); ok {
			byID[h.Self.Value] = h
		}
	}
	var missing []string
	for _, id := range hostIDs {
		if _, ok := byID[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, nil, c.notFoundError(rctx, vc, op, ObjectHost, missing...)
	}
	ends := make([]pathEnd, 0, len(hostIDs))
	for _, id := range hostIDs {
		h := byID[id]
		end, err := endOf(h, vmknic)
		if err != nil {
			return nil, nil, err
		}
		ends = append(ends, end)
	}
	return ends, vc, nil
}

// endOf finds a host's vmknic address and the MTU its configuration allows:
// the vmknic's own, capped by its switch's: the standard switch of its port
// group, or the distributed switch its port is on (the host's proxy switch
// of that switch UUID carries the switch's MTU).
func endOf(h mo.HostSystem, vmknic string) (pathEnd, error) {
	end := pathEnd{hostID: h.Self.Value, name: h.Name}
	if h.Config == nil || h.Config.Network == nil {
		return end, &Error{
			Op:      "reading host " + h.Name,
			Kind:    ErrInvalidState,
			Message: "vCenter reports no network configuration for the host; is it connected?",
		}
	}
	n := h.Config.Network
	i := slices.IndexFunc(n.Vnic, func(v types.HostVirtualNic) bool { return v.Device == vmknic })
	if i < 0 {
		var have []string
		for _, v := range n.Vnic {
			have = append(have, v.Device)
		}
		return end, &Error{Op: "reading host " + h.Name, Kind: ErrNotFound, Cause: ErrNoSuchVmknic, Message: fmt.Sprintf(
			"host %s has no VMkernel adapter %s (it has %s)", h.Name, vmknic, strings.Join(have, ", "))}
	}
	v := n.Vnic[i]
	if v.Spec.Ip == nil || v.Spec.Ip.IpAddress == "" {
		return end, &Error{
			Op:      "reading host " + h.Name,
			Kind:    ErrInvalidState,
			Message: fmt.Sprintf("%s on host %s has no IPv4 address to ping", vmknic, h.Name),
		}
	}
	end.address = v.Spec.Ip.IpAddress
	end.configured = orDefaultMTU(v.Spec.Mtu)
	if pg := slices.IndexFunc(n.Portgroup, func(p types.HostPortGroup) bool { return p.Spec.Name == v.Portgroup && v.Portgroup != "" }); pg >= 0 {
		sw := n.Portgroup[pg].Spec.VswitchName
		if s := slices.IndexFunc(n.Vswitch, func(s types.HostVirtualSwitch) bool { return s.Name == sw }); s >= 0 {
			end.configured = min(end.configured, orDefaultMTU(n.Vswitch[s].Mtu))
		}
	}
	if port := v.Spec.DistributedVirtualPort; port != nil && port.SwitchUuid != "" {
		// An MTU the host does not report (0) is unknown, not a limit.
		if s := slices.IndexFunc(n.ProxySwitch, func(s types.HostProxySwitch) bool { return s.DvsUuid == port.SwitchUuid }); s >= 0 &&
			n.ProxySwitch[s].Mtu > 0 {
			end.configured = min(end.configured, int(n.ProxySwitch[s].Mtu))
		}
	}
	return end, nil
}

func orDefaultMTU(m int32) int {
	if m <= 0 {
		return defaultMTU
	}
	return int(m)
}

// pinger runs esxcli network diag ping on one source host.
type pinger struct {
	c    *Client
	from pathEnd
	cli  *esxcli
	args []esxcliArg // the arguments every probe shares
}

// newPinger reaches the source host's esxcli: one call.
func newPinger(ctx context.Context, c *Client, vc *vim25.Client, from pathEnd, spec PathMTUSpec) (*pinger, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	cli, err := newESXCLI(ctx, vc, from.hostID)
	if err != nil {
		return nil, translate("preparing esxcli network diag ping on host "+from.name, err)
	}
	wait := max(1, int(math.Ceil(spec.Timeout.Seconds())))
	return &pinger{c: c, from: from, cli: cli, args: []esxcliArg{
		{Name: "interface", Values: []string{spec.VMKernelNIC}}, {Name: "df", Values: []string{"true"}},
		{Name: "count", Values: []string{"1"}}, {Name: "wait", Values: []string{strconv.Itoa(wait)}},
	}}, nil
}

// pingOutput is the part of esxcli's PingOutput a probe needs. ESXi spells
// the field "Recieved".
type pingOutput struct {
	DataObject []struct {
		Summary struct{ Recieved int }
	}
}

// path is the path from p's host to one target: esxcli pings, bounded by
// what the vmknics and their switches at both ends allow.
func (p *pinger) path(to pathEnd) mtu.Path {
	probe := mtu.ProberFunc(func(ctx context.Context, size int) (bool, error) { return p.ping(ctx, to, size) })
	return mtu.Path{Prober: probe, Limit: min(p.from.configured, to.configured)}
}

// result is the answer for the path from p's host to one target, with a
// failed search worded for the user; configured is the path's Limit.
func (p *pinger) result(to pathEnd, configured int, found mtu.PathResult, vmknic string) (PathMTU, error) {
	res := PathMTU{
		SourceHostID: p.from.hostID, SourceHostName: p.from.name, TargetHostID: to.hostID, TargetHostName: to.name,
		TargetAddress: to.address, ConfiguredMTU: found.Bounds.Max, MTU: found.MTU, Probes: found.Probes,
	}
	op := "probing " + p.from.name + " to " + to.name
	switch {
	case errors.Is(found.Err, mtu.ErrBelowMin):
		return res, &Error{Op: op, Kind: ErrInvalidArg, Cause: mtu.ErrBelowMin, Message: fmt.Sprintf(
			"the vmknics and switches allow at most %d bytes between %s and %s, below the smallest size to try, %d",
			configured, p.from.name, to.name, found.Bounds.Min)}
	case errors.Is(found.Err, mtu.ErrUnreachable):
		return res, &Error{Op: op, Kind: ErrUnreachable, Message: fmt.Sprintf(
			"%s (%s) got no reply from %s at %s even at %d bytes after %d probes; check that the host is up and that %s on both hosts is on the same network",
			p.from.name, vmknic, to.name, to.address, found.Bounds.Min, found.Probes, vmknic)}
	}
	return res, found.Err
}

// ping sends one don't-fragment probe of the given packet size. A packet
// bigger than the source vmknic's MTU is refused by ESXi with "Message too
// long"; that is an answer (too big), not an error.
func (p *pinger) ping(ctx context.Context, to pathEnd, size int) (bool, error) {
	op := fmt.Sprintf("pinging %s from %s", to.address, p.from.name)
	args := append(slices.Clone(p.args),
		esxcliArg{Name: "host", Values: []string{to.address}},
		esxcliArg{Name: "size", Values: []string{strconv.Itoa(size - mtu.HeaderBytes)}}) // esxcli's size is the ICMP payload
	ctx, cancel := p.c.withTimeout(ctx)
	defer cancel()
	var out pingOutput
	err := p.cli.run(ctx, []string{"network", "diag"}, "ping", args, &out)
	var cli *esxcliFault
	if errors.As(err, &cli) {
		if strings.Contains(cli.Error(), "Message too long") {
			return false, nil
		}
		return false, &Error{Op: op, Kind: ErrInvalidArg, Message: "esxcli: " + cli.Error()}
	}
	if err != nil {
		return false, translate(op, err)
	}
	return len(out.DataObject) > 0 && out.DataObject[0].Summary.Recieved > 0, nil
}
