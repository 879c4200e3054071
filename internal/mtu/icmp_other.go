//go:build !linux

package mtu

import (
	"context"
	"errors"
	"net"
	"time"
)

// ErrNoPermission: the process may not send ICMP echo requests.
var ErrNoPermission = errors.New("no permission to send ICMP echo requests")

var errNotLinux = errors.New("probing from the machine running Terraform needs Linux; use host_system_ids to probe between ESXi hosts")

// ICMPProber is Linux-only: it needs IP_PMTUDISC_PROBE.
type ICMPProber struct{}

// NewICMPProber reports that this platform cannot probe.
func NewICMPProber(net.IP, time.Duration) (*ICMPProber, error) { return nil, errNotLinux }

// Close does nothing.
func (*ICMPProber) Close() error { return nil }

// Probe is never reached: NewICMPProber fails.
func (*ICMPProber) Probe(context.Context, int) (bool, error) { return false, errNotLinux }

// InterfaceMTU reports that this platform cannot probe.
func InterfaceMTU(net.IP) (int, error) { return 0, errNotLinux }
