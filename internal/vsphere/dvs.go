package vsphere

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// DVSSpec is a PVRDMA distributed switch: one port group for the VMs and one
// RDMA NIC per host as the only uplink (vSphere Networking, "PVRDMA Support":
// the HCA must be the only uplink; PVRDMA does not support NIC teaming).
type DVSSpec struct {
	DatacenterID string
	Name         string
	Description  string
	Version      string // "" lets vCenter pick its newest
	UplinkCount  int
	MTU          int
	NIOC         bool
	PortGroup    PortGroupSpec
	Hosts        []DVSHost
}

// DVSHost is a member host and the one physical NIC it gives the switch.
type DVSHost struct {
	HostID string
	Vmnic  string
}

// DVSID identifies a switch: its UUID, and the full reference once known
// ("VmwareDistributedVirtualSwitch:dvs-21"; vcsim says
// "DistributedVirtualSwitch"), never rebuilt from a hard-coded type.
type DVSID struct {
	UUID string
	Ref  string
}

// DVS is a distributed switch as read from vCenter.
type DVS struct {
	DVSID
	MOID          string
	DatacenterID  string
	Name          string
	Description   string
	Version       string
	UplinkNames   []string
	MTU           int
	NIOC          bool
	Hosts         []DVSHost // sorted by host id; Vmnic is "" when a member has no NIC or several are listed joined by ","
	PortGroup     *PortGroup
	PortGroups    []PortGroup // all port groups but the uplink one
	configVersion string
}

func (d DVSID) ref() (types.ManagedObjectReference, bool) {
	var ref types.ManagedObjectReference
	ok := ref.FromString(d.Ref)
	return ref, ok
}

// UplinkNames are the names the switch gives its uplink ports.
func UplinkNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("uplink%d", i+1)
	}
	return names
}

// CreateDVS creates the switch, then its port group, then adds the hosts.
// The returned id is set as soon as the switch exists, also when a later
// step fails, so the caller never loses track of it.
// It also returns the key of the switch's port group.
func (c *Client) CreateDVS(ctx context.Context, spec DVSSpec) (DVSID, string, error) {
	op := fmt.Sprintf("creating distributed switch %q", spec.Name)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return DVSID{}, "", err
	}
	var dc mo.Datacenter
	if err := c.readObject(ctx, vc, datacenterRef(spec.DatacenterID), []string{"networkFolder"}, &dc); err != nil {
		return DVSID{}, "", c.datacenterError(ctx, vc, op, spec.DatacenterID, err)
	}
	if err := c.awaitNames(ctx, op, vc, spec); err != nil {
		return DVSID{}, "", err
	}
	create := types.DVSCreateSpec{ConfigSpec: &types.VMwareDVSConfigSpec{
		DVSConfigSpec: types.DVSConfigSpec{
			Name:             storedName(spec.Name),
			Description:      spec.Description,
			UplinkPortPolicy: &types.DVSNameArrayUplinkPortPolicy{UplinkPortName: UplinkNames(spec.UplinkCount)},
		},
		MaxMtu: int32(spec.MTU),
	}}
	if spec.Version != "" {
		create.ProductInfo = &types.DistributedVirtualSwitchProductSpec{Version: spec.Version}
	}
	id, err := c.createSwitch(ctx, vc, op, dc.NetworkFolder, spec, create)
	if err != nil {
		return id, "", err
	}
	c.log.Debug(ctx, "Created distributed switch", map[string]any{"name": spec.Name, "uuid": id.UUID, "ref": id.Ref})

	current, err := c.DVS(ctx, id, "")
	if err != nil {
		return id, "", err
	}
	key, err := c.applyDVS(ctx, op, current, spec)
	return id, key, err
}

// createSwitch creates the switch itself and returns its id. A switch
// vCenter made though the client did not see it made is tracked, or the
// next plan finds its name taken by a switch nobody manages: one whose
// CreateDVS_Task call lost its answer (vCenter may have started the task,
// which is waited for) is looked for by name and goes on as created; one
// whose task's end was not read (time up) is returned with the error. A
// task that reports its failure made none, and a same-named switch then is
// someone else's.
func (c *Client) createSwitch(ctx context.Context, vc *vim25.Client, op string, folder types.ManagedObjectReference, spec DVSSpec,
	create types.DVSCreateSpec) (DVSID, error) {
	task, err := object.NewFolder(vc, folder).CreateDVS(ctx, create)
	if answerLost(err) {
		c.settle(ctx, vc, folder)
		if id, found := c.createdDVS(ctx, vc, spec.DatacenterID, spec.Name); found {
			return id, nil
		}
	}
	if err != nil {
		return DVSID{}, translate(op, err)
	}
	info, err := c.waitTask(ctx, op, task)
	if err != nil {
		if info == nil {
			c.settle(ctx, vc, folder)
			if id, found := c.createdDVS(ctx, vc, spec.DatacenterID, spec.Name); found {
				return id, err
			}
		}
		return DVSID{}, err
	}
	ref, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return DVSID{}, fmt.Errorf("%s: vCenter returned no switch", op)
	}
	var s mo.DistributedVirtualSwitch
	if err := c.readObject(ctx, vc, ref, []string{"uuid"}, &s); err != nil {
		return DVSID{Ref: ref.String()}, translate(op, err)
	}
	return DVSID{UUID: s.Uuid, Ref: ref.String()}, nil
}

// createdDVS finds, by its name (unique in the network folder), a switch a
// create made though its task's end was not read; with a context of its
// own, bounded, as ctx may be what ran out.
func (c *Client) createdDVS(ctx context.Context, vc *vim25.Client, datacenterID, name string) (DVSID, bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupAfterFailureTimeout)
	defer cancel()
	objs, err := networkFolderNames(ctx, vc, datacenterID)
	if err != nil {
		c.log.Debug(ctx, "Finding a switch whose creation was not confirmed failed", map[string]any{"name": name, "error": err.Error()})
		return DVSID{}, false
	}
	for _, s := range switchesOf(objs) {
		if EntityName(s.Name) == name && s.Uuid != "" {
			c.log.Debug(ctx, "Found a switch whose creation was not confirmed", map[string]any{"name": name, "uuid": s.Uuid})
			return DVSID{UUID: s.Uuid, Ref: s.Self.String()}, true
		}
	}
	return DVSID{}, false
}

var dvsProps = []string{"name", "uuid", "config", "parent"}

// DVS reads a switch and its port groups in one property-collector round
// trip. portGroupKey picks the managed port group; "" picks none (see
// OnlyPortGroup).
func (c *Client) DVS(ctx context.Context, id DVSID, portGroupKey string) (*DVS, error) {
	return c.dvs(ctx, id, portGroupKey, false)
}

// dvs is DVS; again tells the look-up by UUID of a switch whose remembered
// reference failed, which may simply be gone: its error is not worded with
// reads (see notFoundError).
func (c *Client) dvs(ctx context.Context, id DVSID, portGroupKey string, again bool) (*DVS, error) {
	op := "reading distributed switch " + id.UUID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	ref, ok := id.ref()
	if !ok {
		found, err := c.dvsRef(ctx, vc, id.UUID)
		if err = translate(op, err); errors.Is(err, ErrNotFound) {
			if again {
				return nil, idNotFound(op, ObjectSwitch, id.UUID)
			}
			return nil, c.notFoundError(ctx, vc, op, ObjectSwitch, id.UUID)
		}
		if err != nil {
			return nil, err
		}
		ref, id.Ref = found, found.String()
	}
	d, err := c.readDVS(ctx, vc, op, id, ref, portGroupKey)
	if ok && id.UUID != "" && (errors.Is(err, ErrNotFound) || errors.Is(err, errOtherSwitch)) {
		// The remembered reference is stale (say, a restored vCenter): look
		// the switch up by UUID, once.
		return c.dvs(ctx, DVSID{UUID: id.UUID}, portGroupKey, true)
	}
	return d, err
}

// errOtherSwitch: a remembered reference now names another switch.
var errOtherSwitch = errors.New("the reference names another switch")

func (c *Client) readDVS(
	ctx context.Context,
	vc *vim25.Client,
	op string,
	id DVSID,
	ref types.ManagedObjectReference,
	portGroupKey string,
) (*DVS, error) {
	if all := c.prefetchAllFor(ctx, vc, types.PropertySpec{Type: "DistributedVirtualSwitch", PathSet: dvsProps}); all != nil {
		if s, pgs, dc, ok := all.prefetchedDVS(ref); ok && s.Config != nil && (id.UUID == "" || strings.EqualFold(s.Uuid, id.UUID)) {
			return dvsFromMO(id, s, pgs, dc, portGroupKey), nil
		}
	}
	parents := &types.TraversalSpec{
		SelectionSpec: types.SelectionSpec{Name: "parents"},
		Type:          "Folder", Path: "parent",
		SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "parents"}},
	}
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: ref, SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "DistributedVirtualSwitch", Path: "portgroup"},
			&types.TraversalSpec{
				Type:      "DistributedVirtualSwitch",
				Path:      "parent",
				SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "parents"}},
			},
			parents,
		}}},
		PropSet: []types.PropertySpec{
			{Type: "DistributedVirtualSwitch", PathSet: dvsProps},
			{Type: "DistributedVirtualPortgroup", PathSet: []string{"name", "key", "config"}},
			{Type: "Datacenter", PathSet: []string{"name"}},
		},
	})
	if errors.Is(translate(op, err), ErrNotFound) {
		return nil, idNotFound(op, ObjectSwitch, cmp.Or(id.UUID, ref.Value))
	}
	if err != nil {
		return nil, translate(op, err)
	}
	var (
		s   *mo.DistributedVirtualSwitch
		pgs []mo.DistributedVirtualPortgroup
		dc  string
	)
	for _, o := range objs {
		switch v := o.(type) {
		case mo.VmwareDistributedVirtualSwitch:
			s = &v.DistributedVirtualSwitch
		case mo.DistributedVirtualSwitch:
			s = &v
		case mo.DistributedVirtualPortgroup:
			pgs = append(pgs, v)
		case mo.Datacenter:
			dc = v.Self.Value
		}
	}
	if s == nil || s.Config == nil {
		return nil, idNotFound(op, ObjectSwitch, cmp.Or(id.UUID, ref.Value))
	}
	if id.UUID != "" && !strings.EqualFold(s.Uuid, id.UUID) {
		return nil, errOtherSwitch
	}
	return dvsFromMO(id, s, pgs, dc, portGroupKey), nil
}

func (c *Client) dvsRef(ctx context.Context, vc *vim25.Client, uuid string) (types.ManagedObjectReference, error) {
	if vc.ServiceContent.DvSwitchManager == nil {
		return types.ManagedObjectReference{}, errNeedsVCenter("finding distributed switch " + uuid)
	}
	res, err := methods.QueryDvsByUuid(ctx, vc, &types.QueryDvsByUuid{This: *vc.ServiceContent.DvSwitchManager, Uuid: uuid})
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	if res.Returnval == nil {
		return types.ManagedObjectReference{}, fmt.Errorf("%w: no distributed switch has UUID %s", ErrNotFound, uuid)
	}
	return *res.Returnval, nil
}

func dvsFromMO(id DVSID, s *mo.DistributedVirtualSwitch, pgs []mo.DistributedVirtualPortgroup, dcID, portGroupKey string) *DVS {
	cfg := s.Config.GetDVSConfigInfo()
	out := &DVS{
		DVSID:         DVSID{UUID: s.Uuid, Ref: id.Ref},
		MOID:          s.Self.Value,
		DatacenterID:  dcID,
		Name:          EntityName(s.Name),
		Description:   cfg.Description,
		Version:       cfg.ProductInfo.Version,
		NIOC:          cfg.NetworkResourceManagementEnabled,
		configVersion: cfg.ConfigVersion,
	}
	if vs, ok := s.Config.(*types.VMwareDVSConfigInfo); ok {
		out.MTU = int(vs.MaxMtu)
	}
	if p, ok := cfg.UplinkPortPolicy.(*types.DVSNameArrayUplinkPortPolicy); ok {
		out.UplinkNames = slices.Clone(p.UplinkPortName)
	}
	for _, m := range cfg.Host {
		if m.Config.Host == nil {
			continue
		}
		var nics []string
		if b, ok := m.Config.Backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking); ok {
			for _, p := range b.PnicSpec {
				nics = append(nics, p.PnicDevice)
			}
		}
		out.Hosts = append(out.Hosts, DVSHost{HostID: m.Config.Host.Value, Vmnic: strings.Join(nics, ",")})
	}
	sort.Slice(out.Hosts, func(i, j int) bool { return out.Hosts[i].HostID < out.Hosts[j].HostID })
	uplinks := map[string]bool{}
	for _, u := range cfg.UplinkPortgroup {
		uplinks[u.Value] = true
	}
	for _, pg := range pgs {
		if uplinks[pg.Self.Value] || (pg.Config.Uplink != nil && *pg.Config.Uplink) {
			continue
		}
		out.PortGroups = append(out.PortGroups, portGroupFromMO(&pg))
	}
	sort.Slice(out.PortGroups, func(i, j int) bool { return out.PortGroups[i].Name < out.PortGroups[j].Name })
	for i := range out.PortGroups {
		if portGroupKey != "" && out.PortGroups[i].Key == portGroupKey {
			out.PortGroup = &out.PortGroups[i]
		}
	}
	return out
}

// OnlyPortGroup picks the switch's port group when it has exactly one, as
// an import or a list that names none adopts it. A read never does: a
// switch whose managed port group is gone, or that was adopted without one,
// gets the configuration's, not a neighbour of it.
func (d *DVS) OnlyPortGroup() {
	if d.PortGroup == nil && len(d.PortGroups) == 1 {
		d.PortGroup = &d.PortGroups[0]
	}
}

// UpdateDVS changes a switch to match spec, step by step: version upgrade,
// switch configuration with host membership, Network I/O Control, port
// group. Each step runs only when something in it differs. It returns the
// key of the port group, which it creates when current has none.
func (c *Client) UpdateDVS(ctx context.Context, current *DVS, spec DVSSpec) (key string, err error) {
	defer func() { c.applies.end(current.UUID, err) }() // a create of this apply may wait for its rename
	return c.applyDVS(ctx, fmt.Sprintf("updating distributed switch %q", current.Name), current, spec)
}

// applyDVS is UpdateDVS, with errors labelled op: a create finishes the new
// switch with it.
func (c *Client) applyDVS(ctx context.Context, op string, current *DVS, spec DVSSpec) (string, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return "", err
	}
	ref, ok := current.ref()
	if !ok {
		return "", fmt.Errorf("%s: no reference to the switch", op)
	}
	s := object.NewDistributedVirtualSwitch(vc, ref)

	if spec.Version != "" && spec.Version != current.Version {
		req := &types.PerformDvsProductSpecOperation_Task{This: ref, Operation: "upgrade",
			ProductSpec: &types.DistributedVirtualSwitchProductSpec{Version: spec.Version}}
		res, err := methods.PerformDvsProductSpecOperation_Task(ctx, vc, req)
		if err != nil {
			return "", translate(op+": upgrading to version "+spec.Version, err)
		}
		if _, err := c.waitTask(ctx, op+": upgrading to version "+spec.Version, object.NewTask(vc, res.Returnval)); err != nil {
			return "", err
		}
		if current, err = c.DVS(ctx, current.DVSID, keyOf(current.PortGroup)); err != nil {
			return "", err
		}
	}

	if cs, changed := configChanges(current, spec); changed {
		cs.ConfigVersion = current.configVersion
		task, err := s.Reconfigure(ctx, cs)
		if err != nil {
			return "", translate(op, err)
		}
		if _, err := c.waitTask(ctx, op, task); err != nil {
			return "", err
		}
	}

	if spec.NIOC != current.NIOC {
		_, err := methods.EnableNetworkResourceManagement(ctx, vc, &types.EnableNetworkResourceManagement{This: ref, Enable: spec.NIOC})
		if err != nil {
			return "", translate(op+": switching Network I/O Control", err)
		}
	}

	return c.applyPortGroup(ctx, vc, op, ref, current.PortGroup, spec.PortGroup)
}

// configChanges builds the reconfigure spec for what differs, host
// membership included: added, removed, and hosts whose NIC changed.
func configChanges(current *DVS, spec DVSSpec) (*types.VMwareDVSConfigSpec, bool) {
	cs := &types.VMwareDVSConfigSpec{}
	changed := false
	if spec.Name != current.Name {
		cs.Name, changed = storedName(spec.Name), true
	}
	if spec.Description != current.Description {
		cs.Description, changed = spec.Description, true
	}
	if spec.MTU != current.MTU {
		cs.MaxMtu, changed = int32(spec.MTU), true
	}
	// Only the count is managed: a switch made in the vSphere Client keeps
	// its "Uplink 1" names until the count changes.
	if spec.UplinkCount != len(current.UplinkNames) {
		cs.UplinkPortPolicy, changed = &types.DVSNameArrayUplinkPortPolicy{UplinkPortName: UplinkNames(spec.UplinkCount)}, true
	}
	have := map[string]string{}
	for _, h := range current.Hosts {
		have[h.HostID] = h.Vmnic
	}
	want := map[string]bool{}
	for _, h := range spec.Hosts {
		want[h.HostID] = true
		op := types.ConfigSpecOperationAdd
		if nic, ok := have[h.HostID]; ok {
			if nic == h.Vmnic {
				continue
			}
			op = types.ConfigSpecOperationEdit
		}
		cs.Host = append(cs.Host, memberSpec(op, h))
	}
	for _, h := range current.Hosts {
		if !want[h.HostID] {
			cs.Host = append(cs.Host, types.DistributedVirtualSwitchHostMemberConfigSpec{
				Operation: string(types.ConfigSpecOperationRemove),
				Host:      types.ManagedObjectReference{Type: "HostSystem", Value: h.HostID},
			})
		}
	}
	return cs, changed || len(cs.Host) > 0
}

func memberSpec(op types.ConfigSpecOperation, h DVSHost) types.DistributedVirtualSwitchHostMemberConfigSpec {
	return types.DistributedVirtualSwitchHostMemberConfigSpec{
		Operation: string(op),
		Host:      types.ManagedObjectReference{Type: "HostSystem", Value: h.HostID},
		Backing: &types.DistributedVirtualSwitchHostMemberPnicBacking{
			PnicSpec: []types.DistributedVirtualSwitchHostMemberPnicSpec{{PnicDevice: h.Vmnic}},
		},
	}
}

// DeleteDVS destroys a switch, its port groups with it. It refuses while VM
// adapters use a port group of the switch, naming the VMs, as vCenter's own
// refusal does not.
func (c *Client) DeleteDVS(ctx context.Context, id DVSID) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	current, err := c.DVS(ctx, id, "")
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	op := fmt.Sprintf("deleting distributed switch %q", current.Name)
	vc, err := c.vimClient(ctx)
	if err != nil {
		return err
	}
	users, err := c.portGroupUsers(ctx, vc, current.PortGroups)
	if err != nil {
		return translate(op, err)
	}
	if len(users) > 0 {
		return &Error{Op: op, Kind: ErrInUse, Object: ObjectSwitch, ID: id.UUID, Message: "VM network adapters still use its port groups: " +
			DescribeSwitchUsers(users) + ". Remove those adapters first, then destroy the switch"}
	}
	ref, _ := current.ref()
	task, err := object.NewDistributedVirtualSwitch(vc, ref).Destroy(ctx)
	if err != nil {
		return translate(op, err)
	}
	_, err = c.waitTask(ctx, op, task)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// FindDVSByPath finds a switch by inventory path, e.g. "/DC0/network/rdma".
func (c *Client) FindDVSByPath(ctx context.Context, path string) (DVSID, error) {
	op := "finding distributed switch " + path
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return DVSID{}, err
	}
	found, err := object.NewSearchIndex(vc).FindByInventoryPath(ctx, path)
	if err != nil {
		return DVSID{}, translate(op, err)
	}
	if found == nil || !strings.HasSuffix(found.Reference().Type, "DistributedVirtualSwitch") {
		return DVSID{}, notFound(op, "no distributed switch has the inventory path %s; it looks like /<datacenter>/network/<switch>", path)
	}
	ref := found.Reference()
	var s mo.DistributedVirtualSwitch
	if err := c.readObject(ctx, vc, ref, []string{"uuid"}, &s); err != nil {
		return DVSID{}, translate(op, err)
	}
	return DVSID{UUID: s.Uuid, Ref: ref.String()}, nil
}

var dvsUUIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{2}( [0-9a-fA-F]{2}){7}-[0-9a-fA-F]{2}( [0-9a-fA-F]{2}){7}$|^[0-9a-fA-F-]{36}$`)

// LooksLikeDVSUUID tells a switch UUID (vCenter writes them as 16 spaced
// byte pairs, "50 1a ... -..."; vcsim as a plain UUID) from a path.
func LooksLikeDVSUUID(s string) bool {
	return dvsUUIDPattern.MatchString(s)
}

// switchUsers names the VMs whose adapters use the switch's port groups.
func (c *Client) switchUsers(ctx context.Context, d *DVS) ([]SwitchUser, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	users, err := c.portGroupUsers(ctx, vc, d.PortGroups)
	return users, translate("listing the VMs on the port groups of distributed switch "+d.Name, err)
}
