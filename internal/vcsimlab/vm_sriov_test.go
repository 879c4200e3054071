package vcsimlab

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// sriovCard is an SR-IOV adapter on backing with physical function pf, or
// without SR-IOV backing for pf "".
func sriovCard(backing types.BaseVirtualDeviceBackingInfo, pf string) *types.VirtualSriovEthernetCard {
	card := &types.VirtualSriovEthernetCard{}
	card.Key = -1
	card.Backing = backing
	if pf != "" {
		card.SriovBacking = &types.VirtualSriovEthernetCardSriovBackingInfo{PhysicalFunctionBacking: &types.VirtualPCIPassthroughDeviceBackingInfo{Id: pf}}
	}
	return card
}

// sriovSwitch is a switch with every host on vmnic4 and a port group, and
// the port group's backing for a network adapter.
func (l *lab) sriovSwitch(name string) (types.ManagedObjectReference, *types.VirtualEthernetCardDistributedVirtualPortBackingInfo) {
	l.t.Helper()
	s, pg := l.switchWithHosts(name)
	uuid := l.dvs(s).Config.GetDVSConfigInfo().Uuid
	return pg, &types.VirtualEthernetCardDistributedVirtualPortBackingInfo{
		Port: types.DistributedVirtualSwitchPortConnection{SwitchUuid: uuid, PortgroupKey: pg.Value},
	}
}

func (l *lab) addSriovCard(name string, card *types.VirtualSriovEthernetCard) error {
	l.t.Helper()
	return l.reconfig(name, vrdmaSpec(types.VirtualDeviceConfigSpecOperationAdd, card))
}

func (l *lab) sriovCards(name string) []*types.VirtualSriovEthernetCard {
	l.t.Helper()
	var out []*types.VirtualSriovEthernetCard
	for _, d := range l.devices(name) {
		if card, ok := d.(*types.VirtualSriovEthernetCard); ok {
			out = append(out, card)
		}
	}
	return out
}

// setSriov sends one HostSriovConfig to host i, or fails.
func (l *lab) setSriov(i int, pf string, vfs int32) {
	l.t.Helper()
	if err := updateSriov(l.Lab, i, sriovOn(pf, vfs)); err != nil {
		l.t.Fatal(err)
	}
}

// tryPower powers a VM on or off and returns the task's error.
func (l *lab) tryPowerOn(name string) error {
	l.t.Helper()
	ctx := context.Background()
	task, err := l.vm(name).PowerOn(ctx)
	if err != nil {
		l.t.Fatalf("PowerOnVM_Task call on %s: %v", name, err)
	}
	return task.Wait(ctx)
}

func (l *lab) powerState(name string) types.VirtualMachinePowerState {
	l.t.Helper()
	var vm mo.VirtualMachine
	retrieve(l.t, l.Client(), vmRef(l.Lab, name), []string{"runtime.powerState"}, &vm)
	return vm.Runtime.PowerState
}

// vfs lists the PF and VF ids of a VM's SR-IOV adapters, "pf=vf" each.
func (l *lab) vfs(name string) []string {
	l.t.Helper()
	var out []string
	for _, card := range l.sriovCards(name) {
		out = append(out, cardPF(card)+"="+cardVF(card))
	}
	return out
}

// vmOn names a VM of host i other than those in skip.
func (l *lab) vmOn(i int, skip ...string) string {
	l.t.Helper()
	for _, name := range l.VMNames() {
		if l.hostOf(name) == i && !slices.Contains(skip, name) {
			return name
		}
	}
	l.t.Fatalf("no other VM on host %d", i)
	return ""
}

// TestSriovAdapterChecks: ReconfigVM_Task fails its task for an SR-IOV
// adapter hot-added or hot-removed, with an SR-IOV backing without PF
// backing, with a PF that is not a NIC with SR-IOV active on the VM's host,
// or with automatic assignment (explicit, or by leaving the SR-IOV backing
// unset on add) without a pool for its network; otherwise vcsim keeps it,
// as any network adapter, and an edit without SR-IOV backing keeps it.
func TestSriovAdapterChecks(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	pg, backing := l.sriovSwitch("sriov")
	vm := "hpc-node-0"
	host := l.hostOf(vm)
	invalid := &types.InvalidDeviceBacking{}
	wantFault(t, "PF without SR-IOV", l.addSriovCard(vm, sriovCard(backing, "0000:d8:00.0")), invalid)
	wantFault(t, "automatic without pool", l.addSriovCard(vm, sriovCard(backing, automaticPF)), invalid)
	wantFault(t, "no SR-IOV backing, without pool", l.addSriovCard(vm, sriovCard(backing, "")), invalid)

	l.setSriov(host, "0000:d8:00.0", 3)
	l.setSriov(host, ibPFs[0].id, 2)
	noPF := sriovCard(backing, "")
	noPF.SriovBacking = &types.VirtualSriovEthernetCardSriovBackingInfo{}
	wantFault(t, "no PF backing", l.addSriovCard(vm, noPF), invalid)
	wantFault(t, "InfiniBand PF", l.addSriovCard(vm, sriovCard(backing, ibPFs[0].id)), invalid)
	wantFault(t, "vmnic5 without SR-IOV", l.addSriovCard(vm, sriovCard(backing, "0000:d8:00.1")), invalid)
	wantFault(t, "a VF", l.addSriovCard(vm, sriovCard(backing, "0000:d8:00.2")), invalid)
	for _, pf := range []string{"0000:d8:00.0", automaticPF, ""} {
		if err := l.addSriovCard(vm, sriovCard(backing, pf)); err != nil {
			t.Errorf("add with PF %q: %v", pf, err)
		}
	}
	if got, want := l.vfs(vm), []string{"0000:d8:00.0=", automaticPF + "=", automaticPF + "="}; !slices.Equal(got, want) {
		t.Errorf("adapters %v, want %v", got, want)
	}
	cards := l.sriovCards(vm)
	if cards[0].MacAddress == "" || cards[0].MacAddress == cards[1].MacAddress {
		t.Errorf("MACs %q, %q: want generated and distinct", cards[0].MacAddress, cards[1].MacAddress)
	}
	if cards[2].SriovBacking != nil {
		t.Errorf("an adapter added without SR-IOV backing has %+v", cards[2].SriovBacking)
	}
	l.wantNetworkVMs("port group", pg, vm)

	// An edit without SR-IOV backing leaves it; one with a bad PF fails.
	edit := *cards[0]
	edit.SriovBacking = nil
	if err := l.reconfig(vm, vrdmaSpec(types.VirtualDeviceConfigSpecOperationEdit, &edit)); err != nil {
		t.Fatal(err)
	}
	for _, card := range l.sriovCards(vm) {
		if card.Key == edit.Key && cardPF(card) != "0000:d8:00.0" {
			t.Errorf("after an edit without SR-IOV backing: %+v", card.SriovBacking)
		}
	}
	wantFault(
		t,
		"edit to vmnic5",
		l.reconfig(vm, vrdmaSpec(types.VirtualDeviceConfigSpecOperationEdit, sriovCardKey(cards[0], "0000:d8:00.1"))),
		invalid,
	)

	// Not hot-pluggable.
	l.power(vm, true)
	wantFault(t, "hot add", l.addSriovCard(vm, sriovCard(backing, "0000:d8:00.0")), &types.InvalidPowerState{})
	wantFault(t, "hot remove", l.reconfig(vm, vrdmaSpec(types.VirtualDeviceConfigSpecOperationRemove, l.sriovCards(vm)[0])), &types.InvalidPowerState{})
	l.power(vm, false)
	for _, card := range l.sriovCards(vm) {
		if err := l.reconfig(vm, vrdmaSpec(types.VirtualDeviceConfigSpecOperationRemove, card)); err != nil {
			t.Fatal(err)
		}
	}
	l.wantNetworkVMs("port group after removal", pg)
}

// sriovCardKey is a copy of card with physical function pf.
func sriovCardKey(card *types.VirtualSriovEthernetCard, pf string) *types.VirtualSriovEthernetCard {
	c := *card
	c.SriovBacking = &types.VirtualSriovEthernetCardSriovBackingInfo{PhysicalFunctionBacking: &types.VirtualPCIPassthroughDeviceBackingInfo{Id: pf}}
	return &c
}

// TestCreateVMWithSriovAdapter: CreateVM_Task checks SR-IOV adapters as
// ReconfigVM_Task does, on the host the call names.
func TestCreateVMWithSriovAdapter(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	_, backing := l.sriovSwitch("sriov")
	l.setSriov(0, "0000:d8:00.0", 2)
	var src mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l.Lab, "hpc-node-0"), []string{"resourcePool", "parent"}, &src)
	folder := object.NewFolder(l.c.Client, *src.Parent)
	pool := object.NewResourcePool(l.c.Client, *src.ResourcePool)
	create := func(name string, host *object.HostSystem, pf string) error {
		t.Helper()
		card := sriovCard(backing, pf)
		if pf == "none" {
			card.SriovBacking = &types.VirtualSriovEthernetCardSriovBackingInfo{}
		}
		spec := types.VirtualMachineConfigSpec{
			Name: name, GuestId: string(types.VirtualMachineGuestOsIdentifierUbuntu64Guest), NumCPUs: 1, MemoryMB: 1024,
			Files: &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"},
			DeviceChange: []types.BaseVirtualDeviceConfigSpec{
				&types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: card},
			},
		}
		task, err := folder.CreateVM(ctx, spec, pool, host)
		if err != nil {
			t.Fatalf("CreateVM_Task call: %v", err)
		}
		return task.Wait(ctx)
	}
	host0 := object.NewHostSystem(l.c.Client, hostRef(l.Lab, 0))
	host1 := object.NewHostSystem(l.c.Client, hostRef(l.Lab, 1))
	wantFault(t, "PF without SR-IOV on host 1", create("bad-pf", host1, "0000:d8:00.0"), &types.InvalidDeviceBacking{})
	wantFault(t, "no PF backing, no host", create("no-pf", nil, "none"), &types.InvalidDeviceBacking{})
	if err := create("good-pf", host0, "0000:d8:00.0"); err != nil {
		t.Errorf("PF with SR-IOV on host 0: %v", err)
	}
	if err := create("automatic", host0, automaticPF); err != nil {
		t.Errorf("automatic on host 0: %v", err)
	}
}

// TestPowerOnAssignsVFs: power-on gives each SR-IOV adapter a free VF of its
// PF, with the VF's PCI ids and the host's system id, the adapter's VF
// first if free; VFs of other powered-on VMs and VFs passed through to a
// VM are not free, and a VM whose adapter finds none stays off with
// GenericVmConfigFault. The VF stays assigned at power-off.
func TestPowerOnAssignsVFs(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	_, backing := l.sriovSwitch("sriov")
	a := "hpc-node-0"
	host := l.hostOf(a)
	b := l.vmOn(host, a)
	l.setSriov(host, "0000:d8:00.0", 2)
	for _, vm := range []string{a, b} {
		if err := l.addSriovCard(vm, sriovCard(backing, "0000:d8:00.0")); err != nil {
			t.Fatal(err)
		}
	}
	l.power(a, true)
	if got := l.vfs(a); !slices.Equal(got, []string{"0000:d8:00.0=0000:d8:00.2"}) {
		t.Fatalf("%s after power-on: %v", a, got)
	}
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l.Lab, host), []string{"hardware.systemInfo"}, &h)
	vf := l.sriovCards(a)[0].SriovBacking.VirtualFunctionBacking
	if uint16(vf.VendorId) != mellanox || vf.DeviceId != "101e" || vf.SystemId != h.Hardware.SystemInfo.Uuid || vf.DeviceName == "" {
		t.Errorf("VF backing %+v, want 15b3:101e of system %s", vf, h.Hardware.SystemInfo.Uuid)
	}
	l.power(b, true)
	if got := l.vfs(b); !slices.Equal(got, []string{"0000:d8:00.0=0000:d8:00.3"}) {
		t.Fatalf("%s after power-on: %v", b, got)
	}

	// Off, both keep their VF; with 00.2 passed through to b, a takes 00.3.
	l.power(a, false)
	l.power(b, false)
	if got := l.vfs(a); !slices.Equal(got, []string{"0000:d8:00.0=0000:d8:00.2"}) {
		t.Errorf("%s after power-off: %v", a, got)
	}
	ps := ref("HostPciPassthruSystem", "pcipassthrusystem-"+l.HostID(l.HostNames()[host]))
	if _, err := methods.UpdatePassthruConfig(ctx, l.c.Client, &types.UpdatePassthruConfig{This: ps, Config: []types.BaseHostPciPassthruConfig{
		&types.HostPciPassthruConfig{Id: "0000:d8:00.2", PassthruEnabled: true},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := l.AttachGPU(ctx, b, "0000:d8:00.2"); err != nil {
		t.Fatal(err)
	}
	l.power(a, true)
	if got := l.vfs(a); !slices.Equal(got, []string{"0000:d8:00.0=0000:d8:00.3"}) {
		t.Errorf("%s with 00.2 passed through: %v", a, got)
	}
	err := l.tryPowerOn(b)
	wantFault(t, "no free VF", err, &types.GenericVmConfigFault{})
	if err == nil || !strings.Contains(err.Error(), "No SR-IOV virtual function (VF) is available for given physical function (PF) (0000:d8:00.0)") {
		t.Errorf("message %v, want vSphere's", err)
	}
	if state := l.powerState(b); state != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("%s is %s after a failed power-on", b, state)
	}

	// Power-cycled, a keeps its VF.
	l.power(a, false)
	l.power(a, true)
	if got := l.vfs(a); !slices.Equal(got, []string{"0000:d8:00.0=0000:d8:00.3"}) {
		t.Errorf("%s power-cycled: %v", a, got)
	}
}

// TestPowerOnAutomaticVF: with automatic assignment the VF comes from the
// first PF, by PCI id, of the network's pool that has one free, and the PF
// id becomes "Automatic-" and that PF's id; for a standard network the pool
// is that of its vSwitch.
func TestPowerOnAutomaticVF(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	a := "hpc-node-0"
	host := l.hostOf(a)
	b := l.vmOn(host, a)
	name := l.HostNames()[host]
	if err := l.SetStandardSwitchUplinks(ctx, name, "vSwitch0", "vmnic0", "vmnic4", "vmnic5"); err != nil {
		t.Fatal(err)
	}
	l.setSriov(host, "0000:d8:00.1", 1)
	l.setSriov(host, "0000:d8:00.0", 1)
	network := &types.VirtualEthernetCardNetworkBackingInfo{
		VirtualDeviceDeviceBackingInfo: types.VirtualDeviceDeviceBackingInfo{DeviceName: "VM Network"},
	}
	for _, vm := range []string{a, b} {
		if err := l.addSriovCard(vm, sriovCard(network, automaticPF)); err != nil {
			t.Fatal(err)
		}
	}
	l.power(a, true)
	l.power(b, true)
	if got := append(l.vfs(a), l.vfs(b)...); !slices.Equal(got, []string{"Automatic-0000:d8:00.0=0000:d8:00.2", "Automatic-0000:d8:00.1=0000:d8:01.2"}) {
		t.Errorf("adapters %v", got)
	}

	// Without a pool for its network, automatic assignment fails.
	l.power(b, false)
	if err := l.SetStandardSwitchUplinks(ctx, name, "vSwitch0", "vmnic0"); err != nil {
		t.Fatal(err)
	}
	wantFault(t, "no pool", l.tryPowerOn(b), &types.GenericVmConfigFault{})
}

// TestPowerOnMultiVMAssignsVFs: Datacenter.PowerOnMultiVM_Task assigns VFs
// as PowerOnVM_Task does.
func TestPowerOnMultiVMAssignsVFs(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	_, backing := l.sriovSwitch("sriov")
	a := "hpc-node-0"
	host := l.hostOf(a)
	b := l.vmOn(host, a)
	l.setSriov(host, "0000:d8:00.0", 2)
	for _, vm := range []string{a, b} {
		if err := l.addSriovCard(vm, sriovCard(backing, automaticPF)); err != nil {
			t.Fatal(err)
		}
	}
	task, err := object.NewDatacenter(l.c.Client, ref("Datacenter", l.DatacenterID())).
		PowerOnVM(ctx, []types.ManagedObjectReference{vmRef(l.Lab, a), vmRef(l.Lab, b)})
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := info.Result.(types.ClusterPowerOnVmResult)
	if !ok || len(res.Attempted) != 2 {
		t.Fatalf("result %#v, want two attempts", info.Result)
	}
	for _, at := range res.Attempted {
		if err := object.NewTask(l.c.Client, *at.Task).Wait(ctx); err != nil {
			t.Errorf("power-on of %s: %v", at.Vm, err)
		}
	}
	if got := append(l.vfs(a), l.vfs(b)...); !slices.Equal(got, []string{"Automatic-0000:d8:00.0=0000:d8:00.2", "Automatic-0000:d8:00.0=0000:d8:00.3"}) {
		t.Errorf("adapters %v", got)
	}
}
