package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
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

// Each validator refuses what it should, names the attribute, and leaves
// null and unknown values alone (checked once known).
func TestValidators(t *testing.T) {
	ctx := context.Background()
	at := path.Root("arg")
	str := func(v validator.String, val types.String) diag.Diagnostics {
		resp := &validator.StringResponse{}
		v.ValidateString(ctx, validator.StringRequest{Path: at, ConfigValue: val}, resp)
		return resp.Diagnostics
	}
	list := func(items ...string) diag.Diagnostics {
		elems := make([]attr.Value, len(items))
		for i, s := range items {
			elems[i] = types.StringValue(s)
		}
		resp := &validator.ListResponse{}
		uniqueStrings{}.ValidateList(ctx, validator.ListRequest{Path: at, ConfigValue: types.ListValueMust(types.StringType, elems)}, resp)
		return resp.Diagnostics
	}
	size := func(gb int64) diag.Diagnostics {
		resp := &validator.Int64Response{}
		mmioSizeBound{}.ValidateInt64(ctx, validator.Int64Request{Path: at, ConfigValue: types.Int64Value(gb)}, resp)
		return resp.Diagnostics
	}
	for _, c := range []struct {
		name    string
		diags   diag.Diagnostics
		refused bool
	}{
		{"duration 90s", str(positiveDuration{}, types.StringValue("90s")), false},
		{"duration 0s", str(positiveDuration{}, types.StringValue("0s")), true},
		{"duration -1m", str(positiveDuration{}, types.StringValue("-1m")), true},
		{"duration ten", str(positiveDuration{}, types.StringValue("ten")), true},
		{"duration unknown", str(positiveDuration{}, types.StringUnknown()), false},
		{"not empty", str(notEmpty("give a name"), types.StringValue("dc")), false},
		{"empty", str(notEmpty("give a name"), types.StringValue("")), true},
		{"empty null", str(notEmpty("give a name"), types.StringNull()), false},
		{"unique", list("a", "b"), false},
		{"repeated", list("a", "b", "a"), true},
		{"mmio 1", size(1), false},
		{"mmio 0", size(0), true},
		{"mmio above the bound", size(mmio.MaxSizeGB + 1), true},
	} {
		if c.diags.HasError() != c.refused {
			t.Errorf("%s: refused %t, want %t: %v", c.name, c.diags.HasError(), c.refused, c.diags)
		}
		for _, d := range c.diags {
			if dp, ok := d.(diag.DiagnosticWithPath); !ok || !dp.Path().Equal(at) && !dp.Path().Equal(at.AtListIndex(2)) {
				t.Errorf("%s: %q does not name the attribute", c.name, d.Summary())
			}
		}
	}
}
