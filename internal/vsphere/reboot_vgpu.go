package vsphere

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Whether maintenance mode moves a running VM with NVIDIA vGPUs, from
// public sources:
//   - vMotion moves it only when vCenter's advanced setting
//     vgpu.hotmigrate.enabled is true ("To enable vMotion for vGPU virtual
//     machines, you need to set the vgpu.hotmigrate.enabled advanced setting
//     to true", vSphere 7.0 and 8.0 documentation, "Using vMotion to Migrate
//     vGPU Virtual Machines");
//   - DRS moves it off a host entering maintenance mode only when the
//     cluster's DRS advanced option VgpuMMAutomationTimeoutSecs is -1 ("If
//     VgpuMMAutomationTimeoutSecs is not set to -1, then DRS does not
//     recommend compatible hosts in the Cluster, and only option user has is
//     to manually evacuate VMs", Broadcom KB 88271, vCenter 7.0 U3f and
//     later), and, as any VM, only when DRS moves it at all (PlanHostReboot);
//   - its vGPU types must support vMotion on the host
//     (HostSharedGpuCapabilities.migrateSupported), and another host of the
//     cluster must offer them with room on its GPUs (vgpuRoom's rule).

const (
	vgpuHotMigrateSetting = "vgpu.hotmigrate.enabled"
	vgpuEvacuationOption  = "VgpuMMAutomationTimeoutSecs"
)

// evacuatesVGPUs reports whether the cluster's DRS moves VMs with vGPUs
// off a host entering maintenance mode.
func (d drsLevels) evacuatesVGPUs() bool {
	if d.cfg == nil {
		return false
	}
	for _, o := range d.cfg.DrsConfig.Option {
		if v := o.GetOptionValue(); v != nil && v.Key == vgpuEvacuationOption {
			return strings.TrimSpace(fmt.Sprint(v.Value)) == "-1"
		}
	}
	return false
}

// stuckVM is a VM maintenance mode would leave on its host, and why.
type stuckVM struct {
	vm     *mo.VirtualMachine
	reason string
}

// vgpuEvacuation says which of vms, running with vGPUs on host self and
// moved by DRS, maintenance mode would leave there. Only when the cluster
// lets DRS move them does it read further: vCenter's setting (one call),
// then the cluster's other hosts and their VMs (one property-collector
// read).
func (c *Client) vgpuEvacuation(ctx context.Context, vc *vim25.Client, self *mo.HostSystem, drs drsLevels,
	vms []*mo.VirtualMachine) ([]stuckVM, error) {
	all := func(reason string) []stuckVM {
		out := make([]stuckVM, len(vms))
		for i, vm := range vms {
			out[i] = stuckVM{vm, reason}
		}
		return out
	}
	if !drs.evacuatesVGPUs() {
		return all("DRS moves no VM with vGPUs off a host entering maintenance mode unless the cluster's DRS advanced option " +
			vgpuEvacuationOption + " is -1 (Broadcom KB 88271; the vSphere provider's drs_advanced_options sets it)"), nil
	}
	on, err := vgpuHotMigrate(ctx, vc)
	if err != nil {
		return nil, err
	}
	if !on {
		return all("vMotion moves no VM with vGPUs unless vCenter's advanced setting " + vgpuHotMigrateSetting +
			" is true (vCenter > Configure > Advanced Settings)"), nil
	}
	hosts, err := c.vgpuDestinations(ctx, vc, self)
	if err != nil {
		return nil, err
	}
	return placeEvacuatedVGPUs(vms, vgpuProfilesFromMO(self), hosts), nil
}

// placeEvacuatedVGPUs says which of vms, with vGPUs on a host offering
// offered, no host of hosts would take. It places them in name order, each
// on the first host that takes it beside those placed before it.
func placeEvacuatedVGPUs(vms []*mo.VirtualMachine, offered []VGPUProfile, hosts []*Host) []stuckVM {
	migrates := map[string]bool{}
	for _, p := range offered {
		migrates[p.Name] = p.MigrateSupported
	}
	slices.SortFunc(vms, func(a, b *mo.VirtualMachine) int { return strings.Compare(a.Name, b.Name) })
	var out []stuckVM
	for _, vm := range vms {
		profiles := vgpuProfilesOf(vm.Config.Hardware.Device)
		if i := slices.IndexFunc(profiles, func(p string) bool { m, known := migrates[p]; return known && !m }); i >= 0 {
			out = append(out, stuckVM{vm, fmt.Sprintf("vGPU profile %s does not support vMotion on this host "+
				"(HostSharedGpuCapabilities.migrateSupported)", profiles[i])})
			continue
		}
		if !slices.ContainsFunc(hosts, func(h *Host) bool { return takeVGPUs(h, vmRefOf(vm), profiles) }) {
			out = append(out, stuckVM{vm, fmt.Sprintf("no other host of the cluster offers vGPU profile %s with room for it",
				strings.Join(slices.Compact(slices.Sorted(slices.Values(profiles))), ", "))})
		}
	}
	return out
}

// takeVGPUs places a VM's vGPUs of profiles on host h's GPUs as equal-size
// mode allows, each on the GPU with the most room, and records them there
// (the VM listed once per GPU, with the profiles placed on it) for the VMs
// placed after it; it reports false, recording nothing, when
// one does not fit. As far as h tells: a host that does not say which of
// its GPUs offers a profile (several models), a name without a frame
// buffer or a GPU in mixed-size mode leave the placement to the host.
func takeVGPUs(h *Host, vm VMRef, profiles []string) bool {
	for _, p := range profiles {
		if !slices.ContainsFunc(h.VGPUProfiles, func(o VGPUProfile) bool { return o.Name == p }) {
			return false
		}
	}
	models := hostVGPUModels(h)
	if models == nil {
		return true
	}
	gpus := slices.Clone(h.GPUs)
	for _, p := range profiles {
		fb := VGPUFrameBufferGB(p)
		if fb == 0 {
			continue
		}
		spread := vgpuSpread(gpus)
		best, room := -1, 0
		for i, g := range gpus {
			if !offersVGPU(g, models, p) {
				continue
			}
			if g.VGPUMode == string(types.HostGraphicsInfoVgpuModeMixedSize) {
				return true
			}
			if slots, other := gpuRoom(g, fb, "", spread); other == "" && slots > room {
				best, room = i, slots
			}
		}
		if best < 0 {
			return false
		}
		users := slices.Clone(gpus[best].VGPUs)
		if i := slices.IndexFunc(users, func(u VGPUUser) bool { return u.VM.MOID == vm.MOID }); i >= 0 {
			users[i].Profiles = append(slices.Clone(users[i].Profiles), p)
		} else {
			users = append(users, VGPUUser{VM: vm, Profiles: []string{p}})
		}
		gpus[best].VGPUs = users
	}
	h.GPUs = gpus
	return true
}

// vgpuHotMigrate reads vCenter's vgpu.hotmigrate.enabled: false when
// vCenter has no such setting.
func vgpuHotMigrate(ctx context.Context, vc *vim25.Client) (bool, error) {
	if vc.ServiceContent.Setting == nil {
		return false, nil
	}
	opts, err := object.NewOptionManager(vc, *vc.ServiceContent.Setting).Query(ctx, vgpuHotMigrateSetting)
	if fault.Is(err, &types.InvalidName{}) {
		return false, nil
	}
	if err != nil {
		return false, translate("reading vCenter's advanced setting "+vgpuHotMigrateSetting, err)
	}
	for _, o := range opts {
		if v := o.GetOptionValue(); v != nil && v.Key == vgpuHotMigrateSetting {
			return strings.EqualFold(fmt.Sprint(v.Value), "true"), nil
		}
	}
	return false, nil
}

// vgpuDestinations reads the hosts of self's cluster that take VMs
// (connected, not in maintenance mode), with their GPUs, the vGPU types
// they offer and their VMs' vGPUs, in one round trip.
func (c *Client) vgpuDestinations(ctx context.Context, vc *vim25.Client, self *mo.HostSystem) ([]*Host, error) {
	if self.Parent == nil {
		return nil, nil
	}
	op := "reading the hosts of the cluster of host " + self.Name
	objs, err := retrieve(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: *self.Parent, Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "ComputeResource", Path: "host", SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{Type: "HostSystem", Path: "vm"},
			}},
		}}},
		PropSet: []types.PropertySpec{
			{Type: "HostSystem", PathSet: []string{"name", "runtime.connectionState", "runtime.inMaintenanceMode",
				"config.graphicsInfo", "config.pciPassthruInfo", "hardware.pciDevice", "config.sharedPassthruGpuTypes", "config.sharedGpuCapabilities"}},
			{Type: "VirtualMachine", PathSet: []string{"name", "runtime.powerState", "runtime.host", "config.hardware.device"}},
		},
	})
	if err != nil {
		return nil, translate(op, err)
	}
	var hosts []mo.HostSystem
	vmsOf := map[types.ManagedObjectReference][]mo.VirtualMachine{}
	for _, o := range objs {
		switch v := o.(type) {
		case mo.HostSystem:
			hosts = append(hosts, v)
		case mo.VirtualMachine:
			if v.Runtime.Host != nil {
				vmsOf[*v.Runtime.Host] = append(vmsOf[*v.Runtime.Host], v)
			}
		}
	}
	slices.SortFunc(hosts, func(a, b mo.HostSystem) int { return strings.Compare(a.Name, b.Name) })
	var out []*Host
	for i := range hosts {
		h := &hosts[i]
		if h.Self == self.Self || h.Runtime.InMaintenanceMode || h.Runtime.ConnectionState != types.HostSystemConnectionStateConnected {
			continue
		}
		out = append(out, &Host{ID: h.Self.Value, Name: h.Name, GPUs: gpus(h, vmsOf[h.Self]), VGPUProfiles: vgpuProfilesFromMO(h)})
	}
	return out, nil
}
