package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// largeSetType is a set that may hold an element per host of a fleet (the
// switch's host blocks). After every read the framework looks for semantic
// equality between the prior and the new state, and in a set whose type has
// none it compares every new element with every prior one, building each
// pair's path for the log (internal/fwschemadata's
// ValueSemanticEqualitySetElements, v1.19.0): quadratic in the set's size,
// 80 ms of a refresh at 64 hosts (BenchmarkRDMADVSRead). This type's semantic
// equality is its equality, found in linear time, which ends that walk
// whenever the read found what state holds: the framework then keeps the
// prior value, which is the same.
type largeSetType struct {
	basetypes.SetType
}

func newLargeSetType(elem attr.Type) largeSetType {
	return largeSetType{basetypes.SetType{ElemType: elem}}
}

func (t largeSetType) Equal(o attr.Type) bool {
	other, ok := o.(largeSetType)
	return ok && t.SetType.Equal(other.SetType)
}

func (t largeSetType) String() string { return "provider.largeSetType" }

func (t largeSetType) ValueType(context.Context) attr.Value {
	return largeSet{basetypes.NewSetNull(t.ElementType())}
}

func (t largeSetType) ValueFromSet(_ context.Context, in basetypes.SetValue) (basetypes.SetValuable, diag.Diagnostics) {
	return largeSet{in}, nil
}

func (t largeSetType) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	v, err := t.SetType.ValueFromTerraform(ctx, in)
	if err != nil {
		return nil, err
	}
	set, ok := v.(basetypes.SetValue)
	if !ok {
		return nil, fmt.Errorf("unexpected value type %T", v)
	}
	return largeSet{set}, nil
}

// Validate is basetypes.SetType's check for duplicate elements in linear
// time: the framework's compares every pair of elements, at every
// conversion of the set. An element's key is its value's String, as in
// sameElements. It checks no element on its own: the switch's host objects
// have no type validation.
func (t largeSetType) Validate(ctx context.Context, in tftypes.Value, at path.Path) diag.Diagnostics {
	var diags diag.Diagnostics
	if in.Type() == nil || !in.IsKnown() || in.IsNull() {
		return t.SetType.Validate(ctx, in, at)
	}
	var elems []tftypes.Value
	if err := in.As(&elems); err != nil {
		return t.SetType.Validate(ctx, in, at)
	}
	seen := make(map[string]bool, len(elems))
	for _, e := range elems {
		if !e.IsFullyKnown() {
			continue
		}
		v, err := t.ElementType().ValueFromTerraform(ctx, e)
		if err != nil {
			diags.AddAttributeError(at, "Set Type Validation Error", "Reading an element of the set: "+err.Error())
			return diags
		}
		if key := v.String(); seen[key] {
			diags.AddAttributeError(at, "Duplicate Set Element", "This attribute contains duplicate values of: "+key)
		} else {
			seen[key] = true
		}
	}
	return diags
}

// largeSet is a value of largeSetType.
type largeSet struct {
	basetypes.SetValue
}

func (v largeSet) Type(context.Context) attr.Type {
	return newLargeSetType(v.ElementType(context.Background()))
}

func (v largeSet) Equal(o attr.Value) bool {
	other, ok := o.(largeSet)
	if !ok {
		return false
	}
	if v.IsNull() || v.IsUnknown() || other.IsNull() || other.IsUnknown() {
		return v.SetValue.Equal(other.SetValue)
	}
	return v.ElementType(context.Background()).Equal(other.ElementType(context.Background())) &&
		sameElements(v.Elements(), other.Elements())
}

// SetSemanticEquals is Equal: the framework then keeps the prior value.
func (v largeSet) SetSemanticEquals(ctx context.Context, prior basetypes.SetValuable) (bool, diag.Diagnostics) {
	p, diags := prior.ToSetValue(ctx)
	return !diags.HasError() && v.Equal(largeSet{p}), diags
}

// sameElements reports whether a and b hold the same elements, in linear
// time (basetypes.SetValue.Equal looks for each element in a copy of the
// other set). An element's String is its key, which suits strings and
// objects of strings: they print unambiguously (strings quoted, unknown and
// null marked, attributes sorted).
func sameElements(a, b []attr.Value) bool {
	if len(a) != len(b) {
		return false
	}
	count := make(map[string]int, len(a))
	for _, e := range a {
		count[e.String()]++
	}
	for _, e := range b {
		key := e.String()
		if count[key] == 0 {
			return false
		}
		count[key]--
	}
	return true
}
