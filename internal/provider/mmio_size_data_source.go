package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
)

var (
	_ datasource.DataSource                   = (*mmioSizeDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig = (*mmioSizeDataSource)(nil)
)

type mmioSizeDataSource struct{}

type mmioSizeModel struct {
	GPUMemoryGB      types.List     `tfsdk:"gpu_memory_gb"`
	GPU              []mmioGPUModel `tfsdk:"gpu"`
	GPUCount         types.Int64    `tfsdk:"gpu_count"`
	TotalGPUMemoryGB types.Float64  `tfsdk:"total_gpu_memory_gb"`
	MMIOSizeGB       types.Int64    `tfsdk:"mmio_size_gb"`
	ExtraConfig      types.Map      `tfsdk:"extra_config"`
}

type mmioGPUModel struct {
	Count    types.Int64   `tfsdk:"count"`
	MemoryGB types.Float64 `tfsdk:"memory_gb"`
}

// NewMMIOSizeDataSource is the vspherehpc_mmio_size data source.
func NewMMIOSizeDataSource() datasource.DataSource {
	return &mmioSizeDataSource{}
}

func (d *mmioSizeDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_mmio_size"
}

func (d *mmioSizeDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Computes `pciPassthru.64bitMMIOSizeGB` for a VM from the framebuffer memory of the GPUs passed through to it. " +
			"Needs no vCenter connection.",
		Attributes: map[string]schema.Attribute{
			"gpu_memory_gb": schema.ListAttribute{
				ElementType:         types.Float64Type,
				Optional:            true,
				MarkdownDescription: "Framebuffer memory of each GPU in GB, one number per GPU, e.g. `[80, 80]` for two H100. Adds up with `gpu` blocks.",
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
				Computed:            true,
				MarkdownDescription: "The value for `pciPassthru.64bitMMIOSizeGB`: the smallest power of two that is at least twice `total_gpu_memory_gb`.",
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
							MarkdownDescription: "How many GPUs of this kind.",
							Validators:          []validator.Int64{int64validator.AtLeast(1)},
						},
						"memory_gb": schema.Float64Attribute{
							Required:            true,
							MarkdownDescription: "Framebuffer memory of one GPU in GB.",
						},
					},
				},
			},
		},
	}
}

// gpuSize is one GPU's memory and where the configuration gave it.
type gpuSize struct {
	gb   float64
	from path.Path
}

// gpuSizes flattens the configuration into one size per GPU. known is false
// while any value is still unknown, so validation waits for it.
func (m *mmioSizeModel) gpuSizes(ctx context.Context) (sizes []gpuSize, known bool, diags diag.Diagnostics) {
	if m.GPUMemoryGB.IsUnknown() {
		return nil, false, nil
	}
	var list []types.Float64
	diags.Append(m.GPUMemoryGB.ElementsAs(ctx, &list, false)...)
	for i, v := range list {
		if v.IsUnknown() {
			return nil, false, diags
		}
		sizes = append(sizes, gpuSize{v.ValueFloat64(), path.Root("gpu_memory_gb").AtListIndex(i)})
	}
	for i, g := range m.GPU {
		if g.Count.IsUnknown() || g.MemoryGB.IsUnknown() {
			return nil, false, diags
		}
		for range g.Count.ValueInt64() {
			sizes = append(sizes, gpuSize{g.MemoryGB.ValueFloat64(), path.Root("gpu").AtListIndex(i).AtName("memory_gb")})
		}
	}
	return sizes, true, diags
}

func (d *mmioSizeDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var cfg mmioSizeModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	sizes, known, diags := cfg.gpuSizes(ctx)
	resp.Diagnostics.Append(diags...)
	if !known {
		return
	}
	if len(sizes) == 0 {
		resp.Diagnostics.AddError("No GPUs given",
			"List the framebuffer memory of each GPU in GB, in gpu_memory_gb or in gpu { count, memory_gb } blocks.")
	}
	reported := map[string]bool{}
	for _, s := range sizes {
		if err := mmio.CheckMemoryGB(s.gb); err != nil && !reported[s.from.String()] {
			reported[s.from.String()] = true
			resp.Diagnostics.AddAttributeError(s.from, "Invalid GPU memory size",
				"Cannot size the MMIO window: "+err.Error()+". Give each GPU's framebuffer memory in GB, e.g. 80 for an H100.")
		}
	}
}

func (d *mmioSizeDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var state mmioSizeModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	sizes, _, diags := state.gpuSizes(ctx)
	resp.Diagnostics.Append(diags...)
	gbs := make([]float64, len(sizes))
	for i, s := range sizes {
		gbs[i] = s.gb
	}
	total, err := mmio.TotalGB(gbs)
	if err == nil {
		var size int64
		size, err = mmio.SizeGB(total)
		state.MMIOSizeGB = types.Int64Value(size)
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot compute the MMIO size", err.Error())
		return
	}
	state.GPUCount = types.Int64Value(int64(len(sizes)))
	state.TotalGPUMemoryGB = types.Float64Value(total)
	extra, diags := types.MapValueFrom(ctx, types.StringType, mmio.ExtraConfig(state.MMIOSizeGB.ValueInt64()))
	resp.Diagnostics.Append(diags...)
	state.ExtraConfig = extra
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}
