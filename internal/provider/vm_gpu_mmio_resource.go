package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

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
	_ resource.ResourceWithModifyPlan     = (*vmGPUMMIOResource)(nil)
	_ resource.ResourceWithValidateConfig = (*vmGPUMMIOResource)(nil)
)

// privateExtraConfig is the private-state key holding the MMIO extraConfig
// values the VM had before, which destroy puts back.
const privateExtraConfig = "extra_config_before"

type vmGPUMMIOResource struct {
	client *vsphere.Client
}

type vmGPUMMIOModel struct {
	ID                  types.String  `tfsdk:"id"`
	VirtualMachineID    types.String  `tfsdk:"virtual_machine_id"`
	GPU                 types.List    `tfsdk:"gpu"`
	MMIOSizeGB          types.Int64   `tfsdk:"mmio_size_gb"`
	TotalGPUMemoryGB    types.Float64 `tfsdk:"total_gpu_memory_gb"`
	Firmware            types.String  `tfsdk:"firmware"`
	Use64bitMMIO        types.Bool    `tfsdk:"use_64bit_mmio"`
	MemoryLockedToMax   types.Bool    `tfsdk:"memory_reservation_locked_to_max"`
	AllowFirmwareChange types.Bool    `tfsdk:"allow_firmware_change"`
	PowerOffAllowed     types.Bool    `tfsdk:"power_off_allowed"`
}

type gpuBlockModel struct {
	PCIID    types.String `tfsdk:"pci_id"`
	VendorID types.String `tfsdk:"vendor_id"`
	DeviceID types.String `tfsdk:"device_id"`
}

var gpuBlockType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"pci_id": types.StringType, "vendor_id": types.StringType, "device_id": types.StringType,
}}

func (g gpuBlockModel) request() vsphere.GPURequest {
	return vsphere.GPURequest{PCIID: g.PCIID.ValueString(), VendorID: g.VendorID.ValueString(), DeviceID: g.DeviceID.ValueString()}
}

func (g gpuBlockModel) String() string {
	if id := g.PCIID.ValueString(); id != "" {
		return id
	}
	return g.VendorID.ValueString() + ":" + g.DeviceID.ValueString()
}

// NewVMGPUMMIOResource is the vspherehpc_vm_gpu_mmio resource.
func NewVMGPUMMIOResource() resource.Resource {
	return &vmGPUMMIOResource{}
}

func (r *vmGPUMMIOResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm_gpu_mmio"
}

var (
	pciIDPattern = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	hexIDPattern = regexp.MustCompile(`^[0-9a-f]{4}$`)
)

func (r *vmGPUMMIOResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Makes a VM ready for GPU passthrough in one reconfigure: EFI firmware, `pciPassthru.use64bitMMIO = TRUE`, " +
			"`pciPassthru.64bitMMIOSizeGB` sized for its GPUs, all guest memory reserved, and the GPUs themselves. One per VM.",
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
				Validators:    []validator.Int64{mmioSizeBound{}},
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
			"power_off_allowed": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Attaching or detaching GPUs and switching to EFI need the VM powered off. With `true` the provider " +
					"shuts the guest down, makes the change and powers the VM back on; with `false` (default) the plan fails on a running VM.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"gpu": schema.ListNestedBlock{
				MarkdownDescription: "A GPU to pass through: a PCI id on the VM's host, or (dynamic DirectPath) a vendor and device id.",
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
				}},
			},
		},
	}
}

func (r *vmGPUMMIOResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig: each GPU is a PCI id or a vendor and device id, and no
// PCI id is given twice (a VM given one GPU twice does not boot, with no
// error to say why).
func (r *vmGPUMMIOResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var gpus types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("gpu"), &gpus)...)
	if resp.Diagnostics.HasError() || gpus.IsUnknown() || gpus.IsNull() {
		return
	}
	var list []gpuBlockModel
	resp.Diagnostics.Append(gpus.ElementsAs(ctx, &list, true)...)
	seen := map[string]bool{}
	for i, g := range list {
		at := path.Root("gpu").AtListIndex(i)
		if g.PCIID.IsUnknown() || g.VendorID.IsUnknown() || g.DeviceID.IsUnknown() {
			continue
		}
		static, dynamic := !g.PCIID.IsNull(), !g.VendorID.IsNull() || !g.DeviceID.IsNull()
		switch {
		case static && dynamic:
			resp.Diagnostics.AddAttributeError(at, "Invalid GPU",
				fmt.Sprintf("gpu block %d gives both pci_id and vendor_id/device_id. Give a GPU either as pci_id (a device on the VM's "+
					"host) or as vendor_id and device_id (dynamic DirectPath: vSphere picks a device of that model at power on), not both.", i+1))
		case !static && !dynamic:
			resp.Diagnostics.AddAttributeError(at, "Invalid GPU",
				fmt.Sprintf("gpu block %d is empty. Give pci_id (a device on the VM's host, e.g. 0000:3b:00.0), or vendor_id and "+
					"device_id (dynamic DirectPath, e.g. 10de and 2330); vspherehpc_host lists a host's GPUs with both.", i+1))
		case dynamic && g.DeviceID.IsNull():
			resp.Diagnostics.AddAttributeError(at.AtName("device_id"), "Missing device_id",
				fmt.Sprintf("gpu block %d has vendor_id = %q but no device_id. Dynamic DirectPath needs both: add the GPU model's "+
					"device_id (four hex digits, e.g. 2330 for an H100 SXM5; vspherehpc_host lists its GPUs' ids), or give pci_id instead.", i+1, g.VendorID.ValueString()))
		case dynamic && g.VendorID.IsNull():
			resp.Diagnostics.AddAttributeError(at.AtName("vendor_id"), "Missing vendor_id",
				fmt.Sprintf("gpu block %d has device_id = %q but no vendor_id. Dynamic DirectPath needs both: add the GPU's "+
					"vendor_id (four hex digits, e.g. 10de for NVIDIA; vspherehpc_host lists its GPUs' ids), or give pci_id instead.", i+1, g.DeviceID.ValueString()))
		case static && seen[g.PCIID.ValueString()]:
			resp.Diagnostics.AddAttributeError(at, "GPU listed twice",
				fmt.Sprintf("GPU %s is listed twice. A VM given the same GPU twice does not boot, with no error: list it once.", g.PCIID.ValueString()))
		}
		seen[g.PCIID.ValueString()] = true
	}
}

func (r *vmGPUMMIOResource) gpus(ctx context.Context, l types.List, diags *diag.Diagnostics) []gpuBlockModel {
	var list []gpuBlockModel
	if !l.IsNull() && !l.IsUnknown() {
		diags.Append(l.ElementsAs(ctx, &list, false)...)
	}
	return list
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
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if req.Plan.Raw.IsNull() {
		if state != nil && len(r.gpus(ctx, state.GPU, &resp.Diagnostics)) > 0 {
			checkDestroyPower(ctx, r.client, state.VirtualMachineID.ValueString(), state.PowerOffAllowed.ValueBool(), vsphere.WhatGPUsNeedOff, &resp.Diagnostics)
		}
		return
	}
	var plan, config vmGPUMMIOModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if state != nil && replaceOnOtherVM(ctx, r.client, state.VirtualMachineID, plan.VirtualMachineID, resp) {
		state = nil // planned as a setup of the other VM
	}
	if plan.VirtualMachineID.IsUnknown() || plan.GPU.IsUnknown() || config.MMIOSizeGB.IsUnknown() || anyUnknownGPU(ctx, plan.GPU) {
		return // checked once the values are known
	}
	given := config.MMIOSizeGB.ValueInt64Pointer()
	vmID := plan.VirtualMachineID.ValueString()
	addClaimConflict(&resp.Diagnostics, path.Root("virtual_machine_id"), r.client.ClaimGPUSetup(vmID, vmID, r.requests(ctx, plan.GPU, &resp.Diagnostics), given))
	if state != nil && plan.GPU.Equal(state.GPU) && state.Firmware.ValueString() == "efi" && state.TotalGPUMemoryGB.ValueFloat64() > 0 {
		// Same GPUs: size the window from the recorded total, no vCenter
		// call, unless the window changes (which needs the VM's power state).
		size, f := vsphere.PlanMMIOSize(given, state.TotalGPUMemoryGB.ValueFloat64(), true, true)
		r.planSize(ctx, size, f, resp)
		if f != nil || size == state.MMIOSizeGB.ValueInt64() {
			return
		}
	}
	change := vsphere.GPUMMIOChange{
		VMID: vmID, GPUs: r.requests(ctx, plan.GPU, &resp.Diagnostics), MMIOSizeGB: given,
		AllowFirmwareChange: plan.AllowFirmwareChange.ValueBool(), PowerOffAllowed: plan.PowerOffAllowed.ValueBool(),
	}
	if state != nil {
		change.Existing, change.CurrentMMIOSizeGB = true, state.MMIOSizeGB.ValueInt64()
	}
	p, err := r.client.PlanGPUMMIO(ctx, change)
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("virtual_machine_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check GPU passthrough", err))
		return
	}
	var sizeFinding vsphere.Finding
	for _, f := range p.Findings {
		if addClaimConflict(&resp.Diagnostics, path.Root("gpu"), f) {
			continue
		}
		if isSizeFinding(f) {
			sizeFinding = f
		} else {
			addGPUMMIOFinding(&resp.Diagnostics, f)
		}
	}
	if p.Sized {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("total_gpu_memory_gb"), p.TotalMemoryGB)...)
		r.planSize(ctx, p.MMIOSizeGB, sizeFinding, resp)
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
	at := path.Root("mmio_size_gb")
	switch f := f.(type) {
	case nil:
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, size)...)
	case vsphere.MMIOSizeImpossible:
		resp.Diagnostics.AddAttributeError(at, "Cannot size the MMIO window", f.Err.Error())
	case vsphere.MMIOSizeUnknown:
		resp.Diagnostics.AddAttributeError(at, "GPU memory unknown",
			"The host does not report the memory of every GPU listed, so the MMIO size cannot be computed: set mmio_size_gb "+
				"(vspherehpc_mmio_size computes it from the GPUs' memory).")
	case vsphere.NothingToSize:
		resp.Diagnostics.AddAttributeError(at, "Nothing to size the MMIO window from",
			"List the VM's GPUs in gpu blocks, or set mmio_size_gb. (The resource manages all of the VM's GPU passthrough devices: "+
				"ones it is not given are detached.)")
	case vsphere.MMIONotPowerOfTwo:
		resp.Diagnostics.AddAttributeError(at, "MMIO size not a power of two",
			fmt.Sprintf("mmio_size_gb = %d is not a power of two; vSphere needs one (e.g. %d).", f.Given, f.Suggested))
	case vsphere.MMIOTooSmall:
		resp.Diagnostics.AddAttributeError(at, "MMIO size too small",
			fmt.Sprintf("mmio_size_gb = %d is below %d, what %s GB of GPU memory needs (the smallest power of two at least twice "+
				"the total). Too small a window and the VM does not boot, with no error: use %d or more.", f.Given, f.Rule, mmio.FormatGB(f.TotalGB), f.Rule))
	}
}

// addGPUMMIOFinding words one finding of the GPU planner.
func addGPUMMIOFinding(diags *diag.Diagnostics, f vsphere.Finding) {
	gpuPath := func(i int) path.Path { return path.Root("gpu").AtListIndex(i) }
	switch f := f.(type) {
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
				"GPU is one device at power on, so the VM would not power on: list at most %d gpu blocks of that model, or move the VM "+
				"to a host with more (vspherehpc_host lists a host's GPUs).", f.VM, f.Asked, model, f.Host, f.Active, f.Active))
	case vsphere.GPUNotActive:
		diags.AddAttributeError(gpuPath(f.Index), "GPU not enabled for passthrough",
			fmt.Sprintf("GPU %s (%s) on host %s is not active for passthrough. Enable it (host > Configure > Hardware > PCI Devices "+
				"> Toggle passthrough; older ESXi versions then need a reboot), or choose another GPU.", f.PCIID, f.Device, f.Host))
	case vsphere.GPUInUse:
		power := "powered off"
		if f.Other.PowerState == vsphere.PoweredOn {
			power = "powered on"
		}
		diags.AddAttributeError(gpuPath(f.Index), "GPU in use by another VM",
			fmt.Sprintf("GPU %s on host %s is already configured on virtual machine %s (%s). Two VMs with the same GPU cannot "+
				"both run, and the second does not boot, with no error: remove it there or choose another GPU.", f.PCIID, f.Host, f.Other.Name, power))
	case vsphere.GPUNotOnHost:
		where := "no host of its cluster has it"
		if f.OnHost != "" {
			where = "it is on host " + f.OnHost
		}
		diags.AddAttributeError(gpuPath(f.Index), "GPU not on the VM's host",
			fmt.Sprintf("Virtual machine %s runs on host %s, which has no GPU %s; %s. A VM can only pass through its own host's GPUs.", f.VM, f.Host, f.PCIID, where))
	case vsphere.FirmwareChangeRefused:
		diags.AddAttributeError(path.Root("allow_firmware_change"), "Guest OS installed under BIOS",
			fmt.Sprintf("Virtual machine %s has firmware %s and a guest OS (%s). GPU passthrough needs EFI, but a guest installed "+
				"under BIOS does not boot after the switch: install the OS after switching to EFI, or set allow_firmware_change = true "+
				"if the guest can boot EFI.", f.VM, f.Firmware, f.Guest))
	default:
		addPowerFinding(diags, f)
	}
}

func (r *vmGPUMMIOResource) spec(ctx context.Context, m *vmGPUMMIOModel, diags *diag.Diagnostics) vsphere.GPUMMIOSpec {
	return vsphere.GPUMMIOSpec{GPUs: r.requests(ctx, m.GPU, diags), MMIOSizeGB: m.MMIOSizeGB.ValueInt64(), PowerOffAllowed: m.PowerOffAllowed.ValueBool()}
}

func (r *vmGPUMMIOResource) requests(ctx context.Context, l types.List, diags *diag.Diagnostics) []vsphere.GPURequest {
	var out []vsphere.GPURequest
	for _, g := range r.gpus(ctx, l, diags) {
		out = append(out, g.request())
	}
	return out
}

func (r *vmGPUMMIOResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan vmGPUMMIOModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	vmID := plan.VirtualMachineID.ValueString()
	before, err := r.client.GPUMMIO(ctx, vmID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read virtual machine "+vmID, err))
		return
	}
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateExtraConfig, before.ExtraConfig)...)
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateVM, before.VM.MOID)...)
	if err := r.client.ApplyGPUMMIO(ctx, vmID, r.spec(ctx, &plan, &resp.Diagnostics)); err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot set up GPU passthrough on virtual machine "+vmID, err))
		// One reconfigure: when it failed, the VM is as it was. When only the
		// power-on after it failed, the setup is made: track it.
		if errors.Is(err, vsphere.ErrNotPoweredBackOn) {
			r.read(ctx, &plan, &resp.State, &resp.Diagnostics)
		}
		return
	}
	tflog.Debug(ctx, "Set up GPU passthrough", map[string]any{"virtual_machine_id": vmID, "mmio_size_gb": plan.MMIOSizeGB.ValueInt64()})
	r.read(ctx, &plan, &resp.State, &resp.Diagnostics)
}

// read reads the VM into m, keeping m's GPU order, and sets state.
func (r *vmGPUMMIOResource) read(ctx context.Context, m *vmGPUMMIOModel, state stateSetter, diags *diag.Diagnostics) {
	got, err := r.client.GPUMMIO(ctx, m.VirtualMachineID.ValueString())
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read virtual machine "+m.VirtualMachineID.ValueString(), err))
		return
	}
	diags.Append(gpuMMIOToModel(ctx, got, m)...)
	diags.Append(state.Set(ctx, m)...)
}

func gpuMMIOToModel(ctx context.Context, got *vsphere.GPUMMIO, m *vmGPUMMIOModel) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(strings.ToLower(got.VM.ID))
	m.Firmware = types.StringValue(got.Firmware)
	m.Use64bitMMIO = types.BoolValue(got.Use64bitMMIO)
	m.MemoryLockedToMax = types.BoolValue(got.MemoryLocked)
	m.MMIOSizeGB = types.Int64Value(got.MMIOSizeGB)
	if m.TotalGPUMemoryGB.IsUnknown() || m.TotalGPUMemoryGB.IsNull() {
		m.TotalGPUMemoryGB = types.Float64Value(0) // known at the next plan
	}
	for _, b := range []*types.Bool{&m.AllowFirmwareChange, &m.PowerOffAllowed} {
		if b.IsNull() || b.IsUnknown() {
			*b = types.BoolValue(false)
		}
	}
	// Keep the configured order for GPUs still there; append the others.
	var prior []gpuBlockModel
	if !m.GPU.IsNull() && !m.GPU.IsUnknown() {
		diags.Append(m.GPU.ElementsAs(ctx, &prior, false)...)
	}
	used := make([]bool, len(got.GPUs))
	var blocks []gpuBlockModel
	for _, p := range prior {
		for i, h := range got.GPUs {
			if !used[i] && p.request().Matches(h) {
				used[i] = true
				blocks = append(blocks, p)
				break
			}
		}
	}
	for i, h := range got.GPUs {
		if used[i] {
			continue
		}
		if h.Dynamic {
			blocks = append(blocks, gpuBlockModel{PCIID: types.StringNull(), VendorID: types.StringValue(h.VendorID), DeviceID: types.StringValue(h.DeviceID)})
		} else {
			blocks = append(blocks, gpuBlockModel{PCIID: types.StringValue(h.PCIID), VendorID: types.StringNull(), DeviceID: types.StringNull()})
		}
	}
	list, ds := types.ListValueFrom(ctx, gpuBlockType, blocks)
	diags.Append(ds...)
	m.GPU = list
	return diags
}

func (r *vmGPUMMIOResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state vmGPUMMIOModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	got, err := readVM(ctx, req.Private, state.VirtualMachineID.ValueString(), &resp.Diagnostics, func(vmID string) (*vsphere.GPUMMIO, error) {
		return r.client.GPUMMIO(ctx, vmID)
	})
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
	changed := !vsphere.SameGPUs(r.requests(ctx, state.GPU, &resp.Diagnostics), got.GPUs)
	resp.Diagnostics.Append(gpuMMIOToModel(ctx, got, &state)...)
	if len(got.GPUs) > 0 && (changed || state.TotalGPUMemoryGB.ValueFloat64() == 0) {
		// GPUs changed out of band, or just imported: the total (which sizes
		// the window) needs the host's view of the GPUs.
		if total, err := r.client.GPUMemoryGB(ctx, state.VirtualMachineID.ValueString(), got.GPUs); err == nil {
			state.TotalGPUMemoryGB = types.Float64Value(total)
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *vmGPUMMIOResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan vmGPUMMIOModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.State.Raw = req.State.Raw.Copy() // until read back: a failure must not record the plan
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.client.ApplyGPUMMIO(ctx, plan.VirtualMachineID.ValueString(), r.spec(ctx, &plan, &resp.Diagnostics)); err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot change GPU passthrough on virtual machine "+plan.VirtualMachineID.ValueString(), err))
		if errors.Is(err, vsphere.ErrNotPoweredBackOn) {
			r.read(ctx, &plan, &resp.State, &resp.Diagnostics)
		}
		return
	}
	r.read(ctx, &plan, &resp.State, &resp.Diagnostics)
}

func (r *vmGPUMMIOResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state vmGPUMMIOModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	before := map[string]string{}
	_, ds := getPrivateJSON(ctx, req.Private, privateExtraConfig, &before)
	resp.Diagnostics.Append(ds...)
	if err := r.client.RemoveGPUMMIO(ctx, state.VirtualMachineID.ValueString(), before, state.PowerOffAllowed.ValueBool()); err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot remove GPU passthrough from virtual machine "+state.VirtualMachineID.ValueString(), err))
	}
}

// ImportState adopts a VM's GPU setup by its UUID; the MMIO values found
// are the ones destroy leaves.
func (r *vmGPUMMIOResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	got, err := r.client.GPUMMIO(ctx, req.ID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot import the GPU setup of virtual machine "+req.ID, err))
		return
	}
	if got.Empty() {
		resp.Diagnostics.AddError("Nothing to import",
			fmt.Sprintf("Virtual machine %s (%s) has no GPU passthrough setup: no passthrough GPU and neither %s nor %s. "+
				"Create the resource instead; it sets the VM up.", got.VM.Name, req.ID, mmio.Use64bitMMIOKey, mmio.SizeGBKey))
		return
	}
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateExtraConfig, got.ExtraConfig)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("virtual_machine_id"), strings.ToLower(got.VM.ID))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), strings.ToLower(got.VM.ID))...)
}

// anyUnknownGPU reports whether a GPU block still has an unknown value.
func anyUnknownGPU(ctx context.Context, l types.List) bool {
	var list []gpuBlockModel
	if l.IsNull() || l.ElementsAs(ctx, &list, true).HasError() {
		return false
	}
	for _, g := range list {
		if g.PCIID.IsUnknown() || g.VendorID.IsUnknown() || g.DeviceID.IsUnknown() {
			return true
		}
	}
	return false
}
