package vcsimlab

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

// A VM taken out of the inventory (VirtualMachine.UnregisterVM) and added
// back from its configuration file (Folder.RegisterVM_Task).
//
// What vSphere documents:
//   - Unregistering keeps the VM's files on the datastore; registering
//     them again makes the VM usable again, taking its resources from the
//     pool or host it is registered to (vSphere Automation SDK Programming
//     Guide 8.0, on the VM service's unregister and register).
//   - The VM comes back under a new managed object reference: "If you
//     remove an object, for example, a virtual machine, from the inventory,
//     and then put it back, the reference changes" (vSphere API reference,
//     ManagedObjectReference; the VDDK Programming Guide 8.0 says the same
//     of "unregistering and reregistering a virtual machine").
//   - Its configuration is what the .vmx holds, the BIOS UUID included:
//     ESXi keeps it under uuid.bios (Broadcom KB 344089, "WMI UUID Differs
//     from VirtualCenter UUID"); registering a .vmx "will create a new
//     VirtualMachine with a new ManagedObjectReference but it will have the
//     same summary.config.uuid which comes from the uuid.bios property of
//     the vmx file" (ManageIQ, manageiq-providers-vmware issue #553). It
//     changes when a VM moved or copied is powered on and the question
//     asked then is answered "I copied it" (Broadcom KB 320246, "Changing
//     or keeping a UUID for a moved virtual machine"); the lab does not
//     model that question.
//   - The instance UUID is the .vmx's vc.uuid; vCenter "actively looks
//     over the VM inventory and will automatically patch the VM instance
//     UUID if it sees a duplicate" (A. Renouf, "A Quick Reference of
//     vSphere IDs", with VMware engineering, 2015).
//   - Without a name, RegisterVM_Task names the VM after "the displayName
//     configuration parameter of the virtual machine" (vSphere Web Services
//     API, Folder.RegisterVM_Task).
//
// What vcsim does instead: its .vmx files stay empty, and RegisterVM_Task
// builds a new VM from the datastore path alone, vmx-13, BIOS, 1 vCPU,
// 32 MB and default devices only (no disk, adapter or passthrough device,
// no extraConfig), named after the directory. It also opens <name>.nvram
// and vmware.log and fails with NotFound when either is missing, so a
// name other than the directory's, or a copied .vmx, cannot be registered;
// ESXi instead recreates a missing NVRAM file (Broadcom KB 317902's
// workaround deletes it and powers the VM on).
//
// The lab: UnregisterVM writes the VM's configuration into its .vmx, in
// the lab's own encoding (the SOAP encoding of VirtualMachineConfigInfo
// after a marker line) rather than ESXi's key = value lines; only the lab
// reads it. RegisterVM_Task of a .vmx holding it lets vcsim register the
// VM, then gives it that configuration: hardware version, devices with
// their keys, MACs and backings, extraConfig, firmware, memory and CPU,
// reservations, BIOS UUID, swap placement, and the instance UUID unless
// another VM of the inventory has it (then a new one). What the
// configuration derives is kept in step: summary.config, the VM's network
// list (and so the networks' vm lists) and the hosts' graphicsInfo. A
// missing <name>.nvram or vmware.log next to an existing .vmx is created
// empty first. Not kept, as vCenter keeps them outside the .vmx: custom
// values, tags, permissions; nor the guest OS VMware Tools reported (the
// VM reports none until its tools run again: whether vCenter shows a
// powered-off VM's last guest OS after registration is not settled by a
// public source). The .vmx is written at UnregisterVM only, not at each
// change: a .vmx copied from a registered VM registers as vcsim's bare VM.

// vmxMarker starts a .vmx the lab wrote.
const vmxMarker = "# vcsimlab: the virtual machine's configuration, as its .vmx keeps it\n"

// encodeVMX is the .vmx content for a VM's configuration.
func encodeVMX(c *types.VirtualMachineConfigInfo) ([]byte, error) {
	b, err := xml.Marshal(c)
	if err != nil {
		return nil, err
	}
	return append([]byte(vmxMarker), b...), nil
}

// decodeVMX reads a configuration from .vmx content; nil when the content
// is not the lab's.
func decodeVMX(b []byte) *types.VirtualMachineConfigInfo {
	rest, ok := bytes.CutPrefix(b, []byte(vmxMarker))
	if !ok {
		return nil
	}
	dec := xml.NewDecoder(bytes.NewReader(rest))
	dec.TypeFunc = types.TypeFunc()
	var c types.VirtualMachineConfigInfo
	if err := dec.Decode(&c); err != nil {
		return nil
	}
	return &c
}

// localPath is where the simulator keeps the file at datastore path
// dsPath ("[LocalDS_0] vm/vm.vmx"); false for a path it cannot resolve
// here (an unknown datastore, or vSAN's namespaces).
func localPath(ctx *simulator.Context, dsPath string) (string, bool) {
	var p object.DatastorePath
	if !p.FromString(dsPath) || p.Path == "" {
		return "", false
	}
	for _, e := range ctx.Map.All("Datastore") {
		ds, ok := e.(*simulator.Datastore)
		if !ok || ds.Name != p.Datastore {
			continue
		}
		if ds.Summary.Type == string(types.HostFileSystemVolumeFileSystemTypeVsan) || ds.Summary.Url == "" {
			return "", false
		}
		return filepath.Join(ds.Summary.Url, filepath.FromSlash(p.Path)), true
	}
	return "", false
}

// UnregisterVM is vcsim's, and writes the VM's configuration into its .vmx
// first, as ESXi keeps it there.
func (x *extension) UnregisterVM(ctx *simulator.Context, req *types.UnregisterVM) soap.HasFault {
	body := new(methods.UnregisterVMBody)
	vm, ok := target[*simulator.VirtualMachine](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	var res soap.HasFault
	ctx.WithLock(vm, func() {
		var vmx []byte
		var file string
		if vm.Config != nil && vm.Config.Files.VmPathName != "" && path.Ext(vm.Config.Files.VmPathName) == ".vmx" {
			file, ok = localPath(ctx, vm.Config.Files.VmPathName)
			if ok {
				vmx, _ = encodeVMX(vm.Config)
			}
		}
		res = vm.UnregisterVM(ctx, req)
		if res.Fault() == nil && vmx != nil {
			if _, err := os.Stat(file); err == nil {
				_ = os.WriteFile(file, vmx, 0o600)
			}
		}
	})
	return res
}

// RegisterVMTask registers the .vmx with vcsim, then gives the new VM the
// configuration the .vmx holds, if the lab wrote one (see above).
func (x *extension) RegisterVMTask(ctx *simulator.Context, req *types.RegisterVM_Task) soap.HasFault {
	body := new(methods.RegisterVM_TaskBody)
	f, ok := target[*simulator.Folder](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	r := *req
	var saved *types.VirtualMachineConfigInfo
	vmx, resolved := localPath(ctx, req.Path)
	if resolved {
		if b, err := os.ReadFile(vmx); err == nil {
			saved = decodeVMX(b)
			if r.Name == "" && saved != nil {
				r.Name = saved.Name
			}
			createVMXCompanions(filepath.Dir(vmx), r.Name)
		}
	}
	instanceUUID := ""
	if saved != nil {
		instanceUUID = uniqueInstanceUUID(ctx, saved.InstanceUuid)
	}
	ctx.WithLock(f, func() {
		var result types.AnyType
		var err *vimError
		var t *simulator.Task
		if res, _ := f.RegisterVMTask(ctx, &r).(*methods.RegisterVM_TaskBody); res != nil && res.Res != nil {
			t, _ = ctx.Map.Get(res.Res.Returnval).(*simulator.Task)
		}
		if t == nil {
			err = refuse(&types.SystemError{}, "Registering the virtual machine failed.")
		} else {
			// The task shares this call's lock on the folder.
			t.Wait()
			if e := t.Info.Error; e != nil {
				err = &vimError{fault: e.Fault, msg: registerFaultMessage(e.Fault, r.Path)}
			} else if ref, ok := t.Info.Result.(types.ManagedObjectReference); ok {
				if saved != nil {
					restoreVMX(ctx, ref, saved, instanceUUID)
				}
				result = ref
			}
		}
		body.Res = &types.RegisterVM_TaskResponse{Returnval: finishTask(ctx, f, "RegisterVM_Task", result, err)}
	})
	return body
}

// registerFaultMessage is vCenter's message for a registration fault.
func registerFaultMessage(f types.BaseMethodFault, dsPath string) string {
	switch f.(type) {
	case *types.AlreadyExists:
		return "The specified key, name, or identifier '" + dsPath + "' already exists."
	case *types.NotFound:
		return "The object or item referred to could not be found."
	}
	return faultName(f)
}

// createVMXCompanions creates, empty, the files vcsim opens when it
// registers a VM named name from a .vmx in dir and that are missing: the
// NVRAM file, which ESXi recreates when missing, and the log, which vcsim
// keeps beside the .vmx.
func createVMXCompanions(dir, name string) {
	if name == "" {
		return
	}
	for _, file := range []string{filepath.Join(dir, name+".nvram"), filepath.Join(dir, "vmware.log")} {
		if _, err := os.Stat(file); os.IsNotExist(err) {
			if f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				_ = f.Close()
			}
		}
	}
}

// uniqueInstanceUUID is id, or a new instance UUID when a VM of the
// inventory has id already (or id is empty). Each VM is locked on its own.
func uniqueInstanceUUID(ctx *simulator.Context, id string) string {
	taken := id == ""
	for _, ref := range allVMs(ctx) {
		vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
		if !ok || taken {
			continue
		}
		ctx.WithLock(vm, func() {
			taken = vm.Config != nil && vm.Config.InstanceUuid == id
		})
	}
	if taken {
		return newInstanceUUID()
	}
	return id
}

// newInstanceUUID is a new random (version 4) UUID: how vCenter makes the
// new instance UUID is not public.
func newInstanceUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// restoreVMX gives the VM vcsim has just registered the configuration its
// .vmx holds, with the instance UUID instanceUUID, and what derives from
// it. The caller holds the lock of the VM's folder.
func restoreVMX(ctx *simulator.Context, ref types.ManagedObjectReference, saved *types.VirtualMachineConfigInfo, instanceUUID string) {
	vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
	if !ok {
		return
	}
	ctx.WithLock(vm, func() {
		if vm.Config == nil {
			return
		}
		c := *saved
		// Where it was registered from, under what name, and vCenter's
		// bookkeeping of the new VM.
		c.Name, c.Files, c.Template = vm.Config.Name, vm.Config.Files, vm.Config.Template
		c.ChangeVersion, c.Modified = vm.Config.ChangeVersion, vm.Config.Modified
		c.InstanceUuid = instanceUUID

		s := vm.Summary.Config
		s.Name, s.Uuid, s.InstanceUuid, s.HwVersion = c.Name, c.Uuid, c.InstanceUuid, c.Version
		s.GuestId, s.GuestFullName, s.Annotation = c.GuestId, c.GuestFullName, c.Annotation
		s.NumCpu, s.MemorySizeMB = c.Hardware.NumCPU, c.Hardware.MemoryMB
		s.NumEthernetCards, s.NumVirtualDisks = 0, 0
		var networks []types.ManagedObjectReference
		for _, d := range c.Hardware.Device {
			switch d := d.(type) {
			case *types.VirtualDisk:
				s.NumVirtualDisks++
			case types.BaseVirtualEthernetCard:
				s.NumEthernetCards++
				if n := adapterNetwork(d.GetVirtualEthernetCard()); n.Value != "" && !slices.Contains(networks, n) {
					networks = append(networks, n)
				}
			}
		}
		if a := c.MemoryAllocation; a != nil && a.Reservation != nil {
			s.MemoryReservation = int32(*a.Reservation)
		}
		if a := c.CpuAllocation; a != nil && a.Reservation != nil {
			s.CpuReservation = int32(*a.Reservation)
		}
		ctx.Update(vm, []types.PropertyChange{
			{Name: "config", Val: &c},
			// Named on their own, for the handlers that follow them.
			{Name: "config.hardware.device", Val: c.Hardware.Device},
			{Name: "summary.config", Val: s},
			{Name: "network", Val: networks},
		})
		if vm.Config.SwapPlacement != saved.SwapPlacement {
			// A handler that sets up new VMs may have run in between.
			ctx.Update(vm, []types.PropertyChange{{Name: "config.swapPlacement", Val: saved.SwapPlacement}})
		}
		// The disks' files in the layout, as vcsim lists them.
		vm.RefreshStorageInfo(ctx, &types.RefreshStorageInfo{This: vm.Self})
	})
}

// adapterNetwork is the network a network adapter is on, as a VM's network
// property lists it.
func adapterNetwork(card *types.VirtualEthernetCard) types.ManagedObjectReference {
	switch b := card.Backing.(type) {
	case *types.VirtualEthernetCardNetworkBackingInfo:
		if b.Network != nil {
			return *b.Network
		}
	case *types.VirtualEthernetCardDistributedVirtualPortBackingInfo:
		return types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: b.Port.PortgroupKey}
	}
	return types.ManagedObjectReference{}
}
