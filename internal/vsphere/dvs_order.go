package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
)

// Terraform applies resources that do not refer to each other in any order,
// so a switch created with the name of another switch of the configuration
// that the same apply renames (or with its port group's name) could be
// created first and be refused with DuplicateName. Such a create waits, in
// this process, for the other switch's update to end: the plan of that
// update says it renames the switch (ExpectSwitchRename), UpdateDVS reports
// its end here, and CreateDVS waits for the end of the update of a switch
// that still has its names.

// switchApplies holds, by lower-case UUID, the switches whose rename this
// process expects and the end of their update.
type switchApplies struct {
	mu    sync.Mutex
	ended map[string]*switchApply
}

type switchApply struct {
	done    chan struct{} // closed when the update ended
	err     error
	waiters int
}

func (a *switchApplies) get(uuid string, create bool) *switchApply {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended == nil {
		a.ended = map[string]*switchApply{}
	}
	key := strings.ToLower(uuid)
	s := a.ended[key]
	if s == nil && create {
		s = &switchApply{done: make(chan struct{})}
		a.ended[key] = s
	}
	return s
}

// ExpectSwitchRename records that this process plans to rename switch uuid
// (or its port group), before the plan of a new switch may take its names.
func (c *Client) ExpectSwitchRename(uuid string) {
	if uuid != "" {
		c.applies.get(uuid, true)
	}
}

// end records that the update of switch uuid ended, with err.
func (a *switchApplies) end(uuid string, err error) {
	s := a.get(uuid, false)
	if s == nil {
		return // no rename expected: nobody waits
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-s.done:
	default:
		s.err = err
		close(s.done)
	}
}

// waiting reports how many creates wait for switch uuid (for tests).
func (a *switchApplies) waiting(uuid string) int {
	s := a.get(uuid, false)
	if s == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return s.waiters
}

// await waits for the end of the update of switch uuid, or ctx's; false
// when no rename of it is expected.
func (a *switchApplies) await(ctx context.Context, uuid string) (bool, error) {
	s := a.get(uuid, false)
	if s == nil {
		return false, nil
	}
	a.mu.Lock()
	s.waiters++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		s.waiters--
		a.mu.Unlock()
	}()
	select {
	case <-s.done:
		return true, s.err
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// awaitNames makes a create wait while a switch this process renames still
// has its name or its port group's: until that switch's update ends. Only
// when this process renames a switch does it cost a read.
func (c *Client) awaitNames(ctx context.Context, op string, vc *vim25.Client, spec DVSSpec) error {
	c.applies.mu.Lock()
	renaming := len(c.applies.ended) > 0
	c.applies.mu.Unlock()
	if !renaming {
		return nil
	}
	objs, err := networkFolderNames(ctx, vc, spec.DatacenterID)
	if err != nil {
		return c.datacenterError(ctx, vc, op, spec.DatacenterID, err)
	}
	switches := switchesOf(objs)
	holders := map[string]bool{}
	for _, s := range switches {
		if EntityName(s.Name) == spec.Name {
			holders[s.Uuid] = true
		}
	}
	for _, o := range objs {
		pg, ok := o.(mo.DistributedVirtualPortgroup)
		if !ok || EntityName(pg.Name) != spec.PortGroup.Name || pg.Config.DistributedVirtualSwitch == nil {
			continue
		}
		if s, ok := switches[*pg.Config.DistributedVirtualSwitch]; ok {
			holders[s.Uuid] = true
		}
	}
	for uuid := range holders {
		if c.applies.get(uuid, false) == nil {
			continue // not renamed here: vCenter refuses the name, as the plan did
		}
		c.log.Debug(ctx, "Waiting for the rename of the switch whose names this one takes", map[string]any{"name": spec.Name, "switch": uuid})
		switch _, err := c.applies.await(ctx, uuid); {
		case errors.Is(ctx.Err(), context.Canceled):
			return ctx.Err()
		case ctx.Err() != nil:
			return &Error{Op: op, Kind: ErrInvalidState, Object: ObjectSwitch, ID: uuid, Message: fmt.Sprintf(
				"switch %s, whose name (or port group name) this switch takes, was not renamed by this apply within %s. Make this "+
					"switch depend on its resource (depends_on), so that its rename is applied first", uuid, c.apiTimeout())}
		case err != nil:
			return &Error{Op: op, Kind: ErrInvalidState, Object: ObjectSwitch, ID: uuid, Cause: err, Message: fmt.Sprintf(
				"switch %s, whose name (or port group name) this switch takes, was not renamed: its update failed (%v)", uuid, err)}
		}
	}
	return nil
}
