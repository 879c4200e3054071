package vcsimlab

import (
	"context"
	"reflect"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestAdminHostChanges(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{Hosts: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	ctx := context.Background()
	name := l.HostNames()[0]
	if err := l.SetHostOption(ctx, name, "Net.PVRDMAVmknic", "vmk1"); err != nil {
		t.Fatal(err)
	}
	if err := l.SetRuleset(ctx, name, "pvrdma", true); err != nil {
		t.Fatal(err)
	}
	var h mo.HostSystem
	retrieve(t, l.Client(), types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(name)}, []string{"config.option", "config.firewall"}, &h)
	vmknic, enabled := "", false
	for _, o := range h.Config.Option {
		if v := o.GetOptionValue(); v.Key == "Net.PVRDMAVmknic" {
			vmknic, _ = v.Value.(string)
		}
	}
	for _, rs := range h.Config.Firewall.Ruleset {
		if rs.Key == "pvrdma" {
			enabled = rs.Enabled
		}
	}
	if vmknic != "vmk1" || !enabled {
		t.Fatalf("after the admin changes: vmknic %q, ruleset enabled %v", vmknic, enabled)
	}
	if err := l.SetHostOption(ctx, name, "Net.NoSuchOption", "1"); err == nil {
		t.Fatal("an unknown option was accepted")
	}

	empty := l.HostWithoutVMs()
	if empty == "" {
		t.Fatal("with 8 hosts and 5 VMs, some host runs no VM")
	}
	if err := l.RemoveHost(ctx, empty); err != nil {
		t.Fatal(err)
	}
	err = l.Client().RetrieveOne(ctx, types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(empty)}, []string{"name"}, &h)
	if err == nil {
		t.Fatal("the removed host can still be read")
	}
}

// adminLookup is the reference of the inventory object at path, relative to
// the lab's datacenter ("network/rdma", "vm/team-b/hpc-node-0"), or fails.
func adminLookup(t *testing.T, l *Lab, path string) types.ManagedObjectReference {
	t.Helper()
	found, err := object.NewSearchIndex(l.Client().Client).FindByInventoryPath(context.Background(), "/"+l.DatacenterName()+"/"+path)
	if err != nil || found == nil {
		t.Fatalf("%s: %v (found %v)", path, err, found)
	}
	return found.Reference()
}

// adminSwitchConfig reads a switch's configuration.
func adminSwitchConfig(t *testing.T, l *Lab, name string) *types.VMwareDVSConfigInfo {
	t.Helper()
	var s mo.DistributedVirtualSwitch
	retrieve(t, l.Client(), adminLookup(t, l, "network/"+name), []string{"config"}, &s)
	return s.Config.(*types.VMwareDVSConfigInfo)
}

// adminPortGroupConfig reads a port group's configuration.
func adminPortGroupConfig(t *testing.T, l *Lab, name string) types.DVPortgroupConfigInfo {
	t.Helper()
	var pg mo.DistributedVirtualPortgroup
	retrieve(t, l.Client(), adminLookup(t, l, "network/"+name), []string{"config"}, &pg)
	return pg.Config
}

// adminUplinks maps each host member of a switch to its uplink NICs.
func adminUplinks(l *Lab, cfg *types.VMwareDVSConfigInfo) map[string][]string {
	out := map[string][]string{}
	for _, m := range cfg.Host {
		var nics []string
		if b, ok := m.Config.Backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking); ok {
			for _, p := range b.PnicSpec {
				nics = append(nics, p.PnicDevice)
			}
		}
		for _, h := range l.HostNames() {
			if l.HostID(h) == m.Config.Host.Value {
				out[h] = nics
			}
		}
	}
	return out
}

func TestAdminCreateDatacenter(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	if err := l.CreateDatacenter(ctx, "site-b", l.DatacenterName()); err != nil {
		t.Fatal(err)
	}
	found, err := object.NewSearchIndex(l.Client().Client).FindByInventoryPath(ctx, "/site-b/"+l.DatacenterName())
	if err != nil || found == nil || found.Reference().Value == l.DatacenterID() {
		t.Fatalf("the second datacenter: %v, %v", found, err)
	}
	if err := l.CreateDatacenter(ctx, "site-b", "x"); err == nil {
		t.Fatal("a second folder of the same name: no error")
	}
	// A host of the second datacenter.
	id, err := l.AddStandaloneHost(ctx, "/site-b/"+l.DatacenterName(), "esx-b.example.com")
	if err != nil {
		t.Fatal(err)
	}
	host, err := object.NewSearchIndex(l.Client().Client).
		FindByInventoryPath(ctx, "/site-b/"+l.DatacenterName()+"/host/esx-b.example.com/esx-b.example.com")
	if err != nil || host == nil || host.Reference().Value != id {
		t.Fatalf("the second datacenter's host: %v, %v; want %s", host, err, id)
	}
}

func TestAdminInjectFaults(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	// Faults reach other clients (such as the provider's), not the admin client.
	c := newClient(t, l)
	vm := l.VMNames()[0]

	if err := l.InjectTaskFault("PowerOnVM_Task", vm, Fault{Type: "InsufficientResourcesFault"}); err != nil {
		t.Fatal(err)
	}
	task, err := object.NewVirtualMachine(c.Client, vmRef(l, vm)).PowerOn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); !fault.Is(err, &types.InsufficientResourcesFault{}) {
		t.Fatalf("power on after InjectTaskFault: %v, want InsufficientResourcesFault", err)
	}

	if err := l.InjectCallFault("UpdateOptions", "", Fault{Type: "InvalidName", Detail: "Net.PVRDMAVmknic"}, 1); err != nil {
		t.Fatal(err)
	}
	options, err := object.NewHostSystem(c.Client, hostRef(l, 0)).ConfigManager().OptionManager(ctx)
	if err != nil {
		t.Fatal(err)
	}
	update := func() error {
		return options.Update(ctx, []types.BaseOptionValue{&types.OptionValue{Key: "Net.PVRDMAVmknic", Value: "vmk1"}})
	}
	var invalid *types.InvalidName
	if _, ok := fault.As(update(), &invalid); !ok || invalid.Name != "Net.PVRDMAVmknic" {
		t.Fatalf("option update after InjectCallFault: %+v, want InvalidName Net.PVRDMAVmknic", invalid)
	}
	if err := update(); err != nil {
		t.Fatalf("the second update, past the fault's count: %v", err)
	}

	// Each detail lands in its type's field.
	for _, tc := range []struct {
		fault Fault
		want  types.BaseMethodFault
	}{
		{Fault{Type: "DvsFault"}, &types.DvsFault{}},
		{Fault{Type: "GenericVmConfigFault", Detail: "injected"}, &types.GenericVmConfigFault{Reason: "injected"}},
		{Fault{Type: "InvalidArgument", Detail: "spec.allowedHosts"}, &types.InvalidArgument{InvalidProperty: "spec.allowedHosts"}},
	} {
		got, err := tc.fault.methodFault()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: %#v, %v; want %#v", tc.fault, got, err, tc.want)
		}
	}
	for _, bad := range []Fault{{Type: "NoSuchFault"}, {Type: "DvsFault", Detail: "x"}, {Type: "VirtualMachineConfigSpec"}} {
		if err := l.InjectCallFault("UpdateOptions", "", bad, 1); err == nil {
			t.Errorf("%+v: no error", bad)
		}
		if err := l.InjectTaskFault("ReconfigVM_Task", vm, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestAdminRebootHost: RebootHost applies a host's pending passthrough
// change (TestPendingUntilReboot has SR-IOV) and refuses unknown hosts.
func TestAdminRebootHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{HostsNeedReboot: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	name := l.HostNames()[2]
	ps := types.ManagedObjectReference{Type: "HostPciPassthruSystem", Value: "pcipassthrusystem-" + l.HostID(name)}
	if _, err := methods.UpdatePassthruConfig(ctx, l.Client().Client, &types.UpdatePassthruConfig{This: ps, Config: []types.BaseHostPciPassthruConfig{
		&types.HostPciPassthruConfig{Id: "0000:3b:00.0", PassthruEnabled: false},
	}}); err != nil {
		t.Fatal(err)
	}
	active := func() bool {
		var h mo.HostSystem
		retrieve(t, l.Client(), types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(name)}, []string{"config.pciPassthruInfo"}, &h)
		for _, p := range h.Config.PciPassthruInfo {
			if info := p.GetHostPciPassthruInfo(); info.Id == "0000:3b:00.0" {
				return info.PassthruActive
			}
		}
		return false
	}
	if !active() {
		t.Fatal("disabling passthrough took effect before the reboot")
	}
	if err := l.RebootHost(ctx, name); err != nil {
		t.Fatal(err)
	}
	if active() {
		t.Error("passthrough still active after the reboot")
	}
	if err := l.RebootHost(ctx, "no-such-host"); err == nil {
		t.Error("rebooting an unknown host succeeded")
	}
}

// TestAdminHostSRIOVAndUplinks: SetHostSRIOV turns SR-IOV on and off and
// leaves the function's passthrough as it is (off: SR-IOV on a function
// passed through whole is refused, TestSriovRefusedOnPassedThroughFunction);
// SetStandardSwitchUplinks sets a standard switch's uplinks, refusing a NIC
// a distributed switch has.
func TestAdminHostSRIOVAndUplinks(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	name := l.HostNames()[0]
	pf := ibPFs[0].id
	ps := types.ManagedObjectReference{Type: "HostPciPassthruSystem", Value: "pcipassthrusystem-" + l.HostID(name)}
	state := func() types.HostSriovInfo {
		t.Helper()
		var sys mo.HostPciPassthruSystem
		retrieve(t, l.Client(), ps, []string{"pciPassthruInfo"}, &sys)
		for _, p := range sys.PciPassthruInfo {
			if sr, ok := p.(*types.HostSriovInfo); ok && sr.Id == pf {
				return *sr
			}
		}
		t.Fatalf("no %s", pf)
		return types.HostSriovInfo{}
	}
	for _, vfs := range []int{3, 0} {
		if err := l.SetHostSRIOV(ctx, name, pf, vfs); err != nil {
			t.Fatal(err)
		}
		if sr := state(); sr.SriovActive != (vfs > 0) || sr.NumVirtualFunction != int32(vfs) || sr.PassthruEnabled {
			t.Errorf("after SetHostSRIOV(%d): %+v, want %d VFs, passthrough still off", vfs, sr, vfs)
		}
	}
	if err := l.SetHostSRIOV(ctx, name, pf, 17); err == nil {
		t.Error("17 VFs: no error")
	}
	// Deferred to the next reboot, on a host that could apply it at once.
	if err := l.SetHostSRIOVAtNextReboot(ctx, name, pf, 2); err != nil {
		t.Fatal(err)
	}
	if sr := state(); !sr.SriovEnabled || sr.SriovActive || sr.NumVirtualFunctionRequested != 2 || sr.NumVirtualFunction != 0 {
		t.Errorf("after SetHostSRIOVAtNextReboot(2): %+v, want 2 VFs requested, none active", sr)
	}
	if err := l.SetHostPassthroughAtNextReboot(ctx, name, gpus[2].id, true); err != nil {
		t.Fatal(err)
	}
	a100 := func() types.HostPciPassthruInfo {
		t.Helper()
		var sys mo.HostPciPassthruSystem
		retrieve(t, l.Client(), ps, []string{"pciPassthruInfo"}, &sys)
		for _, p := range sys.PciPassthruInfo {
			if info := p.GetHostPciPassthruInfo(); info.Id == gpus[2].id {
				return *info
			}
		}
		t.Fatalf("no %s", gpus[2].id)
		return types.HostPciPassthruInfo{}
	}
	if p := a100(); !p.PassthruEnabled || p.PassthruActive {
		t.Errorf("after SetHostPassthroughAtNextReboot: %+v, want enabled, not active", p)
	}
	if err := l.RebootHost(ctx, name); err != nil {
		t.Fatal(err)
	}
	if sr, p := state(), a100(); !sr.SriovActive || sr.NumVirtualFunction != 2 || !p.PassthruActive {
		t.Errorf("after the reboot: %+v and %+v, want 2 VFs and passthrough active", sr, p)
	}

	uplinks := func(vswitch string) []string {
		t.Helper()
		var h mo.HostSystem
		retrieve(t, l.Client(), types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(name)}, []string{"config.network.vswitch"}, &h)
		for _, vs := range h.Config.Network.Vswitch {
			if vs.Name == vswitch {
				return vs.Pnic
			}
		}
		return nil
	}
	if err := l.SetStandardSwitchUplinks(ctx, name, "vSwitch1", "vmnic5"); err != nil {
		t.Fatal(err)
	}
	if got := uplinks("vSwitch1"); !reflect.DeepEqual(got, []string{"key-vim.host.PhysicalNic-vmnic5"}) {
		t.Errorf("vSwitch1 uplinks %v, want vmnic5", got)
	}
	if err := l.SetStandardSwitchUplinks(ctx, name, "vSwitch1"); err != nil {
		t.Fatal(err)
	}
	if got := uplinks("vSwitch1"); len(got) != 0 {
		t.Errorf("vSwitch1 uplinks %v, want none", got)
	}
	if err := l.CreateSwitch(ctx, "rdma", name, "vmnic4"); err != nil {
		t.Fatal(err)
	}
	if err := l.SetStandardSwitchUplinks(ctx, name, "vSwitch1", "vmnic4"); !fault.Is(err, &types.ResourceInUse{}) {
		t.Errorf("vmnic4 of a distributed switch: %v, want ResourceInUse", err)
	}
	if err := l.SetStandardSwitchUplinks(ctx, name, "vSwitch9", "vmnic5"); err == nil {
		t.Error("an unknown switch: no error")
	}
}
