package vcsimlab

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// BuildByHand leaves the lab as its comment says, read back as any client
// reads it: the switches and their uplinks (one teamed), the host settings,
// SR-IOV on the first host's vmnic4, and the two VMs' devices and keys.
func TestBuildByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.BuildByHand(ctx); err != nil {
		t.Fatal(err)
	}
	hosts, vms := l.HostNames(), l.VMNames()
	last := hosts[len(hosts)-1]

	main := adminSwitchConfig(t, l, HandBuiltSwitch)
	if main.MaxMtu != 9000 || len(main.UplinkPortPolicy.(*types.DVSNameArrayUplinkPortPolicy).UplinkPortName) != 4 {
		t.Errorf("%s: MTU %d, uplinks %+v; want 9000 and four", HandBuiltSwitch, main.MaxMtu, main.UplinkPortPolicy)
	}
	for h, nics := range adminUplinks(l, main) {
		if !slices.Equal(nics, []string{"vmnic4"}) {
			t.Errorf("%s on %s: uplinks %v, want vmnic4", h, HandBuiltSwitch, nics)
		}
	}
	if got := adminUplinks(l, adminSwitchConfig(t, l, HandBuiltTeamedSwitch)); len(got) != 1 || !slices.Equal(got[last], []string{"vmnic5", "vmnic1"}) {
		t.Errorf("%s: uplinks %v, want %s teamed on vmnic5 and vmnic1", HandBuiltTeamedSwitch, got, last)
	}
	for _, pg := range []string{HandBuiltPortGroup, HandBuiltTeamedSwitch + "-vms", HandBuiltTeamedSwitch + "-storage"} {
		adminPortGroupConfig(t, l, pg) // exists
	}

	for _, h := range hosts {
		var host mo.HostSystem
		retrieve(t, l.Client(), ref("HostSystem", l.HostID(h)), []string{"config.option", "config.firewall", "config.pciPassthruInfo"}, &host)
		vmknic := ""
		for _, o := range host.Config.Option {
			if v := o.GetOptionValue(); v.Key == pvrdmaOption {
				vmknic, _ = v.Value.(string)
			}
		}
		ruleset := false
		for _, rs := range host.Config.Firewall.Ruleset {
			ruleset = ruleset || (rs.Key == "pvrdma" && rs.Enabled)
		}
		if vmknic != "vmk1" || !ruleset {
			t.Errorf("%s: %s = %q, pvrdma ruleset on %v; want vmk1 and on", h, pvrdmaOption, vmknic, ruleset)
		}
		for _, p := range host.Config.PciPassthruInfo {
			if s, ok := p.(*types.HostSriovInfo); ok && s.Id == HandBuiltSRIOVPF {
				if on := s.SriovEnabled && s.NumVirtualFunctionRequested == 4; on != (h == hosts[0]) {
					t.Errorf("%s: SR-IOV of %s %+v", h, HandBuiltSRIOVPF, s)
				}
			}
		}
	}

	for i, want := range []string{"256", "64"} {
		got, err := l.VMSettings(ctx, vms[i])
		if err != nil {
			t.Fatal(err)
		}
		if got.Firmware != "efi" || got.ExtraConfig["pciPassthru.64bitMMIOSizeGB"] != want || got.ExtraConfig["pciPassthru.use64bitMMIO"] != "TRUE" ||
			!slices.Equal(got.GPUs, []string{l.GPUs()[i]}) {
			t.Errorf("%s: %+v, want EFI, the MMIO keys at %s GB and GPU %s", vms[i], got, want, l.GPUs()[i])
		}
		p2p := got.ExtraConfig["pciPassthru.allowP2P"] == "TRUE" && got.ExtraConfig["pciPassthru.RelaxACSforP2P"] == "TRUE"
		if p2p != (i == 0) {
			t.Errorf("%s: GPUDirect RDMA keys set %t, want %t", vms[i], p2p, i == 0)
		}
		if pinned := got.ExtraConfig["numa.nodeAffinity"] == "0"; pinned != (i == 0) {
			t.Errorf("%s: numa.nodeAffinity %q, want it 0 on the first VM only", vms[i], got.ExtraConfig["numa.nodeAffinity"])
		}
	}
	sriov, err := l.SRIOVAdapters(ctx, vms[0])
	if err != nil || len(sriov) != 1 || sriov[0].PhysicalFunction != HandBuiltSRIOVPF {
		t.Errorf("%s's SR-IOV adapters: %+v, %v; want one on %s", vms[0], sriov, err, HandBuiltSRIOVPF)
	}
}

// On hosts that apply SR-IOV only at their next reboot, BuildByHand reboots
// the first host after turning SR-IOV on, as the articles say to: the
// virtual functions exist, and the VM's SR-IOV adapter can be added.
func TestBuildByHandOnHostsThatNeedReboot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := Start(ctx, Options{HostsNeedReboot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.BuildByHand(ctx); err != nil {
		t.Fatal(err)
	}
	var host mo.HostSystem
	retrieve(t, l.Client(), ref("HostSystem", l.HostID(l.HostNames()[0])), []string{"config.pciPassthruInfo"}, &host)
	for _, p := range host.Config.PciPassthruInfo {
		if s, ok := p.(*types.HostSriovInfo); ok && s.Id == HandBuiltSRIOVPF && (!s.SriovActive || s.NumVirtualFunction != 4) {
			t.Errorf("SR-IOV of %s: %+v, want active with 4 virtual functions", HandBuiltSRIOVPF, s)
		}
	}
}
