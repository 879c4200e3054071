package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// unorderedListType is a list of strings whose order does not matter, for
// an argument that is a set to vSphere but may hold thousands of entries
// (firewall_allowed_ips). A set attribute costs time quadratic in its size at
// every plan: the framework's set type checks duplicates and equality by
// comparing every pair of elements, and terraform-plugin-go's
// tftypes.Value.Equal, which the framework runs on every planned state, finds
// each set element by a linear scan (terraform-plugin-framework issue 1322).
// A list is compared index by index. Its semantic equality ignores order, so
// state keeps the configuration's order while vSphere reports another, and
// uniqueStrings refuses the duplicates a set would have merged.
type unorderedListType struct {
	basetypes.ListType
}

func newUnorderedListType() unorderedListType {
	return unorderedListType{basetypes.ListType{ElemType: types.StringType}}
}

func (t unorderedListType) Equal(o attr.Type) bool {
	other, ok := o.(unorderedListType)
	return ok && t.ListType.Equal(other.ListType)
}

func (t unorderedListType) String() string { return "provider.unorderedListType" }

func (t unorderedListType) ValueType(context.Context) attr.Value {
	return unorderedList{basetypes.NewListNull(t.ElementType())}
}

func (t unorderedListType) ValueFromList(_ context.Context, in basetypes.ListValue) (basetypes.ListValuable, diag.Diagnostics) {
	return unorderedList{in}, nil
}

func (t unorderedListType) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	v, err := t.ListType.ValueFromTerraform(ctx, in)
	if err != nil {
		return nil, err
	}
	list, ok := v.(basetypes.ListValue)
	if !ok {
		return nil, fmt.Errorf("unexpected value type %T", v)
	}
	return unorderedList{list}, nil
}

// unorderedList is a value of unorderedListType.
type unorderedList struct {
	basetypes.ListValue
}

func newUnorderedList(ctx context.Context, items []string) (unorderedList, diag.Diagnostics) {
	l, diags := types.ListValueFrom(ctx, types.StringType, items)
	return unorderedList{l}, diags
}

func (v unorderedList) Type(context.Context) attr.Type { return newUnorderedListType() }

func (v unorderedList) Equal(o attr.Value) bool {
	other, ok := o.(unorderedList)
	return ok && v.ListValue.Equal(other.ListValue)
}

// ListSemanticEquals reports whether both lists hold the same strings, in
// any order; the framework then keeps the prior value.
func (v unorderedList) ListSemanticEquals(ctx context.Context, prior basetypes.ListValuable) (bool, diag.Diagnostics) {
	p, diags := prior.ToListValue(ctx)
	if diags.HasError() || v.IsNull() || v.IsUnknown() || p.IsNull() || p.IsUnknown() {
		return false, diags
	}
	return sameElements(v.Elements(), p.Elements()), diags
}
