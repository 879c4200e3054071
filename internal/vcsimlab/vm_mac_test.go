package vcsimlab

import (
	"context"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
)

// Adapters added without a MAC get addresses of the lab vCenter's range,
// 00:50:56:80+ID, each its own; a manual address is kept.
func TestNewAdaptersGetVCenterMACs(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l)
	vm := object.NewVirtualMachine(c.Client, vmRef(l, l.VMNames()[0]))
	devices, err := vm.Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := map[int32]bool{}
	for _, d := range devices {
		before[d.GetVirtualDevice().Key] = true
	}
	add := func(mac string) types.BaseVirtualDeviceConfigSpec {
		card := &types.VirtualVmxnet3{}
		card.Key = -1
		if mac != "" {
			card.MacAddress, card.AddressType = mac, string(types.VirtualEthernetCardMacTypeManual)
		}
		return &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: card}
	}
	first, second := add(""), add("")
	second.GetVirtualDeviceConfigSpec().Device.GetVirtualDevice().Key = -2
	manual := add("00:50:56:01:02:03")
	manual.GetVirtualDeviceConfigSpec().Device.GetVirtualDevice().Key = -3
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{DeviceChange: []types.BaseVirtualDeviceConfigSpec{first, second, manual}})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	devices, err = vm.Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var assigned []string
	manualKept := false
	for _, d := range devices {
		card, ok := d.(types.BaseVirtualEthernetCard)
		if !ok || before[d.GetVirtualDevice().Key] {
			continue
		}
		mac := card.GetVirtualEthernetCard().MacAddress
		switch {
		case mac == "00:50:56:01:02:03":
			manualKept = true
		case strings.HasPrefix(mac, "00:50:56:87:"):
			assigned = append(assigned, mac)
		default:
			t.Errorf("new adapter MAC %s, want 00:50:56:87:YY:ZZ (vCenter server ID %d)", mac, labVCenterID)
		}
	}
	if len(assigned) != 2 || assigned[0] == assigned[1] || !manualKept {
		t.Fatalf("assigned %v, manual kept %v; want two distinct vCenter addresses and the manual one", assigned, manualKept)
	}
}

// SetAdapterMAC gives a VM's first adapter a static address.
func TestSetAdapterMAC(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	name := l.VMNames()[0]
	if err := l.SetAdapterMAC(ctx, name, "00:50:56:01:0a:0b"); err != nil {
		t.Fatal(err)
	}
	devices, err := object.NewVirtualMachine(l.Client().Client, vmRef(l, name)).Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	card := devices.SelectByType((*types.VirtualEthernetCard)(nil))[0].(types.BaseVirtualEthernetCard).GetVirtualEthernetCard()
	if card.MacAddress != "00:50:56:01:0a:0b" || card.AddressType != string(types.VirtualEthernetCardMacTypeManual) {
		t.Fatalf("adapter MAC %s (%s), want 00:50:56:01:0a:0b (manual)", card.MacAddress, card.AddressType)
	}
}
