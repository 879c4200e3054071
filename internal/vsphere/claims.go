package vsphere

import (
	"strings"
	"sync"
)

// One provider instance plans every resource of a configuration, so it can
// see two resources of one plan claim one thing vCenter has only one of: a
// GPU, a VM's GPU setup, a host's PVRDMA settings, a NIC as a switch uplink,
// a MAC address. Planners record what their resource claims here and report
// a rival claim as a finding. Claims are re-checked against vCenter at apply
// (under a lock where two applies could race), since plans can be stale.

// ClaimKind is what kind of thing is claimed.
type ClaimKind string

// The kinds of claims.
const (
	ClaimPassthrough  ClaimKind = "passthrough device of a VM"
	ClaimGPUSetup     ClaimKind = "GPU setup of a VM"
	ClaimHostSettings ClaimKind = "PVRDMA settings of a host"
	ClaimUplink       ClaimKind = "physical NIC"
	ClaimMAC          ClaimKind = "MAC address"
	ClaimPCIDevice    ClaimKind = "PCI device of a host"
)

// Claim is one thing a planned resource takes for itself.
type Claim struct {
	Kind  ClaimKind
	Key   string // what is claimed, e.g. "host-12 0000:3b:00.0"
	What  string // the thing in words, e.g. "GPU 0000:3b:00.0 on host esx-01"
	Owner string // who claims it, in words, e.g. "virtual machine hpc-node-0 (4223…)"
	// Plan is the claimant's planned values: a claim equal to an earlier one
	// is the same resource planned again (a replacement plans twice), not a
	// rival.
	Plan string
}

// ClaimConflict is a claim another resource of the same plan already made.
type ClaimConflict struct {
	Claim, Rival Claim
}

func (ClaimConflict) finding() {}

type claimBook struct {
	mu     sync.Mutex
	claims map[ClaimKind]map[string]Claim
	// switches this configuration manages, by UUID, as their reads and
	// plans report them: a new switch may take such a switch's name, since
	// it replaces it (a tainted or -replace'd switch is refreshed first).
	managedSwitches map[string]bool
}

// claimed reports whether a resource of this plan claims key.
func (b *claimBook) claimed(kind ClaimKind, key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.claims[kind][key]
	return ok
}

func (b *claimBook) noteSwitch(uuid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.managedSwitches == nil {
		b.managedSwitches = map[string]bool{}
	}
	b.managedSwitches[strings.ToLower(uuid)] = true
}

func (b *claimBook) managesSwitch(uuid string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.managedSwitches[strings.ToLower(uuid)]
}

// claim records c and returns the rival claim it conflicts with, or nil.
func (b *claimBook) claim(c Claim) Finding {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.claims == nil {
		b.claims = map[ClaimKind]map[string]Claim{}
	}
	if b.claims[c.Kind] == nil {
		b.claims[c.Kind] = map[string]Claim{}
	}
	if rival, ok := b.claims[c.Kind][c.Key]; ok && rival.Plan != c.Plan {
		return ClaimConflict{Claim: c, Rival: rival}
	}
	b.claims[c.Kind][c.Key] = c
	return nil
}

// Claim records what a planned resource claims and returns the rival claim
// of another resource of the same plan, or nil.
func (c *Client) Claim(cl Claim) Finding {
	return c.claims.claim(cl)
}

// NoteSwitch records that a resource of this configuration manages the
// switch with this UUID.
func (c *Client) NoteSwitch(uuid string) {
	if uuid != "" {
		c.claims.noteSwitch(uuid)
	}
}
