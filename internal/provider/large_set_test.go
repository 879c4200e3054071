package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func TestLargeSetEquality(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host := func(id, vmnic attr.Value) attr.Value {
		return types.ObjectValueMust(dvsHostType.AttrTypes, map[string]attr.Value{"host_system_id": id, "vmnic": vmnic})
	}
	set := func(hosts ...attr.Value) largeSet {
		return largeSet{types.SetValueMust(dvsHostType, hosts)}
	}
	h1, h2 := host(types.StringValue("host-1"), types.StringValue("vmnic4")), host(types.StringValue("host-2"), types.StringValue("vmnic4"))
	for _, tc := range []struct {
		name string
		a, b largeSet
		want bool
	}{
		{"same hosts, another order", set(h1, h2), set(h2, h1), true},
		{"both empty", set(), set(), true},
		{"both null", largeSet{types.SetNull(dvsHostType)}, largeSet{types.SetNull(dvsHostType)}, true},
		{"another uplink", set(h1, h2), set(h1, host(types.StringValue("host-2"), types.StringValue("vmnic5"))), false},
		{"a host fewer", set(h1, h2), set(h1), false},
		{"null and empty", largeSet{types.SetNull(dvsHostType)}, set(), false},
		{"unknown and known", largeSet{types.SetUnknown(dvsHostType)}, set(h1), false},
		// A string's quotes keep the values apart from the markers of unknown and null.
		{"the text <unknown> and an unknown", set(host(types.StringValue("<unknown>"), types.StringValue("vmnic4"))),
			set(host(types.StringUnknown(), types.StringValue("vmnic4"))), false},
		{"the text <null> and a null", set(host(types.StringValue("<null>"), types.StringValue("vmnic4"))),
			set(host(types.StringNull(), types.StringValue("vmnic4"))), false},
	} {
		if got := tc.a.Equal(tc.b); got != tc.want {
			t.Errorf("%s: %s equals %s = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
		if got := tc.a.Equal(tc.b.SetValue); got {
			t.Errorf("%s: a largeSet equals a plain set", tc.name)
		}
		got, diags := tc.a.SetSemanticEquals(ctx, tc.b)
		if diags.HasError() || got != tc.want {
			t.Errorf("%s: %s semantically equals %s = %v (%v), want %v", tc.name, tc.a, tc.b, got, diags, tc.want)
		}
		if plain := tc.a.SetValue.Equal(tc.b.SetValue); plain != tc.want {
			t.Errorf("%s: the framework's equality says %v, largeSet's %v", tc.name, plain, tc.want)
		}
	}
}

func TestLargeSetValidate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	objType := dvsHostType.TerraformType(ctx)
	host := func(id any) tftypes.Value {
		return tftypes.NewValue(objType, map[string]tftypes.Value{
			"host_system_id": tftypes.NewValue(tftypes.String, id), "vmnic": tftypes.NewValue(tftypes.String, "vmnic4")})
	}
	setType := newLargeSetType(dvsHostType)
	set := func(hosts ...tftypes.Value) tftypes.Value {
		return tftypes.NewValue(setType.TerraformType(ctx), hosts)
	}
	for _, tc := range []struct {
		name string
		in   tftypes.Value
		want int // errors
	}{
		{"distinct hosts", set(host("host-1"), host("host-2")), 0},
		{"a host twice", set(host("host-1"), host("host-2"), host("host-1")), 1},
		{"unknown hosts are not compared", set(host(tftypes.UnknownValue), host(tftypes.UnknownValue)), 0},
		{"null", tftypes.NewValue(setType.TerraformType(ctx), nil), 0},
		{"unknown", tftypes.NewValue(setType.TerraformType(ctx), tftypes.UnknownValue), 0},
	} {
		diags := setType.Validate(ctx, tc.in, path.Root("host"))
		if diags.ErrorsCount() != tc.want {
			t.Errorf("%s: %d errors (%v), want %d", tc.name, diags.ErrorsCount(), diags, tc.want)
		}
		if framework := setType.SetType.Validate(ctx, tc.in, path.Root("host")); framework.ErrorsCount() != tc.want {
			t.Errorf("%s: the framework's check finds %d errors, largeSet's should match it", tc.name, framework.ErrorsCount())
		}
	}
}
