package provider

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// sampleHostModel is a host as a refresh finds it: 50 PCI devices, one of
// them used by two VMs, and lists both empty and absent.
func sampleHostModel() hostModel {
	m := hostModel{
		HostSystemID: types.StringNull(), DatacenterID: types.StringValue("datacenter-2"), Name: types.StringValue("esx-01"),
		ID: types.StringValue("host-18"), ClusterID: types.StringValue("domain-c7"), ClusterName: types.StringValue("gpu"),
		ConnectionState: types.StringValue("connected"), MaintenanceMode: types.BoolValue(false),
		PhysicalNICs: []physicalNICModel{{
			Name: types.StringValue("vmnic4"), MACAddress: types.StringValue("00:50:56:00:00:04"), PCIID: types.StringValue("0000:3b:00.0"),
			Driver: types.StringValue("nmlx5_core"), SpeedMbps: types.Int64Value(100000), LinkUp: types.BoolValue(true),
			RDMADevice: types.StringValue("vmrdma0"), RDMACapable: types.BoolValue(true), RoCEv1: types.BoolValue(true), RoCEv2: types.BoolValue(true),
			Switch: types.StringValue("hpc"), DistributedSwitchUUID: types.StringValue("50 1a"),
		}},
		VMKernelNICs: []vmkernelNICModel{},
		GPUs: []hostGPUModel{{
			PCIID: types.StringValue("0000:af:00.0"), VendorID: types.StringValue("10de"), DeviceID: types.StringValue("20b5"),
			VendorName: types.StringValue("NVIDIA"), DeviceName: types.StringValue("A100"), MemoryGB: types.Float64Value(80),
			PassthroughCapable: types.BoolValue(true), PassthroughEnabled: types.BoolValue(true), PassthroughActive: types.BoolValue(true),
			UsedBy: []gpuUserModel{
				{VirtualMachineID: types.StringValue("4217"), MOID: types.StringValue("vm-42"), Name: types.StringValue("n0"), PoweredOn: types.BoolValue(true)},
			},
		}},
	}
	for i := range 50 {
		d := pciDeviceModel{
			PCIID: types.StringValue(fmt.Sprintf("0000:%02x:00.0", i)), VendorID: types.StringValue("8086"), DeviceID: types.StringValue("2020"),
			VendorName: types.StringValue("Intel"), DeviceName: types.StringValue("bridge"), ConnectX: types.BoolValue(false),
			PhysicalNIC: types.StringValue(""), UplinkOf: types.StringValue(""), PassthroughCapable: types.BoolValue(i%2 == 0),
			PassthroughEnabled: types.BoolValue(false), PassthroughActive: types.BoolValue(false), SRIOVCapable: types.BoolValue(false),
			SRIOVEnabled: types.BoolValue(false), SRIOVActive: types.BoolValue(false), VFsRequested: types.Int64Value(0),
			VFs: types.Int64Value(int64(i % 3)), MaxVFs: types.Int64Value(8), VFIDs: stringValues(nil), PhysicalFunction: types.StringUnknown(),
			UsedBy: []gpuUserModel{},
		}
		if i == 7 {
			d.VFIDs = stringValues([]string{"0000:07:00.1", "0000:07:00.2"})
			d.UsedBy = []gpuUserModel{
				{VirtualMachineID: types.StringValue("4217"), MOID: types.StringValue("vm-42"), Name: types.StringValue("n0"), PoweredOn: types.BoolValue(true)},
				{VirtualMachineID: types.StringValue("4218"), MOID: types.StringValue("vm-43"), Name: types.StringValue("n1"), PoweredOn: types.BoolValue(false)},
			}
		}
		m.PCIDevices = append(m.PCIDevices, d)
	}
	return m
}

func hostState(t testing.TB) tfsdk.State {
	t.Helper()
	var resp datasource.SchemaResponse
	(&hostDataSource{}).Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	return tfsdk.State{Schema: resp.Schema, Raw: tftypes.NewValue(resp.Schema.Type().TerraformType(context.Background()), nil)}
}

// sampleGPUMMIOModel is a GPU setup as a refresh finds it: a GPU by PCI id,
// GPUs by model, an InfiniBand VF.
func sampleGPUMMIOModel() vmGPUMMIOModel {
	return vmGPUMMIOModel{
		ID: types.StringValue("4217"), VirtualMachineID: types.StringValue("4217"),
		GPU: types.ListValueMust(gpuBlockType, []attr.Value{
			types.ObjectValueMust(gpuBlockType.AttrTypes, map[string]attr.Value{"pci_id": types.StringValue("0000:af:00.0"),
				"vendor_id": types.StringNull(), "device_id": types.StringNull(), "count": types.Int64Null(), "label": types.StringNull()}),
			types.ObjectValueMust(gpuBlockType.AttrTypes, map[string]attr.Value{"pci_id": types.StringNull(),
				"vendor_id": types.StringValue("10de"), "device_id": types.StringValue("20b5"), "count": types.Int64Value(2),
				"label": types.StringValue("training")}),
		}),
		PCIDevice: types.ListValueMust(pciDeviceBlockType, []attr.Value{
			types.ObjectValueMust(pciDeviceBlockType.AttrTypes, map[string]attr.Value{"pci_id": types.StringValue("0000:86:00.1")}),
		}),
		VGPU: types.ListValueMust(vgpuBlockType, []attr.Value{
			types.ObjectValueMust(vgpuBlockType.AttrTypes, map[string]attr.Value{"profile": types.StringValue("grid_a100-20c"), "count": types.Int64Value(2)}),
		}),
		MMIOSizeGB: types.Int64Value(512), TotalGPUMemoryGB: types.Float64Value(240), Firmware: types.StringValue("efi"),
		Use64bitMMIO: types.BoolValue(true), MemoryLockedToMax: types.BoolValue(true), AllowFirmwareChange: types.BoolValue(false),
		PowerOffAllowed: types.BoolValue(true), PeerToPeer: types.BoolValue(true),
		NUMANodeAffinity: types.SetValueMust(types.Int64Type, []attr.Value{types.Int64Value(0), types.Int64Value(1)}),
		ExtraConfigBefore: types.MapValueMust(types.StringType, map[string]attr.Value{
			"pciPassthru.use64bitMMIO": types.StringValue(""), "pciPassthru.64bitMMIOSizeGB": types.StringValue("64"),
		}),
	}
}

func resourceState(t testing.TB, r resource.Resource) tfsdk.State {
	t.Helper()
	var resp resource.SchemaResponse
	r.Schema(context.Background(), resource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	return tfsdk.State{Schema: resp.Schema, Raw: tftypes.NewValue(resp.Schema.Type().TerraformType(context.Background()), nil)}
}

// setModelState sets what the framework's State.Set sets: for a host of 50
// devices (nested lists), a GPU setup (sets of blocks), a switch with its
// port group block and without (a nil pointer is null), and an identity.
func TestSetModelStateMatchesTheFramework(t *testing.T) {
	ctx := context.Background()
	host, gpus := sampleHostModel(), sampleGPUMMIOModel()
	withPortGroup := rdmaDVSModel{ID: types.StringValue("50 1a"), UplinkNames: types.ListNull(types.StringType),
		Hosts: largeSet{types.SetNull(dvsHostType)},
		PortGroup: &portGroupModel{
			Name:       types.StringValue("pvrdma"),
			VLANID:     types.Int64Value(0),
			PortCount:  types.Int64Value(8),
			AutoExpand: types.BoolValue(true),
		}}
	without := withPortGroup
	without.PortGroup = nil
	for _, tc := range []struct {
		name  string
		state func(testing.TB) tfsdk.State
		model any
	}{
		{"host", hostState, &host},
		{"GPU setup", func(t testing.TB) tfsdk.State { return resourceState(t, &vmGPUMMIOResource{}) }, &gpus},
		{"switch", func(t testing.TB) tfsdk.State { return resourceState(t, &rdmaDVSResource{}) }, &withPortGroup},
		{"switch without a port group", func(t testing.TB) tfsdk.State { return resourceState(t, &rdmaDVSResource{}) }, &without},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, got := tc.state(t), tc.state(t)
			if diags := want.Set(ctx, tc.model); diags.HasError() {
				t.Fatal(diags)
			}
			if diags := setModelState(ctx, &got, tc.model); diags.HasError() {
				t.Fatal(diags)
			}
			if !got.Raw.Equal(want.Raw) {
				diffs, _ := got.Raw.Diff(want.Raw)
				t.Fatalf("setModelState differs from State.Set in %d places, first %v", len(diffs), diffs[0])
			}
		})
	}
	t.Run("identity", func(t *testing.T) {
		want := tfsdk.ResourceIdentity{Schema: vmIdentity.schema, Raw: tftypes.NewValue(vmIdentity.schema.Type().TerraformType(ctx), nil)}
		got := want
		id := vmIdentityModel{types.StringValue("4217")}
		if diags := want.Set(ctx, id); diags.HasError() {
			t.Fatal(diags)
		}
		if diags := setModel(ctx, got.Schema, &got.Raw, id); diags.HasError() || !got.Raw.Equal(want.Raw) {
			t.Fatalf("identity %v (%v), want %v", got.Raw, diags, want.Raw)
		}
	})
}

// getModel reads what the framework's Get reads, from what the framework's
// Set wrote: the same models as above, and a plan with unknown values.
func TestGetModelMatchesTheFramework(t *testing.T) {
	ctx := context.Background()
	host, gpus := sampleHostModel(), sampleGPUMMIOModel()
	planned := gpus
	planned.ID, planned.TotalGPUMemoryGB, planned.GPU = types.StringUnknown(), types.Float64Unknown(), types.ListUnknown(gpuBlockType)
	withPortGroup := rdmaDVSModel{ID: types.StringValue("50 1a"), UplinkNames: types.ListNull(types.StringType),
		Hosts: largeSet{types.SetNull(dvsHostType)},
		PortGroup: &portGroupModel{
			Name:       types.StringValue("pvrdma"),
			VLANID:     types.Int64Value(0),
			PortCount:  types.Int64Value(8),
			AutoExpand: types.BoolValue(true),
		}}
	without := withPortGroup
	without.PortGroup = nil
	gpuState := func(t testing.TB) tfsdk.State { return resourceState(t, &vmGPUMMIOResource{}) }
	switchState := func(t testing.TB) tfsdk.State { return resourceState(t, &rdmaDVSResource{}) }
	for _, tc := range []struct {
		name  string
		state func(testing.TB) tfsdk.State
		model any
		empty func() any
	}{
		{"host", hostState, &host, func() any { return &hostModel{} }},
		{"GPU setup", gpuState, &gpus, func() any { return &vmGPUMMIOModel{} }},
		{"GPU setup planned", gpuState, &planned, func() any { return &vmGPUMMIOModel{} }},
		{"switch", switchState, &withPortGroup, func() any { return &rdmaDVSModel{} }},
		{"switch without a port group", switchState, &without, func() any { return &rdmaDVSModel{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := tc.state(t)
			if diags := state.Set(ctx, tc.model); diags.HasError() {
				t.Fatal(diags)
			}
			want, got := tc.empty(), tc.empty()
			if diags := state.Get(ctx, want); diags.HasError() {
				t.Fatal(diags)
			}
			if diags := getModel(ctx, state.Schema, state.Raw, got); diags.HasError() {
				t.Fatal(diags)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("getModel read\n%+v\nState.Get read\n%+v", got, want)
			}
		})
	}
	t.Run("identity", func(t *testing.T) {
		identity := tfsdk.ResourceIdentity{Schema: vmIdentity.schema, Raw: tftypes.NewValue(vmIdentity.schema.Type().TerraformType(ctx), nil)}
		if diags := identity.Set(ctx, vmIdentityModel{types.StringValue("4217")}); diags.HasError() {
			t.Fatal(diags)
		}
		var got vmIdentityModel
		if diags := getModel(ctx, identity.Schema, identity.Raw, &got); diags.HasError() || got.VirtualMachineID.ValueString() != "4217" {
			t.Fatalf("identity %+v (%v), want 4217", got, diags)
		}
	})
}

// getModel refuses what State.Get refuses: a model that lacks an attribute
// or has one too many, and a null object for a struct that cannot be nil.
func TestGetModelRefusesWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	state := hostState(t)
	host := sampleHostModel()
	if diags := setModelState(ctx, &state, &host); diags.HasError() {
		t.Fatal(diags)
	}
	type partial struct {
		ID types.String `tfsdk:"id"`
	}
	if diags := getModel(ctx, state.Schema, state.Raw, &partial{}); !diags.HasError() {
		t.Error("a model with one of the host's attributes was filled")
	}
	identity := tfsdk.ResourceIdentity{Schema: vmIdentity.schema}
	if diags := identity.Set(ctx, vmIdentityModel{types.StringValue("4217")}); diags.HasError() {
		t.Fatal(diags)
	}
	type extra struct {
		VirtualMachineID types.String `tfsdk:"virtual_machine_id"`
		More             types.String `tfsdk:"more"`
	}
	if diags := getModel(ctx, identity.Schema, identity.Raw, &extra{}); !diags.HasError() {
		t.Error("a model with an attribute the identity lacks was filled")
	}
	null := hostState(t)
	if diags := getModel(ctx, null.Schema, null.Raw, &hostModel{}); !diags.HasError() {
		t.Error("a null state was read into a model struct")
	}
	if diags := getModel(ctx, state.Schema, state.Raw, hostModel{}); !diags.HasError() {
		t.Error("a model that is not a pointer was filled")
	}
}

func TestSetModelStateRefusesAModelThatLacksAnAttribute(t *testing.T) {
	state := hostState(t)
	type partial struct {
		ID types.String `tfsdk:"id"`
	}
	diags := setModelState(context.Background(), &state, &partial{ID: types.StringValue("host-1")})
	if !diags.HasError() || !state.Raw.IsNull() {
		t.Fatalf("want an error and the state untouched, got %v and %v", diags, state.Raw)
	}
}

// BenchmarkModelState compares the framework's State.Set with setModelState
// on a GPU setup, as each refresh of one sets it.
func BenchmarkModelState(b *testing.B) {
	ctx := context.Background()
	model := sampleGPUMMIOModel()
	b.Run("framework", func(b *testing.B) {
		for b.Loop() {
			state := resourceState(b, &vmGPUMMIOResource{})
			if diags := state.Set(ctx, &model); diags.HasError() {
				b.Fatal(diags)
			}
		}
	})
	b.Run("setModelState", func(b *testing.B) {
		for b.Loop() {
			state := resourceState(b, &vmGPUMMIOResource{})
			if diags := setModelState(ctx, &state, &model); diags.HasError() {
				b.Fatal(diags)
			}
		}
	})
}

// BenchmarkModelFromState compares the framework's State.Get with getModel
// on a GPU setup, as each read of one gets it.
func BenchmarkModelFromState(b *testing.B) {
	ctx := context.Background()
	state := resourceState(b, &vmGPUMMIOResource{})
	model := sampleGPUMMIOModel()
	if diags := setModelState(ctx, &state, &model); diags.HasError() {
		b.Fatal(diags)
	}
	b.Run("framework", func(b *testing.B) {
		for b.Loop() {
			var m vmGPUMMIOModel
			if diags := state.Get(ctx, &m); diags.HasError() {
				b.Fatal(diags)
			}
		}
	})
	b.Run("getModel", func(b *testing.B) {
		for b.Loop() {
			var m vmGPUMMIOModel
			if diags := getModel(ctx, state.Schema, state.Raw, &m); diags.HasError() {
				b.Fatal(diags)
			}
		}
	})
}

// BenchmarkHostState compares the framework's State.Set with setModelState
// on a host of 50 PCI devices.
func BenchmarkHostState(b *testing.B) {
	ctx := context.Background()
	model := sampleHostModel()
	b.Run("framework", func(b *testing.B) {
		for b.Loop() {
			state := hostState(b)
			if diags := state.Set(ctx, &model); diags.HasError() {
				b.Fatal(diags)
			}
		}
	})
	b.Run("setModelState", func(b *testing.B) {
		for b.Loop() {
			state := hostState(b)
			if diags := setModelState(ctx, &state, &model); diags.HasError() {
				b.Fatal(diags)
			}
		}
	})
}
