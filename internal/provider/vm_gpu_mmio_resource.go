package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ resource.Resource                   = (*vmGPUMMIOResource)(nil)
	_ resource.ResourceWithConfigure      = (*vmGPUMMIOResource)(nil)
	_ resource.ResourceWithImportState    = (*vmGPUMMIOResource)(nil)
	_ resource.ResourceWithIdentity       = (*vmGPUMMIOResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*vmGPUMMIOResource)(nil)
	_ resource.ResourceWithValidateConfig = (*vmGPUMMIOResource)(nil)
	_ resource.ResourceWithUpgradeState   = (*vmGPUMMIOResource)(nil)
)

// Private-state keys of a GPU setup.
const (
	// privateExtraConfig is where state written before
	// extra_config_before existed holds that record.
	privateExtraConfig = "extra_config_before"
	// privateCheckedOnHost is the host the VM was on when the setup was last
	// applied (or imported), and privateOnHost the one the last read found:
	// a VM moved since (DRS, a cold migration) has its devices checked on
	// its new host, though the setup is unchanged.
	privateCheckedOnHost = "checked_on_host"
	privateOnHost        = "on_host"
)

type vmGPUMMIOResource struct {
	client *vsphere.Client
	claims *claimBook
}

type vmGPUMMIOModel struct {
	ID                  types.String  `tfsdk:"id"`
	VirtualMachineID    types.String  `tfsdk:"virtual_machine_id"`
	GPU                 types.List    `tfsdk:"gpu"`
	PCIDevice           types.List    `tfsdk:"pci_device"`
	VGPU                types.List    `tfsdk:"vgpu"`
	MMIOSizeGB          types.Int64   `tfsdk:"mmio_size_gb"`
	TotalGPUMemoryGB    types.Float64 `tfsdk:"total_gpu_memory_gb"`
	Firmware            types.String  `tfsdk:"firmware"`
	Use64bitMMIO        types.Bool    `tfsdk:"use_64bit_mmio"`
	MemoryLockedToMax   types.Bool    `tfsdk:"memory_reservation_locked_to_max"`
	AllowFirmwareChange types.Bool    `tfsdk:"allow_firmware_change"`
	PowerOffAllowed     types.Bool    `tfsdk:"power_off_allowed"`
	PeerToPeer          types.Bool    `tfsdk:"peer_to_peer"`
	NUMANodeAffinity    types.Set     `tfsdk:"numa_node_affinity"`
	// ExtraConfigBefore is what destroy puts back. It is kept in state,
	// not private state: Terraform hands a tainted object's private state
	// (a create that failed half-way) to neither its destroy nor its
	// replacement.
	ExtraConfigBefore types.Map `tfsdk:"extra_config_before"`
}

// gpuBlockModel is a gpu block: one GPU by PCI id, or count GPUs of a model
// (dynamic DirectPath; count null is one). The blocks are a list compared
// without regard to order (sameBlocks): a set would hide copies, as
// Terraform merges identical blocks of a set before the provider sees them,
// and two identical blocks must be seen to be refused.
type gpuBlockModel struct {
	PCIID    types.String `tfsdk:"pci_id"`
	VendorID types.String `tfsdk:"vendor_id"`
	DeviceID types.String `tfsdk:"device_id"`
	Count    types.Int64  `tfsdk:"count"`
	Label    types.String `tfsdk:"label"`
}

var gpuBlockType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"pci_id": types.StringType, "vendor_id": types.StringType, "device_id": types.StringType, "count": types.Int64Type,
	"label": types.StringType,
}}

type pciDeviceBlockModel struct {
	PCIID types.String `tfsdk:"pci_id"`
}

var pciDeviceBlockType = types.ObjectType{AttrTypes: map[string]attr.Type{"pci_id": types.StringType}}

// vgpuBlockModel is a vgpu block: count vGPUs of one profile (count null is
// one), compared as gpu blocks are.
type vgpuBlockModel struct {
	Profile types.String `tfsdk:"profile"`
	Count   types.Int64  `tfsdk:"count"`
}

var vgpuBlockType = types.ObjectType{AttrTypes: map[string]attr.Type{"profile": types.StringType, "count": types.Int64Type}}

// vgpuCount is how many vGPUs a block asks for.
func (v vgpuBlockModel) vgpuCount() int {
	if v.Count.IsNull() || v.Count.IsUnknown() {
		return 1
	}
	return int(v.Count.ValueInt64())
}

func (g gpuBlockModel) request() vsphere.GPURequest {
	return vsphere.GPURequest{PCIID: g.PCIID.ValueString(), VendorID: g.VendorID.ValueString(), DeviceID: g.DeviceID.ValueString(),
		Label: g.Label.ValueString()}
}

// gpuCount is how many GPUs a block asks for.
func (g gpuBlockModel) gpuCount() int {
	if g.Count.IsNull() || g.Count.IsUnknown() {
		return 1
	}
	return int(g.Count.ValueInt64())
}

// countOf is a dynamic block's count as state holds it: null for one.
func countOf(n int) types.Int64 {
	if n == 1 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(n))
}

// key is the GPU a block names, its PCI id, or the model it asks for,
// vendor:device, and its pool's label, vendor:device:label.
func (g gpuBlockModel) key() string {
	if id := g.PCIID.ValueString(); id != "" {
		return id
	}
	return poolKey(g.VendorID.ValueString(), g.DeviceID.ValueString(), g.Label.ValueString())
}

// poolKey names a model, vendor:device, or a pool of it, vendor:device:label.
func poolKey(vendor, device, label string) string {
	if label == "" {
		return vendor + ":" + device
	}
	return vendor + ":" + device + ":" + label
}

// NewVMGPUMMIOResource is the vspherehpc_vm_gpu_mmio resource.
func NewVMGPUMMIOResource() resource.Resource {
	return &vmGPUMMIOResource{}
}

func (r *vmGPUMMIOResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm_gpu_mmio"
	// A VM's BIOS UUID, and so its identity, changes with uuid.bios.
	resp.ResourceBehavior.MutableIdentity = true
}

func (r *vmGPUMMIOResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = vmIdentity.schema
}

func (r *vmGPUMMIOResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Version: 2, // gpu and pci_device: lists, sets, lists again (vm_gpu_mmio_upgrade.go)
		MarkdownDescription: "Makes a VM ready for GPU passthrough in one reconfigure: EFI firmware, `pciPassthru.use64bitMMIO = TRUE`, " +
			"`pciPassthru.64bitMMIOSizeGB` sized for its GPUs, all guest memory reserved, and the GPUs themselves, with any other " +
			"passthrough devices beside them (InfiniBand VFs or whole ConnectX PFs). One per VM: it manages all of the VM's PCI " +
			"passthrough devices, and detaches those it is not given. SR-IOV network adapters are `vspherehpc_vm_sriov_nic`'s.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The VM's UUID.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"virtual_machine_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The VM's UUID (`vsphere_virtual_machine.id`) or managed object id (`vm-42`). Naming another VM " +
					"replaces the resource; spelling the same VM the other way does not.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"mmio_size_gb": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: "`pciPassthru.64bitMMIOSizeGB`. Computed from the GPUs' memory by the `vspherehpc_mmio_size` rule " +
					"(the smallest power of two at least twice the total) unless given; a given size must be a power of two, not below the rule's, " +
					fmt.Sprintf("and at most %d (1 PiB, the most an ESXi host addresses).", mmio.MaxSizeGB),
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
				CustomType:    wholeNumber(1, mmio.MaxSizeGB),
				// Devices given in pci_device blocks do not count: their BARs
				// are megabytes, inside the headroom the rule leaves.
				Validators: []validator.Int64{mmioSizeBound{}},
			},
			"total_gpu_memory_gb": schema.Float64Attribute{
				Computed: true, MarkdownDescription: "Total framebuffer memory of the GPUs, as their hosts report it.",
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
			},
			"firmware": schema.StringAttribute{
				Computed: true, MarkdownDescription: "Always `efi`; a change made in vCenter shows as drift.",
				PlanModifiers: []planmodifier.String{alwaysString("efi")},
			},
			"use_64bit_mmio": schema.BoolAttribute{
				Computed: true, MarkdownDescription: "Whether `pciPassthru.use64bitMMIO` is TRUE (in any case); always planned true.",
				PlanModifiers: []planmodifier.Bool{alwaysBool(true)},
			},
			"memory_reservation_locked_to_max": schema.BoolAttribute{
				Computed: true, MarkdownDescription: "Whether all guest memory is reserved, as passthrough needs; always planned true.",
				PlanModifiers: []planmodifier.Bool{alwaysBool(true)},
			},
			"allow_firmware_change": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Allow switching a VM that already has a guest OS from BIOS to EFI. Off by default: a guest " +
					"installed under BIOS does not boot under EFI; install the OS after the switch.",
			},
			"peer_to_peer": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "GPUDirect RDMA: `true` sets `" + vsphere.AllowP2PKey + " = TRUE` and `" + vsphere.RelaxACSKey +
					" = TRUE`, which let the VM's GPUs (or vGPUs) and its InfiniBand or RoCE card exchange data over PCIe without the " +
					"CPU's memory (NVIDIA's GPU Operator documentation, GPUDirect RDMA on vSphere VMs); `false` removes them. Either way " +
					"a change made in vCenter shows as drift, and a change needs the VM powered off (`power_off_allowed`). Left out " +
					"(null), the keys are left as they are. An import, and `terraform query`, give `true` where both keys are set. The " +
					"host side, PCIe ATS on the card, is set in the card's firmware: see the *GPUDirect RDMA* section of the guide *InfiniBand on " +
					"vSphere 8*.",
			},
			"numa_node_affinity": schema.SetAttribute{
				// The host's own count is checked at plan time.
				ElementType: wholeNumber(0, maxNUMANode), Optional: true,
				MarkdownDescription: "Keep the VM's virtual CPUs and memory on these NUMA nodes of its host (`" + vsphere.NUMANodeAffinityKey +
					"`, vSphere Resource Management's advanced NUMA attributes): the node of its GPUs and InfiniBand card, which " +
					"`vspherehpc_host` gives as `numa_node`. An empty set removes the key; left out (null), it is left as it is. A node " +
					"the host does not have is refused at plan time; a GPU or device on a node the set leaves out is a warning. A " +
					"change made in vCenter shows as drift, and a change needs the VM powered off (`power_off_allowed`). VMware warns " +
					"that a NUMA node affinity can keep ESXi from rebalancing VMs across the host's nodes: use it on hosts that run " +
					"few, large VMs.",
				Validators: []validator.Set{setvalidator.ValueInt64sAre(int64validator.Between(0, 255))},
			},
			"extra_config_before": schema.MapAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "What destroy puts back: `" + mmio.Use64bitMMIOKey + "`, `" + mmio.SizeGBKey + "`, `" +
					vsphere.AllowP2PKey + "`, `" + vsphere.RelaxACSKey + "` and `" + vsphere.NUMANodeAffinityKey + "` as the VM had " +
					"them before this resource set them (an empty value: the key was not set, and destroy removes it). Kept in state, " +
					"so a create that fails half-way, and the apply that replaces it, still restore them. State from releases before " +
					"`peer_to_peer` or `numa_node_affinity` lacks their keys: destroy then removes them if the attribute is set. With " +
					"`peer_to_peer` or `numa_node_affinity` left out, destroy leaves its keys as they are.",
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"power_off_allowed": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Attaching or detaching GPUs and switching to EFI need the VM powered off. With `true` the provider " +
					"shuts the guest down, makes the change and powers the VM back on; with `false` (default) the plan fails on a running VM.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"gpu": schema.ListNestedBlock{
				MarkdownDescription: "A GPU to pass through: a PCI id on the VM's host, or (dynamic DirectPath) a vendor and device id " +
					"with `count` GPUs of that model, from a pool when `label` is given. Each GPU and each model (with its label) is " +
					"given once: two blocks naming the same GPU, or the same model and label, are refused. The order of the blocks " +
					"makes no difference to the VM: the order its devices are in " +
					"is never drift, and blocks only reordered plan an update that changes nothing on the VM.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"pci_id": schema.StringAttribute{
						Optional: true, MarkdownDescription: "PCI id on the VM's host, e.g. `0000:3b:00.0` (`vspherehpc_host`'s `gpus`).",
						Validators: []validator.String{stringvalidator.RegexMatches(pciIDPattern, "must be a PCI id such as 0000:3b:00.0")},
					},
					"vendor_id": schema.StringAttribute{
						Optional: true, MarkdownDescription: "Dynamic DirectPath: PCI vendor id, four hex digits (`10de` for NVIDIA).",
						Validators: []validator.String{stringvalidator.RegexMatches(hexIDPattern, "must be four lower-case hex digits, such as 10de")},
					},
					"device_id": schema.StringAttribute{
						Optional: true, MarkdownDescription: "Dynamic DirectPath: PCI device id, four hex digits.",
						Validators: []validator.String{stringvalidator.RegexMatches(hexIDPattern, "must be four lower-case hex digits, such as 2330")},
					},
					"count": schema.Int64Attribute{
						Optional: true, CustomType: wholeNumber(2, maxPassthroughDevices),
						MarkdownDescription: fmt.Sprintf("Dynamic DirectPath: how many GPUs of the model, from 2 to %d (the most "+
							"passthrough devices a VM takes, on ESXi 8.0 U2); leave it out for one. One block per model.", maxPassthroughDevices),
						Validators: []validator.Int64{gpuCountRange{}},
					},
					"label": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Dynamic DirectPath: take GPUs of the model only from the pool of this hardware label " +
							"(`vspherehpc_host_pci_passthrough`'s `hardware_label`, or host > Configure > PCI Devices > Hardware Label). The " +
							"plan refuses a pool with fewer free GPUs than `count` on the VM's host, unless another host of its DRS cluster " +
							"has enough (then it warns: DRS places the VM there at power on). Not for a GPU given by `pci_id`. One block per " +
							"model and label.",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
					},
				}},
			},
			"vgpu": schema.ListNestedBlock{
				MarkdownDescription: "NVIDIA vGPUs (the vSphere Client's \"Shared PCI device\"): `count` vGPUs of one profile, which " +
					"the VM's host places on its GPUs in *Shared Direct* mode at power on (`vspherehpc_host_graphics`). The profile must " +
					"be one the host offers (`vspherehpc_host`'s `vgpu_profiles`), all of one board and series (NVIDIA: multiple vGPUs " +
					fmt.Sprintf("per VM need the same board type and series), at most %d per VM (vSphere 8), and fit the ", vsphere.MaxVGPUsPerVM) +
					"host's GPUs beside the vGPUs of its running VMs and those the same plan gives them: in equal-size mode, ESXi's " +
					"default, a GPU holds vGPUs of one " +
					"frame buffer size only. A VM with vGPUs gets EFI, all memory reserved and the 64-bit MMIO keys with at least " +
					fmt.Sprintf("%d GB, as NVIDIA asks for C-series vGPUs. One block per profile, in any order.", mmio.VGPUMinSizeGB),
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"profile": schema.StringAttribute{
						Required: true, MarkdownDescription: "The vGPU profile as vSphere names it, e.g. `grid_a100-20c` or `nvidia_h100xm-80c`.",
						Validators: []validator.String{stringvalidator.RegexMatches(vgpuProfilePattern,
							"must be a vGPU profile as vSphere names it, such as grid_a100-20c")},
					},
					"count": schema.Int64Attribute{
						Optional: true, CustomType: wholeNumber(2, vsphere.MaxVGPUsPerVM),
						MarkdownDescription: fmt.Sprintf("How many vGPUs of the profile, from 2 to %d; leave it out for one.", vsphere.MaxVGPUsPerVM),
						Validators:          []validator.Int64{int64validator.Between(2, vsphere.MaxVGPUsPerVM)},
					},
				}},
			},
			"pci_device": schema.ListNestedBlock{
				MarkdownDescription: "Another PCI device to pass through beside the GPUs: an InfiniBand virtual function " +
					"(`vspherehpc_host_sriov`'s `virtual_function_ids`, enabled with `vspherehpc_host_pci_passthrough`) or a whole ConnectX " +
					"physical function. It must be active for passthrough on the VM's host and used by no other VM. Its memory does not " +
					"count toward `mmio_size_gb`; with no `gpu` block, give `mmio_size_gb`. Each device is given once, in any order, " +
					"as `gpu`'s blocks.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"pci_id": schema.StringAttribute{
						Required: true, MarkdownDescription: "PCI id on the VM's host, e.g. `0000:86:00.1` (`vspherehpc_host`'s `pci_devices`).",
						Validators: []validator.String{stringvalidator.RegexMatches(pciIDPattern, "must be a PCI id such as 0000:86:00.1")},
					},
				}},
			},
		},
	}
}

func (r *vmGPUMMIOResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client, r.claims = resourceDataFrom(req.ProviderData, &resp.Diagnostics)
}

// devices lists the PCI ids of pci_device blocks.
func devices(ctx context.Context, l types.List, diags *diag.Diagnostics) []string {
	var list []pciDeviceBlockModel
	if !l.IsNull() && !l.IsUnknown() {
		diags.Append(l.ElementsAs(ctx, &list, false)...)
	}
	var out []string
	for _, d := range list {
		out = append(out, d.PCIID.ValueString())
	}
	return out
}

func (r *vmGPUMMIOResource) gpus(ctx context.Context, l types.List, diags *diag.Diagnostics) []gpuBlockModel {
	var list []gpuBlockModel
	if !l.IsNull() && !l.IsUnknown() {
		diags.Append(l.ElementsAs(ctx, &list, false)...)
	}
	return list
}

func (r *vmGPUMMIOResource) spec(ctx context.Context, m *vmGPUMMIOModel, diags *diag.Diagnostics) vsphere.GPUMMIOSpec {
	return vsphere.GPUMMIOSpec{GPUs: r.requests(ctx, m.GPU, diags), Devices: devices(ctx, m.PCIDevice, diags), VGPUs: vgpus(ctx, m.VGPU, diags),
		MMIOSizeGB: m.MMIOSizeGB.ValueInt64(), PowerOffAllowed: m.PowerOffAllowed.ValueBool(), PeerToPeer: m.PeerToPeer.ValueBoolPointer(),
		NUMANodeAffinity: numaNodes(ctx, m.NUMANodeAffinity, diags)}
}

// numaNodes are the nodes of a numa_node_affinity, nil when it is null or
// unknown (not managed).
func numaNodes(ctx context.Context, s types.Set, diags *diag.Diagnostics) *[]int {
	if s.IsNull() || s.IsUnknown() {
		return nil
	}
	var nodes []int64
	diags.Append(s.ElementsAs(ctx, &nodes, false)...)
	out := make([]int, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, int(n))
	}
	return &out
}

func vgpuBlocks(ctx context.Context, l types.List, diags *diag.Diagnostics) []vgpuBlockModel {
	var list []vgpuBlockModel
	if !l.IsNull() && !l.IsUnknown() {
		diags.Append(l.ElementsAs(ctx, &list, false)...)
	}
	return list
}

// vgpus are the vGPUs vgpu blocks ask for, by profile, a block with count n
// giving n.
func vgpus(ctx context.Context, l types.List, diags *diag.Diagnostics) []string {
	var out []string
	for _, v := range vgpuBlocks(ctx, l, diags) {
		for range v.vgpuCount() {
			out = append(out, v.Profile.ValueString())
		}
	}
	return out
}

// requests are the GPUs gpu blocks ask for, a block with count n giving n.
func (r *vmGPUMMIOResource) requests(ctx context.Context, l types.List, diags *diag.Diagnostics) []vsphere.GPURequest {
	var out []vsphere.GPURequest
	for _, g := range r.gpus(ctx, l, diags) {
		for range g.gpuCount() {
			out = append(out, g.request())
		}
	}
	return out
}

func (r *vmGPUMMIOResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer vmIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan vmGPUMMIOModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() || !r.claims.awaitReboots(ctx, plan.VirtualMachineID.ValueString(), &resp.Diagnostics) {
		return
	}
	vmID := plan.VirtualMachineID.ValueString()
	before, err := r.client.GPUMMIO(ctx, vmID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read virtual machine "+vmID, err))
		return
	}
	plan.ExtraConfigBefore = stringMap(before.ExtraConfig)
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateVM, before.VM.MOID)...)
	spec := r.spec(ctx, &plan, &resp.Diagnostics)
	if err := r.client.ApplyGPUMMIO(ctx, vmID, spec); err != nil {
		switch {
		case errors.Is(err, vsphere.ErrNotPoweredBackOn):
			// Only the power-on after the reconfigure failed: the setup is
			// made, and tracked.
			resp.Diagnostics.Append(vsphereErrorDiag("Cannot set up GPU passthrough on virtual machine "+vmID, err))
			r.recordCreated(ctx, &plan, before.VM, resp)
		case errors.Is(err, vsphere.ErrTaskLost) && r.landed(ctx, vmID, spec):
			// The VM has the setup: recorded, not failed (a failed create
			// is replaced at the next apply, for nothing).
			resp.Diagnostics.AddWarning("GPU passthrough set up, its task not seen to end",
				fmt.Sprintf("The end of the reconfigure of virtual machine %s could not be read (%s), but the VM has the setup: it is "+
					"recorded.", vmID, errorDetail(err)))
			r.recordCreated(ctx, &plan, before.VM, resp)
		default: // the reconfigure failed, or its task, not seen to end, has not changed the VM yet
			resp.Diagnostics.Append(vsphereErrorDiag("Cannot set up GPU passthrough on virtual machine "+vmID, err))
		}
		return
	}
	tflog.Debug(ctx, "Set up GPU passthrough", map[string]any{"virtual_machine_id": vmID, "mmio_size_gb": plan.MMIOSizeGB.ValueInt64()})
	r.recordCreated(ctx, &plan, before.VM, resp)
}

// recordCreated reads back a setup the create made into state. vSphere has
// changed, so a read that fails records the plan, with what destroy
// restores, and warns: nothing is left untracked, and the next refresh
// reads the rest.
func (r *vmGPUMMIOResource) recordCreated(ctx context.Context, plan *vmGPUMMIOModel, vm vsphere.VMRef, resp *resource.CreateResponse) {
	err := r.read(ctx, plan, &resp.State, resp.Private, &resp.Diagnostics)
	if err == nil {
		return
	}
	plan.ID = types.StringValue(strings.ToLower(vm.ID))
	if plan.TotalGPUMemoryGB.IsUnknown() {
		plan.TotalGPUMemoryGB = types.Float64Value(0) // known at the next plan
	}
	resp.Diagnostics.AddWarning("GPU passthrough set up, not read back",
		fmt.Sprintf("Virtual machine %s was set up for GPU passthrough, but reading it back failed: %s. State records the plan; the "+
			"next refresh reads the VM.", vm.Name, errorDetail(err)))
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, plan)...)
}

// landed reports whether the VM has the setup spec asks for, as read now:
// on time of its own, as the apply's may be what ran out (or was cancelled).
func (r *vmGPUMMIOResource) landed(ctx context.Context, vmID string, spec vsphere.GPUMMIOSpec) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), landedTimeout)
	defer cancel()
	got, err := r.client.GPUMMIO(ctx, vmID)
	return err == nil && got.Use64bitMMIO && got.MMIOSizeGB == spec.MMIOSizeGB && got.Firmware == "efi" &&
		(spec.PeerToPeer == nil || got.PeerToPeer == *spec.PeerToPeer) &&
		(spec.NUMANodeAffinity == nil || !got.NUMANodeAffinityUnreadable &&
			vsphere.FormatNUMANodes(got.NUMANodeAffinity) == vsphere.FormatNUMANodes(*spec.NUMANodeAffinity)) &&
		vsphere.SameGPUs(vsphere.PassthroughRequests(spec.GPUs, spec.Devices, spec.VGPUs), got.Devices)
}

// landedTimeout bounds the read that looks for a setup whose task was not
// seen to end.
const landedTimeout = 30 * time.Second

// read reads the VM just changed into m, keeping m's device order, sets
// state, and records the host the setup is now applied on.
func (r *vmGPUMMIOResource) read(ctx context.Context, m *vmGPUMMIOModel, state stateSetter, private privateState, diags *diag.Diagnostics) error {
	got, err := r.client.GPUMMIO(ctx, m.VirtualMachineID.ValueString())
	if err != nil {
		return err
	}
	diags.Append(gpuMMIOToModel(ctx, got, m, nil)...)
	diags.Append(state.Set(ctx, m)...)
	recordHost(ctx, private, got.HostID, true, diags)
	return nil
}

// extraConfigBefore is what destroy puts back: state's record, or, in state
// an older release wrote, private state's.
func extraConfigBefore(ctx context.Context, state vmGPUMMIOModel, private privateState, diags *diag.Diagnostics) map[string]string {
	before := map[string]string{}
	if !state.ExtraConfigBefore.IsNull() && !state.ExtraConfigBefore.IsUnknown() {
		diags.Append(state.ExtraConfigBefore.ElementsAs(ctx, &before, false)...)
		return before
	}
	_, ds := getPrivateJSON(ctx, private, privateExtraConfig, &before)
	diags.Append(ds...)
	return before
}

// restored is what destroy puts back of the record before. The
// peer-to-peer keys are the setup's only with peer_to_peer set, and the
// NUMA key with numa_node_affinity set: left out, they stay as they are;
// set, with a record from before the attribute (which lacks them), they are
// removed, as the setup set them.
func restored(state vmGPUMMIOModel, before map[string]string) map[string]string {
	out := maps.Clone(before)
	for key, unmanaged := range map[string]bool{
		vsphere.AllowP2PKey: state.PeerToPeer.IsNull(), vsphere.RelaxACSKey: state.PeerToPeer.IsNull(),
		vsphere.NUMANodeAffinityKey: state.NUMANodeAffinity.IsNull(),
	} {
		_, recorded := out[key]
		switch {
		case unmanaged:
			delete(out, key)
		case !recorded:
			out[key] = ""
		}
	}
	return out
}

// recordHost records the host a read found the VM on, and, when checked,
// as the host its setup was checked on.
func recordHost(ctx context.Context, private privateState, hostID string, checked bool, diags *diag.Diagnostics) {
	diags.Append(setPrivateJSON(ctx, private, privateOnHost, hostID)...)
	if checked {
		diags.Append(setPrivateJSON(ctx, private, privateCheckedOnHost, hostID)...)
	}
}

func (r *vmGPUMMIOResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	vmIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics)
	defer vmIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var state vmGPUMMIOModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	got, err := readVM(ctx, req.Private, state.VirtualMachineID.ValueString(), state.ID, &resp.Diagnostics, func(vmID string) (*vsphere.GPUMMIO, error) {
		return r.client.GPUMMIO(ctx, vmID)
	})
	if keptAsLastRead(err, "The GPU passthrough setup", &resp.Diagnostics) {
		return
	}
	if errors.Is(err, vsphere.ErrNotFound) {
		tflog.Warn(ctx, "Virtual machine is gone; removing its GPU setup from state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read virtual machine "+state.VirtualMachineID.ValueString(), err))
		return
	}
	if got.Empty() {
		tflog.Warn(ctx, "GPU setup removed out of band; removing it from state", map[string]any{"id": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateVM, got.VM.MOID)...)
	recordHost(ctx, resp.Private, got.HostID, false, &resp.Diagnostics)
	state.ExtraConfigBefore = stringMap(extraConfigBefore(ctx, state, req.Private, &resp.Diagnostics))
	state.VirtualMachineID = followVM(state.VirtualMachineID, got.VM)
	gpus := r.requests(ctx, state.GPU, &resp.Diagnostics)
	known := vsphere.PassthroughRequests(gpus, devices(ctx, state.PCIDevice, &resp.Diagnostics), vgpus(ctx, state.VGPU, &resp.Diagnostics))
	var others map[string]bool
	if len(got.Devices) > 0 && (!vsphere.SameGPUs(known, got.Devices) || (len(gpus) > 0 && state.TotalGPUMemoryGB.ValueFloat64() == 0)) {
		// Devices changed out of band, or just imported: which are GPUs, and
		// their memory (which sizes the window), is the host's to say.
		sorted, err := r.client.SortPassthrough(ctx, state.VirtualMachineID.ValueString(), got.Devices)
		if err != nil {
			// A total of 0 with GPUs is one not known yet: the next plan and
			// refresh read it again, rather than size the window from the
			// total of devices the VM no longer has.
			state.TotalGPUMemoryGB = types.Float64Value(0)
			resp.Diagnostics.AddWarning("GPU memory not read",
				fmt.Sprintf("The host of virtual machine %s could not be read to tell which of the VM's passthrough devices are GPUs "+
					"and how much memory they have (%s). total_gpu_memory_gb is 0 until a refresh reads it; the next plan reads the host.",
					state.VirtualMachineID.ValueString(), errorDetail(err)))
		} else {
			state.TotalGPUMemoryGB = types.Float64Value(sorted.GPUMemoryGB)
			others = map[string]bool{}
			for _, d := range sorted.Others {
				others[d.PCIID] = true
			}
		}
	}
	resp.Diagnostics.Append(gpuMMIOToModel(ctx, got, &state, others)...)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}

func (r *vmGPUMMIOResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer vmIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan vmGPUMMIOModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	if resp.Diagnostics.HasError() || !r.claims.awaitReboots(ctx, plan.VirtualMachineID.ValueString(), &resp.Diagnostics) {
		return
	}
	if err := r.client.ApplyGPUMMIO(ctx, plan.VirtualMachineID.ValueString(), r.spec(ctx, &plan, &resp.Diagnostics)); err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot change GPU passthrough on virtual machine "+plan.VirtualMachineID.ValueString(), err))
		if errors.Is(err, vsphere.ErrNotPoweredBackOn) {
			r.readBack(ctx, &plan, resp)
		}
		return
	}
	r.readBack(ctx, &plan, resp)
}

// readBack reads back a setup an update changed into state; a read that
// fails leaves state as it was, and the next apply makes the change again.
func (r *vmGPUMMIOResource) readBack(ctx context.Context, plan *vmGPUMMIOModel, resp *resource.UpdateResponse) {
	if err := r.read(ctx, plan, &resp.State, resp.Private, &resp.Diagnostics); err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read virtual machine "+plan.VirtualMachineID.ValueString(), err))
	}
}

func (r *vmGPUMMIOResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = vsphere.ForChange(ctx)
	var state vmGPUMMIOModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	before := restored(state, extraConfigBefore(ctx, state, req.Private, &resp.Diagnostics))
	// As an adapter's destroy: a VM registered again since the plan is
	// followed; one found by no id is gone, and its devices with it.
	_, err := readVM(ctx, req.Private, state.VirtualMachineID.ValueString(), state.ID, &resp.Diagnostics, func(vmID string) (struct{}, error) {
		return struct{}{}, r.client.RemoveGPUMMIO(ctx, vmID, before, state.PowerOffAllowed.ValueBool())
	})
	if err != nil && !vmNotFound(err) {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot remove GPU passthrough from virtual machine "+state.VirtualMachineID.ValueString(), err))
	}
}

// ImportState adopts a VM's GPU setup by its UUID; the MMIO values found
// are the ones destroy leaves.
func (r *vmGPUMMIOResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	defer vmIdentity.adopted(ctx, r.claims, resp)
	target, ok := vmIdentity.target(ctx, req, &resp.Diagnostics)
	if !ok {
		return
	}
	importID := target.VirtualMachineID.ValueString()
	got, err := r.client.GPUMMIO(ctx, importID)
	if err != nil {
		lookupFailed(req, &resp.Diagnostics, "Cannot import the GPU setup of virtual machine "+importID, "virtual_machine_id", importID, err)
		return
	}
	if got.Empty() {
		resp.Diagnostics.AddError("Nothing to import",
			fmt.Sprintf("Virtual machine %s (%s) has no GPU passthrough setup: no passthrough GPU and neither %s nor %s. "+
				"Create the resource instead; it sets the VM up.", got.VM.Name, importID, mmio.Use64bitMMIOKey, mmio.SizeGBKey))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("extra_config_before"), stringMap(got.ExtraConfig))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("peer_to_peer"), peerToPeerFound(got))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("numa_node_affinity"), numaAffinityFound(got))...)
	recordHost(ctx, resp.Private, got.HostID, true, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("virtual_machine_id"), strings.ToLower(got.VM.ID))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), strings.ToLower(got.VM.ID))...)
}
