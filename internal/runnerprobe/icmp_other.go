//go:build !linux

package runnerprobe

import (
	"context"
	"errors"
	"net"
	"time"
)

// ErrNoPermission: the process may not send ICMP echo requests.
var ErrNoPermission = errors.New("no permission to send ICMP echo requests")

// icmpProber is Linux-only: it needs IP_PMTUDISC_PROBE.
type icmpProber struct{}

// newICMPProber reports that this platform cannot probe.
func newICMPProber(net.IP, time.Duration) (*icmpProber, error) { return nil, ErrNotLinux }

// Close does nothing.
func (*icmpProber) Close() error { return nil }

// Probe is never reached: newICMPProber fails.
func (*icmpProber) Probe(context.Context, int) (bool, error) { return false, ErrNotLinux }

// interfaceMTU reports that this platform cannot probe.
func interfaceMTU(net.IP) (int, error) { return 0, ErrNotLinux }
