package provider

import (
	"context"
	"fmt"
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Numbers. Terraform has one number type, so an Int64 attribute can be given
// 1500.5 and a Float64 one 1e400. The framework's types refuse those in their
// value conversion, which every read of the configuration runs first, and it
// reports that failure as "Value Conversion Error ... This is always an error
// in the provider", with the number printed as %!s(*big.Float=...)
// (basetypes.Int64Type.ValueFromTerraform formats a *big.Float with %s, and
// internal/reflect wraps any conversion error so; validators never run). The
// types below convert what the framework's do, keep any other number as an
// invalidNumber, and refuse it in validation, where an error is worded for
// the user and names the attribute. Every configurable Int64 and Float64
// attribute uses them; computed-only ones cannot be given a value.

// int64Type is types.Int64Type for an attribute that takes want, e.g. "a
// whole number from 1280 to 9000".
type int64Type struct {
	basetypes.Int64Type
	want string
}

// wholeNumber is the type of an Int64 attribute that takes lo to hi; its
// validators check the range of whole numbers.
func wholeNumber(lo, hi int64) int64Type {
	return int64Type{want: fmt.Sprintf("a whole number from %d to %d", lo, hi)}
}

// Equal lets values of the framework's Int64Type, which this type converts
// valid numbers to, stand where this type is expected (objects and lists
// check their elements' types).
func (t int64Type) Equal(o attr.Type) bool {
	switch o.(type) {
	case int64Type, basetypes.Int64Type:
		return true
	}
	return false
}

func (t int64Type) String() string { return "provider.int64Type" }

func (t int64Type) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	return convertNumber(ctx, t, t.want, in, t.Int64Type.ValueFromTerraform)
}

// Validate is what the framework runs on a value it has not converted (a
// list's elements); it says what invalidNumber does.
func (t int64Type) Validate(ctx context.Context, in tftypes.Value, at path.Path) diag.Diagnostics {
	return validateNumber(ctx, t, t.want, in, at, t.Int64Type.ValueFromTerraform)
}

// float64Type is types.Float64Type for an attribute that takes want.
type float64Type struct {
	basetypes.Float64Type
	want string
}

// realNumber is the type of a Float64 attribute that takes want, e.g. "a
// number of GB greater than 0".
func realNumber(want string) float64Type { return float64Type{want: want} }

// Equal: see int64Type.Equal.
func (t float64Type) Equal(o attr.Type) bool {
	switch o.(type) {
	case float64Type, basetypes.Float64Type:
		return true
	}
	return false
}

func (t float64Type) String() string { return "provider.float64Type" }

func (t float64Type) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	return convertNumber(ctx, t, t.want, in, t.Float64Type.ValueFromTerraform)
}

// Validate: see int64Type.Validate.
func (t float64Type) Validate(ctx context.Context, in tftypes.Value, at path.Path) diag.Diagnostics {
	return validateNumber(ctx, t, t.want, in, at, t.Float64Type.ValueFromTerraform)
}

// invalidNumber is a number its attribute's type cannot hold. It exists only
// to be refused by ValidateAttribute, which the framework runs before
// anything uses the value.
type invalidNumber struct {
	typ   attr.Type
	want  string
	value *big.Float
}

var _ xattr.ValidateableAttribute = invalidNumber{}

// fromTerraform is a framework type's conversion.
type fromTerraform func(context.Context, tftypes.Value) (attr.Value, error)

// convertNumber converts in as the framework's type does, and keeps a known
// number that type refuses as an invalidNumber of typ; anything else keeps
// the framework's error.
func convertNumber(ctx context.Context, typ attr.Type, want string, in tftypes.Value, convert fromTerraform) (attr.Value, error) {
	v, err := convert(ctx, in)
	if err == nil {
		return v, nil
	}
	var f *big.Float
	if !in.IsKnown() || in.IsNull() || in.As(&f) != nil || f == nil {
		return nil, err
	}
	return invalidNumber{typ: typ, want: want, value: f}, nil
}

// validateNumber says what invalidNumber says of a number the framework's
// type refuses.
func validateNumber(ctx context.Context, typ attr.Type, want string, in tftypes.Value, at path.Path, convert fromTerraform) diag.Diagnostics {
	v, _ := convertNumber(ctx, typ, want, in, convert)
	n, ok := v.(invalidNumber)
	if !ok {
		return nil // valid, or not a known number: the framework's own checks report it
	}
	var diags diag.Diagnostics
	diags.AddAttributeError(at, "Invalid number", n.problem(at))
	return diags
}

func (v invalidNumber) problem(at path.Path) string {
	return fmt.Sprintf("%s must be %s; %s is not.", at, v.want, v.String())
}

func (v invalidNumber) ValidateAttribute(_ context.Context, req xattr.ValidateAttributeRequest, resp *xattr.ValidateAttributeResponse) {
	resp.Diagnostics.AddAttributeError(req.Path, "Invalid number", v.problem(req.Path))
}

func (v invalidNumber) Type(context.Context) attr.Type { return v.typ }

func (v invalidNumber) ToTerraformValue(context.Context) (tftypes.Value, error) {
	return tftypes.NewValue(tftypes.Number, v.value), nil
}

func (v invalidNumber) Equal(o attr.Value) bool {
	other, ok := o.(invalidNumber)
	return ok && v.value.Cmp(other.value) == 0
}

func (v invalidNumber) IsNull() bool { return false }

func (v invalidNumber) IsUnknown() bool { return false }

// String prints the number as the user wrote it: 1500.5, 1e+400.
func (v invalidNumber) String() string { return v.value.Text('g', -1) }
