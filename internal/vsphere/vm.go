package vsphere

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// VM is a virtual machine as the HPC resources see it.
type VM struct {
	ID                string // the BIOS UUID, what vsphere_virtual_machine.id exports
	MOID              string // managed object id, e.g. "vm-42"
	Name              string
	HardwareVersion   int64 // 19 for vmx-19; 0 when vCenter does not say
	Firmware          string
	PowerState        PowerState
	HostID            string
	GuestFamily       string // empty until VMware Tools reported a guest OS
	GuestFullName     string
	MemoryLockedToMax bool
	NetworkAdapters   []NetworkAdapter
	PCIPassthroughs   []PCIPassthrough
}

// PowerState is a VM's power state, named as the vSphere provider names it.
type PowerState string

// The power states of a VM.
const (
	PoweredOn  PowerState = "on"
	PoweredOff PowerState = "off"
	Suspended  PowerState = "suspended"
)

func powerStateOf(s types.VirtualMachinePowerState) PowerState {
	switch s {
	case types.VirtualMachinePowerStatePoweredOn:
		return PoweredOn
	case types.VirtualMachinePowerStatePoweredOff:
		return PoweredOff
	case types.VirtualMachinePowerStateSuspended:
		return Suspended
	}
	return PowerState(s)
}

// VMRef names a VM and says what power state it is in.
type VMRef struct {
	ID         string // BIOS UUID
	MOID       string
	Name       string
	PowerState PowerState
}

// Is reports whether id (UUID or managed object id) names this VM.
func (r VMRef) Is(id string) bool {
	return id != "" && (strings.EqualFold(id, r.ID) || id == r.MOID)
}

// hostIDOf is the id of a VM's host, "" when vCenter does not say.
func hostIDOf(vm *mo.VirtualMachine) string {
	if vm.Runtime.Host == nil {
		return ""
	}
	return vm.Runtime.Host.Value
}

func vmRefOf(vm *mo.VirtualMachine) VMRef {
	ref := VMRef{MOID: vm.Self.Value, Name: vm.Name, PowerState: powerStateOf(vm.Runtime.PowerState)}
	if vm.Config != nil {
		ref.ID = vm.Config.Uuid
	}
	return ref
}

// NetworkAdapter is one virtual NIC.
type NetworkAdapter struct {
	Key            int64
	Type           string // vmxnet3, vmxnet3vrdma, e1000e, ...
	MAC            string
	NetworkID      string // port group or network managed object id
	SwitchUUID     string // distributed switch UUID for distributed port groups
	DeviceProtocol string // rocev1/rocev2, PVRDMA adapters only
	StartConnected bool
}

// PCIPassthrough is one passthrough device of a VM.
type PCIPassthrough struct {
	Key      int64
	PCIID    string // host PCI id; for dynamic DirectPath, the device assigned at power-on
	VendorID string // four hex digits
	DeviceID string
	Dynamic  bool
	Label    string // dynamic DirectPath custom label
	// Models is how many models a dynamic DirectPath device may take; one
	// as this provider sets it up.
	Models int
	// VGPU is the profile of a shared passthrough device (NVIDIA vGPU, a
	// vmiop backing), e.g. "grid_a100-20c"; "" for any other device.
	VGPU string
}

// Narrowed reports whether a dynamic DirectPath device is set up otherwise
// than a request by model (and label) gives it: more models than one.
func (p PCIPassthrough) Narrowed() bool { return p.Dynamic && p.Models > 1 }

var vmProps = []string{
	"name", "config.uuid", "config.version", "config.firmware", "config.hardware.device",
	"config.memoryReservationLockedToMax", "runtime.powerState", "runtime.host",
	"guest.guestFamily", "guest.guestFullName",
}

var (
	moidPattern = regexp.MustCompile(`^vm-\d+$`)
	// A VM's BIOS UUID, as vCenter shows it and FindAllByUuid takes it.
	vmUUIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// ErrVMInaccessible is the Cause of the error for a VM vCenter returns no
// configuration for: one whose configuration files cannot be read
// (inaccessible), are corrupt (invalid), or that is no longer registered on
// its host (orphaned). The vSphere API reference, VirtualMachineConnectionState:
// "In this case, no configuration can be returned for a virtual machine."
// Its devices are unknown then, not gone.
var ErrVMInaccessible = errors.New("virtual machine has no configuration")

// vmInaccessible is the error for a VM read with no configuration.
func vmInaccessible(op, name, moid string) error {
	return &Error{Op: op, Kind: ErrInvalidState, Object: ObjectVirtualMachine, ID: moid, Cause: ErrVMInaccessible, Message: fmt.Sprintf(
		"vCenter returns no configuration for virtual machine %s: its files cannot be read, or it is no longer registered on its host. "+
			"Make it accessible in vCenter (reconnect its datastore or host, or register it again), then run Terraform again", name)}
}

// IsVMManagedObjectID reports whether a VM id is a managed object id
// ("vm-42") rather than a BIOS UUID.
func IsVMManagedObjectID(id string) bool { return moidPattern.MatchString(id) }

// notHex finds what no id of hex digits and dashes (a UUID, cut short or
// mistyped) has.
var notHex = regexp.MustCompile(`[^0-9a-fA-F-]`)

// vmIDForms says what a VM's id looks like.
const vmIDForms = "a virtual machine's id is its BIOS UUID (8-4-4-4-12 hex digits, such as 4223b7a1-5b2c-8d3e-1f40-9c1e2a3b4c5d) " +
	"or its managed object id (such as vm-42)"

// malformedVMID refuses an id that is neither a UUID nor a managed object
// id before asking vCenter, so the message says what the id is, and what
// it should be.
func malformedVMID(op, id string) error {
	if moidPattern.MatchString(id) || vmUUIDPattern.MatchString(id) {
		return nil
	}
	msg := fmt.Sprintf("%q is neither a virtual machine's BIOS UUID (8-4-4-4-12 hex digits, such as 4223b7a1-5b2c-8d3e-1f40-9c1e2a3b4c5d) "+
		"nor its managed object id (such as vm-42)", id)
	switch looks := ShapeOf(id); {
	case !looks.IsName():
		msg = fmt.Sprintf("%q is %s, not a virtual machine's: %s", id, looks, vmIDForms)
	case notHex.MatchString(id): // not a UUID cut short or mistyped
		msg += ": it looks like a name"
	}
	return &Error{Op: op, Kind: ErrInvalidArg, Object: ObjectVirtualMachine, ID: id, IDs: []string{id}, Looks: []Shape{ShapeOf(id)}, Message: msg}
}

// VM reads a VM by UUID or managed object id.
func (c *Client) VM(ctx context.Context, id string) (*VM, error) {
	op := "reading virtual machine " + id
	if err := malformedVMID(op, id); err != nil {
		return nil, err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	ref, err := c.vmRef(ctx, vc, id)
	if err != nil {
		return nil, translate(op, err)
	}
	if ref == nil {
		return nil, idNotFound(op, ObjectVirtualMachine, id)
	}
	vm, err := c.readVM(ctx, vc, op, *ref)
	if errors.Is(err, ErrNotFound) {
		if again := c.refound(ctx, vc, id, *ref); again != nil {
			return c.readVM(ctx, vc, op, *again)
		}
	}
	return vm, err
}

// VMByName finds a VM by name within a datacenter.
func (c *Client) VMByName(ctx context.Context, datacenterID, name string) (*VM, error) {
	op := fmt.Sprintf("finding virtual machine %q in datacenter %s", name, datacenterID)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	refs, err := c.byName(ctx, vc, datacenterRef(datacenterID), "VirtualMachine", name)
	if err != nil {
		return nil, c.datacenterError(ctx, vc, op, datacenterID, err)
	}
	switch len(refs) {
	case 0:
		return nil, notFound(op, "datacenter %s has no virtual machine called %q", datacenterID, name)
	case 1:
		return c.readVM(ctx, vc, op, refs[0])
	default:
		return nil, &Error{
			Op:      op,
			Kind:    ErrAmbiguous,
			Message: fmt.Sprintf("%d virtual machines are called %q (%s), in different folders: use the VM's UUID instead", len(refs), name, refValues(refs)),
		}
	}
}

// vmRef resolves a UUID or managed object id to a reference; nil when no
// VM has that UUID. A UUID is resolved once per client (one Terraform
// command): a plan and an apply each read a VM several times. The first
// resolves it from the UUID index (vmuuid.go), or searches it.
func (c *Client) vmRef(ctx context.Context, vc *vim25.Client, id string) (*types.ManagedObjectReference, error) {
	if moidPattern.MatchString(id) {
		return &types.ManagedObjectReference{Type: "VirtualMachine", Value: id}, nil
	}
	key := strings.ToLower(id)
	if ref, ok := c.vmIDs.Load(key); ok {
		r := ref.(types.ManagedObjectReference)
		return &r, nil
	}
	if ref, ok := c.vmUUIDs.lookup(ctx, c, vc, key); ok {
		c.vmIDs.Store(key, ref)
		return &ref, nil
	}
	// FindAllByUuid, not FindByUuid: vCenter lets two VMs share a BIOS UUID
	// (a copied VM registered with "I copied it" keeps the original's), and
	// FindByUuid would pick one of them, maybe not the one meant.
	found, err := object.NewSearchIndex(vc).FindAllByUuid(ctx, nil, id, true, types.NewBool(false))
	switch {
	case err != nil || len(found) == 0:
		return nil, err
	case len(found) > 1:
		refs := make([]types.ManagedObjectReference, len(found))
		for i, f := range found {
			refs[i] = f.Reference()
		}
		slices.SortFunc(refs, func(a, b types.ManagedObjectReference) int { return strings.Compare(a.Value, b.Value) })
		return nil, &Error{Op: "finding virtual machine " + id, Kind: ErrAmbiguous, Object: ObjectVirtualMachine, ID: id, Message: fmt.Sprintf(
			"%d virtual machines have BIOS UUID %s (%s): give all but one a new BIOS UUID (uuid.bios), or name the VM by its "+
				"managed object id", len(refs), id, refValues(refs))}
	}
	ref := found[0].Reference()
	c.vmIDs.Store(key, ref)
	return &ref, nil
}

// refound searches a UUID again when the VM found for it earlier in the
// run is no longer there: registered again under a new managed object id,
// which it returns; nil when the search finds none or the same id.
func (c *Client) refound(ctx context.Context, vc *vim25.Client, id string, gone types.ManagedObjectReference) *types.ManagedObjectReference {
	if _, cached := c.vmIDs.LoadAndDelete(strings.ToLower(id)); !cached {
		return nil
	}
	c.vmUUIDs.forget(strings.ToLower(id))
	ref, err := c.vmRef(ctx, vc, id)
	if err != nil || ref == nil || *ref == gone {
		return nil
	}
	return ref
}

// VMUUID resolves a VM's UUID or managed object id to its UUID.
func (c *Client) VMUUID(ctx context.Context, vmID string) (string, error) {
	vm, err := c.VM(ctx, vmID)
	if err != nil {
		return "", err
	}
	return strings.ToLower(vm.ID), nil
}

// readVMProps reads properties of a VM given by UUID or managed object id,
// as a refresh read.
func (c *Client) readVMProps(ctx context.Context, vc *vim25.Client, op, vmID string, props []string) (*mo.VirtualMachine, error) {
	return c.readVMPropsAs(ctx, vc, op, vmID, props, refresh)
}

// readVMPropsAs reads properties of a VM given by UUID or managed object id.
func (c *Client) readVMPropsAs(ctx context.Context, vc *vim25.Client, op, vmID string, props []string, f freshness) (*mo.VirtualMachine, error) {
	ref, err := c.resolveVM(ctx, vc, op, vmID)
	if err != nil {
		return nil, err
	}
	var vm mo.VirtualMachine
	if err := c.readObjectAs(ctx, vc, *ref, props, &vm, f); err != nil {
		if errors.Is(translate(op, err), ErrNotFound) {
			if again := c.refound(ctx, vc, vmID, *ref); again != nil && c.readObjectAs(ctx, vc, *again, props, &vm, f) == nil {
				return &vm, nil
			}
			return nil, idNotFound(op, ObjectVirtualMachine, ref.Value)
		}
		return nil, translate(op, err)
	}
	return &vm, nil
}

// resolveVM is a VM's reference from its UUID or managed object id (see
// vmRef), or the error that names what is wrong with the id.
func (c *Client) resolveVM(ctx context.Context, vc *vim25.Client, op, vmID string) (*types.ManagedObjectReference, error) {
	if err := malformedVMID(op, vmID); err != nil {
		return nil, err
	}
	ref, err := c.vmRef(ctx, vc, vmID)
	if err != nil {
		return nil, translate(op, err)
	}
	if ref == nil {
		return nil, idNotFound(op, ObjectVirtualMachine, vmID)
	}
	return ref, nil
}

func (c *Client) readVM(ctx context.Context, vc *vim25.Client, op string, ref types.ManagedObjectReference) (*VM, error) {
	var vm mo.VirtualMachine
	err := c.readObjectAs(ctx, vc, ref, vmProps, &vm, refresh)
	if errors.Is(translate(op, err), ErrNotFound) {
		return nil, idNotFound(op, ObjectVirtualMachine, ref.Value)
	}
	if err != nil {
		return nil, translate(op, err)
	}
	return vmFromMO(&vm), nil
}

func vmFromMO(v *mo.VirtualMachine) *VM {
	out := &VM{MOID: v.Self.Value, Name: v.Name, PowerState: powerStateOf(v.Runtime.PowerState), HostID: hostIDOf(v)}
	if v.Guest != nil {
		out.GuestFamily, out.GuestFullName = v.Guest.GuestFamily, v.Guest.GuestFullName
	}
	if v.Config == nil {
		return out
	}
	out.ID = v.Config.Uuid
	out.HardwareVersion = ParseHardwareVersion(v.Config.Version)
	out.Firmware = v.Config.Firmware
	if v.Config.MemoryReservationLockedToMax != nil {
		out.MemoryLockedToMax = *v.Config.MemoryReservationLockedToMax
	}
	for _, dev := range v.Config.Hardware.Device {
		if nic, ok := networkAdapter(dev); ok {
			out.NetworkAdapters = append(out.NetworkAdapters, nic)
		}
		if pt, ok := dev.(*types.VirtualPCIPassthrough); ok {
			out.PCIPassthroughs = append(out.PCIPassthroughs, pciPassthrough(pt))
		}
	}
	sort.Slice(out.NetworkAdapters, func(i, j int) bool { return out.NetworkAdapters[i].Key < out.NetworkAdapters[j].Key })
	sort.Slice(out.PCIPassthroughs, func(i, j int) bool { return out.PCIPassthroughs[i].Key < out.PCIPassthroughs[j].Key })
	return out
}

// ParseHardwareVersion turns "vmx-19" into 19, and anything else into 0.
func ParseHardwareVersion(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(v, "vmx-"), 10, 64)
	if err != nil || !strings.HasPrefix(v, "vmx-") {
		return 0
	}
	return n
}

// adapterType names an Ethernet card as the vSphere provider's adapter_type
// does. The PVRDMA type embeds VirtualVmxnet3, so it must be matched by its
// own concrete type, never through the vmxnet3 one.
func adapterType(dev types.BaseVirtualDevice) string {
	switch dev.(type) {
	case *types.VirtualVmxnet3Vrdma:
		return "vmxnet3vrdma"
	case *types.VirtualVmxnet3:
		return "vmxnet3"
	case *types.VirtualVmxnet2:
		return "vmxnet2"
	case *types.VirtualVmxnet:
		return "vmxnet"
	case *types.VirtualE1000e:
		return "e1000e"
	case *types.VirtualE1000:
		return "e1000"
	case *types.VirtualPCNet32:
		return "pcnet32"
	case *types.VirtualSriovEthernetCard:
		return "sriov"
	}
	return ""
}

func networkAdapter(dev types.BaseVirtualDevice) (NetworkAdapter, bool) {
	card, ok := dev.(types.BaseVirtualEthernetCard)
	if !ok {
		return NetworkAdapter{}, false
	}
	e := card.GetVirtualEthernetCard()
	nic := NetworkAdapter{Key: int64(e.Key), Type: adapterType(dev), MAC: e.MacAddress}
	if e.Connectable != nil {
		nic.StartConnected = e.Connectable.StartConnected
	}
	if vrdma, ok := dev.(*types.VirtualVmxnet3Vrdma); ok {
		nic.DeviceProtocol = vrdma.DeviceProtocol
	}
	switch b := e.Backing.(type) {
	case *types.VirtualEthernetCardDistributedVirtualPortBackingInfo:
		nic.NetworkID, nic.SwitchUUID = b.Port.PortgroupKey, b.Port.SwitchUuid
	case *types.VirtualEthernetCardNetworkBackingInfo:
		if b.Network != nil {
			nic.NetworkID = b.Network.Value
		}
	case *types.VirtualEthernetCardOpaqueNetworkBackingInfo:
		nic.NetworkID = b.OpaqueNetworkId
	}
	return nic, true
}

func pciPassthrough(pt *types.VirtualPCIPassthrough) PCIPassthrough {
	out := PCIPassthrough{Key: int64(pt.Key)}
	switch b := pt.Backing.(type) {
	case *types.VirtualPCIPassthroughDeviceBackingInfo:
		out.PCIID, out.VendorID = b.Id, HexID(b.VendorId)
		out.DeviceID = normalizeHex(b.DeviceId)
	case *types.VirtualPCIPassthroughDynamicBackingInfo:
		out.Dynamic, out.PCIID, out.Label, out.Models = true, b.AssignedId, b.CustomLabel, len(b.AllowedDevice)
		if len(b.AllowedDevice) > 0 {
			out.VendorID = fmt.Sprintf("%04x", uint16(b.AllowedDevice[0].VendorId))
			out.DeviceID = fmt.Sprintf("%04x", uint16(b.AllowedDevice[0].DeviceId))
		}
	case *types.VirtualPCIPassthroughVmiopBackingInfo:
		out.VGPU = b.Vgpu
	}
	return out
}

func sortedDevices(devs []types.BaseVirtualDevice) []types.BaseVirtualDevice {
	out := slices.Clone(devs)
	sort.Slice(out, func(i, j int) bool { return out[i].GetVirtualDevice().Key < out[j].GetVirtualDevice().Key })
	return out
}

// normalizeHex formats the hex string vSphere uses for a backing's device id
// like HexID does, keeping text it cannot parse.
func normalizeHex(s string) string {
	n, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 16)
	if err != nil {
		return s
	}
	return fmt.Sprintf("%04x", n)
}
