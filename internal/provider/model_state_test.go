package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
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
			UsedBy: []gpuUserModel{{VirtualMachineID: types.StringValue("4217"), MOID: types.StringValue("vm-42"), Name: types.StringValue("n0"), PoweredOn: types.BoolValue(true)}},
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

func TestSetModelStateMatchesTheFramework(t *testing.T) {
	ctx := context.Background()
	model := sampleHostModel()
	want, got := hostState(t), hostState(t)
	if diags := want.Set(ctx, &model); diags.HasError() {
		t.Fatal(diags)
	}
	if diags := setModelState(ctx, &got, &model); diags.HasError() {
		t.Fatal(diags)
	}
	if !got.Raw.Equal(want.Raw) {
		diffs, _ := got.Raw.Diff(want.Raw)
		t.Fatalf("setModelState differs from State.Set in %d places, first %v", len(diffs), diffs[0])
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
