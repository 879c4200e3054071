package vsphere

import (
	"strconv"
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// HostGraphics is a host's graphics configuration (HostGraphicsConfig):
// how it drives GPUs that are not passed through, and how it places shared
// passthrough (vGPU) VMs on them. Both are empty when the host reports no
// configuration (before vSphere API 6.5, or disconnected).
type HostGraphics struct {
	// DefaultType is "shared" (VMware shared graphics, vSGA) or
	// "sharedDirect" (vendor shared passthrough: NVIDIA vGPU).
	DefaultType string
	// AssignmentPolicy is "performance" (spread VMs across GPUs) or
	// "consolidation" (fill one GPU before the next).
	AssignmentPolicy string
}

// VGPUProfile is a vGPU type the host offers (sharedPassthruGpuTypes), with
// what the host can do with a VM that has one (sharedGpuCapabilities).
type VGPUProfile struct {
	Name string // as vSphere names it, e.g. "grid_a100-40c"
	// FrameBufferGB is read from the name (see VGPUFrameBufferGB); 0 when
	// the name does not follow NVIDIA's pattern.
	FrameBufferGB           int64
	MigrateSupported        bool // vMotion
	SuspendSupported        bool
	DiskSnapshotSupported   bool // of a running VM
	MemorySnapshotSupported bool
	// Available is how many more vGPUs of the profile the host's GPUs hold
	// now (see vgpuAvailability); nil when the host cannot say.
	Available *int64
}

func hostGraphicsFromMO(h *mo.HostSystem) HostGraphics {
	if h.Config == nil || h.Config.GraphicsConfig == nil {
		return HostGraphics{}
	}
	c := h.Config.GraphicsConfig
	return HostGraphics{DefaultType: c.HostDefaultGraphicsType, AssignmentPolicy: c.SharedPassthruAssignmentPolicy}
}

// configuredGraphicsType is the graphics type h's configuration gives the
// device id: its own, or the host's default; "" with no configuration.
func configuredGraphicsType(h *mo.HostSystem, id string) string {
	if h.Config == nil || h.Config.GraphicsConfig == nil {
		return ""
	}
	for _, d := range h.Config.GraphicsConfig.DeviceType {
		if d.DeviceId == id {
			return d.GraphicsType
		}
	}
	return h.Config.GraphicsConfig.HostDefaultGraphicsType
}

// vgpuProfilesFromMO are the vGPU types h offers, in its order. A type
// without capabilities (a host before vSphere API 6.7 lists none) supports
// nothing the host has not said it does.
func vgpuProfilesFromMO(h *mo.HostSystem) []VGPUProfile {
	if h.Config == nil {
		return nil
	}
	caps := map[string]types.HostSharedGpuCapabilities{}
	for _, c := range h.Config.SharedGpuCapabilities {
		caps[c.Vgpu] = c
	}
	names := h.Config.SharedPassthruGpuTypes
	if len(names) == 0 {
		for _, c := range h.Config.SharedGpuCapabilities {
			names = append(names, c.Vgpu)
		}
	}
	out := make([]VGPUProfile, 0, len(names))
	for _, name := range names {
		c := caps[name]
		out = append(out, VGPUProfile{
			Name: name, FrameBufferGB: VGPUFrameBufferGB(name),
			MigrateSupported: c.MigrateSupported, SuspendSupported: c.SuspendSupported,
			DiskSnapshotSupported: c.DiskSnapshotSupported, MemorySnapshotSupported: c.MemorySnapshotSupported,
		})
	}
	return out
}

// VGPUFrameBufferGB is the frame buffer of an NVIDIA vGPU type, in GB, from
// its vSphere name: a prefix ("grid_" or "nvidia_") and NVIDIA's type name,
// whose last part is the frame buffer and the series, "<board>-<GB><series>"
// for a time-sliced type (A100-40C) and "<board>-<slices>-<GB><series>" for
// a MIG-backed one (A100-3-20C), as NVIDIA AI Enterprise's "Virtual GPU
// Types for Supported GPUs" names them. 0 when the name does not end so.
func VGPUFrameBufferGB(name string) int64 {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || !strings.Contains(name[:i], "_") {
		return 0
	}
	last := name[i+1:]
	digits := len(last) - len(strings.TrimLeft(last, "0123456789"))
	if digits == 0 || digits == len(last) {
		return 0
	}
	gb, err := strconv.ParseInt(last[:digits], 10, 64)
	if err != nil {
		return 0
	}
	return gb
}

// VGPUUser is a VM whose vGPUs use a GPU: the host lists a VM on the GPUs
// its vGPUs run on while it is powered on (HostGraphicsInfo.vm, "Virtual
// machines using this graphics device").
type VGPUUser struct {
	VM       VMRef
	Profiles []string // the VM's vGPU profiles, in device order
}

// vgpuUsersByGPU are, by GPU PCI id, the VMs of vms with vGPUs that the
// host's graphics devices gs list; a VM listed for passthrough is not one.
func vgpuUsersByGPU(gs []types.HostGraphicsInfo, vms []mo.VirtualMachine) map[string][]VGPUUser {
	byRef := map[types.ManagedObjectReference]*mo.VirtualMachine{}
	for i := range vms {
		byRef[vms[i].Self] = &vms[i]
	}
	out := map[string][]VGPUUser{}
	for _, g := range gs {
		for _, ref := range g.Vm {
			vm, ok := byRef[ref]
			if !ok || vm.Config == nil {
				continue
			}
			if profiles := vgpuProfilesOf(vm.Config.Hardware.Device); len(profiles) > 0 {
				out[g.PciId] = append(out[g.PciId], VGPUUser{VM: vmRefOf(vm), Profiles: profiles})
			}
		}
	}
	return out
}

// vgpuProfilesOf are the profiles of a VM's vGPUs (PCI passthrough devices
// with a vmiop backing), in device order.
func vgpuProfilesOf(devices []types.BaseVirtualDevice) []string {
	var out []string
	for _, d := range devices {
		if p, ok := d.(*types.VirtualPCIPassthrough); ok {
			if profile := pciPassthrough(p).VGPU; profile != "" {
				out = append(out, profile)
			}
		}
	}
	return out
}
