package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// Which devices a VM has is a set (issue 23): a VM whose GPUs were attached
// in one order imports with no change under a configuration listing them in
// the other, and reordering the blocks later plans nothing.
func TestAccVMGPUMMIO_orderNeverMatters(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	gpus := lab.GPUs()
	memory := gpuMemoryGB(t, lab, vm)
	size, err := mmio.SizeGB(memory[0] + memory[1])
	must(t, err)
	// By hand, the second GPU first, as an outside client adding devices in
	// any order leaves them.
	must(t, lab.AttachGPU(ctx, vm, gpus[1]))
	must(t, lab.AttachGPU(ctx, vm, gpus[0]))
	must(t, lab.SetVMFirmware(ctx, vm, "efi"))
	for key, value := range mmio.ExtraConfig(size) {
		must(t, lab.SetVMExtraConfig(ctx, vm, key, value))
	}
	must(t, lab.SetVMMemoryReservationLocked(ctx, vm, true))
	inOrder := gpuConfig(lab, uuid, gpuBlock(gpus[0])+gpuBlock(gpus[1]))
	reversed := gpuConfig(lab, uuid, gpuBlock(gpus[1])+gpuBlock(gpus[0]))
	tfresource.UnitTest(t, tfresource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []tfresource.TestStep{
			{
				// The import block's plan must be a no-op (the framework of
				// tests fails it otherwise).
				Config:       requiredProviders + inOrder,
				ResourceName: gpuAddr, ImportState: true, ImportStateKind: tfresource.ImportBlockWithID, ImportStateId: uuid,
			},
			{Config: requiredProviders + inOrder, ResourceName: gpuAddr, ImportState: true, ImportStateId: uuid, ImportStatePersist: true},
			{Config: inOrder, PlanOnly: true},
			{Config: reversed, PlanOnly: true},
			{RefreshState: true},
			{Config: reversed, ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}, Check: func(*terraform.State) error {
				got, err := lab.VMSettings(ctx, vm)
				if err == nil && (len(got.GPUs) != 2 || got.GPUs[0] != gpus[1] || got.GPUs[1] != gpus[0]) {
					err = fmt.Errorf("the VM's GPUs are %v: adopting them must not touch them (%s then %s)", got.GPUs, gpus[1], gpus[0])
				}
				return err
			}},
		},
	})
}

// A version 0 state (lists, in the VM's order, one block per dynamic GPU)
// becomes sets, dynamic GPUs of one model one block with their count.
func TestGPUMMIOStateUpgradeFromV0(t *testing.T) {
	ctx := context.Background()
	r := &vmGPUMMIOResource{}
	upgrader := r.UpgradeState(ctx)[0]
	priorType := upgrader.PriorSchema.Type().TerraformType(ctx)
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	null := tftypes.NewValue(tftypes.String, nil)
	gpuType := priorType.(tftypes.Object).AttributeTypes["gpu"].(tftypes.List).ElementType
	gpu := func(pci, vendor, device tftypes.Value) tftypes.Value {
		return tftypes.NewValue(gpuType, map[string]tftypes.Value{"pci_id": pci, "vendor_id": vendor, "device_id": device})
	}
	devType := priorType.(tftypes.Object).AttributeTypes["pci_device"].(tftypes.List).ElementType
	values := map[string]tftypes.Value{}
	for name, typ := range priorType.(tftypes.Object).AttributeTypes {
		values[name] = tftypes.NewValue(typ, nil)
	}
	values["id"], values["virtual_machine_id"] = str("4223b7a1"), str("4223b7a1")
	values["gpu"] = tftypes.NewValue(tftypes.List{ElementType: gpuType}, []tftypes.Value{
		gpu(str("0000:5e:00.0"), null, null), gpu(null, str("10de"), str("2330")), gpu(str("0000:3b:00.0"), null, null),
		gpu(null, str("10de"), str("2330")), gpu(null, str("10de"), str("20f1")),
	})
	values["pci_device"] = tftypes.NewValue(tftypes.List{ElementType: devType}, []tftypes.Value{
		tftypes.NewValue(devType, map[string]tftypes.Value{"pci_id": str("0000:86:00.2")}),
	})
	var current resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &current)
	req := resource.UpgradeStateRequest{State: &tfsdk.State{Schema: *upgrader.PriorSchema, Raw: tftypes.NewValue(priorType, values)}}
	resp := resource.UpgradeStateResponse{State: tfsdk.State{Schema: current.Schema, Raw: tftypes.NewValue(current.Schema.Type().TerraformType(ctx), nil)}}
	upgrader.StateUpgrader(ctx, req, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	var m vmGPUMMIOModel
	if d := resp.State.Get(ctx, &m); d.HasError() {
		t.Fatal(d)
	}
	var blocks []gpuBlockModel
	m.GPU.ElementsAs(ctx, &blocks, false)
	want := map[string]types.Int64{"0000:5e:00.0": types.Int64Null(), "0000:3b:00.0": types.Int64Null(),
		"10de:2330": types.Int64Value(2), "10de:20f1": types.Int64Null()}
	if len(blocks) != len(want) {
		t.Fatalf("gpu blocks %+v, want %d", blocks, len(want))
	}
	for _, b := range blocks {
		if c, ok := want[b.String()]; !ok || !c.Equal(b.Count) {
			t.Errorf("gpu block %s count %s, want %v", b, b.Count, want[b.String()])
		}
	}
	if d := devices(ctx, m.PCIDevice, &diag.Diagnostics{}); len(d) != 1 || d[0] != "0000:86:00.2" || m.VirtualMachineID.ValueString() != "4223b7a1" {
		t.Errorf("pci_device %v, virtual_machine_id %s", d, m.VirtualMachineID)
	}
}
