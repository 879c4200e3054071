package vcsimlab

import (
	"context"
	"reflect"
	"slices"
	"strings"
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
	if _, err := methods.UpdatePassthruConfig(ctx, c, &types.UpdatePassthruConfig{
		This: *h.ConfigManager.PciPassthruSystem,
		Config: []types.BaseHostPciPassthruConfig{
			&types.HostPciPassthruConfig{Id: "0000:af:00.0", PassthruEnabled: true},
		},
	}); err != nil {
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
	for key, want := range map[string]struct {
		offered   bool
		protocols []string
	}{
		"vmx-11": {},
		"vmx-13": {offered: true},
		"vmx-14": {true, []string{"rocev1", "rocev2"}},
		"vmx-19": {true, []string{"rocev1", "rocev2"}},
		"vmx-20": {offered: true},
		"vmx-21": {offered: true},
		"":       {true, []string{"rocev1", "rocev2"}}, // the default of hpc-node-0's browser: its vmx-19
	} {
		opt, err := eb.QueryConfigOption(ctx, &types.EnvironmentBrowserConfigOptionQuerySpec{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if key != "" && opt.Version != key {
			t.Errorf("%q: version %q", key, opt.Version)
		}
		o := vrdmaOption(opt)
		var got []string
		if o != nil && o.DeviceProtocol != nil {
			for _, ci := range o.DeviceProtocol.ChoiceInfo {
				got = append(got, ci.GetElementDescription().Key)
			}
			if def := o.DeviceProtocol.ChoiceInfo[o.DeviceProtocol.DefaultIndex].GetElementDescription().Key; def != "rocev2" {
				t.Errorf("%q: default protocol %s, want rocev2", key, def)
			}
		}
		if (o != nil) != want.offered || !slices.Equal(got, want.protocols) {
			t.Errorf("%q (QueryConfigOptionEx): PVRDMA offered %v with protocols %v, want %v", key, o != nil, got, want)
		}
		plain, err := methods.QueryConfigOption(ctx, c, &types.QueryConfigOption{This: eb.Reference(), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if (vrdmaOption(plain.Returnval) != nil) != want.offered {
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
	if err := l.reconfigure(s, &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{
		Host: l.members(types.ConfigSpecOperationAdd, "vmnic4", 0),
	}}); err != nil {
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
		if info.PciDevice.Id != want.pci || info.Pnic != want.pnic || info.VirtualFunction || info.SystemId != h.Hardware.SystemInfo.Uuid ||
			uint16(info.PciDevice.VendorId) != mellanox {
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

// TestVMEnvironmentBrowser: every VM has its own environment browser, which
// answers as its cluster's but defaults to the VM's hardware version.
func TestVMEnvironmentBrowser(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	ctx := context.Background()
	c := l.c.Client
	var cluster mo.ClusterComputeResource
	retrieve(t, l.c, types.ManagedObjectReference{Type: "ClusterComputeResource", Value: clusterID(t, l.Lab)}, []string{"environmentBrowser"}, &cluster)
	clusterEB := *cluster.EnvironmentBrowser
	descriptors := func(eb types.ManagedObjectReference) []string {
		t.Helper()
		res, err := methods.QueryConfigOptionDescriptor(ctx, c, &types.QueryConfigOptionDescriptor{This: eb})
		if err != nil {
			t.Fatalf("QueryConfigOptionDescriptor(%s): %v", eb, err)
		}
		var keys []string
		for _, d := range res.Returnval {
			keys = append(keys, d.Key)
		}
		return keys
	}
	// defaultVersion is the version of the default config option of eb,
	// both ways of asking.
	defaultVersion := func(eb types.ManagedObjectReference) string {
		t.Helper()
		ex, err := methods.QueryConfigOptionEx(ctx, c, &types.QueryConfigOptionEx{This: eb})
		if err != nil {
			t.Fatalf("QueryConfigOptionEx(%s): %v", eb, err)
		}
		plain, err := methods.QueryConfigOption(ctx, c, &types.QueryConfigOption{This: eb})
		if err != nil {
			t.Fatalf("QueryConfigOption(%s): %v", eb, err)
		}
		if ex.Returnval.Version != plain.Returnval.Version {
			t.Errorf("%s: QueryConfigOptionEx %s, QueryConfigOption %s", eb, ex.Returnval.Version, plain.Returnval.Version)
		}
		return ex.Returnval.Version
	}
	if got := defaultVersion(clusterEB); got != "vmx-21" {
		t.Errorf("cluster's default config option: %s, want the newest, vmx-21", got)
	}

	seen := map[types.ManagedObjectReference]bool{clusterEB: true}
	for name, want := range map[string]string{"hpc-node-0": "vmx-19", "hpc-node-1": "vmx-19", "legacy-node": "vmx-11"} {
		var vm mo.VirtualMachine
		retrieve(t, l.c, vmRef(l.Lab, name), []string{"environmentBrowser"}, &vm)
		eb := vm.EnvironmentBrowser
		if seen[eb] {
			t.Errorf("%s: environment browser %s is another's", name, eb)
		}
		seen[eb] = true
		// Its properties are readable, and those of the cluster's browser.
		var b, cb mo.EnvironmentBrowser
		retrieve(t, l.c, eb, nil, &b)
		retrieve(t, l.c, clusterEB, nil, &cb)
		if !reflect.DeepEqual(b.DatastoreBrowser, cb.DatastoreBrowser) {
			t.Errorf("%s: datastoreBrowser %v, want the cluster's %v", name, b.DatastoreBrowser, cb.DatastoreBrowser)
		}
		if got := defaultVersion(eb); got != want {
			t.Errorf("%s: default config option %s, want the VM's %s", name, got, want)
		}
		// A spec with guest ids only, as the vSphere provider's OSFamily sends.
		opt, err := methods.QueryConfigOptionEx(
			ctx,
			c,
			&types.QueryConfigOptionEx{This: eb, Spec: &types.EnvironmentBrowserConfigOptionQuerySpec{GuestId: []string{"ubuntu64Guest"}}},
		)
		if err != nil || opt.Returnval.Version != want || len(opt.Returnval.GuestOSDescriptor) == 0 ||
			opt.Returnval.GuestOSDescriptor[0].Id != "ubuntu64Guest" {
			t.Errorf("%s: QueryConfigOptionEx for ubuntu64Guest: %+v, %v", name, opt, err)
		}
		// A key still selects a version, and PVRDMA protocols follow it.
		keyed, err := object.NewEnvironmentBrowser(c, eb).QueryConfigOption(ctx, &types.EnvironmentBrowserConfigOptionQuerySpec{Key: "vmx-13"})
		if err != nil || keyed.Version != "vmx-13" || vrdmaOption(keyed) == nil || vrdmaOption(keyed).DeviceProtocol != nil {
			t.Errorf("%s: vmx-13 config option: %+v, %v", name, keyed, err)
		}
		if got, want := descriptors(eb), descriptors(clusterEB); !slices.Equal(got, want) {
			t.Errorf("%s: descriptors %v, want the cluster's %v", name, got, want)
		}
		target, err := methods.QueryConfigTarget(ctx, c, &types.QueryConfigTarget{This: eb})
		if err != nil || target.Returnval == nil || len(target.Returnval.Datastore) == 0 || len(target.Returnval.PciPassthrough) == 0 {
			t.Errorf("%s: config target %+v, %v", name, target.Returnval, err)
		}
		if _, err := methods.QueryTargetCapabilities(ctx, c, &types.QueryTargetCapabilities{This: eb}); err != nil {
			t.Errorf("%s: QueryTargetCapabilities: %v", name, err)
		}
	}

	// The default follows a hardware upgrade.
	if err := l.UpgradeVMHardware(ctx, "legacy-node", 13); err != nil {
		t.Fatal(err)
	}
	var legacy mo.VirtualMachine
	retrieve(t, l.c, vmRef(l.Lab, "legacy-node"), []string{"environmentBrowser"}, &legacy)
	if got := defaultVersion(legacy.EnvironmentBrowser); got != "vmx-13" {
		t.Errorf("legacy-node after the upgrade: default %s, want vmx-13", got)
	}

	// A new VM has its own browser, named after it as vCenter names it, gone with the VM.
	if err := l.CreateVM(ctx, "new-node", l.HostNames()[0], 14); err != nil {
		t.Fatal(err)
	}
	var vm mo.VirtualMachine
	retrieve(t, l.c, vmRef(l.Lab, "new-node"), []string{"environmentBrowser"}, &vm)
	eb := vm.EnvironmentBrowser
	if eb.Value != "envbrowser-"+strings.TrimPrefix(l.VMID("new-node"), "vm-") || seen[eb] {
		t.Errorf("new-node's browser %s", eb)
	}
	if got := defaultVersion(eb); got != "vmx-14" {
		t.Errorf("new-node: default %s, want vmx-14", got)
	}
	task, err := l.vm("new-node").Destroy(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	var gone mo.EnvironmentBrowser
	wantFault(t, "browser of a destroyed VM", tryRetrieve(l.c, eb, []string{"datastoreBrowser"}, &gone), &types.ManagedObjectNotFound{})
	_, err = methods.QueryConfigOption(ctx, c, &types.QueryConfigOption{This: eb})
	wantFault(t, "QueryConfigOption on a destroyed VM's browser", err, &types.ManagedObjectNotFound{})
}
