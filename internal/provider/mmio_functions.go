package provider

import (
	"context"
	"fmt"
	"math"

	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ function.Function = (*mmioSizeGBFunction)(nil)
	_ function.Function = (*mmioExtraConfigFunction)(nil)
)

// The MMIO rule as provider-defined functions (Terraform 1.8+, OpenTofu
// 1.7+): pure computations that need no vCenter. vspherehpc_mmio_size does
// the same for Terraform 1.5-1.7.

type mmioSizeGBFunction struct{}

// NewMMIOSizeGBFunction is provider::vspherehpc::mmio_size_gb.
func NewMMIOSizeGBFunction() function.Function {
	return &mmioSizeGBFunction{}
}

func (f *mmioSizeGBFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "mmio_size_gb"
}

func (f *mmioSizeGBFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The 64-bit MMIO window for a VM's passthrough GPUs",
		MarkdownDescription: "Returns `pciPassthru.64bitMMIOSizeGB` for GPUs with the given framebuffer memory: the smallest power of " +
			"two that is at least twice their total, as `vspherehpc_mmio_size` computes it, with no vCenter involved; with NVIDIA vGPUs " +
			"after it, at least 64. `mmio_size_gb([80, 80])` is 512, `mmio_size_gb([], \"grid_a100-20c\", \"grid_a100-20c\")` is 64.",
		Parameters:        []function.Parameter{gpuMemoryParameter()},
		VariadicParameter: vgpuProfilesParameter(),
		Return:            function.Int64Return{},
	}
}

func (f *mmioSizeGBFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	size, err := mmioSizeOf(ctx, req)
	if err != nil {
		resp.Error = err
		return
	}
	resp.Error = resp.Result.Set(ctx, size)
}

type mmioExtraConfigFunction struct{}

// NewMMIOExtraConfigFunction is provider::vspherehpc::mmio_extra_config.
func NewMMIOExtraConfigFunction() function.Function {
	return &mmioExtraConfigFunction{}
}

func (f *mmioExtraConfigFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "mmio_extra_config"
}

func (f *mmioExtraConfigFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The extra_config a VM's passthrough GPUs need",
		MarkdownDescription: "Returns the VM advanced settings for GPUs with the given framebuffer memory, ready for " +
			"`vsphere_virtual_machine.extra_config`: `pciPassthru.use64bitMMIO = \"TRUE\"` and `pciPassthru.64bitMMIOSizeGB` " +
			"from `mmio_size_gb`, vGPUs included.",
		Parameters:        []function.Parameter{gpuMemoryParameter()},
		VariadicParameter: vgpuProfilesParameter(),
		Return:            function.MapReturn{ElementType: types.StringType},
	}
}

func (f *mmioExtraConfigFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	size, err := mmioSizeOf(ctx, req)
	if err != nil {
		resp.Error = err
		return
	}
	resp.Error = resp.Result.Set(ctx, mmio.ExtraConfig(size))
}

func gpuMemoryParameter() function.ListParameter {
	return function.ListParameter{
		Name:        "gpu_memory_gb",
		ElementType: types.NumberType,
		MarkdownDescription: fmt.Sprintf("Framebuffer memory of each GPU passed through to the VM, in GB, e.g. `[80, 80]` for two H100 80GB "+
			"(at least one GPU unless vGPUs follow, each size greater than zero and at most %d: no GPU made has more, the most today is 288 GB, so a larger "+
			"number is refused as megabytes or bytes given for GB).", mmio.MaxGPUMemoryGB),
	}
}

func vgpuProfilesParameter() function.StringParameter {
	return function.StringParameter{
		Name: "vgpu_profiles",
		MarkdownDescription: fmt.Sprintf("The VM's NVIDIA vGPUs, one profile name per vGPU as vSphere names them (e.g. `\"grid_a100-20c\"`), "+
			"at most %d. With any, the window is at least %d GB: NVIDIA asks C-series vGPUs for \"MMIO space ... increased to 64 GB\" "+
			"(NVIDIA AI Enterprise, with VMware KB 2142307), whatever their frame buffer. The GPU list may then be empty.",
			vsphere.MaxVGPUsPerVM, mmio.VGPUMinSizeGB),
	}
}

// mmioSizeOf reads the GPU sizes and vGPU profiles and applies the MMIO
// rule.
func mmioSizeOf(ctx context.Context, req function.RunRequest) (int64, *function.FuncError) {
	var sizes []types.Number
	var vgpus []string
	if err := req.Arguments.Get(ctx, &sizes, &vgpus); err != nil {
		return 0, err
	}
	if len(vgpus) > vsphere.MaxVGPUsPerVM {
		return 0, function.NewArgumentFuncError(1+vsphere.MaxVGPUsPerVM,
			fmt.Sprintf("%d vGPUs given: vSphere gives a VM at most %d", len(vgpus), vsphere.MaxVGPUsPerVM))
	}
	for i, p := range vgpus {
		if !vgpuProfilePattern.MatchString(p) {
			return 0, function.NewArgumentFuncError(int64(1+i), fmt.Sprintf("vGPU %d: %q is not an NVIDIA vGPU profile as vSphere names it, "+
				"e.g. grid_a100-20c", i+1, p))
		}
	}
	switch {
	case len(sizes) == 0 && len(vgpus) > 0:
		return mmio.WithVGPUs(0, true), nil
	case len(sizes) == 0:
		return 0, function.NewArgumentFuncError(0, "no GPUs given: list the framebuffer memory of each GPU in GB, or give the VM's "+
			"vGPU profiles after the list")
	}
	groups := make([]mmio.Group, 0, len(sizes))
	for i, v := range sizes {
		if v.IsNull() {
			return 0, function.NewArgumentFuncError(0, fmt.Sprintf("GPU %d: the memory size is null; give each GPU's framebuffer memory in GB", i+1))
		}
		gb, _ := v.ValueBigFloat().Float64()
		if math.IsInf(gb, 0) && !v.ValueBigFloat().IsInf() {
			return 0, function.NewArgumentFuncError(0, fmt.Sprintf("GPU %d: memory size %s GB is beyond any GPU", i+1, v.ValueBigFloat().Text('g', 6)))
		}
		groups = append(groups, mmio.Group{Count: 1, MemoryGB: gb})
	}
	total, _, err := mmio.TotalGB(groups)
	if err != nil {
		return 0, function.NewArgumentFuncError(0, err.Error())
	}
	size, err := mmio.SizeGB(total)
	if err != nil {
		return 0, function.NewArgumentFuncError(0, err.Error())
	}
	return mmio.WithVGPUs(size, len(vgpus) > 0), nil
}
