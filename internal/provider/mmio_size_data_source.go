package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ datasource.DataSource                   = (*mmioSizeDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig = (*mmioSizeDataSource)(nil)
)

type mmioSizeDataSource struct{}

type mmioSizeModel struct {
	GPUMemoryGB      types.List    `tfsdk:"gpu_memory_gb"`
	GPU              types.List    `tfsdk:"gpu"`
	VGPUProfiles     types.List    `tfsdk:"vgpu_profiles"`
	GPUCount         types.Int64   `tfsdk:"gpu_count"`
	TotalGPUMemoryGB types.Float64 `tfsdk:"total_gpu_memory_gb"`
	MMIOSizeGB       types.Int64   `tfsdk:"mmio_size_gb"`
	ExtraConfig      types.Map     `tfsdk:"extra_config"`
}

type mmioGPUModel struct {
	Count    types.Int64   `tfsdk:"count"`
	MemoryGB types.Float64 `tfsdk:"memory_gb"`
}

// maxGPUsPerGroup bounds count far above any VM's GPUs.
const maxGPUsPerGroup = 1024

// maxGPUMemoryGB is the most memory the GPUs can have in all for the rule to
// size a window: the window is at least twice the total, and at most
// mmio.MaxSizeGB. ValidateConfig checks the total.
const maxGPUMemoryGB = float64(mmio.MaxSizeGB / 2)

var (
	gpuMemoryRange = fmt.Sprintf("Greater than 0 and at most %d per GPU: no GPU made has more (the most today is 288 GB), so a larger "+
		"number is refused as megabytes or bytes given for GB. At most %d in all, as the window (twice the total or more) can be at most %d GB, "+
		"the most an ESXi host addresses.", mmio.MaxGPUMemoryGB, int64(maxGPUMemoryGB), mmio.MaxSizeGB)
	gpuMemoryType = realNumber(fmt.Sprintf("a number of GB greater than 0 and at most %d", mmio.MaxGPUMemoryGB))
)

// NewMMIOSizeDataSource is the vspherehpc_mmio_size data source.
func NewMMIOSizeDataSource() datasource.DataSource {
	return &mmioSizeDataSource{}
}

func (d *mmioSizeDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_mmio_size"
}

func (d *mmioSizeDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Computes `pciPassthru.64bitMMIOSizeGB` for a VM from the framebuffer memory of the GPUs passed through to it, " +
			"and its NVIDIA vGPUs. Needs no vCenter connection.",
		Attributes: map[string]schema.Attribute{
			"gpu_memory_gb": schema.ListAttribute{
				ElementType: gpuMemoryType,
				Optional:    true,
				MarkdownDescription: "Framebuffer memory of each GPU in GB, one number per GPU, e.g. `[80, 80]` for two H100. Adds up with `gpu` blocks. " +
					gpuMemoryRange,
			},
			"vgpu_profiles": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: fmt.Sprintf("The VM's NVIDIA vGPUs, one profile name per vGPU as vSphere names them (e.g. "+
					"`[\"grid_a100-20c\", \"grid_a100-20c\"]`), at most %d. With any, the window is at least %d GB: NVIDIA asks "+
					"C-series vGPUs for EFI, the 64-bit MMIO keys and \"MMIO space ... increased to 64 GB\" (NVIDIA AI Enterprise, with "+
					"VMware KB 2142307), whatever their frame buffer. The GPUs' rule applies beside them; vGPUs alone need no GPU.",
					vsphere.MaxVGPUsPerVM, mmio.VGPUMinSizeGB),
				Validators: []validator.List{listvalidator.SizeAtMost(vsphere.MaxVGPUsPerVM),
					listvalidator.ValueStringsAre(stringvalidator.RegexMatches(vgpuProfilePattern, "an NVIDIA vGPU profile as vSphere names it, "+
						"e.g. grid_a100-20c"))},
			},
			"gpu_count": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Number of GPUs counted.",
			},
			"total_gpu_memory_gb": schema.Float64Attribute{
				Computed:            true,
				MarkdownDescription: "Total framebuffer memory of all GPUs in GB.",
			},
			"mmio_size_gb": schema.Int64Attribute{
				Computed: true,
				MarkdownDescription: fmt.Sprintf("The value for `pciPassthru.64bitMMIOSizeGB`: the smallest power of two that is at least twice "+
					"`total_gpu_memory_gb`, and at least %d with `vgpu_profiles`.", mmio.VGPUMinSizeGB),
			},
			"extra_config": schema.MapAttribute{
				ElementType: types.StringType,
				Computed:    true,
				MarkdownDescription: "`pciPassthru.use64bitMMIO = \"TRUE\"` and `pciPassthru.64bitMMIOSizeGB`, ready to merge into " +
					"`vsphere_virtual_machine.extra_config`.",
			},
		},
		Blocks: map[string]schema.Block{
			"gpu": schema.ListNestedBlock{
				MarkdownDescription: "A group of identical GPUs. Adds up with `gpu_memory_gb`.",
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"count": schema.Int64Attribute{
							Required:            true,
							MarkdownDescription: "How many GPUs of this kind, from 1 to 1024.",
							CustomType:          wholeNumber(1, maxGPUsPerGroup),
							Validators:          []validator.Int64{int64validator.Between(1, maxGPUsPerGroup)},
						},
						"memory_gb": schema.Float64Attribute{
							Required:            true,
							MarkdownDescription: "Framebuffer memory of one GPU in GB. " + gpuMemoryRange,
							CustomType:          gpuMemoryType,
						},
					},
				},
			},
		},
	}
}

// gpuGroup is a group of GPUs and where the configuration gave it.
type gpuGroup struct {
	mmio.Group
	from path.Path
}

// gpuGroups reads the configuration as groups of GPUs. known is false while
// any value is still unknown (e.g. a dynamic block over a resource not yet
// created), so validation waits for it.
func (m *mmioSizeModel) gpuGroups(ctx context.Context) (groups []gpuGroup, known bool, diags diag.Diagnostics) {
	if m.GPUMemoryGB.IsUnknown() || m.GPU.IsUnknown() {
		return nil, false, nil
	}
	var sizes []types.Float64
	diags.Append(m.GPUMemoryGB.ElementsAs(ctx, &sizes, false)...)
	var blocks []types.Object
	diags.Append(m.GPU.ElementsAs(ctx, &blocks, false)...)
	if diags.HasError() {
		return nil, false, diags
	}
	for i, v := range sizes {
		at := path.Root("gpu_memory_gb").AtListIndex(i)
		switch {
		case v.IsUnknown():
			return nil, false, diags
		case v.IsNull():
			diags.AddAttributeError(at, "Missing GPU memory size", "Each element of gpu_memory_gb is one GPU's framebuffer memory in GB; this one is null.")
		}
		groups = append(groups, gpuGroup{mmio.Group{Count: 1, MemoryGB: v.ValueFloat64()}, at})
	}
	for i, b := range blocks {
		if b.IsUnknown() {
			return nil, false, diags
		}
		var g mmioGPUModel
		diags.Append(b.As(ctx, &g, basetypes.ObjectAsOptions{})...)
		if g.Count.IsUnknown() || g.MemoryGB.IsUnknown() {
			return nil, false, diags
		}
		groups = append(groups, gpuGroup{mmio.Group{Count: g.Count.ValueInt64(), MemoryGB: g.MemoryGB.ValueFloat64()}, path.Root("gpu").AtListIndex(i)})
	}
	return groups, true, diags
}

func (d *mmioSizeDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var cfg mmioSizeModel
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	groups, known, diags := cfg.gpuGroups(ctx)
	resp.Diagnostics.Append(diags...)
	if !known || diags.HasError() {
		return
	}
	if len(groups) == 0 && !cfg.VGPUProfiles.IsUnknown() && len(cfg.VGPUProfiles.Elements()) == 0 {
		resp.Diagnostics.AddError("No GPUs given",
			"List the framebuffer memory of each GPU in GB, in gpu_memory_gb or in gpu { count, memory_gb } blocks, or the VM's vGPUs "+
				"in vgpu_profiles.")
	}
	for _, g := range groups {
		if err := mmio.CheckGPUMemoryGB(g.MemoryGB); err != nil {
			resp.Diagnostics.AddAttributeError(g.from, "Invalid GPU memory size",
				"Cannot size the MMIO window: "+err.Error()+". Give each GPU's framebuffer memory in GB, e.g. 80 for an H100.")
		}
	}
	if resp.Diagnostics.HasError() || len(groups) == 0 {
		return
	}
	plain := make([]mmio.Group, len(groups))
	for i, g := range groups {
		plain[i] = g.Group
	}
	total, _, err := mmio.TotalGB(plain)
	if err == nil {
		_, err = mmio.SizeGB(total)
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot size the MMIO window",
			err.Error()+". Check gpu_memory_gb and the gpu blocks: each is one GPU's framebuffer memory in GB (e.g. 80 for an H100), "+
				"with count GPUs of it in a gpu block.")
	}
}

func (d *mmioSizeDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var state mmioSizeModel
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	groups, _, diags := state.gpuGroups(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	plain := make([]mmio.Group, len(groups))
	for i, g := range groups {
		plain[i] = g.Group
	}
	var total float64
	var gpus, size int64
	var err error
	if len(plain) > 0 {
		total, gpus, err = mmio.TotalGB(plain)
		if err == nil {
			size, err = mmio.SizeGB(total)
		}
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot compute the MMIO size", err.Error())
		return
	}
	size = mmio.WithVGPUs(size, len(state.VGPUProfiles.Elements()) > 0)
	if size == 0 {
		resp.Diagnostics.AddError("Cannot compute the MMIO size", "no GPUs or vGPUs given")
		return
	}
	state.GPUCount = types.Int64Value(gpus)
	state.TotalGPUMemoryGB = types.Float64Value(total)
	state.MMIOSizeGB = types.Int64Value(size)
	state.ExtraConfig, diags = types.MapValueFrom(ctx, types.StringType, mmio.ExtraConfig(size))
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}
