package vcsimlab

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func environmentBrowser(t *testing.T, l *Lab) types.ManagedObjectReference {
	t.Helper()
	var vm mo.VirtualMachine
	retrieve(t, l.Client(), vmRef(l, "hpc-node-0"), []string{"environmentBrowser"}, &vm)
	return vm.EnvironmentBrowser
}

func TestQueryConfigTargetListsActivePassthroughDevices(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l).Client
	eb := environmentBrowser(t, l)
	for i := range l.HostNames() {
		host := hostRef(l, i)
		res, err := methods.QueryConfigTarget(ctx, c, &types.QueryConfigTarget{This: eb, Host: &host})
		if err != nil {
			t.Fatal(err)
		}
		var h mo.HostSystem
		retrieve(t, l.Client(), host, []string{"hardware.systemInfo"}, &h)
		var ids []string
		for _, p := range res.Returnval.PciPassthrough {
			info, ok := p.(*types.VirtualMachinePciPassthroughInfo)
			if !ok {
				t.Fatalf("pciPassthrough entry %T", p)
			}
			if info.SystemId != h.Hardware.SystemInfo.Uuid || info.SystemId == "" {
				t.Errorf("systemId %q, want the host's %q", info.SystemId, h.Hardware.SystemInfo.Uuid)
			}
			ids = append(ids, info.PciDevice.Id)
		}
		if want := []string{"0000:3b:00.0", "0000:5e:00.0"}; !slices.Equal(ids, want) {
			t.Errorf("host %d: pciPassthrough %v, want the active %v", i, ids, want)
		}
		dyn := res.Returnval.DynamicPassthrough
		if len(dyn) == 0 || dyn[0].VendorId != 0x10de || dyn[0].DeviceId != 0x2330 {
			t.Errorf("dynamicPassthrough %+v, want the H100s", dyn)
		}
		if len(res.Returnval.Datastore) == 0 || len(res.Returnval.Network) == 0 {
			t.Error("vcsim's own config target content was lost")
		}
	}

	// Enabling passthrough of the A100 makes it a target.
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, 0), []string{"configManager"}, &h)
	if _, err := methods.UpdatePassthruConfig(ctx, c, &types.UpdatePassthruConfig{This: *h.ConfigManager.PciPassthruSystem, Config: []types.BaseHostPciPassthruConfig{
		&types.HostPciPassthruConfig{Id: "0000:af:00.0", PassthruEnabled: true},
	}}); err != nil {
		t.Fatal(err)
	}
	host := hostRef(l, 0)
	res, err := methods.QueryConfigTarget(ctx, c, &types.QueryConfigTarget{This: eb, Host: &host})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Returnval.PciPassthrough); n != 3 {
		t.Errorf("after enabling the A100: %d passthrough targets, want 3", n)
	}
}

func vrdmaOption(opt *types.VirtualMachineConfigOption) *types.VirtualVmxnet3VrdmaOption {
	for _, d := range opt.HardwareOptions.VirtualDeviceOption {
		if o, ok := d.(*types.VirtualVmxnet3VrdmaOption); ok {
			return o
		}
	}
	return nil
}

func TestConfigOptionOffersVrdmaProtocolsByHardwareVersion(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l).Client
	eb := object.NewEnvironmentBrowser(c, environmentBrowser(t, l))
	for key, want := range map[string][]string{
		"vmx-11": nil,
		"vmx-13": {"rocev1"},
		"vmx-14": {"rocev1", "rocev2"},
		"vmx-19": {"rocev1", "rocev2"},
		"":       {"rocev1", "rocev2"}, // the default, vmx-21
	} {
		opt, err := eb.QueryConfigOption(ctx, &types.EnvironmentBrowserConfigOptionQuerySpec{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if key != "" && opt.Version != key {
			t.Errorf("%q: version %q", key, opt.Version)
		}
		var got []string
		if o := vrdmaOption(opt); o != nil && o.DeviceProtocol != nil {
			for _, ci := range o.DeviceProtocol.ChoiceInfo {
				got = append(got, ci.GetElementDescription().Key)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q (QueryConfigOptionEx): protocols %v, want %v", key, got, want)
		}
		plain, err := methods.QueryConfigOption(ctx, c, &types.QueryConfigOption{This: eb.Reference(), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if (vrdmaOption(plain.Returnval) != nil) != (want != nil) {
			t.Errorf("%q (QueryConfigOption): vrdma option present = %v", key, vrdmaOption(plain.Returnval) != nil)
		}
	}
}

// TestQueryConfigTargetListsSriovNICs: sriov lists the physical NICs of the
// host whose SR-IOV is active, with their switch's pool when they are its
// uplinks; not the InfiniBand PFs, which are no NICs.
func TestQueryConfigTargetListsSriovNICs(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	eb := environmentBrowser(t, l.Lab)
	host := hostRef(l.Lab, 0)
	sriov := func() []types.VirtualMachineSriovInfo {
		t.Helper()
		res, err := methods.QueryConfigTarget(ctx, l.c.Client, &types.QueryConfigTarget{This: eb, Host: &host})
		if err != nil {
			t.Fatal(err)
		}
		return res.Returnval.Sriov
	}
	if got := sriov(); len(got) != 0 {
		t.Fatalf("sriov before SR-IOV is on: %+v", got)
	}
	s := l.createDVS("sriov")
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0)}}); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*types.HostSriovConfig{sriovOn("0000:d8:00.1", 2), sriovOn("0000:d8:00.0", 2), sriovOn(ibPFs[0].id, 2)} {
		if err := updateSriov(l.Lab, 0, cfg); err != nil {
			t.Fatal(err)
		}
	}
	got := sriov()
	if len(got) != 2 {
		t.Fatalf("sriov %+v, want vmnic4 and vmnic5", got)
	}
	var h mo.HostSystem
	retrieve(t, l.Client(), host, []string{"hardware.systemInfo"}, &h)
	uuid := l.dvs(s).Config.GetDVSConfigInfo().Uuid
	for i, want := range []struct{ pci, pnic, pool string }{{"0000:d8:00.0", "vmnic4", uuid}, {"0000:d8:00.1", "vmnic5", ""}} {
		info := got[i]
		if info.PciDevice.Id != want.pci || info.Pnic != want.pnic || info.VirtualFunction || info.SystemId != h.Hardware.SystemInfo.Uuid || uint16(info.PciDevice.VendorId) != mellanox {
			t.Errorf("sriov[%d] = %+v, want %s (%s), a PF of this host", i, info, want.pci, want.pnic)
		}
		pool, _ := info.DevicePool.(*types.VirtualMachineSriovNetworkDevicePoolInfo)
		switch {
		case want.pool == "" && info.DevicePool != nil:
			t.Errorf("%s: device pool %+v, want none", want.pnic, info.DevicePool)
		case want.pool != "" && (pool == nil || pool.SwitchUuid != want.pool || pool.SwitchKey != ""):
			t.Errorf("%s: device pool %+v, want switch %s", want.pnic, info.DevicePool, want.pool)
		}
	}
}
