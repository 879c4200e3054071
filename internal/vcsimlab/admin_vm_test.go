package vcsimlab

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestAttachGPU(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	vmName := l.VMNames()[0]
	if err := l.AttachGPU(ctx, vmName, "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, vmName), []string{"config.hardware.device"}, &vm)
	attached := false
	for _, d := range vm.Config.Hardware.Device {
		if pt, ok := d.(*types.VirtualPCIPassthrough); ok {
			b, _ := pt.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo)
			attached = attached || (b != nil && b.Id == "0000:3b:00.0")
		}
	}
	if !attached {
		t.Fatal("the GPU is not attached")
	}
	// The A100 is not passthrough-enabled: vSphere refuses it.
	if err := l.AttachGPU(ctx, vmName, "0000:af:00.0"); err == nil {
		t.Fatal("attaching a GPU that is not passthrough-active succeeded")
	}
}

func TestAdminVMChanges(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	vm := l.VMNames()[0]
	settings := func(name string) VMSettings {
		t.Helper()
		s, err := l.VMSettings(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// SetVMExtraConfig, SetVMFirmware, VMSettings.
	if err := l.SetVMExtraConfig(ctx, vm, "pciPassthru.64bitMMIOSizeGB", "64"); err != nil {
		t.Fatal(err)
	}
	if err := l.SetVMFirmware(ctx, vm, "efi"); err != nil {
		t.Fatal(err)
	}
	if s := settings(vm); s.ExtraConfig["pciPassthru.64bitMMIOSizeGB"] != "64" || s.Firmware != "efi" || len(s.GPUs) != 0 {
		t.Fatalf("after SetVMExtraConfig and SetVMFirmware: %+v", s)
	}
	if err := l.SetVMFirmware(ctx, vm, "uefi"); err == nil {
		t.Fatal("an unknown firmware: no error")
	}

	// SetVMUUID: read back by any client, and by VMUUID.
	shared := l.VMUUID(l.VMNames()[1])
	if err := l.SetVMUUID(ctx, vm, shared); err != nil {
		t.Fatal(err)
	}
	var v mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, vm), []string{"config.uuid"}, &v)
	if v.Config.Uuid != shared || l.VMUUID(vm) != shared {
		t.Fatalf("after SetVMUUID: config.uuid %s, VMUUID %s; want %s", v.Config.Uuid, l.VMUUID(vm), shared)
	}

	// SetVMMemoryReservationLocked.
	locked := func() bool {
		var v mo.VirtualMachine
		retrieve(t, l.Client(), vmRef(l, vm), []string{"config.memoryReservationLockedToMax"}, &v)
		return v.Config.MemoryReservationLockedToMax != nil && *v.Config.MemoryReservationLockedToMax
	}
	for _, want := range []bool{true, false} {
		if err := l.SetVMMemoryReservationLocked(ctx, vm, want); err != nil {
			t.Fatal(err)
		}
		if got := locked(); got != want {
			t.Fatalf("memory reservation locked %v, want %v", got, want)
		}
	}

	// DetachGPU undoes AttachGPU.
	if err := l.AttachGPU(ctx, vm, "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	if s := settings(vm); !slices.Equal(s.GPUs, []string{"0000:3b:00.0"}) {
		t.Fatalf("after AttachGPU: GPUs %v", s.GPUs)
	}
	if err := l.DetachGPU(ctx, vm, "0000:5e:00.0"); err == nil {
		t.Fatal("detaching a GPU the VM does not have: no error")
	}
	if err := l.DetachGPU(ctx, vm, "0000:3b:00.0"); err != nil {
		t.Fatal(err)
	}
	if s := settings(vm); len(s.GPUs) != 0 {
		t.Fatalf("after DetachGPU: GPUs %v", s.GPUs)
	}

	// UpgradeVMHardware.
	if err := l.UpgradeVMHardware(ctx, "legacy-node", 13); err != nil {
		t.Fatal(err)
	}
	var legacy mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, "legacy-node"), []string{"config.version"}, &legacy)
	if legacy.Config.Version != "vmx-13" {
		t.Fatalf("after UpgradeVMHardware: %s", legacy.Config.Version)
	}

	// CloneVMIntoFolder: a second VM of the same name, in the new folder.
	if err := l.CloneVMIntoFolder(ctx, vm, "team-b"); err != nil {
		t.Fatal(err)
	}
	if clone := adminLookup(t, l, "vm/team-b/"+vm); clone.Value == l.VMID(vm) {
		t.Fatal("the clone is the VM itself")
	}

	// PowerOnVM; vSphere then refuses what needs the VM off.
	if err := l.PowerOnVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	var on mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, vm), []string{"runtime.powerState"}, &on)
	if on.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
		t.Fatalf("after PowerOnVM: %s", on.Runtime.PowerState)
	}
	if err := l.SetVMFirmware(ctx, vm, "bios"); err == nil {
		t.Fatal("changing the firmware of a running VM: no error")
	}
	if err := l.DestroyVM(ctx, vm); err == nil {
		t.Fatal("destroying a running VM: no error")
	}

	// DestroyVM.
	other := l.VMNames()[1]
	if err := l.DestroyVM(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := tryRetrieve(l.Client(), vmRef(l, other), []string{"name"}, &on); err == nil {
		t.Fatal("the destroyed VM can still be read")
	}
	if _, err := l.VMSettings(ctx, "no-such-vm"); err == nil {
		t.Fatal("VMSettings of an unknown VM: no error")
	}
}

func TestAdminPVRDMAAdapters(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	vm := l.VMNames()[0]
	// vSphere connects an adapter only to a switch every host of the VM's
	// cluster is a member of.
	hosts := l.HostNames()
	if err := l.CreateSwitch(ctx, "rdma", hosts[0], "vmnic4"); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts[1:] {
		if err := l.AddSwitchHost(ctx, "rdma", h, "vmnic4"); err != nil {
			t.Fatal(err)
		}
	}
	for _, pg := range []string{"pvrdma-a", "pvrdma-b"} {
		if err := l.AddPortGroup(ctx, "rdma", pg, 8); err != nil {
			t.Fatal(err)
		}
	}
	uuid := adminSwitchConfig(t, l, "rdma").Uuid
	keyA, keyB := adminPortGroupConfig(t, l, "pvrdma-a").Key, adminPortGroupConfig(t, l, "pvrdma-b").Key
	adapters := func() []*types.VirtualVmxnet3Vrdma {
		t.Helper()
		var v mo.VirtualMachine
		retrieve(t, l.Client(), vmRef(l, vm), []string{"config.hardware.device"}, &v)
		var out []*types.VirtualVmxnet3Vrdma
		for _, d := range v.Config.Hardware.Device {
			if nic, ok := d.(*types.VirtualVmxnet3Vrdma); ok {
				out = append(out, nic)
			}
		}
		return out
	}
	portGroupOf := func(nic *types.VirtualVmxnet3Vrdma) string {
		b, _ := nic.Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo)
		if b == nil || b.Port.SwitchUuid != uuid {
			return ""
		}
		return b.Port.PortgroupKey
	}

	if err := l.AddPVRDMAAdapter(ctx, vm, uuid, keyA); err != nil {
		t.Fatal(err)
	}
	if got := adapters(); len(got) != 1 || got[0].DeviceProtocol != "rocev2" || portGroupOf(got[0]) != keyA {
		t.Fatalf("after AddPVRDMAAdapter: %+v", got)
	}

	off := false
	if err := l.EditPVRDMAAdapters(ctx, vm, PVRDMAAdapterEdit{DeviceProtocol: "rocev1", StartConnected: &off}); err != nil {
		t.Fatal(err)
	}
	got := adapters()
	if len(got) != 1 || got[0].DeviceProtocol != "rocev1" || got[0].Connectable == nil || got[0].Connectable.StartConnected ||
		portGroupOf(got[0]) != keyA {
		t.Fatalf("after editing protocol and start connected: %+v", got)
	}
	if err := l.EditPVRDMAAdapters(ctx, vm, PVRDMAAdapterEdit{SwitchUUID: uuid, PortGroupKey: keyB}); err != nil {
		t.Fatal(err)
	}
	got = adapters()
	if len(got) != 1 || got[0].DeviceProtocol != "rocev1" || portGroupOf(got[0]) != keyB {
		t.Fatalf("after moving to another port group: %+v", got)
	}
	if err := l.EditPVRDMAAdapters(ctx, vm, PVRDMAAdapterEdit{MAC: "00:50:56:01:02:03"}); err != nil {
		t.Fatal(err)
	}
	if got = adapters(); len(got) != 1 || got[0].MacAddress != "00:50:56:01:02:03" || got[0].AddressType != "manual" {
		t.Fatalf("after setting the MAC: %+v", got)
	}

	if err := l.RemovePVRDMAAdapters(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if got := adapters(); len(got) != 0 {
		t.Fatalf("after RemovePVRDMAAdapters: %+v", got)
	}
	// PVRDMA adapters are not hot-pluggable: vSphere refuses on a running VM.
	if err := l.PowerOnVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if err := l.AddPVRDMAAdapter(ctx, vm, uuid, keyA); err == nil {
		t.Fatal("adding a PVRDMA adapter to a running VM: no error")
	}
}

// TestAdminSRIOVAdapters: SetHostSRIOV, AddSRIOVAdapter (distributed and
// standard port groups, a PF or automatic assignment), SRIOVAdapters,
// SetSRIOVAdapterPF and RemoveSRIOVAdapters; vSphere's checks apply.
func TestAdminSRIOVAdapters(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	vm := l.VMNames()[0]
	host := l.VMHostName(vm)
	hosts := l.HostNames()
	if err := l.CreateSwitch(ctx, "sriov", hosts[0], "vmnic4"); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts[1:] {
		if err := l.AddSwitchHost(ctx, "sriov", h, "vmnic4"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AddPortGroup(ctx, "sriov", "sriov-pg", 8); err != nil {
		t.Fatal(err)
	}
	key := adminPortGroupConfig(t, l, "sriov-pg").Key
	adapters := func() []SRIOVAdapter {
		t.Helper()
		a, err := l.SRIOVAdapters(ctx, vm)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	if err := l.AddSRIOVAdapter(ctx, vm, "sriov-pg", "0000:d8:00.0"); err == nil {
		t.Fatal("an adapter on a PF without SR-IOV: no error")
	}
	if err := l.SetHostSRIOV(ctx, host, "0000:d8:00.0", 4); err != nil {
		t.Fatal(err)
	}
	if err := l.AddSRIOVAdapter(ctx, vm, "sriov-pg", "0000:d8:00.0"); err != nil {
		t.Fatal(err)
	}
	if err := l.AddSRIOVAdapter(ctx, vm, "VM Network", automaticPF); err == nil {
		t.Fatal("automatic assignment on VM Network without a pool: no error")
	}
	if err := l.SetStandardSwitchUplinks(ctx, host, "vSwitch0", "vmnic0", "vmnic5"); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHostSRIOV(ctx, host, "0000:d8:00.1", 2); err != nil {
		t.Fatal(err)
	}
	if err := l.AddSRIOVAdapter(ctx, vm, "VM Network", automaticPF); err != nil {
		t.Fatal(err)
	}
	got := adapters()
	if len(got) != 2 || got[0].Network != key || got[0].PhysicalFunction != "0000:d8:00.0" || got[0].VirtualFunction != "" || got[0].MAC == "" ||
		got[1].Network != "VM Network" || got[1].PhysicalFunction != automaticPF || got[1].VirtualFunction != "" {
		t.Fatalf("after AddSRIOVAdapter: %+v", got)
	}
	// Labelled after the VM's adapter, as vCenter labels them.
	devices, err := object.NewVirtualMachine(l.Client().Client, vmRef(l, vm)).Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range devices.SelectByType((*types.VirtualEthernetCard)(nil)) {
		names = append(names, d.GetVirtualDevice().DeviceInfo.GetDescription().Label)
	}
	if want := []string{"Network adapter 1", "Network adapter 2", "Network adapter 3"}; !slices.Equal(names, want) {
		t.Fatalf("adapters %q, want %q", names, want)
	}

	if err := l.PowerOnVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	got = adapters()
	if got[0].VirtualFunction != "0000:d8:00.2" || got[1].PhysicalFunction != "Automatic-0000:d8:00.1" || got[1].VirtualFunction != "0000:d8:01.2" {
		t.Fatalf("after power-on: %+v", got)
	}
	if err := l.AddSRIOVAdapter(ctx, vm, "sriov-pg", "0000:d8:00.0"); err == nil {
		t.Fatal("an adapter added to a running VM: no error")
	}
	if err := adminWait(ctx)(object.NewVirtualMachine(l.Client().Client, vmRef(l, vm)).PowerOff(ctx)); err != nil {
		t.Fatal(err)
	}

	if err := l.SetSRIOVAdapterPF(ctx, vm, got[0].Key, automaticPF); err != nil {
		t.Fatal(err)
	}
	if a := adapters(); a[len(a)-1].Key != got[0].Key || a[len(a)-1].PhysicalFunction != automaticPF || a[len(a)-1].VirtualFunction != "" {
		t.Fatalf("after SetSRIOVAdapterPF: %+v", a)
	}
	if err := l.SetSRIOVAdapterPF(ctx, vm, got[0].Key, "0000:d8:00.3"); err == nil {
		t.Fatal("a VF as physical function: no error")
	}
	if err := l.SetSRIOVAdapterPF(ctx, vm, 1, automaticPF); err == nil {
		t.Fatal("an unknown adapter: no error")
	}
	if err := l.RemoveSRIOVAdapters(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if a := adapters(); len(a) != 0 {
		t.Fatalf("after RemoveSRIOVAdapters: %+v", a)
	}
	if err := l.SetHostSRIOV(ctx, "no-such-host", "0000:d8:00.0", 1); err == nil {
		t.Fatal("SetHostSRIOV on an unknown host: no error")
	}
	if _, err := l.SRIOVAdapters(ctx, "no-such-vm"); err == nil {
		t.Fatal("SRIOVAdapters of an unknown VM: no error")
	}
}

// CreateVM makes a VM of an older hardware version on the named host, with
// no guest OS reported (none ever ran), and the lab's look-ups know it.
func TestAdminCreateVM(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	host := l.HostNames()[1]
	if err := l.CreateVM(ctx, "esxi51-node", host, 9); err != nil {
		t.Fatal(err)
	}
	if l.VMUUID("esxi51-node") == "" || l.VMHostName("esxi51-node") != host || !slices.Contains(l.VMNames(), "esxi51-node") {
		t.Fatalf("uuid %q, host %q, names %v", l.VMUUID("esxi51-node"), l.VMHostName("esxi51-node"), l.VMNames())
	}
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, "esxi51-node"), []string{"config.version", "runtime.powerState", "guest"}, &vm)
	if vm.Config.Version != "vmx-09" || vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		t.Fatalf("version %s, power %s", vm.Config.Version, vm.Runtime.PowerState)
	}
	if vm.Guest != nil && (vm.Guest.GuestFamily != "" || vm.Guest.GuestFullName != "") {
		t.Errorf("a new VM reports a guest OS: %q, %q", vm.Guest.GuestFamily, vm.Guest.GuestFullName)
	}
	if err := l.CreateVM(ctx, "nowhere", "no-such-host", 19); err == nil {
		t.Fatal("a VM on an unknown host: no error")
	}
}

// A VM a client created (the vSphere provider's, in the composition test)
// is known by name to VMID, VMUUID and the admin calls, like the lab's own.
func TestVMsAClientCreatedAreKnownByName(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l)
	source := object.NewVirtualMachine(c.Client, vmRef(l, l.VMNames()[0]))
	var src mo.VirtualMachine
	retrieve(t, c, source.Reference(), []string{"parent"}, &src)
	task, err := source.Clone(ctx, object.NewFolder(c.Client, *src.Parent), "client-made", types.VirtualMachineCloneSpec{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	made := info.Result.(types.ManagedObjectReference)
	var vm mo.VirtualMachine
	retrieve(t, c, made, []string{"config.uuid"}, &vm)
	if l.VMID("client-made") != made.Value || l.VMUUID("client-made") != vm.Config.Uuid {
		t.Fatalf("VMID, VMUUID = %q, %q; want %s, %s", l.VMID("client-made"), l.VMUUID("client-made"), made.Value, vm.Config.Uuid)
	}
	if err := l.RemovePVRDMAAdapters(ctx, "client-made"); err != nil {
		t.Fatalf("an admin call on the client's VM: %v", err)
	}
	if l.VMID("no-such-vm") != "" {
		t.Fatal("VMID of a name no VM has is not empty")
	}
}

// TestNarrowDynamicGPUs: a Dynamic DirectPath device added by hand allows
// its model; its hardware label and allowed models are edited in place, as
// the vSphere Client edits them.
func TestNarrowDynamicGPUs(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	vmName := l.VMNames()[0]
	if err := l.AttachDynamicGPU(ctx, vmName, 0x10de, 0x2330); err != nil {
		t.Fatal(err)
	}
	// The label must be one a device of the cluster carries.
	if err := l.SetHardwareLabel(ctx, l.VMHostName(vmName), l.GPUs()[0], "team-a"); err != nil {
		t.Fatal(err)
	}
	if err := l.NarrowDynamicGPUs(ctx, vmName, "team-a", 0x10de, 0x20f1); err != nil {
		t.Fatal(err)
	}
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, vmName), []string{"config.hardware.device"}, &vm)
	for _, d := range vm.Config.Hardware.Device {
		pt, ok := d.(*types.VirtualPCIPassthrough)
		if !ok {
			continue
		}
		b, ok := pt.Backing.(*types.VirtualPCIPassthroughDynamicBackingInfo)
		if !ok || b.CustomLabel != "team-a" || len(b.AllowedDevice) != 2 || b.AllowedDevice[1].DeviceId != 0x20f1 {
			t.Fatalf("the dynamic device reads %+v, want label team-a and the A100 allowed too", pt.Backing)
		}
		return
	}
	t.Fatal("the VM has no passthrough device")
}

// A suspended VM is a power state of its own, as vSphere documents it, and
// stock vcsim already behaves so: only a running VM suspends (the vSphere
// Automation API's power suspend: "Suspends a powered-on virtual machine",
// NotAllowedInCurrentState when it is off); a guest shutdown needs the VM
// running (ShutdownGuest: InvalidPowerState otherwise); a suspended VM powers
// off (power stop: "Powers off a powered-on or suspended virtual machine"),
// and powers on by resuming (the vSphere Web Services SDK Programming Guide,
// Performing Virtual Machine Power Operations: PowerOnVM_Task "If the virtual
// machine is suspended, this method resumes execution from the suspend
// point").
func TestSuspendedVM(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	name := l.VMNames()[0]
	state := func() types.VirtualMachinePowerState {
		var vm mo.VirtualMachine
		retrieve(t, l.Client(), vmRef(l.Lab, name), []string{"runtime.powerState"}, &vm)
		return vm.Runtime.PowerState
	}
	vm := object.NewVirtualMachine(l.c.Client, vmRef(l.Lab, name))
	if err := l.SuspendVM(ctx, name); !fault.Is(err, &types.InvalidPowerState{}) || state() != types.VirtualMachinePowerStatePoweredOff {
		t.Fatalf("suspending a VM that is off: %v, %s; want InvalidPowerState, off", err, state())
	}
	suspend := func() {
		t.Helper()
		if err := l.PowerOnVM(ctx, name); err != nil {
			t.Fatal(err)
		}
		if err := l.SuspendVM(ctx, name); err != nil || state() != types.VirtualMachinePowerStateSuspended {
			t.Fatalf("SuspendVM of a running VM: %v, %s; want suspended", err, state())
		}
	}
	suspend()
	wantFault(t, "a guest shutdown of a suspended VM", vm.ShutdownGuest(ctx), &types.InvalidPowerState{})
	if err := adminWait(ctx)(vm.PowerOff(ctx)); err != nil || state() != types.VirtualMachinePowerStatePoweredOff {
		t.Fatalf("powering a suspended VM off: %v, %s; want off", err, state())
	}
	suspend()
	if err := adminWait(ctx)(vm.PowerOn(ctx)); err != nil || state() != types.VirtualMachinePowerStatePoweredOn {
		t.Fatalf("powering a suspended VM on: %v, %s; want on (resumed)", err, state())
	}
}
