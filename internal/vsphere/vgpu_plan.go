package vsphere

// The plan-time rules of a VM's NVIDIA vGPUs, each from a public source:
//   - a vGPU's profile must be one the VM's host offers: the types of its
//     GPUs that NVIDIA's vGPU manager drives (HostGraphicsManager.
//     sharedPassthruGpuTypes, "These GPU types may be enabled when specific
//     host hardware is present"), which it does for GPUs in Shared Direct
//     graphics mode once the host's graphics restart;
//   - at most MaxVGPUsPerVM vGPUs per VM ("With vSphere 8, you have the
//     capability to add up to 8 virtual GPUs (vGPUs) to one VM", VMware,
//     "vSphere 8 Expands Machine Learning Support", 2022-08-16);
//   - a VM's vGPUs all of one board and series ("You can assign multiple
//     vGPUs with differing amounts of frame buffer to a single VM, provided
//     the board type and the series of all the vGPUs are the same", NVIDIA
//     AI Enterprise 8.1, Multi-vGPU);
//   - the host's GPUs have room for them at power on: in equal-size mode,
//     ESXi's default, "all vGPUs on the GPU must have the same amount of
//     frame buffer" (NVIDIA vGPU documentation, "vGPU profiles"), so a GPU
//     holds its frame buffer divided by the profile's, less the vGPUs of
//     running VMs on it, and none when those have another size. The host
//     places each vGPU at power on (InsufficientGraphicsResourcesFault,
//     "Graphics resources admission control failed", when it cannot);
//   - that rule is not MIG's: a GPU holds "homogeneous and mixed MIG-backed
//     virtual GPUs based on the underlying GPU instance configuration" (an
//     A100-4-20C, an A100-2-10C and an A100-1-5C on one A100 PCIe 40GB),
//     and one A100-4-20C per A100 PCIe 40GB, not 40/20 (NVIDIA AI
//     Enterprise release 6, "NVIDIA AI Enterprise and NVIDIA vGPU
//     (C-Series)", docs.nvidia.com/ai-enterprise/release-6/latest/appendix/
//     vgpu.html: "Configurations on a Single GPU", and the table "MIG-Backed
//     NVIDIA vGPU (C-Series) for NVIDIA A100 PCIe 40GB"). And "VMware
//     vSphere creates the GPU instances" (same page, "Configuring a GPU for
//     MIG-Backed vGPUs"), where they fit: the room of MIG-backed vGPUs is
//     the host's to decide, as in mixed-size mode.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25/types"
)

// MaxVGPUsPerVM is the most vGPUs vSphere 8 gives one VM.
const MaxVGPUsPerVM = 8

// The findings of planVGPUs.
type (
	// VGPUProfileNotOffered: the VM's host does not offer the profile.
	// Offered lists what it does; NotShared lists its GPUs that neither
	// NVIDIA's vGPU manager drives nor are passed through (in Shared or
	// no-driver mode, or waiting for the host's graphics to restart).
	VGPUProfileNotOffered struct {
		VM, Host, Profile  string
		Offered, NotShared []string
	}
	// VGPUProfileLeavesHost: the host offers the profile only on GPUs
	// (Leaving) that a host graphics resource of the plan takes out of
	// Shared Direct, with a reboot in the same apply.
	VGPUProfileLeavesHost struct {
		VM, Host, Profile string
		Leaving           []string
	}
	// TooManyVGPUs: more vGPUs than a VM takes.
	TooManyVGPUs struct {
		VM    string
		Asked int
	}
	// VGPUsMixed: vGPUs of different boards or series on one VM.
	VGPUsMixed struct {
		VM       string
		Profiles []string
	}
	// VGPUsDoNotFit: the host's GPUs have room for Fit vGPUs of the profile,
	// fewer than Asked; Why says what takes the rest. PowersOn: the apply
	// powers the VM on (it runs now), so it would fail then; otherwise its
	// next power-on does, or, in a DRS cluster, it powers on elsewhere.
	VGPUsDoNotFit struct {
		VM, Host, Profile string
		Asked, Fit        int
		Why               []string
		PowersOn          bool
	}
)

func (VGPUProfileNotOffered) finding() {}
func (VGPUProfileLeavesHost) finding() {}
func (TooManyVGPUs) finding()          {}
func (VGPUsMixed) finding()            {}
func (VGPUsDoNotFit) finding()         {}

// VGPUBoardAndSeries is the board and series of an NVIDIA vGPU profile as
// vSphere names it: "grid_a100-40c" and "grid_a100-3-20c" are board "a100",
// series "c". Empty when the name does not follow NVIDIA's pattern.
func VGPUBoardAndSeries(profile string) (board, series string) {
	_, name, ok := strings.Cut(profile, "_")
	if !ok {
		return "", ""
	}
	board, _, _ = strings.Cut(name, "-")
	last := name[strings.LastIndexByte(name, '-')+1:]
	series = strings.TrimLeft(last, "0123456789")
	if board == name || series == "" || series == last {
		return "", ""
	}
	return board, series
}

// vgpuCheck is what planVGPUs needs: the VM (label, its words in findings;
// moid), its host, its vGPUs by profile, whether the apply powers it on,
// whether a host graphics resource of the plan sets the host's GPUs to
// Shared Direct (their profiles are known only after that), the host's
// vGPU profiles by the GPU model (vendor:device) that offers them, and the
// other running VMs of the host that VM resources of the plan give vGPUs.
type vgpuCheck struct {
	label, moid string
	host        *Host
	vgpus       []string
	powersOn    bool
	planned     bool
	leaving     []string // the host's GPUs the plan takes out of Shared Direct (PCI ids)
	models      map[string][]string
	others      []PlannedVGPUs
}

// planVGPUs checks a VM's vGPUs against its host.
func planVGPUs(in vgpuCheck) []Finding {
	if len(in.vgpus) == 0 {
		return nil
	}
	var out []Finding
	if len(in.vgpus) > MaxVGPUsPerVM {
		out = append(out, TooManyVGPUs{VM: in.label, Asked: len(in.vgpus)})
	}
	profiles := slices.Compact(slices.Sorted(slices.Values(in.vgpus)))
	boards := map[string]bool{}
	for _, p := range profiles {
		if b, s := VGPUBoardAndSeries(p); b != "" {
			boards[b+"/"+s] = true
		}
	}
	if len(boards) > 1 {
		out = append(out, VGPUsMixed{VM: in.label, Profiles: profiles})
	}
	if in.planned || in.host.ID == "" {
		return out // the host's profiles are known once its graphics restart
	}
	offered := make([]string, 0, len(in.host.VGPUProfiles))
	for _, p := range in.host.VGPUProfiles {
		offered = append(offered, p.Name)
	}
	var notShared []string
	for _, g := range in.host.GPUs {
		if g.GraphicsType != "" && g.GraphicsType != string(types.HostGraphicsInfoGraphicsTypeSharedDirect) &&
			g.GraphicsType != string(types.HostGraphicsInfoGraphicsTypeDirect) {
			notShared = append(notShared, fmt.Sprintf("%s (%s)", g.PCIID, g.GraphicsType))
		}
	}
	fits := true
	for _, p := range profiles {
		switch {
		case !slices.Contains(offered, p):
			out = append(out, VGPUProfileNotOffered{VM: in.label, Host: in.host.Name, Profile: p, Offered: offered, NotShared: notShared})
			fits = false
		case !offeredAfterLeaving(in, p):
			out = append(out, VGPUProfileLeavesHost{VM: in.label, Host: in.host.Name, Profile: p, Leaving: in.leaving})
			fits = false
		}
	}
	in.host = withoutLeaving(in.host, in.leaving)
	if !fits || len(in.models) == 0 {
		// Which GPU model offers which profile comes from the host's
		// ConfigTarget.vgpuProfileInfo (vSphere API 7.0.3): without it the
		// host decides at power on.
		return out
	}
	for _, p := range profiles {
		asked := 0
		for _, v := range in.vgpus {
			if v == p {
				asked++
			}
		}
		if fit, why := vgpuRoom(in, p); fit < asked {
			out = append(out, VGPUsDoNotFit{VM: in.label, Host: in.host.Name, Profile: p, Asked: asked, Fit: fit, Why: why,
				PowersOn: in.powersOn})
		}
	}
	return out
}

// vgpuRoom is how many more vGPUs of profile p the host's GPUs hold, in
// equal-size mode, not counting the VM's own, and what takes the rest:
// the vGPUs of the host's running VMs, and those the plan gives other
// running VMs of the host (in place of theirs), placed before the VM's
// (see vgpuDestination). MaxVGPUsPerVM when the host decides (see
// vgpuRoomLeftToHost).
func vgpuRoom(in vgpuCheck, p string) (int, []string) {
	fb := VGPUFrameBufferGB(p)
	if fb == 0 || vgpuRoomLeftToHost(in.host, in.models, p) {
		return MaxVGPUsPerVM, nil
	}
	others := make([]PlannedVGPUs, len(in.others))
	for i, o := range in.others {
		o.HostID = in.host.ID
		others[i] = o
	}
	planned, plannedFor := newVGPUDestination(in.host, in.models, others, in.moid)
	skip := planned.skip
	spread := vgpuSpread(in.host.GPUs)
	fit := 0
	var why []string
	for _, g := range in.host.GPUs {
		if !offersVGPU(g, in.models, p) {
			continue
		}
		slots, other := gpuRoom(g, fb, skip, spread)
		ofPlan := planned.placed[g.PCIID]
		if other == "" && len(ofPlan) > 0 && VGPUFrameBufferGB(ofPlan[0]) != fb {
			other = fmt.Sprintf("GPU %s is to run vGPUs of another size (%s) for virtual machines of this plan (%s)", g.PCIID, ofPlan[0],
				strings.Join(plannedFor, ", "))
		}
		slots -= len(ofPlan)
		switch {
		case other != "":
			why = append(why, other)
		case slots <= 0 && len(ofPlan) > 0:
			why = append(why, fmt.Sprintf("GPU %s is full with the vGPUs of running virtual machines and those this plan gives %s",
				g.PCIID, strings.Join(plannedFor, ", ")))
		case slots <= 0:
			why = append(why, fmt.Sprintf("GPU %s is full with the vGPUs of running virtual machines", g.PCIID))
		default:
			fit += slots
		}
	}
	return fit, why
}

// vgpuRoomLeftToHost reports whether the equal-size rule cannot say how
// many vGPUs of profile p the GPUs of h that offer it (models: profiles by
// GPU model) hold, so the host decides at power on: p is MIG-backed, or
// such a GPU is in mixed-size or MIG mode (HostGraphicsInfo.vgpuMode
// "mixedSize", "multiInstanceGpu": "vGPU multi-instance GPU", vSphere API
// 8.0.3.0) or, without that property, runs MIG-backed vGPUs, as only a GPU
// in MIG mode does ("If a GPU you want to use for time-sliced vGPUs or GPU
// passthrough has previously been configured for MIG-backed vGPUs, disable
// MIG mode on the GPU", NVIDIA AI Enterprise release 6, as above).
func vgpuRoomLeftToHost(h *Host, models map[string][]string, p string) bool {
	if migBackedVGPU(p) {
		return true
	}
	for _, g := range h.GPUs {
		if !offersVGPU(g, models, p) {
			continue
		}
		switch g.VGPUMode {
		case string(types.HostGraphicsInfoVgpuModeMixedSize), string(types.HostGraphicsInfoVgpuModeMultiInstanceGpu):
			return true
		}
		if slices.ContainsFunc(g.VGPUs, func(u VGPUUser) bool { return slices.ContainsFunc(u.Profiles, migBackedVGPU) }) {
			return true
		}
	}
	return false
}

// migBackedVGPU reports whether profile names a MIG-backed vGPU type:
// NVIDIA names those <board>-<slices>-<frame buffer in GB><series>
// (A100-3-20C, on a MIG 3g.20gb GPU instance) and time-sliced ones
// <board>-<frame buffer in GB><series> (A100-20C), in the A100 PCIe 40GB
// tables of the page above. vSphere names a time-sliced type with a prefix
// and the type in lower case (grid_a100-20c); no public source found gives
// the name of a MIG-backed one, so the same form is assumed
// (grid_a100-3-20c), which errs only toward leaving the room to the host,
// and a GPU's vgpuMode says MIG mode where vCenter has it.
func migBackedVGPU(profile string) bool {
	_, name, ok := strings.Cut(profile, "_")
	if !ok {
		return false
	}
	parts := strings.Split(name, "-")
	if len(parts) != 3 || parts[1] == "" || strings.Trim(parts[1], "0123456789") != "" {
		return false
	}
	return VGPUFrameBufferGB(profile) > 0
}

// offeredAfterLeaving reports whether a GPU of in.host that stays in Shared
// Direct through the plan offers profile p: one of its model, or any such
// GPU when the host does not say which model offers what.
func offeredAfterLeaving(in vgpuCheck, p string) bool {
	if len(in.leaving) == 0 {
		return true
	}
	for _, g := range in.host.GPUs {
		if slices.Contains(in.leaving, g.PCIID) || g.GraphicsType != string(types.HostGraphicsInfoGraphicsTypeSharedDirect) {
			continue
		}
		if len(in.models) == 0 || offersVGPU(g, in.models, p) {
			return true
		}
	}
	return false
}

// withoutLeaving is h as the plan leaves it for vGPUs: the GPUs leaving
// Shared Direct hold none (they are Shared once the host's graphics
// restart), so the room check counts the others only.
func withoutLeaving(h *Host, leaving []string) *Host {
	if len(leaving) == 0 {
		return h
	}
	out := *h
	out.GPUs = slices.Clone(h.GPUs)
	for i, g := range out.GPUs {
		if slices.Contains(leaving, g.PCIID) {
			out.GPUs[i].GraphicsType = string(types.HostGraphicsInfoGraphicsTypeShared)
			out.GPUs[i].VGPUs = nil
		}
	}
	return &out
}

// offersVGPU reports whether GPU g, in Shared Direct, is of a model that
// offers profile p (models: profiles by vendor:device).
func offersVGPU(g GPU, models map[string][]string, p string) bool {
	return g.GraphicsType == string(types.HostGraphicsInfoGraphicsTypeSharedDirect) && slices.Contains(models[g.VendorID+":"+g.DeviceID], p)
}

// vgpuSpread is over how many of gpus each VM's vGPUs run (by VM id): the
// host lists a VM on every GPU its vGPUs run on, with all of its profiles,
// and does not say which of them runs where.
func vgpuSpread(gpus []GPU) map[string]int {
	spread := map[string]int{}
	for _, g := range gpus {
		for _, u := range g.VGPUs {
			spread[u.VM.MOID]++
		}
	}
	return spread
}

// gpuRoom is how many more vGPUs of frame buffer fb GPU g holds in
// equal-size mode beside its VMs' (but those of skip, given back at their
// power cycle); when another size keeps it from taking any, other says
// which VM.
func gpuRoom(g GPU, fb int64, skip map[string]bool, spread map[string]int) (slots int, other string) {
	slots = int(int64(g.MemoryGB+0.5) / fb)
	for _, u := range g.VGPUs {
		if skip[u.VM.MOID] {
			continue
		}
		same := 0
		for _, profile := range u.Profiles {
			if VGPUFrameBufferGB(profile) == fb {
				same++
			}
		}
		switch {
		case same == len(u.Profiles): // on this GPU: its share of them, rounded up
			slots -= (same + spread[u.VM.MOID] - 1) / spread[u.VM.MOID]
		case spread[u.VM.MOID] == 1: // all of them on this GPU, of another size
			other = fmt.Sprintf("GPU %s runs vGPUs of virtual machine %s of another size (%s)", g.PCIID, u.VM.Name,
				strings.Join(u.Profiles, ", "))
		default: // sizes spread over GPUs the host does not tell apart: left to the host
		}
	}
	return slots, other
}

// hostVGPUModels is which GPU model (vendor:device) offers which of the
// profiles h offers, as far as h says: it offers the profiles of its GPUs
// in Shared Direct, so with GPUs of one model there every offered profile
// is that model's. nil with several models (the VM's ConfigTarget tells
// them apart, see vgpuModels) or none.
func hostVGPUModels(h *Host) map[string][]string {
	var model string
	for _, g := range h.GPUs {
		if g.GraphicsType != string(types.HostGraphicsInfoGraphicsTypeSharedDirect) {
			continue
		}
		m := g.VendorID + ":" + g.DeviceID
		if model != "" && m != model {
			return nil
		}
		model = m
	}
	if model == "" {
		return nil
	}
	profiles := make([]string, 0, len(h.VGPUProfiles))
	for _, p := range h.VGPUProfiles {
		profiles = append(profiles, p.Name)
	}
	return map[string][]string{model: profiles}
}

// vgpuAvailability fills in each profile h offers how many more vGPUs of
// it h's GPUs hold now; unknown when hostVGPUModels cannot say which GPUs
// offer it, as for a name without a frame buffer, and where the host
// decides (vgpuRoomLeftToHost).
func vgpuAvailability(h *Host) {
	models := hostVGPUModels(h)
	if models == nil {
		return
	}
	for i, p := range h.VGPUProfiles {
		if p.FrameBufferGB == 0 || vgpuRoomLeftToHost(h, models, p.Name) {
			continue
		}
		fit, _ := vgpuRoom(vgpuCheck{host: h, models: models}, p.Name)
		available := int64(fit)
		h.VGPUProfiles[i].Available = &available
	}
}

// vgpuModels reads which GPU model (vendor:device) offers which vGPU
// profile on the VM's host (ConfigTarget.vgpuProfileInfo), one call to the
// VM's environment browser; nil when the VM has no host or vCenter returns
// no ConfigTarget.
func (c *Client) vgpuModels(ctx context.Context, vm *VM) (map[string][]string, error) {
	if vm.HostID == "" {
		return nil, nil
	}
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: vm.MOID}
	target, err := configTargetOn(ctx, vc, ref, types.ManagedObjectReference{Type: "HostSystem", Value: vm.HostID})
	if err != nil {
		return nil, translate("reading the vGPU profiles of host "+vm.HostID, err)
	}
	return vgpuModelsOfTarget(target), nil
}

// vgpuModelsOfTarget is vgpuModels' reading of target; nil for a nil target
// (QueryConfigTargetResponse.returnval is optional), which leaves the room
// to the host, as a failed read does.
func vgpuModelsOfTarget(target *types.ConfigTarget) map[string][]string {
	if target == nil {
		return nil
	}
	out := map[string][]string{}
	for _, p := range target.VgpuProfileInfo {
		model := fmt.Sprintf("%04x:%04x", uint16(p.DeviceVendorId), uint16(p.DeviceVendorId>>16))
		out[model] = append(out[model], p.ProfileName)
	}
	for k := range maps.Keys(out) {
		slices.Sort(out[k])
	}
	return out
}
