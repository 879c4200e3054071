package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
)

func TestStaticMACProblem(t *testing.T) {
	t.Parallel()
	for mac, want := range map[string]string{
		"00:50:56:00:00:00": "",
		"00:50:56:3f:ff:ff": "",
		"02:00:00:00:00:01": "", // locally administered unicast: vSphere takes it
		"00:1b:21:0a:0b:0c": "", // another vendor's unicast address
		"00:50:56:40:00:00": "reserves",
		"00:50:56:aa:bb:cc": "e.g. 00:50:56:2a:bb:cc",
		"01:00:5e:00:00:01": "multicast",
		"33:33:00:00:00:01": "multicast",
		"ff:ff:ff:ff:ff:ff": "multicast",
		"00:00:00:00:00:00": "not a usable address",
		"00:50:56:AA:BB:CC": "lower case",
		"00-50-56-0a-0b-0c": "lower case",
		"00:50:56:0a:0b":    "lower case",
	} {
		got := staticMACProblem(mac)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("staticMACProblem(%q) = %q, want %q", mac, got, want)
		}
	}
}

func TestUnorderedListSemanticEquals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	list := func(items ...string) unorderedList {
		l, diags := newUnorderedList(ctx, append([]string{}, items...))
		if diags.HasError() {
			t.Fatal(diags)
		}
		return l
	}
	for _, tc := range []struct {
		a, b unorderedList
		want bool
	}{
		{list("10.0.0.2", "10.0.0.1"), list("10.0.0.1", "10.0.0.2"), true},
		{list(), list(), true},
		{list("10.0.0.1", "10.0.0.1"), list("10.0.0.1", "10.0.0.2"), false},
		{list("10.0.0.1"), list("10.0.0.1", "10.0.0.2"), false},
		{list("10.0.0.1"), unorderedList{types.ListNull(types.StringType)}, false},
	} {
		got, diags := tc.a.ListSemanticEquals(ctx, tc.b)
		if diags.HasError() || got != tc.want {
			t.Errorf("%s semantically equals %s = %v (%v), want %v", tc.a, tc.b, got, diags, tc.want)
		}
	}
}

// TestEveryConfigurableNumberHasAProviderType guards the class of issue 12's
// "1500.5 reaches the user as an error in the provider": every number a
// configuration can set, in attributes, list elements and blocks, has the
// provider's int64Type or float64Type, which word such values for the user.
func TestEveryConfigurableNumberHasAProviderType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := New("test")()
	check := func(where string, attrs map[string]configurable, blocks map[string]attr.Type) {
		for name, a := range attrs {
			if a.IsOptional() || a.IsRequired() {
				if plain := plainNumber(a.GetType()); plain != "" {
					t.Errorf("%s.%s: configurable %s without the provider's number type", where, name, plain)
				}
			}
		}
		for name, typ := range blocks {
			if plain := plainNumber(typ); plain != "" {
				t.Errorf("%s block %s: %s without the provider's number type", where, name, plain)
			}
		}
	}
	var presp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &presp)
	check("provider", configurables(presp.Schema.Attributes), nil)
	for _, newDS := range p.DataSources(ctx) {
		ds := newDS()
		var meta datasource.MetadataResponse
		ds.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "vspherehpc"}, &meta)
		var resp datasource.SchemaResponse
		ds.Schema(ctx, datasource.SchemaRequest{}, &resp)
		check(meta.TypeName, configurables(resp.Schema.Attributes), blockTypes(resp.Schema.Blocks))
	}
	for _, newRes := range p.Resources(ctx) {
		r := newRes()
		var meta fwresource.MetadataResponse
		r.Metadata(ctx, fwresource.MetadataRequest{ProviderTypeName: "vspherehpc"}, &meta)
		var resp fwresource.SchemaResponse
		r.Schema(ctx, fwresource.SchemaRequest{}, &resp)
		check(meta.TypeName, configurables(resp.Schema.Attributes), blockTypes(resp.Schema.Blocks))
	}
}

// configurable is what the number check needs of any schema's attribute.
type configurable interface {
	IsOptional() bool
	IsRequired() bool
	GetType() attr.Type
}

func configurables[A configurable](attrs map[string]A) map[string]configurable {
	out := make(map[string]configurable, len(attrs))
	for n, a := range attrs {
		out[n] = a
	}
	return out
}

func blockTypes[B interface{ Type() attr.Type }](blocks map[string]B) map[string]attr.Type {
	out := make(map[string]attr.Type, len(blocks))
	for n, b := range blocks {
		out[n] = b.Type()
	}
	return out
}

// plainNumber names the framework's own number type found in typ, "" when
// there is none.
func plainNumber(typ attr.Type) string {
	switch t := typ.(type) {
	case basetypes.Int64Type:
		return "Int64"
	case basetypes.Float64Type:
		return "Float64"
	case basetypes.NumberType, basetypes.Int32Type, basetypes.Float32Type:
		return t.String()
	case attr.TypeWithElementType:
		return plainNumber(t.ElementType())
	case attr.TypeWithAttributeTypes:
		for _, at := range t.AttributeTypes() {
			if plain := plainNumber(at); plain != "" {
				return plain
			}
		}
	}
	return ""
}
