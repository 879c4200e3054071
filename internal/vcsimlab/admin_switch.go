package vcsimlab

import (
	"context"
	"errors"
	"fmt"

	govmomifind "github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Out-of-band changes to distributed switches and port groups (see admin.go).

// CreateSwitch creates a distributed switch in the datacenter with one host
// and that host's physical NIC vmnic as its uplink, as New Distributed
// Switch and Add and Manage Hosts in the vSphere Client (govc dvs.create,
// govc dvs.add -pnic) do.
func (l *Lab) CreateSwitch(ctx context.Context, switchName, hostName, vmnic string) error {
	return l.createSwitch(ctx, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Name: switchName}}, hostName, vmnic)
}

// CreateSwitchAtVersion is CreateSwitch at an older switch version
// ("8.0.0"), as New Distributed Switch with that version chosen (govc
// dvs.create -product-version) does.
func (l *Lab) CreateSwitchAtVersion(ctx context.Context, switchName, hostName, vmnic, version string) error {
	return l.createSwitchAt(ctx, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Name: switchName}}, hostName, vmnic, version)
}

// createSwitch creates a distributed switch of spec in the datacenter, with
// one host and that host's physical NIC vmnic as its uplink.
func (l *Lab) createSwitch(ctx context.Context, spec *types.VMwareDVSConfigSpec, hostName, vmnic string) error {
	return l.createSwitchAt(ctx, spec, hostName, vmnic, "")
}

// createSwitchAt is createSwitch at version ("" for vCenter's newest).
func (l *Lab) createSwitchAt(ctx context.Context, spec *types.VMwareDVSConfigSpec, hostName, vmnic, version string) error {
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	folders, err := l.adminDatacenter().Folders(ctx)
	if err != nil {
		return err
	}
	spec.Host = []types.DistributedVirtualSwitchHostMemberConfigSpec{switchMember(types.ConfigSpecOperationAdd, host, vmnic)}
	create := types.DVSCreateSpec{ConfigSpec: spec}
	if version != "" {
		create.ProductInfo = &types.DistributedVirtualSwitchProductSpec{Version: version}
	}
	return adminWait(ctx)(folders.NetworkFolder.CreateDVS(ctx, create))
}

// DestroySwitch deletes a distributed switch with its port groups, as
// Delete in the vSphere Client (govc object.destroy) does.
func (l *Lab) DestroySwitch(ctx context.Context, switchName string) error {
	s, err := l.adminSwitch(ctx, switchName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(s.Destroy(ctx))
}

// SetSwitchMTU changes a distributed switch's MTU out of band, as Edit
// Settings > Advanced in the vSphere Client (govc dvs.change -mtu) does: a
// reconfigure at the switch's current config version.
func (l *Lab) SetSwitchMTU(ctx context.Context, switchName string, mtu int32) error {
	return l.adminReconfigureSwitch(ctx, switchName, func(spec *types.VMwareDVSConfigSpec) { spec.MaxMtu = mtu })
}

// SetSwitchNIOC turns Network I/O Control of a distributed switch on or off,
// as Edit Settings > General in the vSphere Client does.
func (l *Lab) SetSwitchNIOC(ctx context.Context, switchName string, enabled bool) error {
	s, err := l.adminSwitch(ctx, switchName)
	if err != nil {
		return err
	}
	_, err = methods.EnableNetworkResourceManagement(ctx, l.client.Client, &types.EnableNetworkResourceManagement{This: s.Reference(), Enable: enabled})
	return err
}

// AddSwitchHost adds a host to a distributed switch with its physical NIC
// vmnic as its only uplink, as Add and Manage Hosts > Add hosts in the
// vSphere Client (govc dvs.add -pnic) does.
func (l *Lab) AddSwitchHost(ctx context.Context, switchName, hostName, vmnic string) error {
	return l.adminSwitchMember(ctx, switchName, hostName, types.ConfigSpecOperationAdd, vmnic)
}

// RemoveSwitchHost takes a host off a distributed switch, as Add and Manage
// Hosts > Remove hosts in the vSphere Client does.
func (l *Lab) RemoveSwitchHost(ctx context.Context, switchName, hostName string) error {
	return l.adminSwitchMember(ctx, switchName, hostName, types.ConfigSpecOperationRemove, "")
}

// SetSwitchUplink makes a host's physical NIC vmnic its only uplink on a
// distributed switch, as Add and Manage Hosts > Manage host networking in the
// vSphere Client does when a host's uplink moves to another NIC.
func (l *Lab) SetSwitchUplink(ctx context.Context, switchName, hostName, vmnic string) error {
	return l.adminSwitchMember(ctx, switchName, hostName, types.ConfigSpecOperationEdit, vmnic)
}

// UpgradeSwitch upgrades a distributed switch to version ("8.0.0"), as
// Upgrade > Upgrade Distributed Switch in the vSphere Client does.
func (l *Lab) UpgradeSwitch(ctx context.Context, switchName, version string) error {
	s, err := l.adminSwitch(ctx, switchName)
	if err != nil {
		return err
	}
	res, err := methods.PerformDvsProductSpecOperation_Task(ctx, l.client.Client, &types.PerformDvsProductSpecOperation_Task{
		This: s.Reference(), Operation: "upgrade", ProductSpec: &types.DistributedVirtualSwitchProductSpec{Version: version},
	})
	if err != nil {
		return err
	}
	return object.NewTask(l.client.Client, res.Returnval).Wait(ctx)
}

// AddPortGroup adds an early-binding port group of ports ports to a
// distributed switch, as New Distributed Port Group in the vSphere Client
// (govc dvs.portgroup.add -type earlyBinding -nports) does.
func (l *Lab) AddPortGroup(ctx context.Context, switchName, portGroupName string, ports int32) error {
	s, err := l.adminSwitch(ctx, switchName)
	if err != nil {
		return err
	}
	res, err := methods.CreateDVPortgroup_Task(ctx, l.client.Client, &types.CreateDVPortgroup_Task{
		This: s.Reference(),
		Spec: types.DVPortgroupConfigSpec{Name: portGroupName, Type: string(types.DistributedVirtualPortgroupPortgroupTypeEarlyBinding), NumPorts: ports},
	})
	if err != nil {
		return err
	}
	return object.NewTask(l.client.Client, res.Returnval).Wait(ctx)
}

// DestroyPortGroup deletes a distributed port group, as Delete in the
// vSphere Client (govc object.destroy) does: Destroy_Task on the port
// group (vSphere Web Services API, ManagedEntity.Destroy_Task).
func (l *Lab) DestroyPortGroup(ctx context.Context, portGroupName string) error {
	pg, err := l.adminPortGroup(ctx, portGroupName)
	if err != nil {
		return err
	}
	task, err := pg.Destroy(ctx)
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

// PortGroupID is the managed object id of the named distributed port group
// ("dvportgroup-42"): what a configuration names a port group the
// administrator made by hand with.
func (l *Lab) PortGroupID(ctx context.Context, portGroupName string) (string, error) {
	pg, err := l.adminPortGroup(ctx, portGroupName)
	if err != nil {
		return "", err
	}
	return pg.Reference().Value, nil
}

// SetPortGroupVLAN sets a distributed port group's VLAN id, as Edit Settings
// > VLAN in the vSphere Client (govc dvs.portgroup.change -vlan) does.
func (l *Lab) SetPortGroupVLAN(ctx context.Context, portGroupName string, vlan int32) error {
	return l.adminReconfigurePortGroup(ctx, portGroupName, types.DVPortgroupConfigSpec{
		DefaultPortConfig: &types.VMwareDVSPortSetting{Vlan: &types.VmwareDistributedVirtualSwitchVlanIdSpec{VlanId: vlan}},
	})
}

// SetPortGroupPorts sets a distributed port group's number of ports, as Edit
// Settings > General in the vSphere Client (govc dvs.portgroup.change
// -nports) does, and as vCenter itself does when it auto-expands the group.
func (l *Lab) SetPortGroupPorts(ctx context.Context, portGroupName string, ports int32) error {
	return l.adminReconfigurePortGroup(ctx, portGroupName, types.DVPortgroupConfigSpec{NumPorts: ports})
}

// CountNetworks counts the networks of the datacenter (switches, port
// groups, standard networks) whose names match pattern ("rdma*"), as govc
// ls /<datacenter>/network/<pattern> lists them.
func (l *Lab) CountNetworks(ctx context.Context, pattern string) (int, error) {
	nets, err := l.adminFinder().NetworkList(ctx, pattern)
	if nf := (*govmomifind.NotFoundError)(nil); errors.As(err, &nf) {
		return 0, nil
	}
	return len(nets), err
}

// adminPortGroup finds a distributed port group of the datacenter by name.
func (l *Lab) adminPortGroup(ctx context.Context, portGroupName string) (*object.DistributedVirtualPortgroup, error) {
	n, err := l.adminFinder().Network(ctx, escapeEntityName(portGroupName)) // an inventory path names it as stored
	if err != nil {
		return nil, err
	}
	pg, ok := n.(*object.DistributedVirtualPortgroup)
	if !ok {
		return nil, fmt.Errorf("%s is not a distributed port group", portGroupName)
	}
	return pg, nil
}

// adminSwitch finds a distributed switch of the datacenter by name.
func (l *Lab) adminSwitch(ctx context.Context, switchName string) (*object.DistributedVirtualSwitch, error) {
	n, err := l.adminFinder().Network(ctx, escapeEntityName(switchName)) // an inventory path names it as stored
	if err != nil {
		return nil, err
	}
	s, ok := n.(*object.DistributedVirtualSwitch)
	if !ok {
		return nil, fmt.Errorf("%s is not a distributed switch", switchName)
	}
	return s, nil
}

// adminSwitchMember adds, edits or removes (op) a host member of a switch,
// with vmnic as its only uplink unless vmnic is "".
func (l *Lab) adminSwitchMember(ctx context.Context, switchName, hostName string, op types.ConfigSpecOperation, vmnic string) error {
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	return l.adminReconfigureSwitch(ctx, switchName, func(spec *types.VMwareDVSConfigSpec) {
		spec.Host = []types.DistributedVirtualSwitchHostMemberConfigSpec{switchMember(op, host, vmnic)}
	})
}

// adminReconfigureSwitch reconfigures a switch at its current config version with
// the spec change fills in.
func (l *Lab) adminReconfigureSwitch(ctx context.Context, switchName string, change func(*types.VMwareDVSConfigSpec)) error {
	s, err := l.adminSwitch(ctx, switchName)
	if err != nil {
		return err
	}
	var cfg mo.DistributedVirtualSwitch
	if err := s.Properties(ctx, s.Reference(), []string{"config.configVersion"}, &cfg); err != nil {
		return err
	}
	spec := &types.VMwareDVSConfigSpec{}
	spec.ConfigVersion = cfg.Config.GetDVSConfigInfo().ConfigVersion
	change(spec)
	return adminWait(ctx)(s.Reconfigure(ctx, spec))
}

// adminReconfigurePortGroup reconfigures a distributed port group of the
// datacenter, found by name, at its current config version.
func (l *Lab) adminReconfigurePortGroup(ctx context.Context, portGroupName string, spec types.DVPortgroupConfigSpec) error {
	pg, err := l.adminPortGroup(ctx, portGroupName)
	if err != nil {
		return err
	}
	var cfg mo.DistributedVirtualPortgroup
	if err := pg.Properties(ctx, pg.Reference(), []string{"config.configVersion"}, &cfg); err != nil {
		return err
	}
	spec.ConfigVersion = cfg.Config.ConfigVersion
	return adminWait(ctx)(pg.Reconfigure(ctx, spec))
}

// switchMember is the spec that adds, edits or removes (op) host as a switch
// member, with vmnic as its only uplink unless vmnic is "".
func switchMember(op types.ConfigSpecOperation, host *object.HostSystem, vmnic string) types.DistributedVirtualSwitchHostMemberConfigSpec {
	member := types.DistributedVirtualSwitchHostMemberConfigSpec{Operation: string(op), Host: host.Reference()}
	if vmnic != "" {
		member.Backing = &types.DistributedVirtualSwitchHostMemberPnicBacking{
			PnicSpec: []types.DistributedVirtualSwitchHostMemberPnicSpec{{PnicDevice: vmnic}},
		}
	}
	return member
}
