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
//     cluster must offer them with room on its GPUs (vgpuRoom's rule; the
//     room of MIG-backed and mixed-size vGPUs is left to DRS, see
//     vgpuRoomLeftToHost).

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
// read). planned are the running VMs the same plan gives vGPUs.
func (c *Client) vgpuEvacuation(ctx context.Context, vc *vim25.Client, self *mo.HostSystem, drs drsLevels,
	vms []*mo.VirtualMachine, planned []PlannedVGPUs) ([]stuckVM, error) {
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
	hosts, offered, err := c.vgpuDestinations(ctx, vc, self)
	if err != nil {
		return nil, err
	}
	return placeEvacuatedVGPUs(vms, offered, hosts, planned), nil
}

// placeEvacuatedVGPUs says which of vms, with vGPUs on a host offering
// offered, no host of hosts would take. It is a first-fit estimate, not
// DRS's own placement: the VMs in name order, each on the first host (by
// name) that takes it beside those placed before it, and beside the vGPUs
// the same plan gives running VMs of that host (planned), in place of
// theirs.
func placeEvacuatedVGPUs(vms []*mo.VirtualMachine, offered []VGPUProfile, hosts []*Host, planned []PlannedVGPUs) []stuckVM {
	migrates := map[string]bool{}
	for _, p := range offered {
		migrates[p.Name] = p.MigrateSupported
	}
	destinations := make([]*vgpuDestination, len(hosts))
	for i, h := range hosts {
		destinations[i], _ = newVGPUDestination(h, hostVGPUModels(h), planned)
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
		if !slices.ContainsFunc(destinations, func(d *vgpuDestination) bool { return d.take(profiles) }) {
			out = append(out, stuckVM{vm, fmt.Sprintf("no other host of the cluster offers vGPU profile %s with room for it",
				strings.Join(slices.Compact(slices.Sorted(slices.Values(profiles))), ", "))})
		}
	}
	return out
}

// vgpuDestination is a host VMs with vGPUs are placed on in an estimate:
// the vGPU profiles of each of its GPU models (vendor:device; nil when the
// host does not say), its running VMs whose vGPUs are given back (by id),
// and the vGPUs the estimate placed on each of its GPUs (by PCI id).
type vgpuDestination struct {
	*Host
	models map[string][]string
	skip   map[string]bool
	placed map[string][]string
}

// newVGPUDestination is host h (its profiles by GPU model: models) with
// the vGPUs the plan gives its running VMs (those of planned on h, by VM
// name) placed first, in place of theirs, and the names of the VMs placed;
// those that fit nowhere are left to their own plan's refusal. The vGPUs
// of the VMs givenBack (by id) are not counted either.
func newVGPUDestination(h *Host, models map[string][]string, planned []PlannedVGPUs, givenBack ...string) (*vgpuDestination, []string) {
	d := &vgpuDestination{Host: h, models: models, skip: map[string]bool{}, placed: map[string][]string{}}
	for _, id := range givenBack {
		d.skip[id] = true
	}
	var onHost []PlannedVGPUs
	for _, p := range planned {
		if p.HostID == h.ID {
			d.skip[p.MOID] = true
			onHost = append(onHost, p)
		}
	}
	slices.SortFunc(onHost, func(a, b PlannedVGPUs) int { return strings.Compare(a.Name, b.Name) })
	var placed []string
	for _, p := range onHost {
		if d.take(p.Profiles) {
			placed = append(placed, p.Name)
		}
	}
	return d, placed
}

// take places a VM's vGPUs of profiles on the host's GPUs as equal-size
// mode allows, each on the GPU the host's assignment policy picks
// (performance: the most room; consolidation: the least that fits), and
// keeps them for the VMs placed after it; it reports false, keeping
// nothing, when one does not fit. As far as the host tells: a host that
// does not say which of its GPUs offers a profile (several models), a
// name without a frame buffer, a MIG-backed profile, or a GPU in
// mixed-size or MIG mode (vgpuRoomLeftToHost) leave the placement to the
// host, and take says yes, keeping nothing.
func (d *vgpuDestination) take(profiles []string) bool {
	for _, p := range profiles {
		if !slices.ContainsFunc(d.VGPUProfiles, func(o VGPUProfile) bool { return o.Name == p }) {
			return false
		}
	}
	if d.models == nil {
		return true
	}
	consolidate := d.Graphics.AssignmentPolicy == string(types.HostGraphicsConfigSharedPassthruAssignmentPolicyConsolidation)
	spread := vgpuSpread(d.GPUs)
	trial := map[string][]string{}
	for id, placed := range d.placed {
		trial[id] = slices.Clone(placed)
	}
	for _, p := range profiles {
		fb := VGPUFrameBufferGB(p)
		if fb == 0 {
			continue
		}
		if vgpuRoomLeftToHost(d.Host, d.models, p) {
			return true
		}
		best, bestRoom := "", 0
		for _, g := range d.GPUs {
			if !offersVGPU(g, d.models, p) {
				continue
			}
			room, other := gpuRoom(g, fb, d.skip, spread)
			placed := trial[g.PCIID]
			if other != "" || len(placed) > 0 && VGPUFrameBufferGB(placed[0]) != fb {
				continue
			}
			room -= len(placed)
			if room > 0 && (best == "" || consolidate && room < bestRoom || !consolidate && room > bestRoom) {
				best, bestRoom = g.PCIID, room
			}
		}
		if best == "" {
			return false
		}
		trial[best] = append(trial[best], p)
	}
	d.placed = trial
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

// vgpuDestinations reads, in one round trip, the hosts of self's cluster
// that take VMs (connected, not in maintenance mode), with their GPUs,
// assignment policy, the vGPU types they offer and their VMs' vGPUs, and
// the vGPU types self offers.
func (c *Client) vgpuDestinations(ctx context.Context, vc *vim25.Client, self *mo.HostSystem) ([]*Host, []VGPUProfile, error) {
	if self.Parent == nil {
		return nil, nil, nil
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
				"config.graphicsInfo", "config.graphicsConfig", "config.pciPassthruInfo", "hardware.pciDevice", "config.sharedPassthruGpuTypes",
				"config.sharedGpuCapabilities"}},
			{Type: "VirtualMachine", PathSet: []string{"name", "runtime.powerState", "runtime.host", "config.hardware.device"}},
		},
	})
	if err != nil {
		return nil, nil, translate(op, err)
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
	var offered []VGPUProfile
	for i := range hosts {
		h := &hosts[i]
		switch {
		case h.Self == self.Self:
			offered = vgpuProfilesFromMO(h)
		case !h.Runtime.InMaintenanceMode && h.Runtime.ConnectionState == types.HostSystemConnectionStateConnected:
			out = append(out, &Host{ID: h.Self.Value, Name: h.Name, GPUs: gpus(h, vmsOf[h.Self], topologyFromMO(h.Hardware)),
				VGPUProfiles: vgpuProfilesFromMO(h), Graphics: hostGraphicsFromMO(h)})
		}
	}
	return out, offered, nil
}
