package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// NewVMGPUMMIOListResource lists VMs with a GPU setup for
// vspherehpc_vm_gpu_mmio.
func NewVMGPUMMIOListResource() list.ListResource {
	return &listResource{typeName: "_vm_gpu_mmio", what: "the VMs with passthrough devices or the MMIO keys", list: listGPUMMIO,
		adopts: " An MMIO window smaller than the `vspherehpc_mmio_size` rule asks for the VM's GPUs is left out of the result (`mmio_size_gb` null), with a warning: the plan grows it to the rule's size."}
}

// listGPUMMIO lists GPU setups. An MMIO window smaller than the rule asks
// for the GPUs' memory is left to the rule in the result, so the plan shows
// it growing.
func listGPUMMIO(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, _ string) ([]listed, error) {
	setups, err := c.ListGPUMMIO(ctx, scope)
	if err != nil {
		return nil, err
	}
	out := make([]listed, 0, len(setups))
	for _, s := range setups {
		if s.Unreadable != "" {
			out = append(out, leftOutOf("Virtual machine "+s.VM.Name, "The GPU setup of virtual machine "+s.VM.Name+" is not listed: "+s.Unreadable))
			continue
		}
		uuid := strings.ToLower(s.VM.ID)
		m := vmGPUMMIOModel{VirtualMachineID: types.StringValue(uuid), AllowFirmwareChange: types.BoolNull(), PowerOffAllowed: types.BoolNull(),
			TotalGPUMemoryGB: types.Float64Null()}
		var others map[string]bool
		if s.Sorted != nil {
			m.TotalGPUMemoryGB = types.Float64Value(s.Sorted.GPUMemoryGB)
			others = map[string]bool{}
			for _, d := range s.Sorted.Others {
				others[d.PCIID] = true
			}
		}
		if diags := gpuMMIOToModel(ctx, s.GPUMMIO, &m, others); diags.HasError() {
			return nil, fmt.Errorf("virtual machine %s: %v", s.VM.Name, diags)
		}
		item := listed{
			display:  fmt.Sprintf("%s: %d passthrough devices, MMIO window %s", s.VM.Name, len(s.Devices), windowOrUnset(s.MMIOSizeGB)),
			identity: vmIdentityModel{VirtualMachineID: types.StringValue(uuid)},
		}
		if s.Sorted != nil && s.Sorted.GPUMemoryGB > 0 {
			if rule, err := mmio.SizeGB(s.Sorted.GPUMemoryGB); err == nil && s.MMIOSizeGB < rule {
				item.warnings = append(item.warnings, fmt.Sprintf("Virtual machine %s has an MMIO window of %s for %s GB of GPU memory: "+
					"too small to boot (the rule asks for %d GB). The generated configuration leaves mmio_size_gb to the rule; its "+
					"plan grows the window to %d GB.", s.VM.Name, windowOrUnset(s.MMIOSizeGB), mmio.FormatGB(s.Sorted.GPUMemoryGB), rule, rule))
				m.MMIOSizeGB = types.Int64Null()
			}
		}
		item.resource = m
		out = append(out, item)
	}
	return out, nil
}

func windowOrUnset(gb int64) string {
	if gb == 0 {
		return "unset"
	}
	return fmt.Sprintf("%d GB", gb)
}
