package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// sameBlocks reports whether two lists of blocks hold the same blocks in
// any order, copies counted: the order of a VM's devices, and of the
// blocks that give them, changes nothing on the VM.
func sameBlocks(ctx context.Context, a, b types.List) bool {
	if a.IsNull() || b.IsNull() || a.IsUnknown() || b.IsUnknown() {
		return a.Equal(b) || (len(a.Elements()) == 0 && len(b.Elements()) == 0 && !a.IsUnknown() && !b.IsUnknown())
	}
	left, right := a.Elements(), slices.Clone(b.Elements())
	if len(left) != len(right) {
		return false
	}
	for _, v := range left {
		i := slices.IndexFunc(right, v.Equal)
		if i < 0 {
			return false
		}
		right = slices.Delete(right, i, i+1)
	}
	return true
}

// blockPaths are the paths of the blocks behind the planner's requests, in
// their order (a gpu block with count n behind n of them), so findings
// point at the block they are about.
type blockPaths struct{ gpu, device []path.Path }

func (r *vmGPUMMIOResource) blockPaths(ctx context.Context, m *vmGPUMMIOModel, diags *diag.Diagnostics) blockPaths {
	var out blockPaths
	for i, g := range r.gpus(ctx, m.GPU, diags) {
		for range g.gpuCount() {
			out.gpu = append(out.gpu, path.Root("gpu").AtListIndex(i))
		}
	}
	for i := range devices(ctx, m.PCIDevice, diags) {
		out.device = append(out.device, path.Root("pci_device").AtListIndex(i))
	}
	return out
}

func at(paths []path.Path, i int, block string) path.Path {
	if i >= 0 && i < len(paths) {
		return paths[i]
	}
	return path.Root(block)
}

// leaveVM plans the setup leaving its VM, destroyed or moved to another VM:
// what it held there is free for the plan's other resources, and the VM's
// power must allow removing its devices.
func (r *vmGPUMMIOResource) leaveVM(ctx context.Context, state *vmGPUMMIOModel, resp *resource.ModifyPlanResponse) {
	r.claims.leave(vsphere.VMUse{VM: state.VirtualMachineID.ValueString(), Passthrough: true})
	if len(r.gpus(ctx, state.GPU, &resp.Diagnostics))+len(devices(ctx, state.PCIDevice, &resp.Diagnostics))+
		len(vgpus(ctx, state.VGPU, &resp.Diagnostics)) > 0 {
		checkDestroyPower(
			ctx,
			r.client,
			state.VirtualMachineID.ValueString(),
			state.PowerOffAllowed.ValueBool(),
			vsphere.WhatGPUsNeedOff,
			&resp.Diagnostics,
		)
	}
}

// ModifyPlan checks the GPUs against the VM's host, computes the MMIO size,
// and refuses a firmware switch under an installed guest and a change that
// needs a running VM off.
func (r *vmGPUMMIOResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !requireVCenter(r.client, &resp.Diagnostics) {
		return
	}
	var state *vmGPUMMIOModel
	if !req.State.Raw.IsNull() {
		state = &vmGPUMMIOModel{}
		resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, state)...)
	}
	if req.Plan.Raw.IsNull() {
		if state != nil {
			r.leaveVM(ctx, state, resp)
		}
		return
	}
	var plan, config vmGPUMMIOModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if state != nil && replaceOnOtherVM(ctx, r.client, r.claims, req, "GPU setup", state.VirtualMachineID, plan.VirtualMachineID, resp) {
		r.noteMovedWithDevices(ctx, state, &plan, &resp.Diagnostics)
		r.leaveVM(ctx, state, resp)
		state = nil // planned as a setup of the other VM
	}
	if plan.VirtualMachineID.IsUnknown() {
		return // checked once the VM is known
	}
	vmID := plan.VirtualMachineID.ValueString()
	// Claimed before anything else is known, by the VM as named and, for a
	// setup in state, by its UUID (the id), as the planner's read would
	// claim it: a setup naming the VM otherwise meets this one in the same
	// plan, whether or not either has values still unknown.
	instance := r.claims.instance(ctx, req, resp)
	r.claimSetup(instance, vmID, vmID, &resp.Diagnostics)
	if state != nil {
		if uuid := state.ID.ValueString(); uuid != "" && !strings.EqualFold(uuid, vmID) {
			r.claimSetup(instance, uuid, vmID, &resp.Diagnostics)
		}
	}
	if plan.GPU.IsUnknown() || plan.PCIDevice.IsUnknown() || plan.VGPU.IsUnknown() || config.MMIOSizeGB.IsUnknown() ||
		!fullyKnown(ctx, plan.GPU) || !fullyKnown(ctx, plan.PCIDevice) || !fullyKnown(ctx, plan.VGPU) || !fullyKnown(ctx, plan.NUMANodeAffinity) {
		// Checked once the values are known. GPUs not known yet may change
		// the total and the window sized from it, and with the same GPUs
		// the apply's plan still sizes the window, growing one found too
		// small: the prior values (UseStateForUnknown) would not survive it.
		if state != nil {
			resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("total_gpu_memory_gb"), types.Float64Unknown())...)
			if config.MMIOSizeGB.IsNull() {
				resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("mmio_size_gb"), types.Int64Unknown())...)
			}
		}
		return
	}
	given := config.MMIOSizeGB.ValueInt64Pointer()
	planned := devices(ctx, plan.PCIDevice, &resp.Diagnostics)
	anyGPU := len(r.gpus(ctx, plan.GPU, &resp.Diagnostics)) > 0
	anyVGPU := len(vgpus(ctx, plan.VGPU, &resp.Diagnostics)) > 0
	// Peer-to-peer or the node affinity changing needs the planner, which
	// compares them with the VM's keys and checks its power. State's null
	// (not managed until now) may be a change: the VM's keys are not known
	// without that read.
	p2pChanges := !plan.PeerToPeer.IsNull() && (state == nil || !plan.PeerToPeer.Equal(state.PeerToPeer))
	numaChanges := !plan.NUMANodeAffinity.IsNull() && (state == nil || !plan.NUMANodeAffinity.Equal(state.NUMANodeAffinity))
	sameDevices := state != nil && sameBlocks(ctx, plan.GPU, state.GPU) && sameBlocks(ctx, plan.PCIDevice, state.PCIDevice) &&
		sameBlocks(ctx, plan.VGPU, state.VGPU)
	if from, to := movedSinceChecked(ctx, req.Private, &resp.Diagnostics); sameDevices && from != "" && r.anyByPCIID(ctx, &plan, &resp.Diagnostics) {
		// Its devices are PCI ids on the host it runs on: checked there,
		// as for a new setup.
		resp.Diagnostics.AddWarning("Virtual machine moved to another host",
			fmt.Sprintf("Virtual machine %s was on host %s when its GPU setup was applied, and is on host %s now (moved by DRS or by "+
				"hand). Its GPUs and devices are PCI ids on the host the VM runs on, so this plan checks them on %s.", vmID, from, to, to))
		sameDevices = false
	}
	if sameDevices && (!plan.GPU.Equal(state.GPU) || !plan.PCIDevice.Equal(state.PCIDevice) || !plan.VGPU.Equal(state.VGPU)) {
		resp.Diagnostics.AddWarning("Device blocks reordered",
			fmt.Sprintf("The gpu, vgpu or pci_device blocks of the GPU setup of virtual machine %s are in another order than in state, and "+
				"are the same GPUs and devices. The plan shows them changing places: the apply records the new order and changes "+
				"nothing on the VM.", vmID))
	}
	if sameDevices && state.Firmware.ValueString() == "efi" &&
		state.Use64bitMMIO.ValueBool() && (state.TotalGPUMemoryGB.ValueFloat64() > 0 || !anyGPU) {
		// Same GPUs (or none): size the window from the recorded total, no
		// vCenter call, unless the window changes (which needs the VM's
		// power state). A total of 0 with GPUs is one not known yet (an
		// import): that is read.
		size, f := vsphere.PlanMMIOSize(given, state.TotalGPUMemoryGB.ValueFloat64(), true, anyGPU, anyVGPU)
		r.planSize(ctx, size, f, resp)
		if current := state.MMIOSizeGB.ValueInt64(); f == nil && given == nil && current > 0 && size > current {
			// Found too small (set by hand, adopted): the plan grows it.
			resp.Diagnostics.AddAttributeWarning(path.Root("mmio_size_gb"), "MMIO window too small",
				fmt.Sprintf("Virtual machine %s has an MMIO window of %d GB for %s GB of GPU memory: too small to boot, with no error. "+
					"This plan grows it to %d GB, the smallest power of two at least twice the total.", vmID, current,
					mmio.FormatGB(state.TotalGPUMemoryGB.ValueFloat64()), size))
		}
		if f != nil || (size == state.MMIOSizeGB.ValueInt64() && !p2pChanges && !numaChanges) {
			return
		}
	}
	change := vsphere.GPUMMIOChange{
		VMID: vmID, GPUs: r.requests(ctx, plan.GPU, &resp.Diagnostics), Devices: planned, VGPUs: vgpus(ctx, plan.VGPU, &resp.Diagnostics),
		MMIOSizeGB:          given,
		AllowFirmwareChange: plan.AllowFirmwareChange.ValueBool(), PowerOffAllowed: plan.PowerOffAllowed.ValueBool(),
		PeerToPeer: plan.PeerToPeer.ValueBoolPointer(), Planned: r.claims.deviceInputs(), VGPUsOfPlan: r.claims.vgpusOfPlan,
	}
	if nodes := numaNodes(ctx, plan.NUMANodeAffinity, &resp.Diagnostics); nodes != nil {
		change.NUMANodeAffinity = *nodes
	}
	if state == nil && !strings.EqualFold(instance.priorID, vmID) {
		change.Releasing = instance.priorID // the setup this one replaces, on another VM
	}
	if state != nil {
		change.Existing, change.CurrentMMIOSizeGB, change.Current64bitMMIO = true, state.MMIOSizeGB.ValueInt64(), state.Use64bitMMIO.ValueBool()
	}
	paths := r.blockPaths(ctx, &plan, &resp.Diagnostics)
	p, err := r.client.PlanGPUMMIO(ctx, change)
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("virtual_machine_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check GPU passthrough", err))
		return
	}
	r.claimTaken(instance, p, &resp.Diagnostics)
	r.claims.besideReboots(ctx, req, resp, "vspherehpc_vm_gpu_mmio", plan.VirtualMachineID, p.OnHost)
	var sizeFinding vsphere.Finding
	for _, f := range p.Findings {
		if isSizeFinding(f) {
			sizeFinding = f
		} else {
			addGPUMMIOFinding(&resp.Diagnostics, f, paths)
		}
	}
	if p.Sized {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("total_gpu_memory_gb"), p.TotalMemoryGB)...)
		r.planSize(ctx, p.MMIOSizeGB, sizeFinding, resp)
	}
}

// movedSinceChecked is where a VM was when its setup was last applied and
// where the last read found it, when the two differ; "" otherwise (and
// for state from before the provider recorded them).
func movedSinceChecked(ctx context.Context, private privateState, diags *diag.Diagnostics) (from, to string) {
	_, ds := getPrivateJSON(ctx, private, privateCheckedOnHost, &from)
	diags.Append(ds...)
	_, ds = getPrivateJSON(ctx, private, privateOnHost, &to)
	diags.Append(ds...)
	if from == "" || to == "" || from == to {
		return "", ""
	}
	return from, to
}

// anyByPCIID reports whether m gives a device by PCI id (a GPU or a
// pci_device): one that names a device of the VM's host.
func (r *vmGPUMMIOResource) anyByPCIID(ctx context.Context, m *vmGPUMMIOModel, diags *diag.Diagnostics) bool {
	for _, g := range r.gpus(ctx, m.GPU, diags) {
		if !g.PCIID.IsNull() {
			return true
		}
	}
	return len(devices(ctx, m.PCIDevice, diags)) > 0
}

// pciIDs are the devices a setup names by PCI id: its gpu blocks' pci_id and
// its pci_device blocks.
func (r *vmGPUMMIOResource) pciIDs(ctx context.Context, m *vmGPUMMIOModel, diags *diag.Diagnostics) []string {
	var out []string
	for _, g := range r.gpus(ctx, m.GPU, diags) {
		if !g.PCIID.IsNull() && !g.PCIID.IsUnknown() {
			out = append(out, g.PCIID.ValueString())
		}
	}
	return append(out, devices(ctx, m.PCIDevice, diags)...)
}

// noteMovedWithDevices warns, in the plan of a setup that moves to another
// VM on the same host keeping devices it names by PCI id, that the old setup
// must go first, as the adapters' noteReplaced does for a static MAC: with
// create_before_destroy Terraform would configure the devices on the new VM
// while the old one still has them, which the apply refuses (GPU in use by
// another VM). Terraform does not tell the
// provider whether a replacement creates first, so the plan can only warn.
// It is said in the first of the replacement's two plan calls: Terraform
// drops the second call's warnings.
func (r *vmGPUMMIOResource) noteMovedWithDevices(ctx context.Context, state, plan *vmGPUMMIOModel, diags *diag.Diagnostics) {
	before := r.pciIDs(ctx, state, diags)
	var kept []string
	for _, id := range r.pciIDs(ctx, plan, diags) {
		if slices.Contains(before, id) && !slices.Contains(kept, id) {
			kept = append(kept, id)
		}
	}
	if len(kept) == 0 || plan.VirtualMachineID.IsUnknown() {
		return
	}
	// On two hosts the same PCI id is two devices: either order works.
	from, errFrom := r.client.VM(ctx, state.VirtualMachineID.ValueString())
	to, errTo := r.client.VM(ctx, plan.VirtualMachineID.ValueString())
	if errFrom == nil && errTo == nil && from.HostID != to.HostID {
		return
	}
	diags.AddAttributeWarning(path.Root("virtual_machine_id"), "GPU setup moves with its devices",
		fmt.Sprintf("The GPU setup moves from virtual machine %s to %s on the same host and names devices %s by PCI id, so the "+
			"old setup must be removed before the new one is made, as Terraform replaces a resource by default. Do not set "+
			"create_before_destroy on this resource: Terraform would configure the devices on %[2]s while %[1]s still has them, and "+
			"the apply would stop with \"GPU in use by another VM\".",
			state.VirtualMachineID.ValueString(), plan.VirtualMachineID.ValueString(), strings.Join(kept, ", ")))
}

// claimSetup claims the GPU setup of a VM, by the id as given and, once the
// planner read it, by UUID, so two resources naming one VM differently meet.
func (r *vmGPUMMIOResource) claimSetup(instance planInstance, vmID, vmName string, diags *diag.Diagnostics) {
	addClaimConflict(diags, path.Root("virtual_machine_id"), r.claims.claim(instance, claim{
		kind: claimGPUSetup, key: strings.ToLower(vmID), what: "the GPU setup of virtual machine " + vmName,
		owner: "a vspherehpc_vm_gpu_mmio",
	}))
}

// claimTaken claims the VM's setup by UUID and each device it takes.
func (r *vmGPUMMIOResource) claimTaken(instance planInstance, p *vsphere.GPUMMIOPlan, diags *diag.Diagnostics) {
	label := fmt.Sprintf("%s (%s)", p.VMName, p.VMUUID)
	if p.VMUUID != "" {
		r.claimSetup(instance, p.VMUUID, label, diags)
	}
	for _, d := range p.Takes {
		what := "PCI device"
		if d.GPU {
			what = "GPU"
		}
		addClaimConflict(diags, path.Root("virtual_machine_id"), r.claims.claim(instance, claim{
			kind: claimVMDevice, key: vsphere.HostDeviceKey(d.HostID, d.PCIID), what: fmt.Sprintf("%s %s on host %s", what, d.PCIID, d.HostName),
			owner: "the vspherehpc_vm_gpu_mmio of virtual machine " + label,
		}))
		if f := d.VFOf; f != nil {
			takers := r.claims.passVF(instance, vsphere.HostDeviceKey(f.HostID, f.PCIID), d.PCIID,
				fmt.Sprintf("virtual function %s passed through to virtual machine %s", d.PCIID, label))
			addTooFewVFs(diags, path.Root("pci_device"), *f, takers)
		}
	}
}

func isSizeFinding(f vsphere.Finding) bool {
	switch f.(type) {
	case vsphere.MMIOSizeUnknown, vsphere.NothingToSize, vsphere.MMIOSizeImpossible, vsphere.MMIONotPowerOfTwo, vsphere.MMIOTooSmall:
		return true
	}
	return false
}

// planSize plans the MMIO size the planner found, or says why it is refused.
func (r *vmGPUMMIOResource) planSize(ctx context.Context, size int64, f vsphere.Finding, resp *resource.ModifyPlanResponse) {
	if f == nil {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("mmio_size_gb"), size)...)
		return
	}
	addGPUMMIOFinding(&resp.Diagnostics, f, blockPaths{})
}

// addMMIOSizeFinding words a refused MMIO size and reports whether f was one.
func addMMIOSizeFinding(diags *diag.Diagnostics, f vsphere.Finding) bool {
	at := path.Root("mmio_size_gb")
	switch f := f.(type) {
	case vsphere.MMIOSizeImpossible:
		detail := "The GPUs' memory needs a window beyond any ESXi host can address."
		if f.Err != nil {
			detail = f.Err.Error()
		}
		diags.AddAttributeError(at, "Cannot size the MMIO window", detail)
	case vsphere.MMIOSizeUnknown:
		diags.AddAttributeError(at, "GPU memory unknown",
			"The host does not report the memory of every GPU listed, so the MMIO size cannot be computed: set mmio_size_gb "+
				"(vspherehpc_mmio_size computes it from the GPUs' memory).")
	case vsphere.NothingToSize:
		diags.AddAttributeError(at, "Nothing to size the MMIO window from",
			"List the VM's GPUs in gpu blocks, or set mmio_size_gb (devices in pci_device blocks do not size the window). "+
				"(The resource manages all of the VM's passthrough devices: ones it is not given are detached.)")
	case vsphere.MMIONotPowerOfTwo:
		diags.AddAttributeError(at, "MMIO size not a power of two",
			fmt.Sprintf("mmio_size_gb = %d is not a power of two; vSphere needs one (e.g. %d).", f.Given, f.Suggested))
	case vsphere.MMIOTooSmall:
		if f.VGPUMinimum {
			diags.AddAttributeError(at, "MMIO size too small",
				fmt.Sprintf("mmio_size_gb = %d is below %d, the least window NVIDIA asks for a VM with vGPUs (C-series vGPUs have "+
					"large BARs): use %d or more.", f.Given, f.Rule, f.Rule))
			break
		}
		diags.AddAttributeError(at, "MMIO size too small",
			fmt.Sprintf("mmio_size_gb = %d is below %d, what %s GB of GPU memory needs (the smallest power of two at least twice "+
				"the total). Too small a window and the VM does not boot, with no error: use %d or more.", f.Given, f.Rule, mmio.FormatGB(f.TotalGB), f.Rule))
	default:
		return false
	}
	return true
}

// turnedOnAtReboot words a device a host resource of the same plan turns on,
// on a host that applies it only at its next reboot: what, PCI id, host.
const turnedOnAtReboot = "%s %s on host %s is turned on by this configuration, but the host applies that only at its next reboot, " +
	"so the VM cannot have it in this apply. Set reboot_allowed = true on the host's resource to reboot the host within the " +
	"apply; or apply the host's resource first (-target), reboot the host, then apply again."

// waitsForReboot words a device whose passthrough is enabled and waits for
// the host's reboot: what, PCI id, name, host.
const waitsForReboot = "Passthrough of %s %s (%s) on host %s is enabled but not active yet: the host must reboot first " +
	"(vspherehpc_host_pci_passthrough shows reboot_required). Set reboot_allowed = true on that resource to reboot the host " +
	"within the apply, or reboot it yourself (the vspherehpc_host_reboot action does it), then apply again."

// plannedAfterHost says how a VM's plan sees a host resource of the same
// configuration: Terraform plans and applies a resource after those it
// refers to, and others in any order.
const plannedAfterHost = "If a vspherehpc_host_pci_passthrough of this configuration turns it on, refer to it from this resource " +
	"(as the gpu-node module's callers do, or with depends_on): Terraform then plans and applies the host's change first."

// addGPUFarFromCard warns of a GPU with none of the VM's InfiniBand or RoCE functions
// under its PCIe switch: GPUDirect RDMA works, slower, and nothing fails.
func addGPUFarFromCard(diags *diag.Diagnostics, at path.Path, f vsphere.GPUFarFromCard) {
	gpu := f.GPU
	if f.GPUName != "" {
		gpu += " (" + f.GPUName + ")"
	}
	var where string
	switch f.Proximity {
	case vsphere.SameNUMANode:
		where = fmt.Sprintf("is on the same NUMA node (%d) but not under the GPU's PCIe switch: their traffic goes through the CPU", f.GPUNode)
	case vsphere.AcrossNUMANodes:
		where = fmt.Sprintf("is on another NUMA node (the GPU on %d, the card on %d): their traffic crosses the interconnect between "+
			"NUMA nodes (between the CPU sockets, on most servers)", f.GPUNode, f.CardNode)
	default:
		where = "is not under the GPU's PCIe switch (the host lists no NUMA node for one of them)"
	}
	text := fmt.Sprintf("GPU %s of virtual machine %s on host %s has none of the VM's InfiniBand or RoCE functions under its PCIe "+
		"switch: the nearest, %s, %s. GPUDirect RDMA is fastest between a GPU and a card under one PCIe switch (NVIDIA's GPUDirect "+
		"RDMA manual asks for the same PCIe root complex at least; NCCL decides by this distance whether to use it at all, "+
		"NCCL_NET_GDR_LEVEL).", gpu, f.VM, f.Host, f.Card, where)
	if f.PeerToPeer && f.Proximity == vsphere.AcrossNUMANodes {
		text += " peer_to_peer is on, but GPUDirect RDMA across NUMA nodes is slow, and nothing fails: training just runs slower " +
			"than with the GPU and the card side by side."
	}
	var better []string
	if f.BetterGPU != "" {
		better = append(better, fmt.Sprintf("GPU %s is free under the same switch as %s", f.BetterGPU, f.Card))
	}
	if f.BetterCard != "" {
		better = append(better, fmt.Sprintf("%s sits under this GPU's switch (give the VM one of its virtual functions)", f.BetterCard))
	}
	if len(better) > 0 {
		text += " On this host, " + strings.Join(better, "; and ") + "."
	}
	// The GPU in the summary: Terraform folds warnings of one summary into
	// the first.
	diags.AddAttributeWarning(at, fmt.Sprintf("GPU %s far from the VM's InfiniBand card", f.GPU), text+
		" vspherehpc_host lists each device's pcie_switch and numa_node, for choosing pairs in the configuration.")
}

// addGPUMMIOFinding words one finding of the GPU planner.
func addGPUMMIOFinding(diags *diag.Diagnostics, f vsphere.Finding, paths blockPaths) {
	gpuPath := func(i int) path.Path { return at(paths.gpu, i, "gpu") }
	devicePath := func(i int) path.Path { return at(paths.device, i, "pci_device") }
	switch f := f.(type) {
	case vsphere.PoolTooSmall:
		addPoolTooSmall(diags, gpuPath(f.Index), f)
	case vsphere.PoolOnOtherHost:
		placed := "DRS places the VM there when it powers on (Assignable Hardware); the VM stays where it is until then."
		if f.Manual {
			placed = "The cluster's DRS is manual: when the VM powers on, DRS recommends a host with the GPUs, and the VM powers " +
				"on only once the recommendation is applied in vCenter."
		}
		diags.AddWarning("GPU pool on another host of the cluster",
			fmt.Sprintf("Host %s of virtual machine %s has too few free GPUs (vendor id %s, device id %s) labelled %q for the %d the VM "+
				"asks for; host %s of its DRS cluster has enough. %s", f.VMHost, f.VM, f.Vendor, f.Device, f.Label, f.Asked, f.Host, placed))
	case vsphere.GPUFarFromCard:
		addGPUFarFromCard(diags, gpuPath(f.Index), f)
	case vsphere.NUMANodeNotOnHost:
		diags.AddAttributeError(path.Root("numa_node_affinity"), "No such NUMA node",
			fmt.Sprintf("numa_node_affinity names NUMA node %d, but host %s of virtual machine %s has %d, numbered from 0 "+
				"(vspherehpc_host gives each device's numa_node).", f.Node, f.Host, f.VM, f.Nodes))
	case vsphere.NUMAAffinityMissesDevice:
		var devices []string
		for i, d := range f.Devices {
			devices = append(devices, fmt.Sprintf("%s (node %d)", d, f.DeviceNodes[i]))
		}
		diags.AddAttributeWarning(path.Root("numa_node_affinity"), "NUMA node affinity leaves devices out",
			fmt.Sprintf("numa_node_affinity keeps virtual machine %s on NUMA node(s) %s of host %s, but its devices %s are on other "+
				"nodes: every transfer between them and the VM's memory crosses the interconnect between NUMA nodes. Add node(s) %s, or "+
				"choose devices on the affinity's nodes (vspherehpc_host gives each device's numa_node).",
				f.VM, vsphere.FormatNUMANodes(f.Nodes), f.Host, strings.Join(devices, ", "), vsphere.FormatNUMANodes(f.DeviceNodes)))
	case vsphere.NoDynamicGPU:
		diags.AddAttributeError(gpuPath(f.Index), "No such GPU for dynamic DirectPath",
			fmt.Sprintf("Host %s of virtual machine %s has no passthrough-active GPU with vendor id %s and device id %s.",
				f.Host, f.VM, f.Vendor, f.Device))
	case vsphere.TooFewGPUs:
		model := f.Vendor + ":" + f.Device
		if f.DeviceName != "" {
			model += " (" + f.DeviceName + ")"
		}
		diags.AddAttributeError(gpuPath(f.Index), "More GPUs than the host has",
			fmt.Sprintf("Virtual machine %s asks for %d GPUs of model %s, but its host %s has %d active for passthrough. Each "+
				"GPU is one device at power on, so the VM would not power on: ask for at most %d of that model, or move the VM "+
				"to a host with more (vspherehpc_host lists a host's GPUs).", f.VM, f.Asked, model, f.Host, f.Active, f.Active))
	case vsphere.GPUNotActive:
		if f.TurnedOnAtReboot {
			diags.AddAttributeError(gpuPath(f.Index), "GPU active only after a host reboot", fmt.Sprintf(turnedOnAtReboot, "GPU", f.PCIID, f.Host))
			return
		}
		if f.Enabled {
			diags.AddAttributeError(gpuPath(f.Index), "GPU waits for a host reboot", fmt.Sprintf(waitsForReboot, "GPU", f.PCIID, f.Device, f.Host))
			return
		}
		if f.SharedByVGPU {
			diags.AddAttributeError(gpuPath(f.Index), "GPU shared by vGPU",
				fmt.Sprintf("GPU %s (%s) on host %s is shared as NVIDIA vGPUs (graphics type Shared Direct), not passed through: a GPU "+
					"is passed through whole to one VM or shared, never both. Give the VM a vgpu block of a profile the host offers "+
					"instead, or take the GPU out of Shared Direct (vspherehpc_host_graphics) and turn its passthrough on "+
					"(vspherehpc_host_pci_passthrough).", f.PCIID, f.Device, f.Host))
			return
		}
		diags.AddAttributeError(gpuPath(f.Index), "GPU not enabled for passthrough",
			fmt.Sprintf("GPU %s (%s) on host %s is not active for passthrough. Enable it with vspherehpc_host_pci_passthrough (host > "+
				"Configure > Hardware > PCI Devices > Toggle passthrough; older ESXi versions then need a reboot), or choose another GPU. "+
				plannedAfterHost, f.PCIID, f.Device, f.Host))
	case vsphere.GPUInUse:
		power := "powered off"
		if f.Other.PowerState == vsphere.PoweredOn {
			power = "powered on"
		}
		diags.AddAttributeError(gpuPath(f.Index), "GPU in use by another VM",
			fmt.Sprintf("GPU %s on host %s is already configured on virtual machine %s (%s). Two VMs with the same GPU cannot "+
				"both run, and the second does not boot, with no error: remove it there or choose another GPU. If this is a GPU setup "+
				"moved from %[3]s with create_before_destroy, remove create_before_destroy and run terraform destroy -refresh=false "+
				"-target on this resource once (Terraform keeps the old setup after this error, and a plan would see its GPU on %[3]s "+
				"still; the destroy gives %[3]s its settings back), then apply again.",
				f.PCIID, f.Host, f.Other.Name, power))
	case vsphere.GPUNotOnHost:
		where := "no host of its cluster has it"
		if f.OnHost != "" {
			where = "it is on host " + f.OnHost
		}
		diags.AddAttributeError(gpuPath(f.Index), "GPU not on the VM's host",
			fmt.Sprintf("Virtual machine %s runs on host %s, which has no GPU %s; %s. A VM can only pass through its own host's GPUs.",
				f.VM, f.Host, f.PCIID, where))
	case vsphere.DeviceNotOnVMHost:
		where := "no other host of its cluster has it either"
		if f.OnHost != "" {
			where = "it is on host " + f.OnHost + "; a VM can only pass through its own host's devices"
		}
		detail := fmt.Sprintf("Virtual machine %s runs on host %s, which has no PCI device %s; %s.", f.VM, f.Host, f.PCIID, where)
		if len(f.Pending) > 0 {
			detail += fmt.Sprintf(" SR-IOV of %s on host %s changes at its next reboot, and virtual functions appear only then: "+
				"reboot the host (vspherehpc_host_sriov shows reboot_required), then plan again.", strings.Join(f.Pending, ", "), f.Host)
		} else {
			detail += " vspherehpc_host lists a host's devices in pci_devices, with each SR-IOV card's virtual functions."
		}
		diags.AddAttributeError(devicePath(f.Index), "PCI device not on the VM's host", detail)
	case vsphere.DeviceNotActive:
		if f.TurnedOnAtReboot {
			diags.AddAttributeError(devicePath(f.Index), "PCI device active only after a host reboot",
				fmt.Sprintf(turnedOnAtReboot, "PCI device", f.PCIID, f.Host))
			return
		}
		if f.Enabled {
			diags.AddAttributeError(devicePath(f.Index), "PCI device waits for a host reboot",
				fmt.Sprintf(waitsForReboot, "PCI device", f.PCIID, f.Name, f.Host))
			return
		}
		if f.UplinkOf != "" {
			diags.AddAttributeError(devicePath(f.Index), "PCI device used by the host",
				fmt.Sprintf("PCI device %s (%s) on host %s is an uplink of switch %q: the host's network uses it, so it cannot be "+
					"passed through. Move the switch to another NIC first, or choose another device.", f.PCIID, f.Name, f.Host, f.UplinkOf))
			return
		}
		if f.ServesVFs > 0 {
			diags.AddAttributeError(devicePath(f.Index), "PCI device serves SR-IOV virtual functions",
				fmt.Sprintf("PCI device %s (%s) on host %s has SR-IOV on: it is split into virtual functions and cannot also pass "+
					"through whole. Give one of its virtual functions instead (vspherehpc_host lists them under the card in "+
					"pci_devices), or turn SR-IOV off first.", f.PCIID, f.Name, f.Host))
			return
		}
		diags.AddAttributeError(devicePath(f.Index), "PCI device not enabled for passthrough",
			fmt.Sprintf("PCI device %s (%s) on host %s is not enabled for passthrough. Enable it with vspherehpc_host_pci_passthrough "+
				"(for a virtual function, once SR-IOV of its card is active), or choose another device. "+plannedAfterHost, f.PCIID, f.Name, f.Host))
	case vsphere.DeviceInUse:
		diags.AddAttributeError(devicePath(f.Index), "PCI device in use by another VM",
			fmt.Sprintf("PCI device %s on host %s is already configured on virtual machine %s. A device passes through to one VM "+
				"only, and the second does not boot: remove it there or choose another device (another virtual function of the card).",
				f.PCIID, f.Host, f.Other.Name))
	case vsphere.DeviceIsGPU:
		diags.AddAttributeError(devicePath(f.Index), "GPU given as a PCI device",
			fmt.Sprintf("PCI device %s is a GPU (%s). List it in a gpu block instead, so its memory sizes the MMIO window.", f.PCIID, f.Name))
	case vsphere.FirmwareChangeRefused:
		diags.AddAttributeError(path.Root("allow_firmware_change"), "Guest OS installed under BIOS",
			fmt.Sprintf("Virtual machine %s has firmware %s and a guest OS (%s). GPU passthrough needs EFI, but a guest installed "+
				"under BIOS does not boot after the switch: install the OS after switching to EFI, or set allow_firmware_change = true "+
				"if the guest can boot EFI.", f.VM, f.Firmware, f.Guest))
	default:
		if !addVGPUFinding(diags, f) && !addMMIOSizeFinding(diags, f) && !addPowerFinding(diags, f) {
			unexpectedFinding(diags, f)
		}
	}
}

// addVGPUFinding words a finding of the vGPU rules, and reports whether f
// was one.
func addVGPUFinding(diags *diag.Diagnostics, f vsphere.Finding) bool {
	at := path.Root("vgpu")
	switch f := f.(type) {
	case vsphere.VGPUProfileNotOffered:
		why := "Its GPUs in Shared Direct graphics mode offer " + listOrNone(f.Offered) + "."
		if len(f.Offered) == 0 {
			why = "It offers no vGPU profile: none of its GPUs is driven by NVIDIA's vGPU manager."
		}
		fix := "Choose a profile it offers, or run the VM on a host that offers this one."
		if len(f.NotShared) > 0 {
			fix = fmt.Sprintf("Its GPUs %s are not in Shared Direct mode: set them so with vspherehpc_host_graphics (and reboot_allowed, "+
				"or reboot the host), and refer to it from this resource (depends_on) so the plan knows; or choose a profile it offers.",
				strings.Join(f.NotShared, ", "))
		}
		diags.AddAttributeError(at, "vGPU profile not offered",
			fmt.Sprintf("Host %s of virtual machine %s does not offer vGPU profile %s, so the VM would not power on. %s %s",
				f.Host, f.VM, f.Profile, why, fix))
	case vsphere.VGPUProfileLeavesHost:
		diags.AddAttributeError(at, "vGPU profile leaves the host",
			fmt.Sprintf("Host %s of virtual machine %s offers vGPU profile %s only on GPUs %s, which a vspherehpc_host_graphics of this "+
				"plan takes out of Shared Direct graphics mode, rebooting the host in the same apply: after that the VM would not power "+
				"on. Keep those GPUs in Shared Direct, or choose a profile another GPU of the host offers.",
				f.Host, f.VM, f.Profile, strings.Join(f.Leaving, ", ")))
	case vsphere.TooManyVGPUs:
		diags.AddAttributeError(at, "Too many vGPUs",
			fmt.Sprintf("Virtual machine %s is given %d vGPUs; vSphere 8 gives a VM at most %d. Use fewer, or larger profiles.",
				f.VM, f.Asked, vsphere.MaxVGPUsPerVM))
	case vsphere.VGPUsMixed:
		diags.AddAttributeError(at, "vGPUs of different boards or series",
			fmt.Sprintf("Virtual machine %s is given vGPU profiles %s. NVIDIA allows several vGPUs on one VM only when all are of "+
				"the same board type and series (for example all grid_a100-*c): keep to one.", f.VM, strings.Join(f.Profiles, ", ")))
	case vsphere.VGPUsDoNotFit:
		why := ""
		if len(f.Why) > 0 {
			why = " " + strings.Join(f.Why, "; ") + "."
		}
		detail := fmt.Sprintf("Virtual machine %s asks for %d vGPUs of profile %s, and the GPUs of host %s have room for %d more of it "+
			"beside the vGPUs of its running virtual machines (in equal-size mode a GPU holds vGPUs of one frame buffer size only).%s",
			f.VM, f.Asked, f.Profile, f.Host, f.Fit, why)
		if f.PowersOn {
			diags.AddAttributeError(at, "vGPUs do not fit", detail+" The VM runs, and would not power on again after this change: "+
				"ask for fewer, power other vGPU VMs of the host off, or move the VM to a host with room.")
		} else {
			diags.AddAttributeWarning(at, "vGPUs do not fit now", detail+" The VM is off: it powers on only once they fit, or, in a DRS "+
				"cluster, on another host that offers the profile.")
		}
	default:
		return false
	}
	return true
}

// addPoolTooSmall refuses a request of more GPUs of a pool than a host the
// VM can run on has free, saying where the pool's devices are.
func addPoolTooSmall(diags *diag.Diagnostics, at path.Path, f vsphere.PoolTooSmall) {
	where := fmt.Sprintf("its host %s has %d free", f.Host, f.Free)
	switch {
	case f.BestHost != "" && f.DRS:
		where += fmt.Sprintf(", and the most any host of its DRS cluster has is %d, on %s", f.Best, f.BestHost)
	case f.BestHost != "":
		where += fmt.Sprintf("; host %s of its cluster has %d, but the cluster has DRS off, so the VM powers on only where it is", f.BestHost, f.Best)
	case f.DRS:
		where += ", and no other host of its DRS cluster has any"
	}
	other := ""
	if len(f.Labels) > 0 {
		other = fmt.Sprintf(" GPUs of this model on %s carry the labels %s.", f.Host, strings.Join(f.Labels, ", "))
	}
	diags.AddAttributeError(at, "GPU pool too small",
		fmt.Sprintf("Virtual machine %s asks for %d GPUs (vendor id %s, device id %s) labelled %q, but %s: a free GPU is active for "+
			"passthrough, carries the label and is given to no other VM. Ask for fewer, label more GPUs (hardware_label of "+
			"vspherehpc_host_pci_passthrough), or free some.%s", f.VM, f.Asked, f.Vendor, f.Device, f.Label, where, other))
}
