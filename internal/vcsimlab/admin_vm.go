package vcsimlab

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Out-of-band changes to virtual machines: power, hardware, GPUs, PVRDMA
// and SR-IOV adapters (see admin.go).

// AttachGPU passes a host PCI device through to a VM with the lab's admin
// client, as an administrator (or govc device.pci.add) would out of band:
// the backing is filled from what QueryConfigTarget offers on the VM's host,
// and vSphere's own checks apply. A device the host does not offer is still
// sent, bare, so that vSphere's refusal is what the caller sees.
func (l *Lab) AttachGPU(ctx context.Context, vmName, pciID string) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	target, err := adminConfigTarget(ctx, vm)
	if err != nil {
		return err
	}
	backing := &types.VirtualPCIPassthroughDeviceBackingInfo{Id: pciID}
	for _, p := range target.PciPassthrough {
		info, ok := p.(*types.VirtualMachinePciPassthroughInfo)
		if ok && info.PciDevice.Id == pciID {
			backing.DeviceId = fmt.Sprintf("%x", uint16(info.PciDevice.DeviceId))
			backing.VendorId = info.PciDevice.VendorId
			backing.SystemId = info.SystemId
			backing.DeviceName = info.PciDevice.DeviceName
		}
	}
	return vm.AddDevice(ctx, &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Key: -1, Backing: backing}})
}

// AttachVGPU gives a VM a vGPU of profile, as govc gpu.vm.add does: a PCI
// passthrough device whose vmiop backing names the profile, and nothing
// else (govmomi's cli/gpu/vm/add.go). vCenter takes any profile into the
// configuration; whether a GPU has room is settled at power-on (see
// vm_vgpu.go).
func (l *Lab) AttachVGPU(ctx context.Context, vmName, profile string) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return vm.AddDevice(ctx, &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{
		Key: -1, Backing: &types.VirtualPCIPassthroughVmiopBackingInfo{Vgpu: profile},
	}})
}

// DetachGPU removes a VM's passthrough device for the host PCI device pciID,
// as Edit Settings > remove PCI device in the vSphere Client (govc
// device.remove) does. vSphere refuses it while the VM is powered on.
func (l *Lab) DetachGPU(ctx context.Context, vmName, pciID string) error {
	vm, devices, err := l.adminDevices(ctx, vmName, (*types.VirtualPCIPassthrough)(nil))
	if err != nil {
		return err
	}
	for _, d := range devices {
		if b, ok := d.GetVirtualDevice().Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo); ok && b.Id == pciID {
			return vm.RemoveDevice(ctx, false, d)
		}
	}
	return fmt.Errorf("VM %s has no passthrough device %s", vmName, pciID)
}

// PowerOnVM powers a VM on, as Power On in the vSphere Client (govc
// vm.power -on) does.
func (l *Lab) PowerOnVM(ctx context.Context, vmName string) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(vm.PowerOn(ctx))
}

// PowerOffVM powers a VM off, as Power > Power Off in the vSphere Client
// (govc vm.power -off) does: no guest shutdown.
func (l *Lab) PowerOffVM(ctx context.Context, vmName string) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(vm.PowerOff(ctx))
}

// SuspendVM suspends a running VM, as Power > Suspend in the vSphere Client
// (govc vm.power -suspend) does. Stock vcsim already keeps suspended a state
// of its own, as vSphere documents it (TestSuspendedVM): only a running VM
// suspends; a guest shutdown needs it running; it powers off, and powers on
// by resuming.
func (l *Lab) SuspendVM(ctx context.Context, vmName string) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(vm.Suspend(ctx))
}

// DestroyVM deletes a powered-off VM from disk, as Delete from Disk in the
// vSphere Client (govc vm.destroy) does.
func (l *Lab) DestroyVM(ctx context.Context, vmName string) error {
	if l.simulatorOnly("DestroyVM") {
		return ErrNotSimulated
	}
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(vm.Destroy(ctx))
}

// CloneVMIntoFolder creates a folder in the datacenter's VM folder and clones
// a VM into it under the same name, as New Folder and Clone to Virtual
// Machine in the vSphere Client (govc folder.create, govc vm.clone -folder)
// do. vCenter allows a VM name that is already used in another folder.
func (l *Lab) CloneVMIntoFolder(ctx context.Context, vmName, folderName string) error {
	if l.simulatorOnly("CloneVMIntoFolder") {
		return ErrNotSimulated
	}
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	folders, err := l.adminDatacenter().Folders(ctx)
	if err != nil {
		return err
	}
	folder, err := folders.VmFolder.CreateFolder(ctx, folderName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(vm.Clone(ctx, folder, vmName, types.VirtualMachineCloneSpec{}))
}

// CreateVM creates a powered-off VM with a network adapter on VM Network and
// hardware version version (9 for vmx-09) on the named host, as New Virtual
// Machine with an older Compatibility setting in the vSphere Client (govc
// vm.create -version) does. vSphere creates VMs of older hardware versions
// for compatibility with older hosts (vSphere Virtual Machine
// Administration, "Virtual Machine Compatibility": "ESXi 5.1 and later ...
// hardware version 9", each level runs on at least five later releases).
// The VM joins VMNames.
func (l *Lab) CreateVM(ctx context.Context, vmName, hostName string, version int) error {
	if l.simulatorOnly("CreateVM") {
		return ErrNotSimulated
	}
	host := find(l.hosts, hostName)
	if host.id == "" {
		return fmt.Errorf("vcsimlab: no host %q", hostName)
	}
	folder, pool, network, err := l.vmPlacement(ctx)
	if err != nil {
		return err
	}
	vm, err := createVM(ctx, folder, pool, object.NewHostSystem(l.client.Client, ref("HostSystem", host.id)), network,
		vmKind{name: vmName, version: fmt.Sprintf("vmx-%02d", version), nic: true})
	if err != nil {
		return err
	}
	l.vms = append(l.vms, vm)
	l.setGuest(ref("VirtualMachine", vm.id), false) // a new VM has no guest OS to report, as the lab's own
	return nil
}

// UpgradeVMHardware upgrades a powered-off VM to hardware version version
// (13 for vmx-13), as Compatibility > Upgrade VM Compatibility in the
// vSphere Client (govc vm.upgrade -version) does.
func (l *Lab) UpgradeVMHardware(ctx context.Context, vmName string, version int) error {
	if l.simulatorOnly("UpgradeVMHardware") {
		return ErrNotSimulated
	}
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(vm.UpgradeVM(ctx, fmt.Sprintf("vmx-%d", version)))
}

// SetVMFirmware sets a powered-off VM's firmware to "bios" or "efi", as Edit
// Settings > VM Options > Boot Options in the vSphere Client (govc vm.change
// -firmware) does.
func (l *Lab) SetVMFirmware(ctx context.Context, vmName, firmware string) error {
	return l.adminReconfigureVM(ctx, vmName, types.VirtualMachineConfigSpec{Firmware: firmware})
}

// SetVMUUID sets a VM's BIOS UUID (config.uuid), as editing uuid.bios in
// its configuration parameters, or ReconfigVM_Task with spec.uuid (govc
// vm.change -uuid), does. vCenter lets two VMs share one, as a copied VM
// registered again with "I copied it" keeps the original's.
func (l *Lab) SetVMUUID(ctx context.Context, vmName, uuid string) error {
	if err := l.adminReconfigureVM(ctx, vmName, types.VirtualMachineConfigSpec{Uuid: uuid}); err != nil {
		return err
	}
	for i := range l.vms {
		if l.vms[i].name == vmName {
			l.vms[i].uuid = uuid
		}
	}
	return nil
}

// MakeAgentVM marks a VM as one of ESX Agent Manager's (config.managedBy
// naming com.vmware.vim.eam), as vCenter's vSphere Cluster Services VMs
// are: ReconfigVM_Task with spec.managedBy, which a solution may set on its
// VMs. The type is the extension's own to define; the lab gives none.
func (l *Lab) MakeAgentVM(ctx context.Context, vmName string) error {
	return l.adminReconfigureVM(ctx, vmName, types.VirtualMachineConfigSpec{ManagedBy: &types.ManagedByInfo{ExtensionKey: eamExtension}})
}

// SetVMExtraConfig sets one of a VM's advanced configuration parameters
// (extraConfig), as Edit Settings > VM Options > Advanced > Configuration
// Parameters in the vSphere Client (govc vm.change -e key=value) does.
func (l *Lab) SetVMExtraConfig(ctx context.Context, vmName, key, value string) error {
	return l.adminReconfigureVM(
		ctx,
		vmName,
		types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{&types.OptionValue{Key: key, Value: value}}},
	)
}

// SetVMMemoryReservationLocked ticks or clears "Reserve all guest memory (All
// locked)" in a VM's Edit Settings > Memory, as an administrator does in the
// vSphere Client.
func (l *Lab) SetVMMemoryReservationLocked(ctx context.Context, vmName string, locked bool) error {
	return l.adminReconfigureVM(ctx, vmName, types.VirtualMachineConfigSpec{MemoryReservationLockedToMax: &locked})
}

// VMSettings is what VMSettings reads of a VM.
type VMSettings struct {
	Firmware    string            // "bios" or "efi"
	ExtraConfig map[string]string // the advanced configuration parameters
	GPUs        []string          // the host PCI ids of its passthrough devices; "" for dynamic DirectPath
}

// VMSettings reads a VM's firmware, extraConfig and passthrough devices from
// vCenter, as govc vm.info -e and govc device.ls show them.
func (l *Lab) VMSettings(ctx context.Context, vmName string) (VMSettings, error) {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return VMSettings{}, err
	}
	var v mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config.firmware", "config.extraConfig", "config.hardware.device"}, &v); err != nil {
		return VMSettings{}, err
	}
	out := VMSettings{ExtraConfig: map[string]string{}}
	if v.Config == nil {
		return out, nil
	}
	out.Firmware = v.Config.Firmware
	for _, o := range v.Config.ExtraConfig {
		if ov := o.GetOptionValue(); ov != nil {
			out.ExtraConfig[ov.Key] = fmt.Sprint(ov.Value)
		}
	}
	for _, d := range v.Config.Hardware.Device {
		if pt, ok := d.(*types.VirtualPCIPassthrough); ok {
			id := ""
			if b, ok := pt.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo); ok {
				id = b.Id
			}
			out.GPUs = append(out.GPUs, id)
		}
	}
	return out, nil
}

// SRIOVAdapter is one SR-IOV passthrough network adapter of a VM.
type SRIOVAdapter struct {
	Key              int32
	MAC              string
	Network          string // the distributed port group's key, or the standard network's name
	PhysicalFunction string // the PF id as vSphere keeps it ("Automatic-…" for automatic assignment)
	VirtualFunction  string // the VF's PCI id; "" while none is assigned
}

// SRIOVAdapters reads a VM's SR-IOV adapters from vCenter, as govc
// device.info shows them.
func (l *Lab) SRIOVAdapters(ctx context.Context, vmName string) ([]SRIOVAdapter, error) {
	_, devices, err := l.adminDevices(ctx, vmName, (*types.VirtualSriovEthernetCard)(nil))
	if err != nil {
		return nil, err
	}
	var out []SRIOVAdapter
	for _, d := range devices {
		card, ok := d.(*types.VirtualSriovEthernetCard)
		if !ok {
			continue
		}
		a := SRIOVAdapter{Key: card.Key, MAC: card.MacAddress, VirtualFunction: cardVF(card)}
		if b := card.SriovBacking; b != nil && b.PhysicalFunctionBacking != nil {
			a.PhysicalFunction = b.PhysicalFunctionBacking.Id
		}
		switch b := card.Backing.(type) {
		case *types.VirtualEthernetCardDistributedVirtualPortBackingInfo:
			a.Network = b.Port.PortgroupKey
		case *types.VirtualEthernetCardNetworkBackingInfo:
			a.Network = b.DeviceName
		}
		out = append(out, a)
	}
	return out, nil
}

// AddSRIOVAdapter adds an SR-IOV passthrough network adapter on the port
// group portGroupName (a distributed port group or a standard network) to
// a powered-off VM, with physical function pfID, or "Automatic-0000:00:00.0"
// for one from the SR-IOV network device pool of the port group's switch,
// as Edit Settings > Add New Device > Network Adapter of type SR-IOV
// passthrough in the vSphere Client does. The function's backing is filled
// from what QueryConfigTarget offers on the VM's host, as in AttachGPU;
// vSphere's own checks apply.
func (l *Lab) AddSRIOVAdapter(ctx context.Context, vmName, portGroupName, pfID string) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	network, err := l.adminFinder().Network(ctx, escapeEntityName(portGroupName))
	if err != nil {
		return err
	}
	backing, err := network.EthernetCardBackingInfo(ctx)
	if err != nil {
		return err
	}
	pf, err := adminPFBacking(ctx, vm, pfID)
	if err != nil {
		return err
	}
	return vm.AddDevice(ctx, &types.VirtualSriovEthernetCard{
		VirtualEthernetCard: types.VirtualEthernetCard{VirtualDevice: types.VirtualDevice{Key: -1, Backing: backing}},
		SriovBacking:        &types.VirtualSriovEthernetCardSriovBackingInfo{PhysicalFunctionBacking: pf},
	})
}

// RemoveSRIOVAdapters removes all SR-IOV adapters of a powered-off VM, as
// Edit Settings > remove network adapter in the vSphere Client (govc
// device.remove) does.
func (l *Lab) RemoveSRIOVAdapters(ctx context.Context, vmName string) error {
	vm, devices, err := l.adminDevices(ctx, vmName, (*types.VirtualSriovEthernetCard)(nil))
	if err != nil {
		return err
	}
	return vm.RemoveDevice(ctx, false, devices...)
}

// SetSRIOVAdapterPF backs a VM's SR-IOV adapter key by the physical function
// pfID ("Automatic-0000:00:00.0" for automatic assignment), as Edit
// Settings > Network adapter > Physical function in the vSphere Client
// does. The virtual function is left unset, so that the next power-on
// selects one.
func (l *Lab) SetSRIOVAdapterPF(ctx context.Context, vmName string, key int32, pfID string) error {
	vm, devices, err := l.adminDevices(ctx, vmName, (*types.VirtualSriovEthernetCard)(nil))
	if err != nil {
		return err
	}
	card, ok := devices.FindByKey(key).(*types.VirtualSriovEthernetCard)
	if !ok {
		return fmt.Errorf("VM %s has no SR-IOV adapter %d", vmName, key)
	}
	pf, err := adminPFBacking(ctx, vm, pfID)
	if err != nil {
		return err
	}
	card.SriovBacking = &types.VirtualSriovEthernetCardSriovBackingInfo{PhysicalFunctionBacking: pf}
	return vm.EditDevice(ctx, card)
}

// adminPFBacking is the physical function backing of pfID as the VM's host
// offers it in QueryConfigTarget; only the id for automatic assignment or
// a function the host does not offer.
func adminPFBacking(ctx context.Context, vm *object.VirtualMachine, pfID string) (*types.VirtualPCIPassthroughDeviceBackingInfo, error) {
	backing := &types.VirtualPCIPassthroughDeviceBackingInfo{Id: pfID}
	target, err := adminConfigTarget(ctx, vm)
	if err != nil {
		return nil, err
	}
	for _, info := range target.Sriov {
		if info.PciDevice.Id == pfID {
			backing.DeviceId = fmt.Sprintf("%x", uint16(info.PciDevice.DeviceId))
			backing.VendorId = info.PciDevice.VendorId
			backing.SystemId = info.SystemId
			backing.DeviceName = info.PciDevice.DeviceName
		}
	}
	return backing, nil
}

// adminConfigTarget is what the VM's host offers the VM (QueryConfigTarget).
func adminConfigTarget(ctx context.Context, vm *object.VirtualMachine) (*types.ConfigTarget, error) {
	browser, err := vm.EnvironmentBrowser(ctx)
	if err != nil {
		return nil, err
	}
	host, err := vm.HostSystem(ctx)
	if err != nil {
		return nil, err
	}
	target, err := browser.QueryConfigTarget(ctx, host)
	if err == nil && target == nil {
		err = fmt.Errorf("vcsimlab: no config target for %s", vm.Reference())
	}
	return target, err
}

// AddPVRDMAAdapter adds a PVRDMA adapter (RoCE v2) on a distributed port
// group to a powered-off VM, as Edit Settings > Add New Device > Network
// Adapter of type PVRDMA in the vSphere Client does. switchUUID and
// portGroupKey name the port group as a VM's network backing does.
func (l *Lab) AddPVRDMAAdapter(ctx context.Context, vmName, switchUUID, portGroupKey string) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return vm.AddDevice(ctx, &types.VirtualVmxnet3Vrdma{
		VirtualVmxnet3: types.VirtualVmxnet3{VirtualVmxnet: types.VirtualVmxnet{VirtualEthernetCard: types.VirtualEthernetCard{
			VirtualDevice: types.VirtualDevice{Key: -1, Backing: dvPortBacking(switchUUID, portGroupKey)},
		}}},
		DeviceProtocol: "rocev2",
	})
}

// RemovePVRDMAAdapters removes all PVRDMA adapters of a powered-off VM, as
// Edit Settings > remove network adapter in the vSphere Client (govc
// device.remove) does.
func (l *Lab) RemovePVRDMAAdapters(ctx context.Context, vmName string) error {
	vm, devices, err := l.adminDevices(ctx, vmName, (*types.VirtualVmxnet3Vrdma)(nil))
	if err != nil {
		return err
	}
	return vm.RemoveDevice(ctx, false, devices...)
}

// PVRDMAAdapterEdit is a change to a VM's PVRDMA adapters; the zero value of
// a field leaves that setting as it is.
type PVRDMAAdapterEdit struct {
	DeviceProtocol string // "rocev1" or "rocev2"
	StartConnected *bool  // "Connect At Power On"
	SwitchUUID     string // with PortGroupKey: the distributed port group to connect to
	PortGroupKey   string
	MAC            string // a manual MAC address
}

// EditPVRDMAAdapters changes every PVRDMA adapter of a VM, each in one
// reconfigure, as Edit Settings > Network adapter in the vSphere Client
// does: its protocol, whether it connects at power on, its port group, its
// MAC address.
func (l *Lab) EditPVRDMAAdapters(ctx context.Context, vmName string, edit PVRDMAAdapterEdit) error {
	vm, devices, err := l.adminDevices(ctx, vmName, (*types.VirtualVmxnet3Vrdma)(nil))
	if err != nil {
		return err
	}
	for _, d := range devices {
		nic := d.(*types.VirtualVmxnet3Vrdma)
		if edit.DeviceProtocol != "" {
			nic.DeviceProtocol = edit.DeviceProtocol
		}
		if edit.StartConnected != nil {
			if nic.Connectable == nil {
				nic.Connectable = &types.VirtualDeviceConnectInfo{}
			}
			nic.Connectable.StartConnected = *edit.StartConnected
		}
		if edit.SwitchUUID != "" || edit.PortGroupKey != "" {
			nic.Backing = dvPortBacking(edit.SwitchUUID, edit.PortGroupKey)
		}
		if edit.MAC != "" {
			nic.MacAddress, nic.AddressType = edit.MAC, string(types.VirtualEthernetCardMacTypeManual)
		}
		if err := vm.EditDevice(ctx, nic); err != nil {
			return fmt.Errorf("editing the PVRDMA adapter %d of %s: %w", nic.Key, vmName, err)
		}
	}
	return nil
}

// AttachDynamicGPU adds a Dynamic DirectPath device of a GPU model to a VM,
// as Edit Settings > Add New Device > PCI Device > DirectPath IO: Dynamic
// in the vSphere Client does (a VirtualPCIPassthrough with a
// VirtualPCIPassthroughDynamicBackingInfo allowing that vendor and device
// id; vSphere picks a host device of the model at power on).
func (l *Lab) AttachDynamicGPU(ctx context.Context, vmName string, vendor, device int32) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return vm.AddDevice(ctx, &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Key: -1,
		Backing: &types.VirtualPCIPassthroughDynamicBackingInfo{
			AllowedDevice: []types.VirtualPCIPassthroughAllowedDevice{{VendorId: vendor, DeviceId: device}},
		}}})
}

// NarrowDynamicGPUs edits every Dynamic DirectPath device of a VM, as Edit
// Settings > PCI device in the vSphere Client does: label sets its hardware
// label (the VM then takes only host devices with that label), and
// alsoVendor, alsoDevice, when not zero, add a model the device may take
// (VirtualPCIPassthroughDynamicBackingInfo: customLabel, allowedDevice).
func (l *Lab) NarrowDynamicGPUs(ctx context.Context, vmName, label string, alsoVendor, alsoDevice int32) error {
	vm, devices, err := l.adminDevices(ctx, vmName, (*types.VirtualPCIPassthrough)(nil))
	if err != nil {
		return err
	}
	for _, d := range devices {
		b, ok := d.(*types.VirtualPCIPassthrough).Backing.(*types.VirtualPCIPassthroughDynamicBackingInfo)
		if !ok {
			continue
		}
		if label != "" {
			b.CustomLabel = label
		}
		if alsoVendor != 0 {
			b.AllowedDevice = append(b.AllowedDevice, types.VirtualPCIPassthroughAllowedDevice{VendorId: alsoVendor, DeviceId: alsoDevice})
		}
		if err := vm.EditDevice(ctx, d); err != nil {
			return fmt.Errorf("editing the Dynamic DirectPath device %d of %s: %w", d.GetVirtualDevice().Key, vmName, err)
		}
	}
	return nil
}

// adminVM is the named lab VM, for the admin client.
func (l *Lab) adminVM(vmName string) (*object.VirtualMachine, error) {
	id := l.VMID(vmName)
	if id == "" {
		return nil, fmt.Errorf("vcsimlab: no VM %q", vmName)
	}
	return object.NewVirtualMachine(l.client.Client, ref("VirtualMachine", id)), nil
}

// adminDevices is the named lab VM and its devices of kind's type.
func (l *Lab) adminDevices(
	ctx context.Context,
	vmName string,
	kind types.BaseVirtualDevice,
) (*object.VirtualMachine, object.VirtualDeviceList, error) {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return nil, nil, err
	}
	devices, err := vm.Device(ctx)
	if err != nil {
		return nil, nil, err
	}
	return vm, devices.SelectByType(kind), nil
}

// adminReconfigureVM reconfigures the named VM with spec.
func (l *Lab) adminReconfigureVM(ctx context.Context, vmName string, spec types.VirtualMachineConfigSpec) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(vm.Reconfigure(ctx, spec))
}

// dvPortBacking is a network adapter's backing on a distributed port group.
func dvPortBacking(switchUUID, portGroupKey string) *types.VirtualEthernetCardDistributedVirtualPortBackingInfo {
	return &types.VirtualEthernetCardDistributedVirtualPortBackingInfo{
		Port: types.DistributedVirtualSwitchPortConnection{SwitchUuid: switchUUID, PortgroupKey: portGroupKey},
	}
}

// SetAdapterMAC gives the named VM's first network adapter the static MAC
// address mac, as Edit Settings > Network adapter > MAC Address: Manual in
// the vSphere Client (govc vm.network.change -net.address) does.
func (l *Lab) SetAdapterMAC(ctx context.Context, vmName, mac string) error {
	vm, err := l.adminVM(vmName)
	if err != nil {
		return err
	}
	devices, err := vm.Device(ctx)
	if err != nil {
		return err
	}
	cards := devices.SelectByType((*types.VirtualEthernetCard)(nil))
	if len(cards) == 0 {
		return fmt.Errorf("vcsimlab: VM %q has no network adapter", vmName)
	}
	card := cards[0].(types.BaseVirtualEthernetCard).GetVirtualEthernetCard()
	card.MacAddress, card.AddressType = mac, string(types.VirtualEthernetCardMacTypeManual)
	return adminWait(ctx)(vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{DeviceChange: []types.BaseVirtualDeviceConfigSpec{
		&types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: cards[0]},
	}}))
}
