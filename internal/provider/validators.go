package provider

import (
	"context"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
)

// positiveDuration accepts Go durations greater than zero, such as "90s".
type positiveDuration struct{}

var _ validator.String = positiveDuration{}

func (positiveDuration) Description(context.Context) string {
	return `value must be a positive duration such as "90s" or "10m"`
}

func (v positiveDuration) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (positiveDuration) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil || d <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			req.Path.String()+` must be a positive duration such as "90s" or "10m", not `+strconv.Quote(req.ConfigValue.ValueString())+".")
	}
}

// alwaysString plans a computed attribute at one value, so that anything
// else read from vSphere shows as drift.
type alwaysString string

func (a alwaysString) Description(context.Context) string { return "always " + string(a) }

func (a alwaysString) MarkdownDescription(ctx context.Context) string { return a.Description(ctx) }

func (a alwaysString) PlanModifyString(_ context.Context, _ planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	resp.PlanValue = types.StringValue(string(a))
}

// alwaysBool is alwaysString for booleans.
type alwaysBool bool

func (a alwaysBool) Description(context.Context) string {
	return "always " + strconv.FormatBool(bool(a))
}

func (a alwaysBool) MarkdownDescription(ctx context.Context) string { return a.Description(ctx) }

func (a alwaysBool) PlanModifyBool(_ context.Context, _ planmodifier.BoolRequest, resp *planmodifier.BoolResponse) {
	resp.PlanValue = types.BoolValue(bool(a))
}

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

var (
	_ basetypes.ListTypable                    = unorderedListType{}
	_ basetypes.ListValuableWithSemanticEquals = unorderedList{}
)

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
	a, b := v.Elements(), p.Elements()
	if len(a) != len(b) {
		return false, diags
	}
	count := make(map[string]int, len(a))
	for _, e := range a {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			return false, diags
		}
		count[s.ValueString()]++
	}
	for _, e := range b {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() || count[s.ValueString()] == 0 {
			return false, diags
		}
		count[s.ValueString()]--
	}
	return true, diags
}

// uniqueStrings refuses a list that repeats a value, in time linear in its
// length (listvalidator.UniqueValues compares every pair).
type uniqueStrings struct{}

var _ validator.List = uniqueStrings{}

func (uniqueStrings) Description(context.Context) string { return "each value at most once" }

func (v uniqueStrings) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (uniqueStrings) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	seen := make(map[string]bool, len(req.ConfigValue.Elements()))
	for i, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if seen[s.ValueString()] {
			resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(i), "Value listed twice",
				fmt.Sprintf("%s lists %q more than once: list each value once (distinct() drops repeats).", req.Path, s.ValueString()))
		}
		seen[s.ValueString()] = true
	}
}

// staticMAC accepts a MAC address vSphere takes as a static address of a VM
// adapter. The rule is VMware's ("Static MAC Addressing" and "VMware OUI in
// Static MAC Addresses", vSphere Networking 6.5 and later,
// docs.vmware.com/en/VMware-vSphere/6.5/com.vmware.vsphere.networking.doc/GUID-F9243FED-F081-498F-B4A9-EF950292AF77.html
// and GUID-ADFECCE5-19E7-4A81-B706-171E279ACBCD.html): within VMware's OUI
// 00:50:56 only 00:50:56:00:00:00 to 00:50:56:3F:FF:FF is for static
// addresses, the rest being reserved for the addresses vCenter generates and
// for VMkernel adapters; any other unique address is supported, though
// vCenter cannot check it against machines outside its inventory. An
// adapter's own address must be unicast: a set lowest bit of the first byte
// makes it a group (multicast or broadcast) address (IEEE 802).
type staticMAC struct{}

var _ validator.String = staticMAC{}

func (staticMAC) Description(context.Context) string {
	return "must be a unicast MAC address in lower case; with VMware's prefix 00:50:56, from 00:50:56:00:00:00 to 00:50:56:3f:ff:ff"
}

func (v staticMAC) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (staticMAC) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if problem := staticMACProblem(req.ConfigValue.ValueString()); problem != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid static MAC address", fmt.Sprintf("%s = %q %s", req.Path, req.ConfigValue.ValueString(), problem))
	}
}

// staticMACProblem says what is wrong with mac as a static adapter address,
// "" when nothing is.
func staticMACProblem(mac string) string {
	const fix = " Remove the argument to let vSphere generate an address."
	if !macPattern.MatchString(mac) {
		return "is not a MAC address in lower case, such as 00:50:56:0a:0b:0c." + fix
	}
	b := make([]byte, 6)
	for i := range b {
		n, _ := strconv.ParseUint(mac[3*i:3*i+2], 16, 8) // checked by macPattern
		b[i] = byte(n)
	}
	switch {
	case b[0]&1 == 1:
		return "is a multicast address (the lowest bit of its first byte is set), and an adapter needs a unicast address: " +
			"use one from VMware's range for static addresses, 00:50:56:00:00:00 to 00:50:56:3f:ff:ff." + fix
	case mac == "00:00:00:00:00:00":
		return "is not a usable address: use one from VMware's range for static addresses, 00:50:56:00:00:00 to 00:50:56:3f:ff:ff." + fix
	case b[0] == 0x00 && b[1] == 0x50 && b[2] == 0x56 && b[3] > 0x3f:
		return fmt.Sprintf("is in the part of VMware's prefix 00:50:56 that vSphere reserves for the addresses vCenter generates and "+
			"for VMkernel adapters: static addresses with that prefix go from 00:50:56:00:00:00 to 00:50:56:3f:ff:ff, e.g. 00:50:56:%02x:%s.",
			b[3]&0x3f, mac[12:]) + fix
	}
	return ""
}

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

func (v invalidNumber) IsNull() bool    { return false }
func (v invalidNumber) IsUnknown() bool { return false }

// String prints the number as the user wrote it: 1500.5, 1e+400.
func (v invalidNumber) String() string { return v.value.Text('g', -1) }

// mmioSizeBound refuses an MMIO window no ESXi host can map (see
// mmio.MaxSizeGB); that it is a power of two is the GPU planner's check,
// which also suggests a size.
type mmioSizeBound struct{}

var _ validator.Int64 = mmioSizeBound{}

func (mmioSizeBound) Description(context.Context) string {
	return fmt.Sprintf("value must be from 1 to %d (GB)", mmio.MaxSizeGB)
}

func (v mmioSizeBound) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (mmioSizeBound) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	switch size := req.ConfigValue.ValueInt64(); {
	case size < 1:
		resp.Diagnostics.AddAttributeError(req.Path, "MMIO size out of range", fmt.Sprintf(
			"%s = %d: the window must be at least 1 GB. Leave %s unset to size it from the GPUs' memory.", req.Path, size, req.Path))
	case size > mmio.MaxSizeGB:
		resp.Diagnostics.AddAttributeError(req.Path, "MMIO size out of range", fmt.Sprintf(
			"%s = %d GB is more than any ESXi host can address: the most is %d GB (1 PiB, the maximum physical address of ESXi). "+
				"Leave %s unset to size the window from the GPUs' memory, or give a power of two up to %d.", req.Path, size, mmio.MaxSizeGB, req.Path, mmio.MaxSizeGB))
	}
}

// fullyKnown reports whether v holds no unknown value at any depth: a list
// or set can be known while an element is not.
func fullyKnown(ctx context.Context, v attr.Value) bool {
	tv, err := v.ToTerraformValue(ctx)
	return err == nil && tv.IsFullyKnown()
}

// The forms of vSphere's identifiers that arguments take, as vCenter writes
// them: lower-case hex, as the host's PCI and network views show.
var (
	vmknicPattern = regexp.MustCompile(`^vmk[0-9]+$`)                                  // a VMkernel adapter
	vmnicPattern  = regexp.MustCompile(`^vmnic[0-9]+$`)                                // a physical NIC
	pciIDPattern  = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`) // domain:bus:slot.function
	hexIDPattern  = regexp.MustCompile(`^[0-9a-f]{4}$`)                                // a PCI vendor or device id
	macPattern    = regexp.MustCompile(`^([0-9a-f]{2}:){5}[0-9a-f]{2}$`)
)

// notEmpty refuses "" where a look-up expects a name or an id, saying what to
// give (fix). Left to the look-up, "" reads as "not given" (the only
// datacenter) or searches vCenter for an object with no name.
type notEmpty string

func (notEmpty) Description(context.Context) string { return "not empty" }

func (v notEmpty) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v notEmpty) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || req.ConfigValue.ValueString() != "" {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Empty "+req.Path.String(), req.Path.String()+" is empty: "+string(v)+".")
}
