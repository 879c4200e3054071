package vcsimlab

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// What BuildByHand makes, by name.
const (
	HandBuiltSwitch       = "lab-pvrdma"
	HandBuiltPortGroup    = "lab-pvrdma-vms"
	HandBuiltTeamedSwitch = "lab-pvrdma-teamed"
	HandBuiltSRIOVPF      = "0000:d8:00.0" // vmnic4, the first host's uplink on HandBuiltSwitch
	HandBuiltSmallWindow  = 64             // GB: the MMIO window of the VM set up short of the rule
)

// BuildByHand sets the lab up as an administrator following the PVRDMA
// and GPU articles by hand leaves it, through the calls the vSphere Client
// makes (the admin actions of this package), never through the provider:
//   - distributed switch HandBuiltSwitch with port group HandBuiltPortGroup,
//     every host joined with vmnic4 as its only uplink;
//   - HandBuiltTeamedSwitch, on which the last host uses vmnic5 and vmnic1
//     together: NIC teaming, which PVRDMA does not support (vSphere
//     Networking, "PVRDMA Support": the adapter's uplink must be one port);
//     it has two port groups, HandBuiltTeamedSwitch-vms and
//     HandBuiltTeamedSwitch-storage, as a switch shared with other traffic
//     has;
//   - on every host, Net.PVRDMAVmknic set to vmk1 and the pvrdma firewall
//     ruleset on;
//   - SR-IOV with 4 virtual functions on vmnic4 (HandBuiltSRIOVPF) of the
//     first host, and an SR-IOV adapter on the port group backed by it on
//     the first VM (on the first host);
//   - passthrough on for the H100s of every host, as the lab starts;
//   - the first VM with a PVRDMA adapter on the port group, one H100, EFI
//     firmware, the MMIO keys at the rule's size for it (256 GB) and its
//     memory reserved, the two GPUDirect RDMA keys of NVIDIA's GPU
//     Operator documentation (pciPassthru.allowP2P and
//     pciPassthru.RelaxACSforP2P, TRUE), and numa.nodeAffinity 0 (vSphere
//     Resource Management's advanced NUMA attributes; the host's one node);
//     the second VM the same with the other H100 of its host and an MMIO
//     window of HandBuiltSmallWindow GB, too small for the GPU's 80 GB,
//     without the GPUDirect and NUMA keys.
func (l *Lab) BuildByHand(ctx context.Context) error {
	hosts := l.HostNames()
	vms := l.VMNames()
	if len(hosts) < 2 || len(vms) < 2 {
		return fmt.Errorf("vcsimlab: a hand-built lab needs two hosts and two VMs, not %d and %d", len(hosts), len(vms))
	}
	last := hosts[len(hosts)-1]
	steps := []func() error{
		func() error { return l.CreateSwitchByHand(ctx, HandBuiltSwitch, hosts[0], "vmnic4") },
		func() error { return l.AddPortGroup(ctx, HandBuiltSwitch, HandBuiltPortGroup, 128) },
		func() error { return l.CreateSwitchByHand(ctx, HandBuiltTeamedSwitch, last, "vmnic5") },
		func() error { return l.AddPortGroup(ctx, HandBuiltTeamedSwitch, HandBuiltTeamedSwitch+"-vms", 8) },
		func() error { return l.AddPortGroup(ctx, HandBuiltTeamedSwitch, HandBuiltTeamedSwitch+"-storage", 8) },
		func() error { return l.teamUplinks(ctx, HandBuiltTeamedSwitch, last, "vmnic5", "vmnic1") },
		func() error { return l.SetHostSRIOV(ctx, hosts[0], HandBuiltSRIOVPF, 4) },
		func() error { return l.rebootIfNeeded(ctx, hosts[0]) },
	}
	for _, h := range hosts[1:] {
		steps = append(steps, func() error { return l.AddSwitchHost(ctx, HandBuiltSwitch, h, "vmnic4") })
	}
	for _, h := range hosts {
		steps = append(steps,
			func() error { return l.SetHostOption(ctx, h, pvrdmaOption, l.Vmknic()) },
			func() error { return l.SetRuleset(ctx, h, "pvrdma", true) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("vcsimlab: building the lab by hand: %w", err)
		}
	}
	uuid, key, err := l.PortGroupBacking(ctx, HandBuiltSwitch, HandBuiltPortGroup)
	if err != nil {
		return err
	}
	if err := l.AddSRIOVAdapter(ctx, vms[0], HandBuiltPortGroup, HandBuiltSRIOVPF); err != nil {
		return fmt.Errorf("vcsimlab: setting up VM %s by hand: %w", vms[0], err)
	}
	for i, vm := range vms[:2] {
		gpu, window := l.GPUs()[i], "256"
		if i == 1 {
			window = fmt.Sprint(HandBuiltSmallWindow)
		}
		steps := []func() error{
			func() error { return l.AddPVRDMAAdapter(ctx, vm, uuid, key) },
			func() error { return l.AttachGPU(ctx, vm, gpu) },
			func() error { return l.SetVMFirmware(ctx, vm, "efi") },
			func() error { return l.SetVMExtraConfig(ctx, vm, "pciPassthru.use64bitMMIO", "TRUE") },
			func() error { return l.SetVMExtraConfig(ctx, vm, "pciPassthru.64bitMMIOSizeGB", window) },
			func() error { return l.SetVMMemoryReservationLocked(ctx, vm, true) },
		}
		if i == 0 {
			steps = append(steps,
				func() error { return l.SetVMExtraConfig(ctx, vm, "pciPassthru.allowP2P", "TRUE") },
				func() error { return l.SetVMExtraConfig(ctx, vm, "pciPassthru.RelaxACSforP2P", "TRUE") },
				func() error { return l.SetVMExtraConfig(ctx, vm, "numa.nodeAffinity", "0") })
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("vcsimlab: setting up VM %s by hand: %w", vm, err)
			}
		}
	}
	return nil
}

// rebootIfNeeded reboots a host that applies passthrough and SR-IOV changes
// only at its next reboot (Options.HostsNeedReboot), as the SR-IOV articles
// tell the administrator to, so that the virtual functions exist.
func (l *Lab) rebootIfNeeded(ctx context.Context, hostName string) error {
	h, ok := l.model.Map().Get(ref("HostSystem", l.HostID(hostName))).(*simulator.HostSystem)
	if !ok {
		return fmt.Errorf("vcsimlab: no host %q", hostName)
	}
	var rebind bool
	newContext(l.model.Map()).WithLock(h, func() {
		rebind = h.Capability != nil && h.Capability.DeviceRebindWithoutRebootSupported != nil && *h.Capability.DeviceRebindWithoutRebootSupported
	})
	if rebind {
		return nil
	}
	return l.RebootHost(ctx, hostName)
}

// CreateSwitchByHand creates a distributed switch with one host and its
// uplink as the vSphere Client's New Distributed Switch wizard does for an
// administrator following the PVRDMA articles: four uplinks named "Uplink 1"
// to "Uplink 4" (the wizard's default), MTU 9000 (the articles' value),
// Network I/O Control off.
func (l *Lab) CreateSwitchByHand(ctx context.Context, switchName, hostName, vmnic string) error {
	return l.createSwitch(ctx, &types.VMwareDVSConfigSpec{MaxMtu: 9000, DVSConfigSpec: types.DVSConfigSpec{
		Name:             switchName,
		UplinkPortPolicy: &types.DVSNameArrayUplinkPortPolicy{UplinkPortName: []string{"Uplink 1", "Uplink 2", "Uplink 3", "Uplink 4"}},
	}}, hostName, vmnic)
}

// teamUplinks makes vmnics, together, a host's uplinks on a switch, as Add
// and Manage Hosts > Manage physical adapters in the vSphere Client does
// when an administrator assigns a second NIC.
func (l *Lab) teamUplinks(ctx context.Context, switchName, hostName string, vmnics ...string) error {
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	backing := &types.DistributedVirtualSwitchHostMemberPnicBacking{}
	for _, n := range vmnics {
		backing.PnicSpec = append(backing.PnicSpec, types.DistributedVirtualSwitchHostMemberPnicSpec{PnicDevice: n})
	}
	return l.adminReconfigureSwitch(ctx, switchName, func(spec *types.VMwareDVSConfigSpec) {
		spec.Host = []types.DistributedVirtualSwitchHostMemberConfigSpec{{
			Operation: string(types.ConfigSpecOperationEdit), Host: host.Reference(), Backing: backing,
		}}
	})
}

// PortGroupBacking is a port group's switch UUID and key, as a VM's network
// backing names them.
func (l *Lab) PortGroupBacking(ctx context.Context, switchName, portGroupName string) (string, string, error) {
	s, err := l.adminSwitch(ctx, switchName)
	if err != nil {
		return "", "", err
	}
	n, err := l.adminFinder().Network(ctx, escapeEntityName(portGroupName))
	if err != nil {
		return "", "", err
	}
	pg, ok := n.(*object.DistributedVirtualPortgroup)
	if !ok {
		return "", "", fmt.Errorf("vcsimlab: %s is not a distributed port group", portGroupName)
	}
	var sw mo.DistributedVirtualSwitch
	if err := s.Properties(ctx, s.Reference(), []string{"uuid"}, &sw); err != nil {
		return "", "", err
	}
	var p mo.DistributedVirtualPortgroup
	if err := pg.Properties(ctx, pg.Reference(), []string{"key"}, &p); err != nil {
		return "", "", err
	}
	return sw.Uuid, p.Key, nil
}
