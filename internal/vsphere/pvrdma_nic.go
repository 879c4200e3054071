package vsphere

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// MinPVRDMAHardwareVersion is the first virtual hardware with PVRDMA.
const MinPVRDMAHardwareVersion = 13

// PVRDMANICSpec is one PVRDMA adapter of a VM.
type PVRDMANICSpec struct {
	PortGroupID      string // distributed port group managed object id
	DeviceProtocol   string // rocev1 or rocev2
	StartConnected   bool
	MAC              string // "" lets vSphere generate one
	ReserveAllMemory bool
	PowerOffAllowed  bool // may shut the guest down and power it back on
}

// PVRDMANIC is a PVRDMA adapter as read from vCenter.
type PVRDMANIC struct {
	VM             VMRef
	Key            int32
	PortGroupID    string // the port group's key, equal to its managed object id
	DeviceProtocol string
	StartConnected bool
	MAC            string
	AdapterIndex   int // position among the VM's PVRDMA adapters by device key, from 0
	MemoryLocked   bool
}

// PVRDMANICChange is a planned adapter, new or changed, to check.
type PVRDMANICChange struct {
	VMID            string // UUID or managed object id, as given
	PortGroupID     string
	DeviceProtocol  string // "" leaves the choice to vSphere
	Key             int32  // the adapter's device key; 0 for a new adapter
	ProtocolChange  bool   // an existing adapter changes protocol
	MAC             string // a static MAC, new or changed; "" for none
	PowerOffAllowed bool
	// MovedFrom is the adapter this one replaces on another VM, when it
	// moves: its MAC is free for this one.
	MovedFrom *AdapterAt
	// SwitchHosts are the member hosts (managed object ids) the port
	// group's switch has once the plan is applied, when the plan changes
	// them; nil: the members vCenter has.
	SwitchHosts []string
}

// AdapterAt is a VM's network adapter: the VM's id (UUID or managed object
// id, as given) and the device key.
type AdapterAt struct {
	VMID string
	Key  int32
}

// The findings of PlanPVRDMANIC. VM names the VM as "name (id as given)".
type (
	// HardwareTooOld: the VM's hardware version has no PVRDMA.
	HardwareTooOld struct {
		VM               string
		Version, Minimum int64
	}
	// ProtocolNotOffered: the VM's hardware version offers other protocols.
	ProtocolNotOffered struct {
		VM      string
		Version int64
		Offered []string
		Wanted  string
	}
	// NoProtocolChoice: the VM's hardware version offers PVRDMA with no
	// choice of protocol, so none can be asked for.
	NoProtocolChoice struct {
		VM      string
		Version int64
		Wanted  string
	}
	// StandardNetwork: the port group id names a standard network.
	StandardNetwork struct {
		NetworkID, Name string
	}
	// HostsNotOnSwitch: hosts of the VM's cluster are not members of the
	// port group's switch, so vSphere refuses the adapter.
	HostsNotOnSwitch struct {
		VM, Switch, PortGroup string
		Hosts                 []string
		Planned               bool // the members are the plan's (SwitchHosts)
	}
	// PVRDMAFirstAdapter: the new adapter would be the VM's first network
	// adapter; VMware's PVRDMA guidance keeps a regular vmxnet3 first.
	PVRDMAFirstAdapter struct {
		VM string
	}
	// PVRDMASharedNetwork: another PVRDMA adapter of the VM is on the port group.
	PVRDMASharedNetwork struct {
		VM, PortGroup string
	}
	// MACInUse: another network adapter in vCenter has the static MAC.
	MACInUse struct {
		MAC, VM string // VM is the one whose adapter has it
	}
)

func (HardwareTooOld) finding()      {}
func (ProtocolNotOffered) finding()  {}
func (NoProtocolChoice) finding()    {}
func (StandardNetwork) finding()     {}
func (HostsNotOnSwitch) finding()    {}
func (PVRDMAFirstAdapter) finding()  {}
func (PVRDMASharedNetwork) finding() {}
func (MACInUse) finding()            {}

// pvrdmaFacts is what the rules of a planned adapter need from vCenter.
type pvrdmaFacts struct {
	vm              *mo.VirtualMachine
	hardwareVersion int64
	browser         bool     // the VM has an environment browser to ask for its protocols
	protocols       []string // the protocols the VM's hardware version lets an adapter choose from
	regularAdapters int
	otherOnGroup    bool // another PVRDMA adapter of the VM uses the port group
	network         string
	standard        bool // the port group id names a standard network
	switchName      string
	notOnSwitch     []string
	macOwner        string // the VM with another adapter that has the planned MAC
}

// PVRDMANICPlan is what the planner found: the refusals and warnings, and
// whether the VM's hardware version lets an adapter choose its protocol
// (see PVRDMAProtocolChoice), so a plan that checks the adapter needs no
// second read of the VM.
type PVRDMANICPlan struct {
	Findings       []Finding
	ProtocolChoice bool
	OnHost         VMOnHost // where the change runs
}

// PlanPVRDMANIC checks a planned adapter against its VM and the port group's
// switch.
func (c *Client) PlanPVRDMANIC(ctx context.Context, ch PVRDMANICChange) (*PVRDMANICPlan, error) {
	f, err := c.pvrdmaFacts(ctx, ch)
	if err != nil {
		return nil, err
	}
	vm := fmt.Sprintf("%s (%s)", f.vm.Name, ch.VMID)
	var out []Finding
	switch {
	case f.hardwareVersion < MinPVRDMAHardwareVersion:
		out = append(out, HardwareTooOld{VM: vm, Version: f.hardwareVersion, Minimum: MinPVRDMAHardwareVersion})
	case ch.DeviceProtocol == "":
	case len(f.protocols) == 0:
		out = append(out, NoProtocolChoice{VM: vm, Version: f.hardwareVersion, Wanted: ch.DeviceProtocol})
	case !slices.Contains(f.protocols, ch.DeviceProtocol):
		out = append(out, ProtocolNotOffered{VM: vm, Version: f.hardwareVersion, Offered: f.protocols, Wanted: ch.DeviceProtocol})
	}
	switch {
	case f.standard:
		out = append(out, StandardNetwork{NetworkID: ch.PortGroupID, Name: f.network})
	case len(f.notOnSwitch) > 0:
		out = append(out, HostsNotOnSwitch{VM: vm, Switch: f.switchName, PortGroup: f.network, Hosts: f.notOnSwitch,
			Planned: ch.SwitchHosts != nil})
	}
	if ch.Key == 0 && f.regularAdapters == 0 {
		out = append(out, PVRDMAFirstAdapter{VM: vm})
	}
	if f.otherOnGroup {
		out = append(out, PVRDMASharedNetwork{VM: vm, PortGroup: f.network})
	}
	if f.macOwner != "" {
		out = append(out, MACInUse{MAC: ch.MAC, VM: f.macOwner})
	}
	if p := PlanPower(vm, powerStateOf(f.vm.Runtime.PowerState), ch.Key == 0 || ch.ProtocolChange, ch.PowerOffAllowed, WhatPVRDMANeedsOff); p != nil {
		out = append(out, p)
	}
	on := VMOnHost{VM: vm, Running: f.vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn,
		Passthrough: hasPassthrough(f.vm.Config.Hardware.Device)}
	if f.vm.Runtime.Host != nil {
		on.HostID = f.vm.Runtime.Host.Value
	}
	return &PVRDMANICPlan{Findings: out, ProtocolChoice: f.hardwareVersion < MinPVRDMAHardwareVersion || !f.browser || len(f.protocols) > 0,
		OnHost: on}, nil
}

// pvrdmaFacts reads the VM and the port group in one call, then the
// switch's members and the VM's cluster in another (inOneCall): two round
// trips, whatever else Terraform is doing.
func (c *Client) pvrdmaFacts(ctx context.Context, ch PVRDMANICChange) (*pvrdmaFacts, error) {
	op := "checking a PVRDMA adapter of virtual machine " + ch.VMID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	var vm *mo.VirtualMachine
	var pg *portGroupInfo
	err = c.inOneCall(ctx,
		func(ctx context.Context) (err error) {
			vm, err = c.readVMProps(ctx, vc, op, ch.VMID, append(slices.Clone(vmProps), "environmentBrowser"))
			return err
		},
		func(ctx context.Context) (err error) {
			pg, err = c.readPortGroupOnly(ctx, vc, op, ch.PortGroupID)
			return err
		})
	if err != nil {
		return nil, err
	}
	if vm.Config == nil {
		return nil, vmInaccessible(op, vm.Name, vm.Self.Value)
	}
	f := &pvrdmaFacts{vm: vm, browser: vm.EnvironmentBrowser.Value != "", network: pg.name, standard: pg.standard}
	for _, n := range vmFromMO(vm).NetworkAdapters {
		if n.Type != "vmxnet3vrdma" {
			f.regularAdapters++
		} else if int32(n.Key) != ch.Key && n.NetworkID == ch.PortGroupID {
			f.otherOnGroup = true
		}
	}
	f.hardwareVersion = ParseHardwareVersion(vm.Config.Version)
	if f.hardwareVersion >= MinPVRDMAHardwareVersion && f.browser {
		if f.protocols, err = c.pvrdmaOption(ctx, vc, vm.EnvironmentBrowser, vm.Config.Version); err != nil {
			return nil, translate(op+": reading the VM's configuration options", err)
		}
	}
	if ch.MAC != "" {
		if f.macOwner, err = macOwner(ctx, vc, ch.MAC, AdapterAt{VMID: vm.Self.Value, Key: ch.Key}, ch.MovedFrom); err != nil {
			return nil, translate(op+": looking for MAC address "+ch.MAC, err)
		}
	}
	if pg.standard {
		return f, nil
	}
	var clusterHosts []mo.HostSystem
	err = c.inOneCall(ctx,
		func(ctx context.Context) error { return c.readPortGroupSwitch(ctx, vc, op, ch.PortGroupID, pg) },
		func(ctx context.Context) (err error) {
			if vm.Runtime.Host == nil {
				return nil
			}
			clusterHosts, err = c.siblingHosts(ctx, vc, *vm.Runtime.Host)
			return translate(op, err)
		})
	if err != nil {
		return nil, err
	}
	f.switchName = pg.switchName
	member := func(h types.ManagedObjectReference) bool { return slices.Contains(pg.members, h) }
	if ch.SwitchHosts != nil {
		member = func(h types.ManagedObjectReference) bool { return slices.Contains(ch.SwitchHosts, h.Value) }
	}
	for _, h := range clusterHosts {
		if !member(h.Self) {
			f.notOnSwitch = append(f.notOnSwitch, h.Name)
		}
	}
	sort.Strings(f.notOnSwitch)
	return f, nil
}

// macOwner names a VM with a network adapter that has mac, other than the
// adapter itself (self, by the VM's managed object id) and the adapter it
// moves from (nil when it does not move); "" when none has. It reads every
// VM's devices in one round trip, so it runs only for a static MAC that is
// new or changes.
func macOwner(ctx context.Context, vc *vim25.Client, mac string, self AdapterAt, movedFrom *AdapterAt) (string, error) {
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: vc.ServiceContent.RootFolder, Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			folderTreeWith(&types.SelectionSpec{Name: "datacenterVMs"}),
			&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "datacenterVMs"}, Type: "Datacenter", Path: "vmFolder",
				SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "folderTree"}}},
		}}},
		PropSet: []types.PropertySpec{{Type: "VirtualMachine", PathSet: []string{"name", "config.uuid", "config.hardware.device"}}},
	})
	if err != nil {
		return "", err
	}
	for _, o := range objs {
		other, ok := o.(mo.VirtualMachine)
		if !ok || other.Config == nil {
			continue
		}
		ref := vmRefOf(&other)
		for _, dev := range other.Config.Hardware.Device {
			n, ok := networkAdapter(dev)
			if !ok || !strings.EqualFold(n.MAC, mac) || (ref.Is(self.VMID) && int32(n.Key) == self.Key) ||
				(movedFrom != nil && ref.Is(movedFrom.VMID) && int32(n.Key) == movedFrom.Key) {
				continue
			}
			return other.Name, nil
		}
	}
	return "", nil
}

// PVRDMAProtocolChoice reports whether the VM's hardware version lets an
// adapter choose its protocol. Where it offers PVRDMA without a choice, an
// adapter asks for none and vSphere gives it the hardware version's own;
// below PVRDMA's hardware version the question does not arise (true).
func (c *Client) PVRDMAProtocolChoice(ctx context.Context, vmID string) (bool, error) {
	op := "reading the PVRDMA protocols of virtual machine " + vmID
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return false, err
	}
	vm, err := c.readVMProps(ctx, vc, op, vmID, []string{"config.version", "environmentBrowser"})
	if err != nil {
		return false, err
	}
	if vm.Config == nil || ParseHardwareVersion(vm.Config.Version) < MinPVRDMAHardwareVersion || vm.EnvironmentBrowser.Value == "" {
		return true, nil
	}
	protocols, err := c.pvrdmaOption(ctx, vc, vm.EnvironmentBrowser, vm.Config.Version)
	if err != nil {
		return false, translate(op, err)
	}
	return len(protocols) > 0, nil
}

// pvrdmaOption reads the PVRDMA device protocols the VM's hardware version
// lets an adapter choose from (none where it offers PVRDMA without a
// choice) from the VM's own config option, never from a table. Its
// environment browser is asked for its default config option, which is the
// VM's hardware version's ("If the EnvironmentBrowser is from a
// VirtualMachine neither a host nor a key should be specified", vSphere Web
// Services API, EnvironmentBrowser.QueryConfigOption). A hardware version's
// option is the same for every VM of it (a VM's browser answers as its
// compute resource's, VirtualMachine.environmentBrowser), so it is read
// once per hardware version per client (one Terraform command), and
// concurrent plans wait for the first read. A failed read is not kept.
func (c *Client) pvrdmaOption(ctx context.Context, vc *vim25.Client, browser types.ManagedObjectReference, version string) ([]string, error) {
	v, _ := c.protocols.LoadOrStore(version, &protocolsRead{})
	r := v.(*protocolsRead)
	r.once.Do(func() { r.protocols, r.err = configOptionProtocols(ctx, vc, browser) })
	if r.err != nil {
		c.protocols.CompareAndDelete(version, r)
	}
	return r.protocols, r.err
}

// protocolsRead is one read of a config option's PVRDMA protocols.
type protocolsRead struct {
	once      sync.Once
	protocols []string
	err       error
}

func configOptionProtocols(ctx context.Context, vc *vim25.Client, browser types.ManagedObjectReference) ([]string, error) {
	opt, err := object.NewEnvironmentBrowser(vc, browser).QueryConfigOption(ctx, nil)
	if err != nil || opt == nil {
		return nil, err
	}
	for _, d := range opt.HardwareOptions.VirtualDeviceOption {
		o, ok := d.(*types.VirtualVmxnet3VrdmaOption)
		if !ok {
			continue
		}
		var protocols []string
		if o.DeviceProtocol != nil {
			for _, e := range o.DeviceProtocol.ChoiceInfo {
				protocols = append(protocols, e.GetElementDescription().Key)
			}
		}
		return protocols, nil
	}
	return nil, nil
}

// PVRDMANIC reads one adapter of a VM by device key, in one round trip.
func (c *Client) PVRDMANIC(ctx context.Context, vmID string, key int32) (*PVRDMANIC, error) {
	return readAdapter(ctx, c, "PVRDMA", vmID, key, pvrdmaNIC)
}

// readAdapter reads one network adapter of a VM by device key, in one round
// trip, with of, which finds it among the VM's devices.
func readAdapter[N any](
	ctx context.Context,
	c *Client,
	kind, vmID string,
	key int32,
	of func(vm *mo.VirtualMachine, key int32, op string) (*N, error),
) (*N, error) {
	op := fmt.Sprintf("reading %s adapter %d of virtual machine %s", kind, key, vmID)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	vm, err := c.readVMProps(ctx, vc, op, vmID, vmChangeProps)
	if err != nil {
		return nil, err
	}
	return of(vm, key, op)
}

func pvrdmaNIC(vm *mo.VirtualMachine, key int32, op string) (*PVRDMANIC, error) {
	if vm.Config == nil {
		return nil, vmInaccessible(op, vm.Name, vm.Self.Value)
	}
	ref := vmRefOf(vm)
	index := 0
	for _, dev := range sortedDevices(vm.Config.Hardware.Device) {
		nic, ok := dev.(*types.VirtualVmxnet3Vrdma)
		if !ok {
			continue
		}
		if nic.Key != key {
			index++
			continue
		}
		out := &PVRDMANIC{VM: ref, Key: nic.Key, DeviceProtocol: nic.DeviceProtocol, MAC: nic.MacAddress, AdapterIndex: index}
		if nic.Connectable != nil {
			out.StartConnected = nic.Connectable.StartConnected
		}
		if b, ok := nic.Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo); ok {
			out.PortGroupID = b.Port.PortgroupKey
		}
		if vm.Config.MemoryReservationLockedToMax != nil {
			out.MemoryLocked = *vm.Config.MemoryReservationLockedToMax
		}
		return out, nil
	}
	return nil, notFound(op, "virtual machine %s has no PVRDMA adapter with device key %d", vm.Name, key)
}

// CreatePVRDMANIC adds an adapter and returns it as read right after. It is
// returned whenever the adapter exists, also when a later step (powering
// the VM back on) fails, so the caller keeps track of it.
func (c *Client) CreatePVRDMANIC(ctx context.Context, vmID string, spec PVRDMANICSpec) (*PVRDMANIC, error) {
	op := "adding a PVRDMA adapter to virtual machine " + vmID
	nic, err := c.newPVRDMADevice(ctx, op, spec)
	if err != nil {
		return nil, err
	}
	var created *PVRDMANIC
	err = c.changeVM(ctx, vmChange{op: op, vmID: vmID, change: WhatPVRDMANeedsOff, powerOffAllowed: spec.PowerOffAllowed,
		build: func(vm *mo.VirtualMachine, _ *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
			return &types.VirtualMachineConfigSpec{
				DeviceChange: []types.BaseVirtualDeviceConfigSpec{&types.VirtualDeviceConfigSpec{
					Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: nic,
				}},
				MemoryReservationLockedToMax: lockMemory(vm, spec.ReserveAllMemory),
			}, true, nil
		},
		after: func(vm *mo.VirtualMachine, before []int32) bool {
			if vm.Config == nil {
				return false
			}
			// The new adapter is the PVRDMA device whose key did not exist before.
			for _, dev := range vm.Config.Hardware.Device {
				if _, ok := dev.(*types.VirtualVmxnet3Vrdma); ok && !slices.Contains(before, dev.GetVirtualDevice().Key) {
					created, _ = pvrdmaNIC(vm, dev.GetVirtualDevice().Key, op)
				}
			}
			return created != nil
		},
	})
	return created, err
}

// UpdatePVRDMANIC edits an adapter in place.
func (c *Client) UpdatePVRDMANIC(ctx context.Context, vmID string, key int32, spec PVRDMANICSpec, needsPowerOff bool) error {
	op := fmt.Sprintf("changing PVRDMA adapter %d of virtual machine %s", key, vmID)
	nic, err := c.newPVRDMADevice(ctx, op, spec)
	if err != nil {
		return err
	}
	return c.changeVM(
		ctx,
		vmChange{
			op:              op,
			vmID:            vmID,
			change:          WhatPVRDMANeedsOff,
			powerOffAllowed: spec.PowerOffAllowed,
			build: func(vm *mo.VirtualMachine, _ *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
				// Edit the device as it is, changing only what this resource
				// manages: a device rebuilt from scratch would disconnect a running
				// adapter and drop settings made elsewhere.
				var dev *types.VirtualVmxnet3Vrdma
				for _, d := range vm.Config.Hardware.Device {
					if v, ok := d.(*types.VirtualVmxnet3Vrdma); ok && v.Key == key {
						dev = v
					}
				}
				if dev == nil {
					return nil, false, notFound(op, "virtual machine %s has no PVRDMA adapter with device key %d", vm.Name, key)
				}
				card := dev.GetVirtualEthernetCard()
				card.Backing = nic.Backing
				if spec.DeviceProtocol != "" { // none where the VM offers no choice
					dev.DeviceProtocol = spec.DeviceProtocol
				}
				if card.Connectable == nil {
					card.Connectable = &types.VirtualDeviceConnectInfo{AllowGuestControl: true}
				}
				card.Connectable.StartConnected = spec.StartConnected
				if spec.MAC != "" {
					card.MacAddress, card.AddressType = spec.MAC, addressType(spec.MAC)
				}
				return &types.VirtualMachineConfigSpec{
					DeviceChange: []types.BaseVirtualDeviceConfigSpec{&types.VirtualDeviceConfigSpec{
						Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: dev,
					}},
					MemoryReservationLockedToMax: lockMemory(vm, spec.ReserveAllMemory),
				}, needsPowerOff, nil
			},
		},
	)
}

// DeletePVRDMANIC removes an adapter. A missing adapter is no error; a
// missing VM is ErrNotFound (by the id given: a re-registered VM has a new
// managed object id, so the caller may try its UUID).
func (c *Client) DeletePVRDMANIC(ctx context.Context, vmID string, key int32, powerOffAllowed bool) error {
	op := fmt.Sprintf("removing PVRDMA adapter %d of virtual machine %s", key, vmID)
	return c.removeDevice(ctx, op, vmID, key, WhatPVRDMANeedsOff, powerOffAllowed, func(dev types.BaseVirtualDevice) bool {
		_, ok := dev.(*types.VirtualVmxnet3Vrdma)
		return ok
	})
}

// removeDevice removes the device with key from a VM when it is of the
// kind isKind tells; a missing device is no error.
func (c *Client) removeDevice(
	ctx context.Context,
	op, vmID string,
	key int32,
	change string,
	powerOffAllowed bool,
	isKind func(types.BaseVirtualDevice) bool,
) error {
	return c.changeVM(
		ctx,
		vmChange{
			op:              op,
			vmID:            vmID,
			change:          change,
			powerOffAllowed: powerOffAllowed,
			build: func(vm *mo.VirtualMachine, _ *types.ConfigTarget) (*types.VirtualMachineConfigSpec, bool, error) {
				for _, dev := range vm.Config.Hardware.Device {
					if isKind(dev) && dev.GetVirtualDevice().Key == key {
						return &types.VirtualMachineConfigSpec{DeviceChange: []types.BaseVirtualDeviceConfigSpec{&types.VirtualDeviceConfigSpec{
							Operation: types.VirtualDeviceConfigSpecOperationRemove, Device: dev,
						}}}, true, nil
					}
				}
				return nil, false, nil // already gone
			},
		},
	)
}

func addressType(mac string) string {
	if mac == "" {
		return string(types.VirtualEthernetCardMacTypeGenerated)
	}
	return string(types.VirtualEthernetCardMacTypeManual)
}

// lockMemory asks to reserve all guest memory when wanted and not yet so.
// It never unlocks: other resources (GPU passthrough) need it too.
func lockMemory(vm *mo.VirtualMachine, want bool) *bool {
	if !want || (vm.Config.MemoryReservationLockedToMax != nil && *vm.Config.MemoryReservationLockedToMax) {
		return nil
	}
	return types.NewBool(true)
}

// newPVRDMADevice builds the adapter, backed by the port group's switch.
func (c *Client) newPVRDMADevice(ctx context.Context, op string, spec PVRDMANICSpec) (*types.VirtualVmxnet3Vrdma, error) {
	backing, err := c.portGroupBacking(ctx, op, spec.PortGroupID)
	if err != nil {
		return nil, err
	}
	nic := &types.VirtualVmxnet3Vrdma{DeviceProtocol: spec.DeviceProtocol}
	card := nic.GetVirtualEthernetCard()
	card.Key = -1
	card.Backing = backing
	card.Connectable = &types.VirtualDeviceConnectInfo{StartConnected: spec.StartConnected, AllowGuestControl: true}
	card.AddressType, card.MacAddress = addressType(spec.MAC), spec.MAC
	return nic, nil
}
