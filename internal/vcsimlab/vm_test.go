package vcsimlab

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func (l *lab) vm(name string) *object.VirtualMachine {
	return object.NewVirtualMachine(l.c.Client, vmRef(l.Lab, name))
}

// hostOf is the index of the host the VM runs on.
func (l *lab) hostOf(name string) int {
	l.t.Helper()
	var vm mo.VirtualMachine
	retrieve(l.t, l.Client(), vmRef(l.Lab, name), []string{"runtime.host"}, &vm)
	for i, h := range l.HostNames() {
		if l.HostID(h) == vm.Runtime.Host.Value {
			return i
		}
	}
	l.t.Fatalf("VM %s on unknown host %v", name, vm.Runtime.Host)
	return -1
}

// reconfig reconfigures the VM and waits: the call must succeed, the task
// may fail.
func (l *lab) reconfig(name string, spec types.VirtualMachineConfigSpec) error {
	l.t.Helper()
	ctx := context.Background()
	task, err := l.vm(name).Reconfigure(ctx, spec)
	if err != nil {
		l.t.Fatalf("ReconfigVM_Task call on %s: %v", name, err)
	}
	return task.Wait(ctx)
}

func (l *lab) power(name string, on bool) {
	l.t.Helper()
	ctx := context.Background()
	var task *object.Task
	var err error
	if on {
		task, err = l.vm(name).PowerOn(ctx)
	} else {
		task, err = l.vm(name).PowerOff(ctx)
	}
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		l.t.Fatal(err)
	}
}

func (l *lab) devices(name string) object.VirtualDeviceList {
	l.t.Helper()
	var vm mo.VirtualMachine
	retrieve(l.t, l.Client(), vmRef(l.Lab, name), []string{"config.hardware.device"}, &vm)
	return vm.Config.Hardware.Device
}

func vrdmaSpec(op types.VirtualDeviceConfigSpecOperation, dev types.BaseVirtualDevice) types.VirtualMachineConfigSpec {
	return types.VirtualMachineConfigSpec{DeviceChange: []types.BaseVirtualDeviceConfigSpec{
		&types.VirtualDeviceConfigSpec{Operation: op, Device: dev},
	}}
}

func newVrdma(s *object.DistributedVirtualSwitch, uuid string, pg types.ManagedObjectReference, protocol string) *types.VirtualVmxnet3Vrdma {
	nic := &types.VirtualVmxnet3Vrdma{DeviceProtocol: protocol}
	nic.Key = -1
	nic.Backing = &types.VirtualEthernetCardDistributedVirtualPortBackingInfo{
		Port: types.DistributedVirtualSwitchPortConnection{SwitchUuid: uuid, PortgroupKey: pg.Value},
	}
	return nic
}

func (l *lab) tryAddVrdma(name string, s *object.DistributedVirtualSwitch, pg types.ManagedObjectReference, protocol string) error {
	l.t.Helper()
	uuid := l.dvs(s).Config.GetDVSConfigInfo().Uuid
	return l.reconfig(name, vrdmaSpec(types.VirtualDeviceConfigSpecOperationAdd, newVrdma(s, uuid, pg, protocol)))
}

func (l *lab) addVrdma(name string, s *object.DistributedVirtualSwitch, pg types.ManagedObjectReference, protocol string) {
	l.t.Helper()
	if err := l.tryAddVrdma(name, s, pg, protocol); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lab) vrdma(name string) *types.VirtualVmxnet3Vrdma {
	for _, d := range l.devices(name) {
		if nic, ok := d.(*types.VirtualVmxnet3Vrdma); ok {
			return nic
		}
	}
	return nil
}

func (l *lab) tryRemoveVrdma(name string) error {
	l.t.Helper()
	nic := l.vrdma(name)
	if nic == nil {
		l.t.Fatalf("%s has no PVRDMA adapter", name)
	}
	return l.reconfig(name, vrdmaSpec(types.VirtualDeviceConfigSpecOperationRemove, nic))
}

func (l *lab) removeVrdma(name string) {
	l.t.Helper()
	if err := l.tryRemoveVrdma(name); err != nil {
		l.t.Fatal(err)
	}
}

func TestFirmwareChange(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	wantFault(t, "invalid firmware", l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Firmware: "uefi"}), &types.InvalidArgument{})

	l.power("hpc-node-0", true)
	err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Firmware: "efi"})
	wantFault(t, "firmware change while powered on", err, &types.InvalidPowerState{})
	// Other changes of a powered-on VM still work.
	if err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Annotation: "note"}); err != nil {
		t.Errorf("annotation while powered on: %v", err)
	}

	l.power("hpc-node-0", false)
	if err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Firmware: "efi"}); err != nil {
		t.Fatal(err)
	}
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l.Lab, "hpc-node-0"), []string{"config.firmware"}, &vm)
	if vm.Config.Firmware != "efi" {
		t.Errorf("firmware %q, want efi", vm.Config.Firmware)
	}
}

func TestPVRDMAAdapter(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s, pg := l.switchWithHosts("pvrdma-dvs")

	l.addVrdma("hpc-node-0", s, pg, "rocev2")
	if nic := l.vrdma("hpc-node-0"); nic == nil || nic.DeviceProtocol != "rocev2" {
		t.Fatalf("PVRDMA adapter %+v, want rocev2", nic)
	}

	// Not hot-pluggable.
	l.power("hpc-node-0", true)
	wantFault(t, "remove while powered on", l.tryRemoveVrdma("hpc-node-0"), &types.InvalidPowerState{})
	wantFault(t, "add while powered on", l.tryAddVrdma("hpc-node-0", s, pg, "rocev2"), &types.InvalidPowerState{})
	l.power("hpc-node-0", false)
	l.removeVrdma("hpc-node-0")
	if l.vrdma("hpc-node-0") != nil {
		t.Error("the adapter is still there")
	}

	wantFault(t, "unknown protocol", l.tryAddVrdma("hpc-node-1", s, pg, "rocev3"), &types.InvalidArgument{})
}

func TestPVRDMAHardwareVersion(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	s, pg := l.switchWithHosts("pvrdma-dvs")

	err := l.tryAddVrdma("legacy-node", s, pg, "rocev1")
	wantFault(t, "PVRDMA on vmx-11", err, &types.DeviceUnsupportedForVmVersion{})
	if err == nil || !strings.Contains(err.Error(), "A minimum version of 'vmx-13' is required") {
		t.Errorf("message %q, want vSphere's", err)
	}

	task, err := l.vm("legacy-node").UpgradeVM(ctx, "vmx-13")
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	// vmx-13 offers no protocol choice: an adapter without one is added, one
	// naming a protocol is refused.
	wantFault(t, "rocev1 on vmx-13", l.tryAddVrdma("legacy-node", s, pg, "rocev1"), &types.InvalidArgument{})
	if err := l.tryAddVrdma("legacy-node", s, pg, ""); err != nil {
		t.Errorf("no protocol on vmx-13: %v", err)
	}
	if nic := l.vrdma("legacy-node"); nic == nil || nic.DeviceProtocol != "" {
		t.Errorf("adapter on vmx-13: %+v, want one with no protocol", nic)
	}
}

func TestDVPortAdapterNeedsEveryClusterHostOnTheSwitch(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	s := l.createDVS("partial")
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0, 1),
	}}); err != nil {
		t.Fatal(err)
	}
	pg := l.createPortgroup(s, "partial-pg")
	wantFault(t, "switch without host 2", l.tryAddVrdma("hpc-node-0", s, pg, "rocev2"), &types.InvalidArgument{})
}

func passthroughSpec(op types.VirtualDeviceConfigSpecOperation, backing types.BaseVirtualDeviceBackingInfo) types.VirtualMachineConfigSpec {
	dev := &types.VirtualPCIPassthrough{}
	dev.Key = -1
	dev.Backing = backing
	return vrdmaSpec(op, dev)
}

func staticGPU(id string) *types.VirtualPCIPassthroughDeviceBackingInfo {
	return &types.VirtualPCIPassthroughDeviceBackingInfo{Id: id, DeviceId: "2330", VendorId: 0x10de}
}

func dynamicGPU(device int32) *types.VirtualPCIPassthroughDynamicBackingInfo {
	return &types.VirtualPCIPassthroughDynamicBackingInfo{
		AllowedDevice: []types.VirtualPCIPassthroughAllowedDevice{{VendorId: 0x10de, DeviceId: device}},
	}
}

func TestPCIPassthroughNeedsActiveDevice(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	add := types.VirtualDeviceConfigSpecOperationAdd
	wantFault(t, "static, not enabled", l.reconfig("hpc-node-0", passthroughSpec(add, staticGPU("0000:af:00.0"))), &types.InvalidDeviceBacking{})
	wantFault(t, "static, no such device", l.reconfig("hpc-node-0", passthroughSpec(add, staticGPU("0000:01:00.0"))), &types.InvalidDeviceBacking{})
	wantFault(t, "dynamic, A100 not enabled", l.reconfig("hpc-node-0", passthroughSpec(add, dynamicGPU(0x20f1))), &types.InvalidDeviceBacking{})
	if err := l.reconfig("hpc-node-0", passthroughSpec(add, staticGPU("0000:3b:00.0"))); err != nil {
		t.Errorf("static H100: %v", err)
	}
	if err := l.reconfig("hpc-node-0", passthroughSpec(add, dynamicGPU(0x2330))); err != nil {
		t.Errorf("dynamic H100: %v", err)
	}
	l.power("hpc-node-1", true)
	wantFault(t, "hot-add", l.reconfig("hpc-node-1", passthroughSpec(add, staticGPU("0000:3b:00.0"))), &types.InvalidPowerState{})
}

func (l *lab) graphicsVMs(host int, id string) []types.ManagedObjectReference {
	l.t.Helper()
	var h mo.HostSystem
	retrieve(l.t, l.Client(), hostRef(l.Lab, host), []string{"config.graphicsInfo"}, &h)
	for _, g := range h.Config.GraphicsInfo {
		if g.PciId == id {
			return g.Vm
		}
	}
	l.t.Fatalf("no graphics entry %s", id)
	return nil
}

func TestGraphicsInfoListsVMsUsingGPU(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	host := l.hostOf("hpc-node-0")
	vm := vmRef(l.Lab, "hpc-node-0")
	if err := l.reconfig("hpc-node-0", passthroughSpec(types.VirtualDeviceConfigSpecOperationAdd, staticGPU("0000:3b:00.0"))); err != nil {
		t.Fatal(err)
	}
	if got := l.graphicsVMs(host, "0000:3b:00.0"); !slices.Equal(got, []types.ManagedObjectReference{vm}) {
		t.Errorf("graphicsInfo vm after attach: %v, want %v", got, vm)
	}
	if got := l.graphicsVMs(host, "0000:5e:00.0"); len(got) != 0 {
		t.Errorf("another GPU lists %v", got)
	}

	gpu := l.devices("hpc-node-0").SelectByType((*types.VirtualPCIPassthrough)(nil))
	if len(gpu) != 1 {
		t.Fatalf("%d passthrough devices", len(gpu))
	}
	if err := l.reconfig("hpc-node-0", vrdmaSpec(types.VirtualDeviceConfigSpecOperationRemove, gpu[0])); err != nil {
		t.Fatal(err)
	}
	if got := l.graphicsVMs(host, "0000:3b:00.0"); len(got) != 0 {
		t.Errorf("graphicsInfo vm after detach: %v", got)
	}

	// A destroyed VM leaves the list too.
	if err := l.reconfig("hpc-node-0", passthroughSpec(types.VirtualDeviceConfigSpecOperationAdd, staticGPU("0000:5e:00.0"))); err != nil {
		t.Fatal(err)
	}
	task, err := l.vm("hpc-node-0").Destroy(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := l.graphicsVMs(host, "0000:5e:00.0"); len(got) != 0 {
		t.Errorf("graphicsInfo vm after destroy: %v", got)
	}
}

// TestSwapPlacement: config.swapPlacement is "inherit" by default and
// takes what ReconfigVM_Task, CreateVM_Task and CloneVM_Task ask for.
func TestSwapPlacement(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	swap := func(name string) string {
		t.Helper()
		var vm mo.VirtualMachine
		retrieve(t, l.Client(), vmRef(l.Lab, name), []string{"config.swapPlacement", "capability.swapPlacementSupported"}, &vm)
		if !vm.Capability.SwapPlacementSupported {
			t.Errorf("%s: capability.swapPlacementSupported false", name)
		}
		if vm.Config == nil {
			return ""
		}
		return vm.Config.SwapPlacement
	}
	for _, name := range l.VMNames() {
		if got := swap(name); got != "inherit" {
			t.Errorf("%s: swapPlacement %q, want the default, inherit", name, got)
		}
	}

	for _, p := range []string{"vmDirectory", "hostLocal", "inherit", "hostLocal"} {
		if err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{SwapPlacement: p}); err != nil {
			t.Fatalf("swapPlacement %s: %v", p, err)
		}
		if got := swap("hpc-node-0"); got != p {
			t.Errorf("after ReconfigVM_Task to %s: %q", p, got)
		}
	}
	// A spec without swapPlacement keeps it; an unknown policy is refused.
	if err := l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{Annotation: "swap"}); err != nil {
		t.Fatal(err)
	}
	wantFault(t, "unknown swapPlacement", l.reconfig("hpc-node-0", types.VirtualMachineConfigSpec{SwapPlacement: "elsewhere"}), &types.InvalidArgument{})
	if got := swap("hpc-node-0"); got != "hostLocal" {
		t.Errorf("after a spec without swapPlacement and a refused one: %q, want hostLocal", got)
	}

	// CreateVM_Task and CloneVM_Task.
	folder, pool, _, err := l.vmPlacement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	host := object.NewHostSystem(l.Client().Client, hostRef(l.Lab, 0))
	create := func(name, p string) (types.ManagedObjectReference, error) {
		task, err := folder.CreateVM(ctx, types.VirtualMachineConfigSpec{
			Name: name, GuestId: "ubuntu64Guest", SwapPlacement: p,
			Files: &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"},
		}, pool, host)
		if err != nil {
			return types.ManagedObjectReference{}, err
		}
		info, err := task.WaitForResult(ctx)
		if err != nil {
			return types.ManagedObjectReference{}, err
		}
		return info.Result.(types.ManagedObjectReference), nil
	}
	clone := func(src types.ManagedObjectReference, name, p string) types.ManagedObjectReference {
		t.Helper()
		poolRef := pool.Reference()
		spec := types.VirtualMachineCloneSpec{Location: types.VirtualMachineRelocateSpec{Pool: &poolRef}}
		if p != "" {
			spec.Config = &types.VirtualMachineConfigSpec{SwapPlacement: p}
		}
		task, err := object.NewVirtualMachine(l.Client().Client, src).Clone(ctx, folder, name, spec)
		if err != nil {
			t.Fatal(err)
		}
		info, err := task.WaitForResult(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.Result.(types.ManagedObjectReference)
	}
	read := func(ref types.ManagedObjectReference) string {
		t.Helper()
		var vm mo.VirtualMachine
		retrieve(t, l.Client(), ref, []string{"config.swapPlacement"}, &vm)
		if vm.Config == nil {
			return ""
		}
		return vm.Config.SwapPlacement
	}
	for _, p := range []string{"", "vmDirectory", "hostLocal"} {
		ref, err := create("swap-"+p, p)
		if err != nil {
			t.Fatalf("CreateVM_Task with swapPlacement %q: %v", p, err)
		}
		want := p
		if p == "" {
			want = "inherit"
		}
		if got := read(ref); got != want {
			t.Errorf("CreateVM_Task with swapPlacement %q: %q, want %s", p, got, want)
		}
		if got := read(clone(ref, "clone-"+p, "")); got != want {
			t.Errorf("clone of a VM with %s: %q, want its source's", want, got)
		}
		if got := read(clone(ref, "clone-vmdir-"+p, "vmDirectory")); got != "vmDirectory" {
			t.Errorf("clone with swapPlacement vmDirectory of a VM with %s: %q", want, got)
		}
	}
	_, err = create("swap-bad", "elsewhere")
	wantFault(t, "CreateVM_Task with an unknown swapPlacement", err, &types.InvalidArgument{})
}

// MigrateVM moves a VM between hosts, both hosts' vm lists with it, and
// refuses a running VM with a passthrough device.
func TestMigrateVM(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	vm := "hpc-node-0"
	var from, to string
	for _, h := range l.HostNames() {
		if h == l.VMHostName(vm) {
			from = h
		} else if to == "" {
			to = h
		}
	}
	if err := l.AttachGPU(ctx, vm, l.GPUs()[0]); err != nil {
		t.Fatal(err)
	}
	if err := l.MigrateVM(ctx, vm, to); err != nil {
		t.Fatalf("cold migration: %v", err)
	}
	if got := l.VMHostName(vm); got != to {
		t.Errorf("the VM is on %s, want %s", got, to)
	}
	hostVMs := func(host string) []types.ManagedObjectReference {
		var h mo.HostSystem
		retrieve(t, l.Client(), types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(host)}, []string{"vm"}, &h)
		return h.Vm
	}
	self := vmRef(l.Lab, vm)
	if !slices.Contains(hostVMs(to), self) || slices.Contains(hostVMs(from), self) {
		t.Errorf("hosts' vm lists: %s has %v, %s has %v", from, hostVMs(from), to, hostVMs(to))
	}
	if err := l.PowerOnVM(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if err := l.MigrateVM(ctx, vm, from); err == nil {
		t.Error("a running VM with a passthrough device migrated")
	}
}
