package vcsimlab

import (
	"fmt"
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// graphicsManager is a host's HostGraphicsManager: vcsim points every host
// at one that does not exist ("ha-graphics-manager"). Its four properties
// are the host's config.graphicsInfo, config.graphicsConfig,
// config.sharedPassthruGpuTypes and config.sharedGpuCapabilities (vSphere
// Web Services API 8.0: HostConfigInfo carries the same four), kept alike
// by mirrorGraphics.
type graphicsManager struct {
	mo.HostGraphicsManager // first field: vcsim reads properties from it

	host types.ManagedObjectReference
}

func newGraphicsManager(h *simulator.HostSystem) *graphicsManager {
	m := &graphicsManager{host: h.Self}
	m.Self = types.ManagedObjectReference{Type: "HostGraphicsManager", Value: "graphicsmanager-" + h.Self.Value}
	return m
}

// defaultGraphicsConfig is a host's graphics configuration as ESXi ships
// it: default graphics type Shared, GPUs assigned by performance (Spread
// VMs across GPUs), no device of its own type: the vSphere Resource
// Management guide, "Configuring Host Graphics" (Shared, Shared Direct;
// "Spread VMs across GPUs (best performance)" first), and Ansible's
// community.vmware vmware_host_graphics, whose defaults are graphic_type
// "shared" and assigment_policy "performance".
func defaultGraphicsConfig() *types.HostGraphicsConfig {
	return &types.HostGraphicsConfig{
		HostDefaultGraphicsType:        string(types.HostGraphicsConfigGraphicsTypeShared),
		SharedPassthruAssignmentPolicy: string(types.HostGraphicsConfigSharedPassthruAssignmentPolicyPerformance),
	}
}

// vgpuProfile is an NVIDIA vGPU type a GPU offers: its name as vSphere
// gives it (HostGraphicsManager.sharedPassthruGpuTypes,
// VirtualPCIPassthroughVmiopBackingInfo.vgpu), its frame buffer, and how
// many one GPU holds (equal-size mode).
type vgpuProfile struct {
	name   string
	fbGB   int64
	perGPU int
}

// vgpuProfiles are the time-sliced C-series (compute) vGPU types of the
// lab's GPUs, by PCI device id, with each type's frame buffer and "Maximum
// vGPUs per GPU" in equal-size mode: NVIDIA AI Enterprise release 6,
// "NVIDIA AI Enterprise and NVIDIA vGPU (C-Series)"
// (docs.nvidia.com/ai-enterprise/release-6/latest/appendix/vgpu.html), the
// A100 PCIe 40GB table (A100-40C to A100-4C) and the H100 SXM5 80GB table
// (H100XM-80C to H100XM-4C). H100XM-16C is left out: the table gives 6 per
// GPU, which 80 GB cannot hold (6 x 16 GB), while the same page gives 5
// for the 16C types of every other 80 GB card; with the sources at odds
// the lab does not guess. MIG-backed types are left out: no public source
// gives their vSphere names.
//
// vSphere's name is a prefix and the type name in lower case:
// grid_a100-8c (govmomi's ovf/fixtures/external/SimpleVm_with_vgpu.ovf,
// backing.vgpu), grid_a100d-80c and nvidia_h100xm-80c (Frank Denneman,
// "Topology-Aware Multi-GPU VM Placement", frankdenneman.ai). The H200 of
// Options.NewerGPUHost offers none: no public source gives its types'
// vSphere names. The lab has no L40S for the same reason: NVIDIA's page
// gives its C-series types (Table 39, L40S-48C to L40S-4C), but no public
// source found gives the prefix vSphere names them with ("grid_" or
// "nvidia_", which differs between boards).
var vgpuProfiles = map[int16][]vgpuProfile{
	0x20f1: { // A100 PCIe 40GB
		{"grid_a100-40c", 40, 1}, {"grid_a100-20c", 20, 2}, {"grid_a100-10c", 10, 4},
		{"grid_a100-8c", 8, 5}, {"grid_a100-5c", 5, 8}, {"grid_a100-4c", 4, 10},
	},
	0x2330: { // H100 SXM5 80GB
		{"nvidia_h100xm-80c", 80, 1}, {"nvidia_h100xm-40c", 40, 2}, {"nvidia_h100xm-20c", 20, 4},
		{"nvidia_h100xm-10c", 10, 8}, {"nvidia_h100xm-8c", 8, 10}, {"nvidia_h100xm-5c", 5, 16},
		{"nvidia_h100xm-4c", 4, 20},
	},
}

// vgpuCapabilities is what a host says it can do with a VM of a vGPU
// type (HostSharedGpuCapabilities): vMotion and suspend-resume, which
// NVIDIA supports for its C-series types on "All supported releases of
// VMware vSphere" (the NVIDIA AI Enterprise page above). Snapshots of a
// running VM are off: the lab found no public source that says they are
// supported ("Disk Snaphosts on powered off VM are always supported",
// HostSharedGpuCapabilities.diskSnapshotSupported).
func vgpuCapabilities(profile string) types.HostSharedGpuCapabilities {
	return types.HostSharedGpuCapabilities{Vgpu: profile, SuspendSupported: true, MigrateSupported: true}
}

// configuredGraphicsType is the graphics type the host's configuration
// gives GPU id: its own type, or the host's default.
func configuredGraphicsType(cfg *types.HostGraphicsConfig, id string) string {
	if cfg == nil {
		cfg = defaultGraphicsConfig()
	}
	for _, d := range cfg.DeviceType {
		if d.DeviceId == id {
			return d.GraphicsType
		}
	}
	return cfg.HostDefaultGraphicsType
}

// startedGraphicsType is how the host drives a GPU that is not passed
// through, once its graphics configuration took effect: "sharedDirect"
// (NVIDIA's vGPU manager shares it) when configured Shared Direct, else
// "basic". The lab's GPUs are compute GPUs, which VMware's shared graphics
// (vSGA) does not drive (the Virtual Shared Graphics Acceleration Guide
// lists its cards), so Shared leaves them with no host driver: "basic",
// "when no host driver is available" (HostGraphicsInfoGraphicsType).
func startedGraphicsType(configured string) string {
	if configured == string(types.HostGraphicsConfigGraphicsTypeSharedDirect) {
		return string(types.HostGraphicsInfoGraphicsTypeSharedDirect)
	}
	return string(types.HostGraphicsInfoGraphicsTypeBasic)
}

// UpdateGraphicsConfig sets a host's default graphics type, its shared
// passthrough assignment policy and its GPUs' own graphics types (vSphere
// Web Services API 8.0, HostGraphicsManager.UpdateGraphicsConfig). The
// configuration is kept at once (config.graphicsConfig); the GPUs' graphics
// types (graphicsInfo) follow only when the host's graphics restart: "After
// clicking OK, you must restart Xorg on the host" (vSphere Resource
// Management 6.5, "Configuring Host Graphics" and "Configuring Graphics
// Devices"), "If setting type, restart Xorg ... for change to take effect"
// (ESXCLI 8.0.3 reference, graphics device set). The lab restarts them with
// the host: a reboot (Lab.RebootHost, RebootHost_Task) applies the
// configuration. A GPU passed through stays "direct" whatever its type.
//
// Refusals, InvalidArgument naming the property (the API reference lists
// the method's faults as HostConfigFault and, for any call, InvalidArgument
// and RuntimeFault; ESXi's exact choice is not public): a default or device
// graphics type outside HostGraphicsConfigGraphicsType (shared,
// sharedDirect), a policy outside
// HostGraphicsConfigSharedPassthruAssignmentPolicy (performance,
// consolidation), and a device that is not a graphics device of the host.
// A vgpuMode (API 8.0.3.0) is kept as given: the lab models no mixed-size
// placement.
func (x *extension) UpdateGraphicsConfig(ctx *simulator.Context, req *types.UpdateGraphicsConfig) soap.HasFault {
	body := new(methods.UpdateGraphicsConfigBody)
	m, ok := target[*graphicsManager](ctx, req.This, &body.Fault_)
	if !ok {
		return body
	}
	host, _ := ctx.Map.Get(m.host).(*simulator.HostSystem)
	if host == nil {
		body.Fault_ = notFoundFault(m.host)
		return body
	}
	ctx.WithLock(host, func() {
		if !connected(host, &body.Fault_) || host.Config == nil {
			return
		}
		cfg := req.Config
		if f := checkGraphicsConfig(host.Config.GraphicsInfo, &cfg); f != nil {
			body.Fault_ = f
			return
		}
		kept := cfg
		kept.DeviceType = slices.Clone(cfg.DeviceType)
		ctx.Update(host, []types.PropertyChange{{Name: "config.graphicsConfig", Val: &kept}})
		body.Res = new(types.UpdateGraphicsConfigResponse)
	})
	return body
}

// checkGraphicsConfig is UpdateGraphicsConfig's refusal of cfg on a host
// with graphics devices gs; nil when it is accepted.
func checkGraphicsConfig(gs []types.HostGraphicsInfo, cfg *types.HostGraphicsConfig) *soap.Fault {
	graphicsTypes := types.HostGraphicsConfigGraphicsType("").Values()
	policies := types.HostGraphicsConfigSharedPassthruAssignmentPolicy("").Values()
	invalid := func(property, format string, args ...any) *soap.Fault {
		return simulator.Fault(fmt.Sprintf(format, args...), &types.InvalidArgument{InvalidProperty: property})
	}
	if !slices.Contains(graphicsTypes, types.HostGraphicsConfigGraphicsType(cfg.HostDefaultGraphicsType)) {
		return invalid("config.hostDefaultGraphicsType", "invalid graphics type %q", cfg.HostDefaultGraphicsType)
	}
	if !slices.Contains(policies, types.HostGraphicsConfigSharedPassthruAssignmentPolicy(cfg.SharedPassthruAssignmentPolicy)) {
		return invalid("config.sharedPassthruAssignmentPolicy", "invalid assignment policy %q", cfg.SharedPassthruAssignmentPolicy)
	}
	for _, d := range cfg.DeviceType {
		if !slices.ContainsFunc(gs, func(g types.HostGraphicsInfo) bool { return g.PciId == d.DeviceId }) {
			return invalid("config.deviceType.deviceId", "%q is not a graphics device of the host", d.DeviceId)
		}
		if !slices.Contains(graphicsTypes, types.HostGraphicsConfigGraphicsType(d.GraphicsType)) {
			return invalid("config.deviceType.graphicsType", "invalid graphics type %q for device %s", d.GraphicsType, d.DeviceId)
		}
	}
	return nil
}

// restartGraphics applies the host's graphics configuration to its GPUs
// that are not passed through, as the restart of its graphics does (a
// reboot). The host is locked.
func restartGraphics(ctx *simulator.Context, host *simulator.HostSystem) {
	if host.Config == nil {
		return
	}
	next := slices.Clone(host.Config.GraphicsInfo)
	for i := range next {
		if next[i].GraphicsType != string(types.HostGraphicsInfoGraphicsTypeDirect) {
			next[i].GraphicsType = startedGraphicsType(configuredGraphicsType(host.Config.GraphicsConfig, next[i].PciId))
		}
	}
	ctx.Update(host, []types.PropertyChange{{Name: "config.graphicsInfo", Val: next}})
}

// sharedGPUTypes are the vGPU types the host offers, and what it can do
// with each: the types of its GPUs that NVIDIA's vGPU manager drives
// (graphics type sharedDirect), in the order of the GPUs and of
// vgpuProfiles. A GPU passed through, or left "basic", offers none: no vGPU
// manager drives it ("These GPU types may be enabled when specific host
// hardware is present", HostGraphicsManager.sharedPassthruGpuTypes).
func sharedGPUTypes(gs []types.HostGraphicsInfo, devices []types.HostPciDevice) ([]string, []types.HostSharedGpuCapabilities) {
	var names []string
	var caps []types.HostSharedGpuCapabilities
	for _, g := range gs {
		if g.GraphicsType != string(types.HostGraphicsInfoGraphicsTypeSharedDirect) {
			continue
		}
		i := slices.IndexFunc(devices, func(d types.HostPciDevice) bool { return d.Id == g.PciId })
		if i < 0 {
			continue
		}
		for _, p := range vgpuProfiles[devices[i].DeviceId] {
			if !slices.Contains(names, p.name) {
				names = append(names, p.name)
				caps = append(caps, vgpuCapabilities(p.name))
			}
		}
	}
	return names, caps
}

// graphicsProperties are the host's properties its graphics manager
// mirrors.
var graphicsProperties = map[string]bool{
	"config.graphicsInfo": true, "config.graphicsConfig": true,
	"config.sharedPassthruGpuTypes": true, "config.sharedGpuCapabilities": true,
}

// mirrorGraphics keeps the host's offered vGPU types in step with its
// GPUs' graphics types, and its graphics manager's four properties in step
// with the host's (see graphicsManager), after changes to the host. The
// host is locked.
func mirrorGraphics(ctx *simulator.Context, h *mo.HostSystem, changes []types.PropertyChange) {
	if h.Config == nil || h.ConfigManager.GraphicsManager == nil {
		return
	}
	m, ok := ctx.Map.Get(*h.ConfigManager.GraphicsManager).(*graphicsManager)
	if !ok || !slices.ContainsFunc(changes, func(c types.PropertyChange) bool { return graphicsProperties[c.Name] }) {
		return
	}
	for _, c := range changes {
		if c.Name != "config.graphicsInfo" {
			continue
		}
		var devices []types.HostPciDevice
		if h.Hardware != nil {
			devices = h.Hardware.PciDevice
		}
		names, caps := sharedGPUTypes(h.Config.GraphicsInfo, devices)
		if !slices.Equal(names, h.Config.SharedPassthruGpuTypes) {
			ctx.Update(h, []types.PropertyChange{
				{Name: "config.sharedPassthruGpuTypes", Val: names},
				{Name: "config.sharedGpuCapabilities", Val: caps},
			})
		}
	}
	ctx.WithLock(m, func() {
		ctx.Update(m, []types.PropertyChange{
			{Name: "graphicsInfo", Val: slices.Clone(h.Config.GraphicsInfo)},
			{Name: "graphicsConfig", Val: h.Config.GraphicsConfig},
			{Name: "sharedPassthruGpuTypes", Val: slices.Clone(h.Config.SharedPassthruGpuTypes)},
			{Name: "sharedGpuCapabilities", Val: slices.Clone(h.Config.SharedGpuCapabilities)},
		})
	})
}

// configTargetVGPUs adds to target what host h offers for vGPUs, once each
// across hosts (vSphere Web Services API 8.0, ConfigTarget):
// sharedGpuPassthroughTypes, its types; vgpuDeviceInfo, each model of its
// GPUs in sharedDirect, identified by deviceVendorId ("the 16-bit PCI
// vendor id in lower bits followed by 16-bit PCI device id") with its
// frame buffer, time-sliced, MIG and compute capable and not Quadro
// capable (A100 and H100 offer C-series types only in NVIDIA's tables, and
// MIG-backed ones); vgpuProfileInfo, each type with its device, frame
// buffer, "timeSliced" sharing and "compute" class. h is locked.
func configTargetVGPUs(target *types.ConfigTarget, h *mo.HostSystem) {
	if h.Config == nil || h.Hardware == nil {
		return
	}
	for _, name := range h.Config.SharedPassthruGpuTypes {
		if !slices.ContainsFunc(target.SharedGpuPassthroughTypes, func(t types.VirtualMachinePciSharedGpuPassthroughInfo) bool { return t.Vgpu == name }) {
			target.SharedGpuPassthroughTypes = append(target.SharedGpuPassthroughTypes, types.VirtualMachinePciSharedGpuPassthroughInfo{
				VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: name}, Vgpu: name,
			})
		}
	}
	for _, g := range h.Config.GraphicsInfo {
		i := slices.IndexFunc(h.Hardware.PciDevice, func(d types.HostPciDevice) bool { return d.Id == g.PciId })
		if g.GraphicsType != string(types.HostGraphicsInfoGraphicsTypeSharedDirect) || i < 0 {
			continue
		}
		d := h.Hardware.PciDevice[i]
		id := int64(uint16(d.DeviceId))<<16 | int64(uint16(d.VendorId))
		if slices.ContainsFunc(target.VgpuDeviceInfo, func(v types.VirtualMachineVgpuDeviceInfo) bool { return v.DeviceVendorId == id }) {
			continue
		}
		target.VgpuDeviceInfo = append(target.VgpuDeviceInfo, types.VirtualMachineVgpuDeviceInfo{
			VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: d.DeviceName},
			DeviceName:               d.DeviceName, DeviceVendorId: id, MaxFbSizeInGib: g.MemorySizeInKB >> 20,
			TimeSlicedCapable: true, MigCapable: true, ComputeProfileCapable: true,
		})
		for _, p := range vgpuProfiles[d.DeviceId] {
			target.VgpuProfileInfo = append(target.VgpuProfileInfo, types.VirtualMachineVgpuProfileInfo{
				VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: p.name},
				ProfileName:              p.name, DeviceVendorId: id, FbSizeInGib: p.fbGB,
				ProfileSharing: string(types.VirtualMachineVgpuProfileInfoProfileSharingTimeSliced),
				ProfileClass:   string(types.VirtualMachineVgpuProfileInfoProfileClassCompute),
			})
		}
	}
}
