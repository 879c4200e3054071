package mtu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
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
	ConfiguredMTU int // the outgoing interface's MTU: the search's upper bound
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
		iface, err := InterfaceMTU(ip)
		if err != nil {
			return nil, err
		}
		results[i] = TargetResult{Target: target, Address: ip.String(), ConfiguredMTU: iface}
		if probers[i], err = NewICMPProber(ip, o.Timeout); err != nil {
			return nil, err
		}
	}

	errs := make([]error, len(targets))
	sem := make(chan struct{}, max(o.Concurrency, 1))
	var wg sync.WaitGroup
	for i := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = searchTarget(ctx, probers[i], &results[i], o.Options)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}

func searchTarget(ctx context.Context, p Prober, r *TargetResult, o Options) error {
	upper := min(r.ConfiguredMTU, o.Max)
	if upper < o.Min {
		return fmt.Errorf("the interface towards %s (%s) has MTU %d, below the minimum %d; lower min_mtu", r.Target, r.Address, r.ConfiguredMTU, o.Min)
	}
	o.Max = upper
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
		if ip.To4() == nil {
			return nil, fmt.Errorf("%s is not an IPv4 address; only IPv4 paths can be probed", target)
		}
		return ip, nil
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", target)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("cannot resolve %s to an IPv4 address: %v", target, err)
	}
	return ips[0], nil
}
