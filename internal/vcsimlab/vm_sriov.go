package vcsimlab

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// SR-IOV network adapters (VirtualSriovEthernetCard): what ReconfigVM_Task
// (vm.go) and CreateVM_Task check of their backing, and the virtual function
// (VF) each gets when its VM powers on (PowerOnVM_Task,
// PowerOnMultiVM_Task). The quotes are from the vSphere Web Services API 8.0
// reference of VirtualSriovEthernetCard and
// VirtualSriovEthernetCardSriovBackingInfo.

// automaticPF is the physical function (PF) id that asks for "automatic
// physical function assignment ... if there is an associated SR-IOV network
// device pool for the network specified in backing"; once a PF is assigned,
// "'Automatic-' followed by a valid physical function id" names it.
const (
	automaticPF     = "Automatic-0000:00:00.0"
	automaticPrefix = "Automatic-"
)

// sriovHost is what SR-IOV adapters need of their VM's host, read under its
// lock.
type sriovHost struct {
	name, systemID string
	vms            []types.ManagedObjectReference
	pfs            []sriovNIC // by PCI id
	pools          []*types.HostSriovNetworkDevicePoolInfo
	vswitchOf      map[string]string // standard port group name -> its switch's key
}

// sriovNIC is a PF of a host that is one of its physical NICs, with SR-IOV
// active: what an SR-IOV adapter can be backed by (VirtualMachineSriovInfo
// names its pnic, "the physical nic that is represented by a SR-IOV
// capable physical function").
type sriovNIC struct {
	pf     sriovPF
	device types.HostPciDevice
	pnic   string
	vfs    int // numVirtualFunction, the VFs present
}

func readSriovHost(ctx *simulator.Context, ref types.ManagedObjectReference) (sriovHost, bool) {
	host, ok := ctx.Map.Get(ref).(*simulator.HostSystem)
	if !ok {
		return sriovHost{}, false
	}
	var s sriovHost
	ctx.WithLock(host, func() { s = sriovHostOf(&host.HostSystem) })
	return s, true
}

// sriovHostOf reads h, which is locked.
func sriovHostOf(h *mo.HostSystem) sriovHost {
	s := sriovHost{name: h.Name, vms: slices.Clone(h.Vm), vswitchOf: map[string]string{}}
	if h.Config == nil || h.Config.Network == nil || h.Hardware == nil {
		return s
	}
	s.systemID = h.Hardware.SystemInfo.Uuid
	n := h.Config.Network
	for _, pg := range n.Portgroup {
		s.vswitchOf[pg.Spec.Name] = pg.Vswitch
	}
	for _, p := range h.Config.SriovDevicePool {
		if np, ok := p.(*types.HostSriovNetworkDevicePoolInfo); ok {
			s.pools = append(s.pools, np)
		}
	}
	for _, p := range h.Config.PciPassthruInfo {
		sr, ok := p.(*types.HostSriovInfo)
		if !ok || !sr.SriovActive {
			continue
		}
		pf, ok := sriovPFByID(sr.Id)
		nic := slices.IndexFunc(n.Pnic, func(p types.PhysicalNic) bool { return p.Pci == sr.Id })
		dev := slices.IndexFunc(h.Hardware.PciDevice, func(d types.HostPciDevice) bool { return d.Id == sr.Id })
		if ok && nic >= 0 && dev >= 0 {
			s.pfs = append(s.pfs, sriovNIC{pf: pf, device: h.Hardware.PciDevice[dev], pnic: n.Pnic[nic].Device, vfs: int(sr.NumVirtualFunction)})
		}
	}
	slices.SortFunc(s.pfs, func(a, b sriovNIC) int { return strings.Compare(a.pf.id, b.pf.id) })
	return s
}

// pool is the host's SR-IOV network device pool of the switch behind a
// network adapter backing (a distributed port group's switch, a standard
// port group's vSwitch), or nil.
func (s sriovHost) pool(backing types.BaseVirtualDeviceBackingInfo) *types.HostSriovNetworkDevicePoolInfo {
	var uuid, key string
	switch b := backing.(type) {
	case *types.VirtualEthernetCardDistributedVirtualPortBackingInfo:
		uuid = b.Port.SwitchUuid
	case *types.VirtualEthernetCardNetworkBackingInfo:
		key = s.vswitchOf[b.DeviceName]
	}
	for _, p := range s.pools {
		if (uuid != "" && p.SwitchUuid == uuid) || (key != "" && p.SwitchKey == key) {
			return p
		}
	}
	return nil
}

// poolOf is the pool whose uplinks include the physical NIC pnic, or nil.
func (s sriovHost) poolOf(pnic string) *types.HostSriovNetworkDevicePoolInfo {
	for _, p := range s.pools {
		if slices.ContainsFunc(p.Pnic, func(n types.PhysicalNic) bool { return n.Device == pnic }) {
			return p
		}
	}
	return nil
}

// candidates are the PFs an adapter's VF may come from: its own PF, or with
// automatic assignment those of its network's pool, by PCI id.
func (s sriovHost) candidates(card *types.VirtualSriovEthernetCard) []sriovNIC {
	id := cardPF(card)
	if !strings.HasPrefix(id, automaticPrefix) {
		return slices.DeleteFunc(slices.Clone(s.pfs), func(n sriovNIC) bool { return n.pf.id != id })
	}
	p := s.pool(card.Backing)
	if p == nil {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(s.pfs), func(n sriovNIC) bool { return s.poolOf(n.pnic) != p })
}

// cardPF is the PF id of an adapter; one without SR-IOV backing has
// automatic assignment ("During an add operation, if this is unset, an
// automatic physical function assignment scheme as described above will be
// used").
func cardPF(card *types.VirtualSriovEthernetCard) string {
	if b := card.SriovBacking; b != nil && b.PhysicalFunctionBacking != nil {
		return b.PhysicalFunctionBacking.Id
	}
	return automaticPF
}

// cardVF is the id of the VF assigned to an adapter, "" while unassigned.
func cardVF(card *types.VirtualSriovEthernetCard) string {
	if b := card.SriovBacking; b != nil && b.VirtualFunctionBacking != nil {
		return b.VirtualFunctionBacking.Id
	}
	return ""
}

// checkSriovCard returns why vSphere refuses the SR-IOV adapter of device
// change i, added (add) or edited on a VM of the host hostRef (nil when not
// known yet), or nil:
//   - an SR-IOV backing without PF backing ("During reconfigure, if an
//     SR-IOV backing is provided, the physical function backing may not be
//     left unset");
//   - automatic assignment without a pool for the adapter's network on the
//     host ("This is supported if there is an associated SR-IOV network
//     device pool for the network");
//   - a PF that is not an SR-IOV-active physical NIC of the host, which
//     QueryConfigTarget does not offer.
//
// An edit without SR-IOV backing changes nothing of it ("During an edit
// operation, if this value is unset, no changes to the SR-IOV backing will
// be made").
func checkSriovCard(ctx *simulator.Context, hostRef *types.ManagedObjectReference, i int, card *types.VirtualSriovEthernetCard, add bool) *vimError {
	b := card.SriovBacking
	if b == nil && !add {
		return nil
	}
	if b != nil && b.PhysicalFunctionBacking == nil {
		return invalidSriovBacking(i, "The SR-IOV backing of the network adapter has no physical function backing.")
	}
	if hostRef == nil {
		return nil
	}
	s, ok := readSriovHost(ctx, *hostRef)
	if !ok {
		return nil
	}
	id := cardPF(card)
	if strings.HasPrefix(id, automaticPrefix) {
		if s.pool(card.Backing) == nil {
			return invalidSriovBacking(i, "Host %s has no SR-IOV network device pool for the network of the SR-IOV network adapter.", s.name)
		}
		return nil
	}
	if !slices.ContainsFunc(s.pfs, func(n sriovNIC) bool { return n.pf.id == id }) {
		return invalidSriovBacking(i, "PCI device %s is not a physical NIC with SR-IOV active on host %s.", id, s.name)
	}
	return nil
}

func invalidSriovBacking(i int, format string, args ...any) *vimError {
	f := &types.InvalidDeviceBacking{}
	f.DeviceIndex = int32(i)
	return refuse(f, format, args...)
}

// CreateVMTask refuses, with a failed task, the SR-IOV adapters of the spec
// that ReconfigVM_Task refuses (checkSriovCard), and otherwise lets vcsim
// create the VM. Without a host in the call vCenter picks one (the API
// reference of Folder.CreateVM_Task: for a stand-alone host or a cluster
// with DRS the host can be omitted and the system selects a default): only
// the checks that need no host apply then.
func (x *extension) CreateVMTask(ctx *simulator.Context, req *types.CreateVM_Task) soap.HasFault {
	body := new(methods.CreateVM_TaskBody)
	f, ok := target[*simulator.Folder](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	for i, change := range req.Config.DeviceChange {
		if change == nil {
			continue
		}
		ds := change.GetVirtualDeviceConfigSpec()
		card, ok := ds.Device.(*types.VirtualSriovEthernetCard)
		if !ok || ds.Operation != types.VirtualDeviceConfigSpecOperationAdd {
			continue
		}
		if err := checkSriovCard(ctx, req.Host, i, card, true); err != nil {
			body.Res = &types.CreateVM_TaskResponse{Returnval: finishTask(ctx, f, "CreateVM_Task", nil, err)}
			return body
		}
	}
	lockedReservation(&req.Config, nil)
	x.assignMACs(req.Config.DeviceChange)
	labelAdapters(nil, req.Config.DeviceChange)
	var res soap.HasFault
	ctx.WithLock(f, func() { res = f.CreateVMTask(ctx, req) })
	return res
}

// keepSriovBacking gives the SR-IOV adapters the spec edits without SR-IOV
// backing their current one, which vcsim would drop with the device it
// replaces ("During an edit operation, if this value is unset, no changes
// to the SR-IOV backing will be made"). vm is locked.
func keepSriovBacking(vm *simulator.VirtualMachine, spec *types.VirtualMachineConfigSpec) {
	for _, change := range spec.DeviceChange {
		if change == nil {
			continue
		}
		ds := change.GetVirtualDeviceConfigSpec()
		card, ok := ds.Device.(*types.VirtualSriovEthernetCard)
		if !ok || ds.Operation != types.VirtualDeviceConfigSpecOperationEdit || card.SriovBacking != nil {
			continue
		}
		for _, d := range vm.Config.Hardware.Device {
			if old, ok := d.(*types.VirtualSriovEthernetCard); ok && old.Key == card.Key {
				card.SriovBacking = old.SriovBacking
			}
		}
	}
}

// PowerOnVMTask gives each SR-IOV adapter of the VM a VF of its host (see
// assignVFs), then lets vcsim power the VM on: "When you power on the
// virtual machine, the ESXi host selects a free virtual function from the
// physical adapter and maps it to the SR-IOV passthrough adapter" (vSphere
// Networking 6.5, SR-IOV).
func (x *extension) PowerOnVMTask(ctx *simulator.Context, req *types.PowerOnVM_Task) soap.HasFault {
	body := new(methods.PowerOnVM_TaskBody)
	vm, ok := target[*simulator.VirtualMachine](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	return x.powerOn(ctx, vm)
}

// PowerOnMultiVMTask powers each VM on as PowerOnVMTask does, each with its
// own task, which the result lists as vcsim's does.
func (x *extension) PowerOnMultiVMTask(ctx *simulator.Context, req *types.PowerOnMultiVM_Task) soap.HasFault {
	body := new(methods.PowerOnMultiVM_TaskBody)
	dc, ok := target[*simulator.Datacenter](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	var res types.ClusterPowerOnVmResult
	for _, ref := range req.Vm {
		vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
		if !ok {
			continue
		}
		// Each VM's task needs a context of its own, as in vcsim.
		vmCtx := &simulator.Context{Context: ctx.Context, Session: ctx.Session, Map: ctx.Map}
		if on, ok := x.powerOn(vmCtx, vm).(*methods.PowerOnVM_TaskBody); ok && on.Res != nil {
			task := on.Res.Returnval
			res.Attempted = append(res.Attempted, types.ClusterAttemptedVmInfo{Vm: ref, Task: &task})
		}
	}
	body.Res = &types.PowerOnMultiVM_TaskResponse{Returnval: finishTask(ctx, dc, "PowerOnMultiVM_Task", res, nil)}
	return body
}

// powerOn powers vm on, its SR-IOV adapters first given VFs, unless a
// passthrough device it has is not active (inactivePassthrough). The power-ons
// go one at a time, and one with SR-IOV adapters returns once its VM is on,
// so that no two VMs take the same free VF.
func (x *extension) powerOn(ctx *simulator.Context, vm *simulator.VirtualMachine) soap.HasFault {
	x.sriovMu.Lock()
	defer x.sriovMu.Unlock()
	var res soap.HasFault
	var wait bool
	ctx.WithLock(vm, func() {
		if err := inactivePassthrough(ctx, vm); err != nil && vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOff {
			res = &methods.PowerOnVM_TaskBody{Res: &types.PowerOnVM_TaskResponse{Returnval: finishTask(ctx, vm, "PowerOnVM_Task", nil, err)}}
			return
		}
		wait = vm.Config != nil && slices.ContainsFunc(vm.Config.Hardware.Device, func(d types.BaseVirtualDevice) bool {
			_, ok := d.(*types.VirtualSriovEthernetCard)
			return ok
		})
		if wait {
			if err := assignVFs(ctx, vm); err != nil {
				res = &methods.PowerOnVM_TaskBody{Res: &types.PowerOnVM_TaskResponse{Returnval: finishTask(ctx, vm, "PowerOnVM_Task", nil, err)}}
				wait = false
				return
			}
		}
		if err := x.placeVGPUs(ctx, vm); err != nil {
			res = &methods.PowerOnVM_TaskBody{Res: &types.PowerOnVM_TaskResponse{Returnval: finishTask(ctx, vm, "PowerOnVM_Task", nil, err)}}
			wait = false
			return
		}
		res = vm.PowerOnVMTask(ctx, &types.PowerOnVM_Task{This: vm.Self})
	})
	if on, ok := res.(*methods.PowerOnVM_TaskBody); ok && wait && on.Res != nil {
		if t, ok := ctx.Map.Get(on.Res.Returnval).(*simulator.Task); ok {
			t.Wait()
		}
	}
	return res
}

// assignVFs gives each SR-IOV adapter of a powered-off VM a free VF of its
// host: one of its PF or, with automatic assignment, one of the first PF
// (by PCI id) of the pool of its network that has one, the PF id becoming
// "Automatic-" and that PF's id. The VF backing an adapter has is a hint,
// taken when free ("If id contains a valid id for a virtual function of the
// currently assigned physical function, this acts as a hint and, if
// possible, the specified virtual function will be the one allocated for
// the device"); assignments stay at power-off, as nothing documents their
// release. A VF is taken when another powered-on VM's SR-IOV adapter has it
// or a VM of the host has it as PCI passthrough device. vm is locked.
func assignVFs(ctx *simulator.Context, vm *simulator.VirtualMachine) *vimError {
	if vm.Config == nil || vm.Runtime.Host == nil || vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		return nil
	}
	h, ok := readSriovHost(ctx, *vm.Runtime.Host)
	if !ok {
		return nil
	}
	used := usedVFs(ctx, vm.Self, h.vms)
	devices := slices.Clone(vm.Config.Hardware.Device)
	for i, d := range devices {
		card, ok := d.(*types.VirtualSriovEthernetCard)
		if !ok {
			continue
		}
		nic, k, ok := pickVF(h, card, used)
		if !ok {
			return noFreeVF(vm.Name, cardPF(card))
		}
		used[vfID(nic.pf, k)] = true
		devices[i] = withVF(card, h, nic.pf, k)
	}
	ctx.Update(vm, []types.PropertyChange{{Name: "config.hardware.device", Val: devices}})
	return nil
}

// noFreeVF is the failure of a power-on without a VF for an adapter. The
// message is the one Broadcom KB 309346 shows ("No SR-IOV virtual function
// (VF) is available for given physical function (PF)"); no public source
// gives the fault type, so the lab sends GenericVmConfigFault, vSphere's
// fault for a VM configuration error with a reason.
func noFreeVF(vmName, pf string) *vimError {
	msg := fmt.Sprintf(
		"Failed to power on virtual machine %s. No SR-IOV virtual function (VF) is available for given physical function (PF) (%s).",
		vmName,
		pf,
	)
	return refuse(&types.GenericVmConfigFault{Reason: msg}, "%s", msg)
}

// usedVFs are the VFs of a host the VM self cannot have: the VFs of the
// SR-IOV adapters of the host's other powered-on VMs, and every PCI
// passthrough device of its VMs.
func usedVFs(ctx *simulator.Context, self types.ManagedObjectReference, vms []types.ManagedObjectReference) map[string]bool {
	used := map[string]bool{}
	for _, ref := range vms {
		other, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
		if !ok {
			continue
		}
		ctx.WithLock(other, func() {
			if other.Config == nil {
				return
			}
			on := ref != self && other.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
			for _, d := range other.Config.Hardware.Device {
				switch d := d.(type) {
				case *types.VirtualPCIPassthrough:
					if b, ok := d.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo); ok {
						used[b.Id] = true
					}
				case *types.VirtualSriovEthernetCard:
					if vf := cardVF(d); on && vf != "" {
						used[vf] = true
					}
				}
			}
		})
	}
	return used
}

// pickVF is the free VF for an adapter (its PF and index), the hint first.
func pickVF(h sriovHost, card *types.VirtualSriovEthernetCard, used map[string]bool) (sriovNIC, int, bool) {
	candidates := h.candidates(card)
	if hint := cardVF(card); hint != "" && !used[hint] {
		if pf, k, ok := pfOf(hint); ok {
			for _, n := range candidates {
				if n.pf.id == pf.id && k < n.vfs {
					return n, k, true
				}
			}
		}
	}
	for _, n := range candidates {
		for k := range n.vfs {
			if !used[vfID(n.pf, k)] {
				return n, k, true
			}
		}
	}
	return sriovNIC{}, 0, false
}

// withVF returns a copy of card backed by VF k of pf, its VF backing filled
// as a passthrough device's (DirectPath I/O backings carry the host's PCI
// ids and system id).
func withVF(card *types.VirtualSriovEthernetCard, h sriovHost, pf sriovPF, k int) *types.VirtualSriovEthernetCard {
	var sb types.VirtualSriovEthernetCardSriovBackingInfo
	if card.SriovBacking != nil {
		sb = *card.SriovBacking
	}
	pfb := types.VirtualPCIPassthroughDeviceBackingInfo{Id: automaticPF}
	if sb.PhysicalFunctionBacking != nil {
		pfb = *sb.PhysicalFunctionBacking
	}
	if strings.HasPrefix(pfb.Id, automaticPrefix) {
		pfb.Id = automaticPrefix + pf.id
	}
	dev := vfDevice(pf, k)
	sb.PhysicalFunctionBacking = &pfb
	sb.VirtualFunctionBacking = &types.VirtualPCIPassthroughDeviceBackingInfo{
		VirtualDeviceDeviceBackingInfo: types.VirtualDeviceDeviceBackingInfo{DeviceName: dev.DeviceName},
		Id:                             dev.Id,
		DeviceId:                       fmt.Sprintf("%x", uint16(dev.DeviceId)),
		SystemId:                       h.systemID,
		VendorId:                       dev.VendorId,
	}
	next := *card
	next.SriovBacking = &sb
	return &next
}
