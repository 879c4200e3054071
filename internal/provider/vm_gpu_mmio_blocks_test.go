package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// The gpu and pci_device blocks are lists compared without regard to order
// (issue 37): the order a VM has its devices in is never drift, a VM whose
// GPUs were attached in one order imports with no change under a
// configuration listing them by PCI id, and blocks only reordered plan an
// update whose apply changes nothing on the VM.
func TestAccVMGPUMMIO_orderNeverMatters(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "counts the lab's calls")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	gpus := slices.Sorted(slices.Values(lab.GPUs()[:2]))
	memory := gpuMemoryGB(t, lab, vm)
	size, err := mmio.SizeGB(memory[0] + memory[1])
	acctest.Must(t, err)
	// By hand, the second GPU first, as an outside client adding devices in
	// any order leaves them.
	acctest.Must(t, lab.AttachGPU(ctx, vm, gpus[1]))
	acctest.Must(t, lab.AttachGPU(ctx, vm, gpus[0]))
	acctest.Must(t, lab.SetVMFirmware(ctx, vm, "efi"))
	for key, value := range mmio.ExtraConfig(size) {
		acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, key, value))
	}
	acctest.Must(t, lab.SetVMMemoryReservationLocked(ctx, vm, true))
	byPCIID := vmGPUMMIOConfig(lab, uuid, gpuBlock(gpus[0])+gpuBlock(gpus[1]))
	reversed := vmGPUMMIOConfig(lab, uuid, gpuBlock(gpus[1])+gpuBlock(gpus[0]))
	vmUntouched := func(*terraform.State) error {
		got, err := lab.VMSettings(ctx, vm)
		if err == nil && !slices.Equal(got.GPUs, []string{gpus[1], gpus[0]}) {
			err = fmt.Errorf("the VM's GPUs are %v: reordering the blocks must not touch them (%s then %s)", got.GPUs, gpus[1], gpus[0])
		}
		return err
	}
	var reconfigures int
	tfresource.UnitTest(t, tfresource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []tfresource.TestStep{
			{
				// The import block's plan must be a no-op (the framework of
				// tests fails it otherwise).
				Config:       acctest.RequiredProviders + byPCIID,
				ResourceName: gpuAddr, ImportState: true, ImportStateKind: tfresource.ImportBlockWithID, ImportStateId: uuid,
			},
			{Config: acctest.RequiredProviders + byPCIID, ResourceName: gpuAddr, ImportState: true, ImportStateId: uuid, ImportStatePersist: true},
			{Config: byPCIID, PlanOnly: true},
			{RefreshState: true, Check: vmUntouched},
			{
				PreConfig: func() { reconfigures = lab.Calls()["ReconfigVM_Task"] },
				Config:    reversed,
				ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate),
				}},
				Check: func(s *terraform.State) error {
					if n := lab.Calls()["ReconfigVM_Task"] - reconfigures; n != 0 {
						return fmt.Errorf("reordering the blocks reconfigured the VM %d times, want none", n)
					}
					return vmUntouched(s)
				},
			},
			{Config: reversed, PlanOnly: true},
			{RefreshState: true},
			{Config: reversed, ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
	})
}

// Copies of a block are seen, and refused naming the blocks and the fix: a
// set would have merged them silently, so that two blocks of a model (how
// configurations before count asked for two GPUs) meant one GPU.
func TestAccVMGPUMMIO_copiesRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	gpu := lab.GPUs()[0]
	dynamic := func(n int) string {
		return strings.Repeat("  gpu {\n    vendor_id = \"10de\"\n    device_id = \"2330\"\n  }\n", n)
	}
	blocks := func(n int) string {
		numbers := make([]string, n)
		for i := range numbers {
			numbers[i] = fmt.Sprint(i + 1)
		}
		return strings.Join(numbers, ", ")
	}
	device := fmt.Sprintf("  pci_device {\n    pci_id = %q\n  }\n", lab.GPUs()[1])
	tfresource.UnitTest(t, tfresource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []tfresource.TestStep{
			{Config: vmGPUMMIOConfig(lab, uuid, dynamic(2)), PlanOnly: true,
				ExpectError: acctest.Wording(
					`gpu blocks 1, 2 all ask for GPUs of model 10de:2330, 2 in all. The GPUs of a model are one block: give one block with count = 2.`,
				)},
			{Config: vmGPUMMIOConfig(lab, uuid, dynamic(40)), PlanOnly: true,
				ExpectError: acctest.Wording(
					`gpu blocks ` + blocks(
						40,
					) + ` all ask for GPUs of model 10de:2330, 40 in all. The GPUs of a model are one block: give one block with count = 40.`,
				)},
			{Config: vmGPUMMIOConfig(lab, uuid, dynamic(130)), PlanOnly: true,
				ExpectError: acctest.Wording(
					`130 in all. The GPUs of a model are one block: give one block with count (at most 128, the most passthrough devices a VM takes).`,
				)},
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock(gpu)+dynamic(1)+gpuBlock(gpu)), PlanOnly: true,
				ExpectError: acctest.Wording(`GPU ` + gpu + ` is in gpu blocks 1, 3. A GPU passes through to a VM once: remove the copies.`)},
			{Config: vmGPUMMIOConfig(lab, uuid, gpuBlock(gpu)+device+device+"  mmio_size_gb = 256\n"), PlanOnly: true,
				ExpectError: acctest.Wording(`PCI device ` + lab.GPUs()[1] + ` is in pci_device blocks 1 and 2. A device passes through once: remove the copy.`)},
			{
				Config:      vmGPUMMIOConfig(lab, uuid, dynamic(1)+"  gpu {\n    vendor_id = \"10de\"\n    device_id = \"2330\"\n    count     = 200\n  }\n"),
				PlanOnly:    true,
				ExpectError: acctest.Wording(`count = 200: a gpu block asks for 2 to 128 GPUs of its model`),
			},
		},
	})
}

// vmsOnTwoHosts are two of the lab's VMs, on two hosts.
func vmsOnTwoHosts(t *testing.T, lab *vcsimlab.Lab) (string, string) {
	t.Helper()
	vms := lab.VMNames()
	for _, b := range vms[1:] {
		if lab.VMHostName(b) != lab.VMHostName(vms[0]) {
			return vms[0], b
		}
	}
	t.Fatal("no two VMs of the lab on two hosts")
	return "", ""
}

// A state written by a release before this one, in either of its forms,
// upgrades to one that plans and destroys: version 0 (lists, one block per
// dynamic GPU, a device read twice from a VM listed twice), which version 1
// turned into a set Terraform refused ("Duplicate Set Element") on every
// plan and destroy; and version 1 (sets, stored in an order of their own).
// The configuration version 0 asked for two GPUs of a model with (two
// copies of its block) is refused naming count, not planned as one GPU
// fewer; with count, it plans nothing.
func TestAccVMGPUMMIO_statesOfEarlierVersions(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses two hosts' H100s")
	ctx := context.Background()
	a, b := vmsOnTwoHosts(t, lab)
	gpu := lab.GPUs()[0]
	const model = "    vendor_id = \"10de\"\n    device_id = \"2330\"\n"
	config := func(bBlocks string) string {
		return acctest.RequiredProviders + fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "a" {
  virtual_machine_id = %q
  gpu {
    pci_id = %q
  }
  gpu {
%s  }
}

resource "vspherehpc_vm_gpu_mmio" "b" {
  virtual_machine_id = %q
%s}
`, lab.VMUUID(a), gpu, model, lab.VMUUID(b), bBlocks)
	}
	withCount := "  gpu {\n" + model + "    count     = 2\n  }\n"
	copies := strings.Repeat("  gpu {\n"+model+"  }\n", 2)
	d := newTFDir(t, lab, map[string]string{"main.tf": config(withCount)})
	d.run("apply", "-auto-approve")

	// The state as an earlier release wrote it: version and blocks.
	rewrite := func(version int, blocks map[string][]map[string]any) {
		d.editState(func(address string, inst map[string]any) {
			inst["schema_version"] = version
			attributes := inst["attributes"].(map[string]any)
			attributes["gpu"] = blocks[strings.TrimPrefix(address, "vspherehpc_vm_gpu_mmio.")]
			delete(attributes, "extra_config_before") // kept in private state then
			delete(attributes, "peer_to_peer")        // not there yet
		})
	}
	static := map[string]any{"pci_id": gpu, "vendor_id": nil, "device_id": nil}
	dyn := map[string]any{"pci_id": nil, "vendor_id": "10de", "device_id": "2330"}
	rewrite(0, map[string][]map[string]any{"a": {static, dyn, static}, "b": {dyn, dyn}})
	d.write(map[string]string{"main.tf": config(copies)})
	if out, err := d.try("plan", "-refresh=false"); err == nil ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), "gpu blocks 1, 2 all ask for GPUs of model 10de:2330, 2 in all. "+
			"The GPUs of a model are one block: give one block with count = 2.") {
		t.Fatalf("plan of version 0's copies: %v, want them refused naming count = 2\n%s", err, out)
	}
	d.write(map[string]string{"main.tf": config(withCount)})
	for _, args := range [][]string{{"-refresh=false"}, nil} {
		if changes := d.plan(args...); len(changes) != 0 {
			t.Errorf("plan %v of the version 0 state: %+v, want no changes", args, changes)
		}
	}

	// Version 1 stored its sets in an order of their own: upgraded in the
	// order of the PCI ids and models, the configuration's here.
	withCountV1 := map[string]any{"pci_id": nil, "vendor_id": "10de", "device_id": "2330", "count": 2}
	dynV1 := map[string]any{"pci_id": nil, "vendor_id": "10de", "device_id": "2330", "count": nil}
	staticV1 := map[string]any{"pci_id": gpu, "vendor_id": nil, "device_id": nil, "count": nil}
	rewrite(1, map[string][]map[string]any{"a": {dynV1, staticV1}, "b": {withCountV1}})
	for _, args := range [][]string{{"-refresh=false"}, nil} {
		if changes := d.plan(args...); len(changes) != 0 {
			t.Errorf("plan %v of the version 1 state: %+v, want no changes", args, changes)
		}
	}

	// Version 2 as written before vgpu blocks existed: no vgpu in state.
	d.run("apply", "-auto-approve")
	d.editState(func(_ string, inst map[string]any) { delete(inst["attributes"].(map[string]any), "vgpu") })
	for _, args := range [][]string{{"-refresh=false"}, nil} {
		if changes := d.plan(args...); len(changes) != 0 {
			t.Errorf("plan %v of the version 2 state without vgpu: %+v, want no changes", args, changes)
		}
	}

	rewrite(0, map[string][]map[string]any{"a": {static, dyn, static}, "b": {dyn, dyn}})
	d.run("destroy", "-auto-approve", "-refresh=false")
	for _, vm := range []string{a, b} {
		if got, err := lab.VMSettings(ctx, vm); err != nil || len(got.GPUs) != 0 {
			t.Errorf("VM %s after destroy: %v, %v; want no passthrough device", vm, got.GPUs, err)
		}
	}
}

// upgraded runs the upgrader of version from over blocks (prior-schema
// values of gpu) and returns the gpu blocks of the state it writes.
func upgraded(t *testing.T, from int64, gpu func(tftypes.Type) tftypes.Value) []gpuBlockModel {
	t.Helper()
	ctx := context.Background()
	r := &vmGPUMMIOResource{}
	upgrader := r.UpgradeState(ctx)[from]
	priorType := upgrader.PriorSchema.Type().TerraformType(ctx).(tftypes.Object)
	values := map[string]tftypes.Value{}
	for name, typ := range priorType.AttributeTypes {
		values[name] = tftypes.NewValue(typ, nil)
	}
	values["id"] = tftypes.NewValue(tftypes.String, "4223b7a1")
	values["virtual_machine_id"] = values["id"]
	values["gpu"] = gpu(priorType.AttributeTypes["gpu"])
	devType := priorType.AttributeTypes["pci_device"]
	var devElem tftypes.Type
	switch c := devType.(type) {
	case tftypes.List:
		devElem = c.ElementType
	case tftypes.Set:
		devElem = c.ElementType
	}
	dev := func(id string) tftypes.Value {
		return tftypes.NewValue(devElem, map[string]tftypes.Value{"pci_id": tftypes.NewValue(tftypes.String, id)})
	}
	devs := []tftypes.Value{dev("0000:86:00.3"), dev("0000:86:00.2")}
	if _, list := devType.(tftypes.List); list {
		devs = append(devs, dev("0000:86:00.3"))
	}
	values["pci_device"] = tftypes.NewValue(devType, devs)
	var current resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &current)
	req := resource.UpgradeStateRequest{State: &tfsdk.State{Schema: *upgrader.PriorSchema, Raw: tftypes.NewValue(priorType, values)}}
	resp := resource.UpgradeStateResponse{
		State: tfsdk.State{Schema: current.Schema, Raw: tftypes.NewValue(current.Schema.Type().TerraformType(ctx), nil)},
	}
	upgrader.StateUpgrader(ctx, req, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	var m vmGPUMMIOModel
	if d := resp.State.Get(ctx, &m); d.HasError() {
		t.Fatal(d)
	}
	wantDevices := []string{"0000:86:00.3", "0000:86:00.2"}
	if from == 1 {
		wantDevices = []string{"0000:86:00.2", "0000:86:00.3"}
	}
	if got := devices(ctx, m.PCIDevice, &diag.Diagnostics{}); !slices.Equal(got, wantDevices) || m.VirtualMachineID.ValueString() != "4223b7a1" {
		t.Errorf("pci_device %v (want %v), virtual_machine_id %s", got, wantDevices, m.VirtualMachineID)
	}
	var blocks []gpuBlockModel
	if d := m.GPU.ElementsAs(ctx, &blocks, false); d.HasError() {
		t.Fatal(d)
	}
	return blocks
}

// describe is a gpu block as "key" or "key×count".
func describe(blocks []gpuBlockModel) []string {
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = b.key()
		if !b.Count.IsNull() {
			out[i] += fmt.Sprintf("×%d", b.Count.ValueInt64())
		}
	}
	return out
}

// Version 0 keeps its order; its dynamic blocks of a model become one with
// their count where the first was, and a device listed twice is once.
func TestGPUMMIOStateUpgradeFromV0(t *testing.T) {
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	null := tftypes.NewValue(tftypes.String, nil)
	blocks := upgraded(t, 0, func(typ tftypes.Type) tftypes.Value {
		elem := typ.(tftypes.List).ElementType
		gpu := func(pci, vendor, device tftypes.Value) tftypes.Value {
			return tftypes.NewValue(elem, map[string]tftypes.Value{"pci_id": pci, "vendor_id": vendor, "device_id": device})
		}
		return tftypes.NewValue(typ, []tftypes.Value{
			gpu(str("0000:5e:00.0"), null, null), gpu(null, str("10de"), str("2330")), gpu(str("0000:3b:00.0"), null, null),
			gpu(null, str("10de"), str("2330")), gpu(null, str("10de"), str("20f1")), gpu(str("0000:5e:00.0"), null, null),
			gpu(null, str("10de"), str("2330")),
		})
	})
	if got, want := describe(blocks), []string{"0000:5e:00.0", "10de:2330×3", "0000:3b:00.0", "10de:20f1"}; !slices.Equal(got, want) {
		t.Errorf("gpu blocks %v, want %v", got, want)
	}
}

// Version 1's sets become lists in the order of their keys.
func TestGPUMMIOStateUpgradeFromV1(t *testing.T) {
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	null := tftypes.NewValue(tftypes.String, nil)
	blocks := upgraded(t, 1, func(typ tftypes.Type) tftypes.Value {
		elem := typ.(tftypes.Set).ElementType
		gpu := func(pci, vendor, device tftypes.Value, count any) tftypes.Value {
			return tftypes.NewValue(elem, map[string]tftypes.Value{"pci_id": pci, "vendor_id": vendor, "device_id": device,
				"count": tftypes.NewValue(tftypes.Number, count)})
		}
		return tftypes.NewValue(typ, []tftypes.Value{
			gpu(null, str("10de"), str("2330"), 4), gpu(str("0000:5e:00.0"), null, null, nil), gpu(null, str("10de"), str("20f1"), nil),
			gpu(str("0000:3b:00.0"), null, null, nil),
		})
	})
	if got, want := describe(blocks), []string{"0000:3b:00.0", "0000:5e:00.0", "10de:20f1", "10de:2330×4"}; !slices.Equal(got, want) {
		t.Errorf("gpu blocks %v, want %v", got, want)
	}
}

// Blocks read from a VM keep the state's order, those the state does not
// have following by key; copies of a block are counted as copies.
func TestDeviceBlocksOrder(t *testing.T) {
	ctx := context.Background()
	block := func(id string) gpuBlockModel {
		return gpuBlockModel{PCIID: types.StringValue(id), VendorID: types.StringNull(), DeviceID: types.StringNull(), Count: types.Int64Null()}
	}
	prior := []gpuBlockModel{block("0000:af:00.0"), block("0000:3b:00.0")}
	read := []gpuBlockModel{block("0000:3b:00.0"), block("0000:d8:00.0"), block("0000:5e:00.0"), block("0000:af:00.0")}
	if got, want := describe(inPriorOrder(read, prior, gpuBlockModel.key)),
		[]string{"0000:af:00.0", "0000:3b:00.0", "0000:5e:00.0", "0000:d8:00.0"}; !slices.Equal(got, want) {
		t.Errorf("inPriorOrder: %v, want %v", got, want)
	}
	list := func(ids ...string) types.List {
		blocks := make([]gpuBlockModel, len(ids))
		for i, id := range ids {
			blocks[i] = block(id)
		}
		l, d := types.ListValueFrom(ctx, gpuBlockType, blocks)
		if d.HasError() {
			t.Fatal(d)
		}
		return l
	}
	for _, c := range []struct {
		a, b types.List
		same bool
	}{
		{list("x", "y"), list("y", "x"), true},
		{list("x", "x", "y"), list("x", "y", "y"), false},
		{list("x"), list("x", "x"), false},
		{list(), types.ListNull(gpuBlockType), true},
		{list("x"), types.ListNull(gpuBlockType), false},
		{list("x"), types.ListUnknown(gpuBlockType), false},
	} {
		if got := sameBlocks(ctx, c.a, c.b); got != c.same {
			t.Errorf("sameBlocks(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// What destroy puts back is kept in state (extra_config_before). State an
// older release wrote keeps it in private state: a refresh moves it into
// state, and a destroy without refresh reads it there.
func TestAccVMGPUMMIO_restoreRecordMovesFromPrivateState(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's H100")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	// The VM's own window, set by hand: destroy puts it back.
	acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, mmio.SizeGBKey, "64"))
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %q
  gpu {
    pci_id = %q
  }
}
`, lab.VMUUID(vm), lab.GPUs()[0])})
	d.run("apply", "-auto-approve")
	if s := d.run("show", "-json"); !strings.Contains(s, fmt.Sprintf(`"extra_config_before":{%q:"",%q:"64",%q:"",%q:"",%q:""}`,
		vsphere.NUMANodeAffinityKey, mmio.SizeGBKey, vsphere.RelaxACSKey, vsphere.AllowP2PKey, mmio.Use64bitMMIOKey)) {
		t.Fatalf("state must hold what destroy puts back, the VM's own 64 GB and no use64bitMMIO, peer-to-peer or NUMA keys:\n%s", s)
	}
	// What an older release wrote: the record in private state only.
	record, err := json.Marshal(map[string]string{mmio.SizeGBKey: "64", mmio.Use64bitMMIOKey: ""})
	acctest.Must(t, err)
	older := func() {
		d.editState(func(_ string, inst map[string]any) {
			delete(inst["attributes"].(map[string]any), "extra_config_before")
			setPrivate(t, inst, map[string][]byte{"extra_config_before": record})
		})
	}
	older()
	d.run("apply", "-refresh-only", "-auto-approve")
	if s := d.run("show", "-json"); !strings.Contains(s, fmt.Sprintf(`"extra_config_before":{%q:"64",%q:""}`, mmio.SizeGBKey, mmio.Use64bitMMIOKey)) {
		t.Errorf("after a refresh the state must hold what destroy puts back:\n%s", s)
	}
	if changes := d.plan(); len(changes) > 0 {
		t.Errorf("the plan after the refresh must be empty: %+v", changes)
	}
	older()
	d.run("destroy", "-auto-approve", "-refresh=false")
	got, err := lab.VMSettings(ctx, vm)
	acctest.Must(t, err)
	if got.ExtraConfig[mmio.SizeGBKey] != "64" || got.ExtraConfig[mmio.Use64bitMMIOKey] != "" || len(got.GPUs) != 0 {
		t.Errorf("after destroy: %v, GPUs %v; want the VM's own 64 GB, no use64bitMMIO and no GPU", got.ExtraConfig, got.GPUs)
	}
}
