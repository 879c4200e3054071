// Package runnerprobe measures the path MTU from the machine running
// Terraform (the "runner") to a list of addresses: don't-fragment ICMP echo
// requests sent from this process, searched by internal/mtu. It resolves
// names and opens the sockets; the search itself is internal/mtu's.
//
// Probing between ESXi hosts, through the vSphere API, is the service
// layer's (internal/vsphere, PathMTUs).
package runnerprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mtu"
)

// Options bound a search from this machine.
type Options struct {
	mtu.Options
	Timeout     time.Duration // how long a probe waits for its reply
	Concurrency int           // targets probed at once
}

// PathMTU is the path MTU from this machine to one target.
type PathMTU struct {
	Target        string // as given
	Address       string // the IPv4 address probed
	MTU           int
	ConfiguredMTU int // the search's upper bound: the outgoing interface's MTU, capped by Max
	Probes        int
}

// PathMTUs searches the path MTU from this machine to every target (IPv4
// addresses or names), concurrently. Results keep the order of targets.
func PathMTUs(ctx context.Context, targets []string, o Options) ([]PathMTU, error) {
	results := make([]PathMTU, len(targets))
	paths := make([]mtu.Path, len(targets))
	probers := make([]*icmpProber, len(targets))
	defer func() {
		for _, p := range probers {
			if p != nil {
				p.Close()
			}
		}
	}()
	// Sockets are opened up front so that a missing permission is one error,
	// not one per target.
	for i, target := range targets {
		ip, err := resolve(ctx, target)
		if err != nil {
			return nil, err
		}
		if probers[i], err = newICMPProber(ip, o.Timeout); err != nil {
			return nil, err
		}
		iface, err := interfaceMTU(ip)
		if err != nil {
			return nil, err
		}
		results[i] = PathMTU{Target: target, Address: ip.String()}
		paths[i] = mtu.Path{Prober: probers[i], Limit: iface}
	}

	errs := make([]error, len(targets))
	for i, found := range mtu.SearchPaths(ctx, paths, o.Options, o.Concurrency) {
		r := &results[i]
		r.MTU, r.Probes, r.ConfiguredMTU = found.MTU, found.Probes, found.Bounds.Max
		errs[i] = explain(*r, paths[i].Limit, found)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}

// ErrNotLinux: probing from this machine needs Linux (IP_PMTUDISC_PROBE).
var ErrNotLinux = errors.New("probing from the machine running Terraform needs Linux")

// worded is an error of a kind callers match, in words for the user.
type worded struct {
	kind error
	text string
}

func (w worded) Error() string { return w.text }
func (w worded) Unwrap() error { return w.kind }

// explain words a failed search for the user.
func explain(r PathMTU, iface int, found mtu.PathResult) error {
	switch {
	case errors.Is(found.Err, mtu.ErrBelowMin):
		return worded{kind: mtu.ErrBelowMin,
			text: fmt.Sprintf("the interface towards %s (%s) has MTU %d, below the smallest size to try, %d", r.Target, r.Address, iface, found.Bounds.Min)}
	case errors.Is(found.Err, mtu.ErrUnreachable):
		return fmt.Errorf("%s (%s) sent no reply even at %d bytes after %d probes; check that it answers ping and that no firewall drops ICMP: %w",
			r.Target, r.Address, found.Bounds.Min, found.Probes, found.Err)
	}
	return found.Err
}

func resolve(ctx context.Context, target string) (net.IP, error) {
	if ip := net.ParseIP(target); ip != nil {
		return ip, nil // newICMPProber refuses what it cannot probe
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", target)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("cannot resolve %s to an IPv4 address: %v", target, err)
	}
	return ips[0], nil
}
