package mtu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// TargetOptions bound a search from this machine.
type TargetOptions struct {
	Options
	Timeout     time.Duration // how long a probe waits for its reply
	Concurrency int           // targets probed at once
}

// TargetResult is the path MTU from this machine to one target.
type TargetResult struct {
	Target        string // as given
	Address       string // the IPv4 address probed
	MTU           int
	ConfiguredMTU int // the search's upper bound: the outgoing interface's MTU, capped by Max
	Probes        int
}

// ProbeTargets searches the path MTU from this machine to every target (IPv4
// addresses or names), concurrently. Results keep the order of targets.
func ProbeTargets(ctx context.Context, targets []string, o TargetOptions) ([]TargetResult, error) {
	o.Options = withDefaults(o.Options)
	results := make([]TargetResult, len(targets))
	probers := make([]*ICMPProber, len(targets))
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
		if probers[i], err = NewICMPProber(ip, o.Timeout); err != nil {
			return nil, err
		}
		iface, err := InterfaceMTU(ip)
		if err != nil {
			return nil, err
		}
		results[i] = TargetResult{Target: target, Address: ip.String(), ConfiguredMTU: iface}
	}

	err := Each(len(targets), o.Concurrency, func(i int) error {
		return searchTarget(ctx, probers[i], &results[i], o.Options)
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

func searchTarget(ctx context.Context, p Prober, r *TargetResult, o Options) error {
	iface := r.ConfiguredMTU
	r.ConfiguredMTU = min(iface, o.Max)
	if r.ConfiguredMTU < o.Min {
		return fmt.Errorf("the interface towards %s (%s) has MTU %d, below the minimum %d; lower min_mtu", r.Target, r.Address, iface, o.Min)
	}
	o.Max = r.ConfiguredMTU
	found, err := Search(ctx, p, o)
	r.MTU, r.Probes = found.MTU, found.Probes
	if errors.Is(err, ErrUnreachable) {
		return fmt.Errorf("%s (%s) sent no reply even at %d bytes after %d probes; check that it answers ping and that no firewall drops ICMP: %w",
			r.Target, r.Address, o.Min, found.Probes, err)
	}
	return err
}

func resolve(ctx context.Context, target string) (net.IP, error) {
	if ip := net.ParseIP(target); ip != nil {
		return ip, nil // NewICMPProber refuses what it cannot probe
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", target)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("cannot resolve %s to an IPv4 address: %v", target, err)
	}
	return ips[0], nil
}
