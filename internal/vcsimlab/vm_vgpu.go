package vcsimlab

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// NVIDIA vGPUs on VMs. A vGPU is a PCI passthrough device with a vmiop
// backing naming its profile (VirtualPCIPassthroughVmiopBackingInfo.vgpu,
// vSphere Web Services API 8.0). vCenter takes such a device into a VM's
// configuration; whether a GPU has room for it is settled when the VM
// powers on, by the host's admission control of graphics resources:
// InsufficientGraphicsResourcesFault, "Graphics resources admission control
// failed" (the API reference), the lab's answer when no GPU of the VM's
// host can take one of its vGPUs. No public source gives the fault's
// message or the fault for a profile the host does not offer; the lab
// answers both with that fault and a message naming the profile.
//
// Placement follows NVIDIA's equal-size mode, vSphere's default for
// time-sliced vGPUs ("Any request for a different size is rejected, no
// matter how much capacity is left, until all VMs are powered off", Frank
// Denneman, "How vSphere GPU Modes and Assignment Policies Determine
// Host-Level Placement"): a GPU in sharedDirect takes vGPUs of one profile,
// up to NVIDIA's "Maximum vGPUs per GPU" for it (vgpuProfiles), while a VM
// using it is powered on. Which GPU follows the host's assignment policy
// (HostGraphicsConfig.sharedPassthruAssignmentPolicy): performance, "Spread
// VMs across GPUs (best performance)", takes the GPU with the fewest
// vGPUs; consolidation, "Group VMs on GPU until full", the fullest that
// still has room (vSphere Resource Management, "Configuring Host
// Graphics"); ties go to the lower PCI id. The host lists a powered-on VM
// on the GPUs its vGPUs use (HostGraphicsInfo.vm, "Virtual machines using
// this graphics device"), and forgets it at power-off.

// vgpuSlot is one vGPU of a powered-on VM on a GPU of its host.
type vgpuSlot struct {
	host    types.ManagedObjectReference
	gpu     string // PCI id, on host
	profile string
}

// vgpuProfilesOf are the profiles of vm's vGPUs, in device order.
func vgpuProfilesOf(devices []types.BaseVirtualDevice) []string {
	var out []string
	for _, d := range devices {
		if p, ok := d.(*types.VirtualPCIPassthrough); ok {
			if b, ok := p.Backing.(*types.VirtualPCIPassthroughVmiopBackingInfo); ok {
				out = append(out, b.Vgpu)
			}
		}
	}
	return out
}

// placeVGPUs gives each vGPU of vm, which is locked and powered off, a GPU
// of its host, or refuses the power-on. sriovMu is held: power-ons are
// placed one at a time.
func (x *extension) placeVGPUs(ctx *simulator.Context, vm *simulator.VirtualMachine) *vimError {
	if vm.Config == nil || vm.Runtime.Host == nil || vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		return nil
	}
	profiles := vgpuProfilesOf(vm.Config.Hardware.Device)
	if len(profiles) == 0 {
		return nil
	}
	return x.reserveVGPUs(ctx, vm.Self, *vm.Runtime.Host, profiles)
}

// reserveVGPUs gives vm's vGPUs of profiles GPUs of host hostRef, in place
// of those it had, or refuses as the host's admission control does.
func (x *extension) reserveVGPUs(ctx *simulator.Context, vm, hostRef types.ManagedObjectReference, profiles []string) *vimError {
	host, ok := ctx.Map.Get(hostRef).(*simulator.HostSystem)
	if !ok {
		return nil
	}
	type gpuRoom struct {
		id      string
		offered []vgpuProfile
	}
	var gpus []gpuRoom
	policy := string(types.HostGraphicsConfigSharedPassthruAssignmentPolicyPerformance)
	ctx.WithLock(host, func() {
		if host.Config == nil || host.Hardware == nil {
			return
		}
		if c := host.Config.GraphicsConfig; c != nil {
			policy = c.SharedPassthruAssignmentPolicy
		}
		for _, g := range host.Config.GraphicsInfo {
			if g.GraphicsType != string(types.HostGraphicsInfoGraphicsTypeSharedDirect) {
				continue
			}
			if i := slices.IndexFunc(host.Hardware.PciDevice, func(d types.HostPciDevice) bool { return d.Id == g.PciId }); i >= 0 {
				gpus = append(gpus, gpuRoom{id: g.PciId, offered: vgpuProfiles[host.Hardware.PciDevice[i].DeviceId]})
			}
		}
	})
	slices.SortFunc(gpus, func(a, b gpuRoom) int { return cmp.Compare(a.id, b.id) })

	x.mu.Lock()
	defer x.mu.Unlock()
	used := map[string][]string{} // GPU -> profiles of its vGPUs
	for other, slots := range x.vgpus {
		if other == vm {
			continue
		}
		for _, s := range slots {
			if s.host == hostRef {
				used[s.gpu] = append(used[s.gpu], s.profile)
			}
		}
	}
	// better reports whether a GPU holding n vGPUs beats one holding m.
	better := func(n, m int) bool { return n < m }
	if policy == string(types.HostGraphicsConfigSharedPassthruAssignmentPolicyConsolidation) {
		better = func(n, m int) bool { return n > m }
	}
	var placed []vgpuSlot
	for _, p := range profiles {
		best := -1
		for i, g := range gpus {
			j := slices.IndexFunc(g.offered, func(o vgpuProfile) bool { return o.name == p })
			if j < 0 || len(used[g.id]) >= g.offered[j].perGPU || len(used[g.id]) > 0 && used[g.id][0] != p {
				continue
			}
			if best < 0 || better(len(used[g.id]), len(used[gpus[best].id])) {
				best = i
			}
		}
		if best < 0 {
			return refuse(&types.InsufficientGraphicsResourcesFault{}, "%s",
				fmt.Sprintf("Graphics resources admission control failed: no GPU of host %s has room for a vGPU of profile %s", host.Name, p))
		}
		used[gpus[best].id] = append(used[gpus[best].id], p)
		placed = append(placed, vgpuSlot{host: hostRef, gpu: gpus[best].id, profile: p})
	}
	if x.vgpus == nil {
		x.vgpus = map[types.ManagedObjectReference][]vgpuSlot{}
	}
	x.vgpus[vm] = placed
	return nil
}

// releaseVGPUs frees the GPUs of vm's vGPUs, at its power-off.
func (x *extension) releaseVGPUs(vm types.ManagedObjectReference) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.vgpus, vm)
}

// vgpuGPUs are the PCI ids of the GPUs vm's vGPUs use.
func (x *extension) vgpuGPUs(vm types.ManagedObjectReference) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	for _, s := range x.vgpus[vm] {
		out = append(out, s.gpu)
	}
	return out
}
