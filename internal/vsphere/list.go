package vsphere

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Scope is where a list looks: one datacenter, one cluster, or some hosts.
// The zero Scope is the whole vCenter. VMs are those registered on the
// scope's hosts.
type Scope struct {
	DatacenterID string
	ClusterID    string
	HostIDs      []string
}

func (s Scope) String() string {
	switch {
	case s.DatacenterID != "":
		return "datacenter " + s.DatacenterID
	case s.ClusterID != "":
		return "cluster " + s.ClusterID
	case len(s.HostIDs) == 1:
		return "host " + s.HostIDs[0]
	case len(s.HostIDs) > 1:
		return "hosts " + strings.Join(s.HostIDs, ", ")
	}
	return "the vCenter"
}

// inventory is what one property-collector round trip found in a scope.
type inventory struct {
	hosts      []mo.HostSystem // sorted by name
	vms        []mo.VirtualMachine
	switches   []mo.DistributedVirtualSwitch
	portGroups []mo.DistributedVirtualPortgroup
	parents    map[types.ManagedObjectReference]types.ManagedObjectReference
}

// What each list reads of hosts and VMs.
var (
	listVMProps = slices.Concat([]string{"name", "config.uuid", "config.template", "config.firmware", "config.hardware.device",
		"config.memoryReservationLockedToMax", "runtime.powerState", "runtime.host", "runtime.connectionState",
		"guest.guestFamily", "guest.guestFullName"}, gpuExtraConfig)
)

// hostUnreadable says why a list cannot read a host correctly: vCenter
// returns no configuration or hardware for a disconnected host (vSphere API
// reference, HostSystem: "might not be available for a disconnected host"),
// so its settings and devices are unknown, not absent. "" when it can;
// hardware says whether the list read the host's hardware too.
func hostUnreadable(h *mo.HostSystem, hardware bool) string {
	if h.Config != nil && (!hardware || h.Hardware != nil) {
		return ""
	}
	state := string(h.Runtime.ConnectionState)
	if state == "" {
		state = "not read"
	}
	return fmt.Sprintf("vCenter returns no configuration for host %s (%s, connection state: %s); reconnect it in vCenter "+
		"(right-click it > Connection > Connect) to list it", h.Name, h.Self.Value, state)
}

// LeftOutVM is a VM a VM list leaves out, and why.
type LeftOutVM struct {
	VM  VMRef
	Why string
}

// vmUnreadable says why a list cannot read a VM: vCenter returns no
// configuration for an inaccessible, invalid or orphaned VM (vSphere API
// reference, VirtualMachineConnectionState: "no configuration can be
// returned for a virtual machine"), so its devices are unknown, not absent.
// "" when it can.
func vmUnreadable(vm *mo.VirtualMachine) string {
	if vm.Config != nil {
		return ""
	}
	return fmt.Sprintf("vCenter returns no configuration for virtual machine %s (%s, connection state: %s): its files cannot be read, "+
		"or it is no longer registered on its host; make it accessible in vCenter (reconnect its datastore or host, or register it "+
		"again) to list it", vm.Name, vm.Self.Value, cmp.Or(string(vm.Runtime.ConnectionState), "not read"))
}

// guestOf is the guest OS VMware Tools reported for a VM, by its full name
// where there is one; "" when none was reported.
func guestOf(vm *mo.VirtualMachine) string {
	if vm.Guest == nil {
		return ""
	}
	return cmp.Or(vm.Guest.GuestFullName, vm.Guest.GuestFamily)
}

// isTemplate reports whether a VM is a template: a template cannot be
// reconfigured or powered on (vSphere documentation, "Convert a Template
// to a Virtual Machine": convert it back first), so no resource manages
// its devices and the lists leave it out.
func isTemplate(vm *mo.VirtualMachine) bool {
	return vm.Config != nil && vm.Config.Template
}

// readInventory reads a scope's hosts with hostProps, their VMs with
// vmProps (none when nil) and, when switches is set, the distributed
// switches that serve the scope, all in one property-collector round trip.
// A scope object that does not exist is ErrNotFound.
func (c *Client) readInventory(ctx context.Context, op string, scope Scope, hostProps, vmProps []string, switches bool) (*inventory, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	root := vc.ServiceContent.RootFolder
	if scope.DatacenterID != "" {
		root = types.ManagedObjectReference{Type: "Datacenter", Value: scope.DatacenterID}
	}
	named := func(name string) *types.SelectionSpec { return &types.SelectionSpec{Name: name} }
	hostVMs := &types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "hostVMs"}, Type: "HostSystem", Path: "vm"}
	computeHosts := &types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "computeHosts"}, Type: "ComputeResource", Path: "host"}
	if vmProps != nil {
		computeHosts.SelectSet = []types.BaseSelectionSpec{named("hostVMs")}
	}
	var hostObjects []types.ObjectSpec
	switch {
	case scope.ClusterID != "":
		hostObjects = []types.ObjectSpec{{Obj: types.ManagedObjectReference{Type: "ClusterComputeResource", Value: scope.ClusterID},
			SelectSet: []types.BaseSelectionSpec{computeHosts, hostVMs}}}
	case len(scope.HostIDs) > 0:
		for _, id := range scope.HostIDs {
			hostObjects = append(hostObjects, types.ObjectSpec{Obj: types.ManagedObjectReference{Type: "HostSystem", Value: id},
				SelectSet: []types.BaseSelectionSpec{hostVMs}})
		}
	default:
		hostObjects = []types.ObjectSpec{{Obj: root, SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "folders"}, Type: "Folder", Path: "childEntity",
				SelectSet: []types.BaseSelectionSpec{named("folders"), named("datacenterHosts"), named("computeHosts")}},
			&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "datacenterHosts"}, Type: "Datacenter", Path: "hostFolder",
				SelectSet: []types.BaseSelectionSpec{named("folders")}},
			computeHosts, hostVMs,
		}}}
	}
	props := []types.PropertySpec{
		{Type: "HostSystem", PathSet: hostProps},
		{Type: "Datacenter", PathSet: []string{"name"}},
		{Type: "Folder", PathSet: []string{"parent"}},
	}
	if vmProps != nil {
		props = append(props, types.PropertySpec{Type: "VirtualMachine", PathSet: vmProps})
	}
	// Hosts given that do not exist are left out of the result instead of
	// failing the call with the first one, so each can be named
	// (PropertyFilterSpec.reportMissingObjectsInResults, vSphere API 4.1).
	specs := []types.PropertyFilterSpec{{ObjectSet: hostObjects, PropSet: props, ReportMissingObjectsInResults: types.NewBool(len(scope.HostIDs) > 0)}}
	if switches {
		// A second filter in the same call: the switches of the datacenter
		// (or of every datacenter), with their port groups.
		specs = append(specs, types.PropertyFilterSpec{
			ObjectSet: []types.ObjectSpec{{Obj: root, SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "networkFolders"}, Type: "Folder", Path: "childEntity",
					SelectSet: []types.BaseSelectionSpec{named("networkFolders"), named("datacenterNetwork"), named("switchPortGroups")}},
				&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "datacenterNetwork"}, Type: "Datacenter", Path: "networkFolder",
					SelectSet: []types.BaseSelectionSpec{named("networkFolders")}},
				&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "switchPortGroups"}, Type: "DistributedVirtualSwitch", Path: "portgroup"},
			}}},
			PropSet: []types.PropertySpec{
				{Type: "DistributedVirtualSwitch", PathSet: dvsProps},
				{Type: "DistributedVirtualPortgroup", PathSet: []string{"name", "key", "config"}},
				{Type: "Datacenter", PathSet: []string{"name"}},
				{Type: "Folder", PathSet: []string{"parent"}},
			},
		})
	}
	objs, err := retrieve(ctx, vc, specs...)
	switch err = translate(op, err); {
	case errors.Is(err, ErrNotFound) && scope.ClusterID != "":
		return nil, c.notFoundError(ctx, vc, op, ObjectCluster, scope.ClusterID)
	case errors.Is(err, ErrNotFound) && scope.DatacenterID != "":
		return nil, c.notFoundError(ctx, vc, op, ObjectDatacenter, scope.DatacenterID)
	case err != nil:
		return nil, err
	}
	inv := &inventory{parents: map[types.ManagedObjectReference]types.ManagedObjectReference{}}
	for _, o := range objs {
		switch v := o.(type) {
		case mo.HostSystem:
			inv.hosts = append(inv.hosts, v)
		case mo.VirtualMachine:
			inv.vms = append(inv.vms, v)
		case mo.VmwareDistributedVirtualSwitch:
			inv.switches = append(inv.switches, v.DistributedVirtualSwitch)
		case mo.DistributedVirtualSwitch:
			inv.switches = append(inv.switches, v)
		case mo.DistributedVirtualPortgroup:
			inv.portGroups = append(inv.portGroups, v)
		case mo.Folder:
			if v.Parent != nil {
				inv.parents[v.Self] = *v.Parent
			}
		}
	}
	var missing []string
	for _, id := range scope.HostIDs {
		if !slices.ContainsFunc(inv.hosts, func(h mo.HostSystem) bool { return h.Self.Value == id }) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, c.notFoundError(ctx, vc, op, ObjectHost, missing...)
	}
	slices.SortFunc(inv.hosts, func(a, b mo.HostSystem) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(inv.vms, func(a, b mo.VirtualMachine) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(inv.switches, func(a, b mo.DistributedVirtualSwitch) int { return strings.Compare(a.Name, b.Name) })
	return inv, nil
}

// vmsOn is the inventory's VMs registered on host.
func (inv *inventory) vmsOn(host types.ManagedObjectReference) []mo.VirtualMachine {
	var out []mo.VirtualMachine
	for _, vm := range inv.vms {
		if vm.Runtime.Host != nil && *vm.Runtime.Host == host {
			out = append(out, vm)
		}
	}
	return out
}

// datacenterOf is the datacenter a switch is in, through its folders.
func (inv *inventory) datacenterOf(s *mo.DistributedVirtualSwitch) string {
	if s.Parent == nil {
		return ""
	}
	for ref, ok := *s.Parent, true; ok; ref, ok = inv.parents[ref] {
		if ref.Type == "Datacenter" {
			return ref.Value
		}
	}
	return ""
}

// ListDVS lists the distributed switches that serve a scope (in a
// datacenter, those of the datacenter; in a cluster or hosts, those with one
// of its hosts as a member), optionally only the one called name, in one
// round trip. A switch with several port groups comes with none chosen.
func (c *Client) ListDVS(ctx context.Context, scope Scope, name string) ([]*DVS, error) {
	inv, err := c.readInventory(ctx, "listing distributed switches in "+scope.String(), scope, []string{"name"}, nil,
		true)
	if err != nil {
		return nil, err
	}
	inScope := map[string]bool{}
	for _, h := range inv.hosts {
		inScope[h.Self.Value] = true
	}
	var out []*DVS
	for i := range inv.switches {
		s := &inv.switches[i]
		if s.Config == nil || (name != "" && EntityName(s.Name) != name) {
			continue
		}
		var pgs []mo.DistributedVirtualPortgroup
		for _, pg := range inv.portGroups {
			if pg.Config.DistributedVirtualSwitch != nil && *pg.Config.DistributedVirtualSwitch == s.Self {
				pgs = append(pgs, pg)
			}
		}
		d := dvsFromMO(DVSID{Ref: s.Self.String()}, s, pgs, inv.datacenterOf(s), "")
		d.OnlyPortGroup()
		serves := scope.DatacenterID != "" || (scope.ClusterID == "" && len(scope.HostIDs) == 0)
		for _, h := range d.Hosts {
			serves = serves || inScope[h.HostID]
		}
		if serves {
			out = append(out, d)
		}
	}
	return out, nil
}

// ListedHostPVRDMA is a host with PVRDMA settings, as a list finds it.
type ListedHostPVRDMA struct {
	HostID, HostName string
	Settings         PVRDMASettings
	// Unreadable, when set, says why the host's settings cannot be read
	// (Settings are then empty): the list leaves it out and says so.
	Unreadable string
}

// ListHostPVRDMA lists the hosts of a scope with PVRDMA set up (the
// vmknic option set, or the pvrdma ruleset on), in one round trip: the
// option is read as config.option["Net.PVRDMAVmknic"] of each host.
func (c *Client) ListHostPVRDMA(ctx context.Context, scope Scope) ([]ListedHostPVRDMA, error) {
	inv, err := c.readInventory(ctx, "listing the PVRDMA settings of hosts in "+scope.String(), scope, hostPVRDMAProps, nil, false)
	if err != nil {
		return nil, err
	}
	var out []ListedHostPVRDMA
	for i := range inv.hosts {
		h := &inv.hosts[i]
		if why := hostUnreadable(h, false); why != "" {
			out = append(out, ListedHostPVRDMA{HostID: h.Self.Value, HostName: h.Name, Unreadable: why})
			continue
		}
		p := hostPVRDMAFromMO(h, vmknicOf(h))
		if p.Settings.Vmknic != "" || p.Settings.FirewallEnabled {
			out = append(out, ListedHostPVRDMA{HostID: h.Self.Value, HostName: h.Name, Settings: p.Settings})
		}
	}
	return out, nil
}

// ListedHostPassthrough is a host's PCI devices, as a list finds them.
type ListedHostPassthrough struct {
	*HostPassthrough
	// Unreadable, when set, says why the host's devices cannot be read
	// (Devices is then empty): the list leaves it out and says so.
	Unreadable string
}

// ListHostPassthrough reads the PCI devices of every host of a scope, with
// the VMs that use them, in one round trip.
func (c *Client) ListHostPassthrough(ctx context.Context, scope Scope) ([]ListedHostPassthrough, error) {
	inv, err := c.readInventory(ctx, "listing the PCI devices of hosts in "+scope.String(), scope, hostProps, listVMProps, false)
	if err != nil {
		return nil, err
	}
	out := make([]ListedHostPassthrough, 0, len(inv.hosts))
	for i := range inv.hosts {
		h := &inv.hosts[i]
		out = append(out, ListedHostPassthrough{
			HostPassthrough: hostPassthroughFromMO(h, inv.vmsOn(h.Self), topologyFromMO(h.Hardware)), Unreadable: hostUnreadable(h, true),
		})
	}
	return out, nil
}

// ListPVRDMANICs lists the PVRDMA adapters of the VMs of a scope, in one
// round trip, and the VMs it cannot read.
func (c *Client) ListPVRDMANICs(ctx context.Context, scope Scope) ([]*PVRDMANIC, []LeftOutVM, error) {
	return listAdapters(ctx, c, "PVRDMA", scope, pvrdmaNIC, func(d types.BaseVirtualDevice) bool {
		_, ok := d.(*types.VirtualVmxnet3Vrdma)
		return ok
	})
}

// ListSRIOVNICs lists the SR-IOV adapters of the VMs of a scope, in one
// round trip, and the VMs it cannot read.
func (c *Client) ListSRIOVNICs(ctx context.Context, scope Scope) ([]*SRIOVNIC, []LeftOutVM, error) {
	return listAdapters(ctx, c, "SR-IOV", scope, sriovNICOf, func(d types.BaseVirtualDevice) bool {
		_, ok := d.(*types.VirtualSriovEthernetCard)
		return ok
	})
}

func listAdapters[N any](
	ctx context.Context,
	c *Client,
	kind string,
	scope Scope,
	of func(vm *mo.VirtualMachine, key int32, op string) (*N, error),
	is func(types.BaseVirtualDevice) bool,
) ([]*N, []LeftOutVM, error) {
	op := fmt.Sprintf("listing the %s adapters of VMs in %s", kind, scope)
	inv, err := c.readInventory(ctx, op, scope, []string{"name"}, listVMProps, false)
	if err != nil {
		return nil, nil, err
	}
	var out []*N
	var leftOut []LeftOutVM
	for i := range inv.vms {
		vm := &inv.vms[i]
		if why := vmUnreadable(vm); why != "" {
			leftOut = append(leftOut, LeftOutVM{VM: vmRefOf(vm), Why: why})
			continue
		}
		if isTemplate(vm) {
			continue
		}
		for _, dev := range sortedDevices(vm.Config.Hardware.Device) {
			if !is(dev) {
				continue
			}
			if n, err := of(vm, dev.GetVirtualDevice().Key, op); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, leftOut, nil
}

// ListedGPUMMIO is a VM's GPU setup, as a list finds it, with its devices
// told apart by its host.
type ListedGPUMMIO struct {
	*GPUMMIO
	Sorted *SortedPassthrough
	// Guest is the guest OS VMware Tools reported ("" when none did): a
	// guest installed under BIOS does not boot after the switch to EFI.
	Guest string
	// Unreadable, when set, says why the setup cannot be read correctly:
	// the list leaves it out and says so.
	Unreadable string
}

// ListGPUMMIO lists the VMs of a scope with a GPU setup (a passthrough
// device or one of the MMIO keys), in one round trip.
func (c *Client) ListGPUMMIO(ctx context.Context, scope Scope) ([]ListedGPUMMIO, error) {
	inv, err := c.readInventory(ctx, "listing the GPU setups of VMs in "+scope.String(), scope, hostProps, listVMProps, false)
	if err != nil {
		return nil, err
	}
	hosts := map[types.ManagedObjectReference]*Host{}
	unreadable := map[types.ManagedObjectReference]string{}
	for i := range inv.hosts {
		h := &inv.hosts[i]
		hosts[h.Self] = hostFromMO(h, nil, inv.vmsOn(h.Self))
		unreadable[h.Self] = hostUnreadable(h, true)
	}
	var out []ListedGPUMMIO
	for i := range inv.vms {
		vm := &inv.vms[i]
		if why := vmUnreadable(vm); why != "" {
			out = append(out, ListedGPUMMIO{GPUMMIO: gpuMMIOFromMO(vm), Unreadable: why})
			continue
		}
		if isTemplate(vm) {
			continue
		}
		got := gpuMMIOFromMO(vm)
		if got.Empty() {
			continue
		}
		listed := ListedGPUMMIO{GPUMMIO: got, Guest: guestOf(vm)}
		if vm.Runtime.Host != nil && hosts[*vm.Runtime.Host] != nil {
			// Without its host's devices, a GPU would pass for another
			// PCI device: the VM cannot be listed as it is.
			if why := unreadable[*vm.Runtime.Host]; why != "" {
				listed.Unreadable = fmt.Sprintf("its host's devices cannot be read: %s", why)
			}
			listed.Sorted = sortPassthrough(hosts[*vm.Runtime.Host], got.Devices)
		}
		out = append(out, listed)
	}
	return out, nil
}
