package vsphere

// Distributed port groups: the one a PVRDMA switch gives its VMs, and the
// VMs whose adapters use a switch's port groups.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// PortGroupSpec is the switch's port group for the VMs' PVRDMA adapters.
type PortGroupSpec struct {
	Name       string
	VLANID     int // 0: no VLAN
	Ports      int
	AutoExpand bool
}

// VLANOther is the VLANID of a port group set to a trunk or a private VLAN,
// which this provider does not manage, so that it shows as drift.
const VLANOther = -1

// PortGroup is a distributed port group as read from vCenter.
type PortGroup struct {
	PortGroupSpec
	ID            string // managed object id, e.g. "dvportgroup-17"
	Key           string
	configVersion string
}

func portGroupFromMO(pg *mo.DistributedVirtualPortgroup) PortGroup {
	c := pg.Config
	out := PortGroup{
		ID: pg.Self.Value, Key: c.Key, configVersion: c.ConfigVersion,
		PortGroupSpec: PortGroupSpec{Name: EntityName(c.Name), Ports: int(c.NumPorts)},
	}
	if out.Key == "" {
		out.Key = pg.Key
	}
	if c.AutoExpand != nil {
		out.AutoExpand = *c.AutoExpand
	}
	if ps, ok := c.DefaultPortConfig.(*types.VMwareDVSPortSetting); ok && ps != nil && ps.Vlan != nil {
		out.VLANID = VLANOther
		if v, ok := ps.Vlan.(*types.VmwareDistributedVirtualSwitchVlanIdSpec); ok && v != nil {
			out.VLANID = int(v.VlanId)
		}
	}
	return out
}

func keyOf(pg *PortGroup) string {
	if pg == nil {
		return ""
	}
	return pg.Key
}

func portGroupConfig(spec PortGroupSpec) types.DVPortgroupConfigSpec {
	return types.DVPortgroupConfigSpec{
		Name:       storedName(spec.Name),
		Type:       string(types.DistributedVirtualPortgroupPortgroupTypeEarlyBinding),
		NumPorts:   int32(spec.Ports),
		AutoExpand: types.NewBool(spec.AutoExpand),
		DefaultPortConfig: &types.VMwareDVSPortSetting{
			Vlan: &types.VmwareDistributedVirtualSwitchVlanIdSpec{VlanId: int32(spec.VLANID)},
		},
	}
}

// applyPortGroup creates the port group when it is missing and reconfigures
// it when it differs, and returns its key.
func (c *Client) applyPortGroup(
	ctx context.Context,
	vc *vim25.Client,
	op string,
	ref types.ManagedObjectReference,
	current *PortGroup,
	spec PortGroupSpec,
) (string, error) {
	if current != nil && current.PortGroupSpec == spec {
		return current.Key, nil
	}
	cfg := portGroupConfig(spec)
	if current == nil {
		res, err := methods.CreateDVPortgroup_Task(ctx, vc, &types.CreateDVPortgroup_Task{This: ref, Spec: cfg})
		if err != nil {
			return "", translate(op+": creating port group "+spec.Name, err)
		}
		key, err := c.createdPortGroup(ctx, vc, op, res.Returnval, spec.Name)
		if err != nil {
			// The task may have made the port group all the same: track it,
			// by its name (unique in the datacenter), or the next plan
			// finds its name taken by a port group nobody manages.
			lookupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupAfterFailureTimeout)
			defer cancel()
			if d, ferr := c.readDVS(lookupCtx, vc, op, DVSID{}, ref, ""); ferr == nil {
				for _, pg := range d.PortGroups {
					if pg.Name == spec.Name {
						return pg.Key, err
					}
				}
			}
		}
		return key, err
	}
	// Read the version now: the switch reconfigure just before may have
	// touched the port group (uplink teaming order), bumping it.
	ref = types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: current.ID}
	var fresh mo.DistributedVirtualPortgroup
	if err := c.readObject(ctx, vc, ref, []string{"config.configVersion"}, &fresh); err != nil {
		return "", translate(op+": reading port group "+current.Name, err)
	}
	cfg.ConfigVersion = fresh.Config.ConfigVersion
	pg := object.NewDistributedVirtualPortgroup(vc, ref)
	task, err := pg.Reconfigure(ctx, cfg)
	if err != nil {
		return "", translate(op+": reconfiguring port group "+current.Name, err)
	}
	_, err = c.waitTask(ctx, op+": reconfiguring port group "+current.Name, task)
	return current.Key, err
}

// createdPortGroup waits for a port group's creation and returns its key.
func (c *Client) createdPortGroup(ctx context.Context, vc *vim25.Client, op string, task types.ManagedObjectReference, name string) (string, error) {
	info, err := c.waitTask(ctx, op+": creating port group "+name, object.NewTask(vc, task))
	if err != nil {
		return "", err
	}
	created, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return "", fmt.Errorf("%s: vCenter returned no port group", op)
	}
	var pg mo.DistributedVirtualPortgroup
	if err := c.readObject(ctx, vc, created, []string{"key"}, &pg); err != nil {
		return "", translate(op, err)
	}
	return pg.Key, nil
}

// lookupAfterFailureTimeout bounds finding what a failed step may have
// made, after the step's own time has run out.
const lookupAfterFailureTimeout = 30 * time.Second

// SwitchUser is a VM's network adapter on a port group of a switch.
type SwitchUser struct {
	PortGroup, PortGroupID string
	VM                     VMRef
	Adapter                string // "PVRDMA", "SR-IOV" or "network"
	HostID                 string // the VM's host, "" when vCenter names none
}

// portGroupUsers lists the VMs' adapters on the port groups, by port group,
// then VM name.
func (c *Client) portGroupUsers(ctx context.Context, vc *vim25.Client, pgs []PortGroup) ([]SwitchUser, error) {
	if len(pgs) == 0 {
		return nil, nil
	}
	var set []types.ObjectSpec
	for _, pg := range pgs {
		set = append(set, types.ObjectSpec{
			Obj:       types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: pg.ID},
			SelectSet: []types.BaseSelectionSpec{&types.TraversalSpec{Type: "Network", Path: "vm"}},
		})
	}
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: set,
		PropSet: []types.PropertySpec{
			{Type: "DistributedVirtualPortgroup", PathSet: []string{"name", "key"}},
			{Type: "VirtualMachine", PathSet: []string{"name", "config.uuid", "config.hardware.device", "runtime.host"}},
		},
	})
	if err != nil {
		return nil, err
	}
	byKey := map[string][]SwitchUser{}
	names := map[string]string{}
	for _, o := range objs {
		switch v := o.(type) {
		case mo.DistributedVirtualPortgroup:
			names[v.Key] = EntityName(v.Name)
		case mo.VirtualMachine:
			if v.Config == nil {
				continue
			}
			vm := VMRef{ID: v.Config.Uuid, MOID: v.Self.Value, Name: v.Name}
			var host string
			if v.Runtime.Host != nil {
				host = v.Runtime.Host.Value
			}
			for _, dev := range v.Config.Hardware.Device {
				nic, ok := networkAdapter(dev)
				if !ok || nic.SwitchUUID == "" {
					continue
				}
				adapter := "network"
				switch nic.Type {
				case "vmxnet3vrdma":
					adapter = "PVRDMA"
				case "sriov":
					adapter = "SR-IOV"
				}
				byKey[nic.NetworkID] = append(byKey[nic.NetworkID], SwitchUser{VM: vm, Adapter: adapter, HostID: host})
			}
		}
	}
	var out []SwitchUser
	for _, pg := range pgs {
		users := byKey[pg.Key]
		slices.SortFunc(users, func(a, b SwitchUser) int { return cmp.Compare(a.VM.Name+a.Adapter, b.VM.Name+b.Adapter) })
		for _, u := range users {
			u.PortGroup, u.PortGroupID = cmp.Or(names[pg.Key], pg.Name), pg.ID
			out = append(out, u)
		}
	}
	return out, nil
}

// DescribeSwitchUsers words adapters on a switch's port groups, one part per
// port group: `port group "pvrdma-a": hpc-0 (PVRDMA), hpc-1 (SR-IOV)`.
func DescribeSwitchUsers(users []SwitchUser) string {
	var parts []string
	for i := 0; i < len(users); {
		j := i
		var vms []string
		for ; j < len(users) && users[j].PortGroupID == users[i].PortGroupID; j++ {
			vms = append(vms, fmt.Sprintf("%s (%s)", users[j].VM.Name, users[j].Adapter))
		}
		parts = append(parts, fmt.Sprintf("port group %q: %s", users[i].PortGroup, strings.Join(slices.Compact(vms), ", ")))
		i = j
	}
	return strings.Join(parts, "; ")
}

// portGroupBacking is the backing of a network adapter (PVRDMA or SR-IOV)
// on a distributed port group. What it is made of never changes while the
// port group exists (a port group's key, its switch and the switch's UUID),
// so it is read once per client: a fleet's adapters on one port group do
// not each read it and its switch again (see rememberBacking).
func (c *Client) portGroupBacking(ctx context.Context, op, portGroupID string) (*types.VirtualEthernetCardDistributedVirtualPortBackingInfo, error) {
	if b, ok := c.backings.Load(portGroupID); ok {
		return backingInfo(b.(types.DistributedVirtualSwitchPortConnection)), nil
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	var pg mo.DistributedVirtualPortgroup
	err = c.readObject(
		ctx,
		vc,
		types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: portGroupID},
		[]string{"key", "config.distributedVirtualSwitch"},
		&pg,
	)
	if err != nil {
		return nil, translate(op+": reading port group "+portGroupID, err)
	}
	if pg.Config.DistributedVirtualSwitch == nil {
		return nil, &Error{Op: op, Kind: ErrInvalidArg, Message: "port group " + portGroupID + " has no distributed switch"}
	}
	var s mo.DistributedVirtualSwitch
	if err := c.readObject(ctx, vc, *pg.Config.DistributedVirtualSwitch, []string{"uuid"}, &s); err != nil {
		return nil, translate(op, err)
	}
	c.rememberBacking(portGroupID, pg.Key, s.Uuid)
	return backingInfo(types.DistributedVirtualSwitchPortConnection{SwitchUuid: s.Uuid, PortgroupKey: pg.Key}), nil
}

// rememberBacking keeps what a port group's adapters are backed by, as read
// by a plan or an apply.
func (c *Client) rememberBacking(portGroupID, key, switchUUID string) {
	if key != "" && switchUUID != "" {
		c.backings.Store(portGroupID, types.DistributedVirtualSwitchPortConnection{SwitchUuid: switchUUID, PortgroupKey: key})
	}
}

func backingInfo(port types.DistributedVirtualSwitchPortConnection) *types.VirtualEthernetCardDistributedVirtualPortBackingInfo {
	return &types.VirtualEthernetCardDistributedVirtualPortBackingInfo{Port: port}
}

// portGroupInfo is a network an adapter is planned on.
type portGroupInfo struct {
	name       string
	key        string
	standard   bool // a standard network, not a distributed port group
	dvs        *types.ManagedObjectReference
	switchName string
	members    []types.ManagedObjectReference // the switch's hosts
}

// readPortGroup reads a distributed port group and its switch, in shared
// reads; an id that names a standard network reads as one.
func (c *Client) readPortGroup(ctx context.Context, vc *vim25.Client, op, portGroupID string) (*portGroupInfo, error) {
	pg, err := c.readPortGroupOnly(ctx, vc, op, portGroupID)
	if err != nil || pg.standard {
		return pg, err
	}
	return pg, c.readPortGroupSwitch(ctx, vc, op, portGroupID, pg)
}

// readPortGroupOnly reads a distributed port group (a standard network's
// id reads as one) without its switch.
func (c *Client) readPortGroupOnly(ctx context.Context, vc *vim25.Client, op, portGroupID string) (*portGroupInfo, error) {
	var pg mo.DistributedVirtualPortgroup
	err := c.readObject(
		ctx,
		vc,
		types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: portGroupID},
		[]string{"name", "key", "config.distributedVirtualSwitch"},
		&pg,
	)
	if errors.Is(translate(op, err), ErrNotFound) {
		var n mo.Network
		if nerr := c.readObject(ctx, vc, types.ManagedObjectReference{Type: "Network", Value: portGroupID}, []string{"name"}, &n); nerr == nil {
			return &portGroupInfo{name: EntityName(n.Name), standard: true}, nil
		}
		return nil, c.notFoundError(ctx, vc, op, ObjectPortGroup, portGroupID)
	}
	if err != nil {
		return nil, translate(op, err)
	}
	return &portGroupInfo{name: EntityName(pg.Name), key: pg.Key, dvs: pg.Config.DistributedVirtualSwitch}, nil
}

// readPortGroupSwitch reads the switch of a distributed port group read
// by readPortGroupOnly into pg: its name and member hosts.
func (c *Client) readPortGroupSwitch(ctx context.Context, vc *vim25.Client, op, portGroupID string, pg *portGroupInfo) error {
	if pg.dvs == nil {
		return nil
	}
	var s mo.DistributedVirtualSwitch
	if err := c.readObject(ctx, vc, *pg.dvs, []string{"name", "uuid", "summary.hostMember"}, &s); err != nil {
		return translate(op, err)
	}
	pg.switchName, pg.members = EntityName(s.Name), s.Summary.HostMember
	c.rememberBacking(portGroupID, pg.key, s.Uuid)
	return nil
}
