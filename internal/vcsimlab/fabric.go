package vcsimlab

import (
	"sync"
	"time"
)

const (
	ipICMPHeaders  = 28 // an IPv4 ICMP echo packet is its payload plus 28 bytes
	defaultPortMTU = 9000
)

// fabric is the physical network between the lab's hosts: each host's
// switch port MTU, optional per-link MTUs, and hosts that drop everything.
// ping.go sends esxcli pings over it; tests shape it through the Lab's
// SetPortMTU, SetLinkMTU, DropAll and SetLostProbeDelay.
type fabric struct {
	mu        sync.Mutex
	portMTU   map[string]int    // host id -> MTU of its switch port
	linkMTU   map[[2]string]int // unordered host id pair -> MTU of the path between them
	dead      map[string]bool   // host id -> drops every packet
	lostDelay time.Duration     // how long a lost probe takes to answer
	pings     []Ping
}

// Ping records one esxcli ping the lab answered, for tests.
type Ping struct {
	SourceHost string // host id
	Interface  string
	Target     string
	Size       int // ICMP payload
	DF         bool
	Received   bool
}

func newFabric() *fabric {
	return &fabric{portMTU: map[string]int{}, linkMTU: map[[2]string]int{}, dead: map[string]bool{}}
}

func link(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// port is the MTU of a host's switch port. f is locked.
func (f *fabric) port(hostID string) int {
	if m, ok := f.portMTU[hostID]; ok {
		return m
	}
	return defaultPortMTU
}

// deliver records the ping p from host p.SourceHost to the vmknic of MTU
// dstMTU on host dstHost ("" when no vmknic has the target address), and
// returns whether it arrives: a ping is lost when either host drops
// everything and, with don't-fragment set, when the packet is larger than
// the target vmknic's MTU, either host's switch port or the link between
// them. A lost ping answers only after the fabric's lost-probe delay.
func (f *fabric) deliver(p Ping, dstHost string, dstMTU int) bool {
	f.mu.Lock()
	received := dstHost != "" && !f.dead[p.SourceHost] && !f.dead[dstHost]
	if received && p.DF {
		limit := min(dstMTU, f.port(p.SourceHost), f.port(dstHost))
		if m, ok := f.linkMTU[link(p.SourceHost, dstHost)]; ok {
			limit = min(limit, m)
		}
		received = p.Size+ipICMPHeaders <= limit
	}
	p.Received = received
	f.pings = append(f.pings, p)
	delay := f.lostDelay
	f.mu.Unlock()
	if !received {
		time.Sleep(delay)
	}
	return received
}

func (f *fabric) setPortMTU(hostID string, mtu int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.portMTU[hostID] = mtu
}

func (f *fabric) setLinkMTU(hostA, hostB string, mtu int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.linkMTU[link(hostA, hostB)] = mtu
}

func (f *fabric) setDead(hostID string, dead bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead[hostID] = dead
}

func (f *fabric) setLostDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lostDelay = d
}

// history returns the pings answered so far.
func (f *fabric) history() []Ping {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Ping(nil), f.pings...)
}
