package provider

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// setModelState is state.Set for every read of state from a model: the
// resources' and the data sources'. The framework's reflection compiles a
// regular expression for every field of every object it converts
// (internal/reflect's isValidFieldName, v1.19.0): a third of the provider's
// CPU in a refresh when the host data source converted its PCI devices that
// way, and 84 µs per VM GPU setup against 27 here. This one reads each
// model type's tfsdk tags once (BenchmarkHostState, BenchmarkModelState).
// It takes what the models hold: attr.Values, model structs and slices of
// either (nil is null).
func setModelState(ctx context.Context, state *tfsdk.State, model any) diag.Diagnostics {
	return setModel(ctx, state.Schema, &state.Raw, model)
}

// setModel is setModelState for whatever holds a schema and a raw value: a
// state, a resource identity, a list result's resource.
func setModel(ctx context.Context, schema interface{ Type() attr.Type }, raw *tftypes.Value, model any) diag.Diagnostics {
	v, diags := modelRaw(ctx, schema.Type(), model)
	if !diags.HasError() {
		*raw = v
	}
	return diags
}

// modelRaw is model as a value of the schema type typ.
func modelRaw(ctx context.Context, typ attr.Type, model any) (tftypes.Value, diag.Diagnostics) {
	var diags diag.Diagnostics
	if _, ok := typ.(basetypes.ObjectType); !ok {
		diags.AddError("Internal error", fmt.Sprintf("the schema's type is %T, not an object", typ))
		return tftypes.Value{}, diags
	}
	v, err := modelValue(reflect.ValueOf(model), typ)
	if err != nil {
		diags.AddError("Internal error", "converting the model to state: "+err.Error())
		return tftypes.Value{}, diags
	}
	raw, err := v.ToTerraformValue(ctx)
	if err != nil {
		diags.AddError("Internal error", "converting the model to state: "+err.Error())
	}
	return raw, diags
}

var attrValueType = reflect.TypeFor[attr.Value]()

// modelValue converts v to a value of typ.
func modelValue(v reflect.Value, typ attr.Type) (attr.Value, error) {
	if v.Type().Implements(attrValueType) {
		return v.Interface().(attr.Value), nil
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice) && v.IsNil() {
		return typ.ValueFromTerraform(context.Background(), tftypes.NewValue(typ.TerraformType(context.Background()), nil))
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice:
		elemType, ok := collectionElemType(typ)
		if !ok {
			return nil, fmt.Errorf("%s for a %s", v.Type(), typ)
		}
		elems := make([]attr.Value, v.Len())
		for i := range elems {
			e, err := modelValue(v.Index(i), elemType)
			if err != nil {
				return nil, err
			}
			elems[i] = e
		}
		var collection attr.Value
		var diags diag.Diagnostics
		if _, isSet := typ.(basetypes.SetType); isSet {
			collection, diags = types.SetValue(elemType, elems)
		} else {
			collection, diags = types.ListValue(elemType, elems)
		}
		if diags.HasError() {
			return nil, fmt.Errorf("%s: %s", v.Type(), diags[0].Detail())
		}
		return collection, nil
	case reflect.Struct:
		ot, ok := typ.(basetypes.ObjectType)
		if !ok {
			return nil, fmt.Errorf("%s for a %s", v.Type(), typ)
		}
		fields := modelFields(v.Type())
		attrs := make(map[string]attr.Value, len(ot.AttrTypes))
		for name, at := range ot.AttrTypes {
			i, ok := fields[name]
			if !ok {
				return nil, fmt.Errorf("%s has no field tagged %q", v.Type(), name)
			}
			a, err := modelValue(v.Field(i), at)
			if err != nil {
				return nil, err
			}
			attrs[name] = a
		}
		obj, diags := types.ObjectValue(ot.AttrTypes, attrs)
		if diags.HasError() {
			return nil, fmt.Errorf("%s: %s", v.Type(), diags[0].Detail())
		}
		return obj, nil
	}
	return nil, fmt.Errorf("cannot convert a %s", v.Type())
}

// collectionElemType is the element type of a list or set type.
func collectionElemType(typ attr.Type) (attr.Type, bool) {
	switch ct := typ.(type) {
	case basetypes.ListType:
		return ct.ElemType, true
	case basetypes.SetType:
		return ct.ElemType, true
	}
	return nil, false
}

var fieldsByType sync.Map // reflect.Type → map[string]int

// modelFields maps a model struct's tfsdk tags to its field indexes.
func modelFields(t reflect.Type) map[string]int {
	if f, ok := fieldsByType.Load(t); ok {
		return f.(map[string]int)
	}
	fields := map[string]int{}
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("tfsdk"); tag != "" && tag != "-" {
			fields[tag] = i
		}
	}
	fieldsByType.Store(t, fields)
	return fields
}

// getModel is setModel's inverse: state.Get, plan.Get and config.Get for
// the models, without the framework's regular expression per field (18 ms
// of the provider's CPU in a refresh of 512 resources). It fills what
// setModel takes: attr.Value fields, model structs, pointers to them (nil
// for null) and slices of them (nil for null).
func getModel(ctx context.Context, schema interface{ Type() attr.Type }, raw tftypes.Value, model any) diag.Diagnostics {
	var diags diag.Diagnostics
	dst := reflect.ValueOf(model)
	if dst.Kind() != reflect.Pointer || dst.IsNil() {
		diags.AddError("Internal error", fmt.Sprintf("reading a model into a %T, not a pointer to one", model))
		return diags
	}
	if err := assignModel(ctx, raw, schema.Type(), dst.Elem()); err != nil {
		diags.AddError("Internal error", "reading the model: "+err.Error())
	}
	return diags
}

// assignModel sets dst to raw, a value of typ.
func assignModel(ctx context.Context, raw tftypes.Value, typ attr.Type, dst reflect.Value) error {
	if dst.Type().Implements(attrValueType) {
		v, err := typ.ValueFromTerraform(ctx, raw)
		if err != nil {
			return err
		}
		rv := reflect.ValueOf(v)
		if !rv.Type().AssignableTo(dst.Type()) {
			return fmt.Errorf("a %s for a field of type %s", rv.Type(), dst.Type())
		}
		dst.Set(rv)
		return nil
	}
	if raw.IsNull() && (dst.Kind() == reflect.Pointer || dst.Kind() == reflect.Slice) {
		dst.SetZero()
		return nil
	}
	if !raw.IsKnown() || raw.IsNull() {
		return fmt.Errorf("%s cannot hold %s", dst.Type(), raw)
	}
	switch dst.Kind() {
	case reflect.Pointer:
		elem := reflect.New(dst.Type().Elem())
		if err := assignModel(ctx, raw, typ, elem.Elem()); err != nil {
			return err
		}
		dst.Set(elem)
		return nil
	case reflect.Slice:
		elemType, ok := collectionElemType(typ)
		if !ok {
			return fmt.Errorf("%s for a %s", dst.Type(), typ)
		}
		var elems []tftypes.Value
		if err := raw.As(&elems); err != nil {
			return err
		}
		s := reflect.MakeSlice(dst.Type(), len(elems), len(elems))
		for i, e := range elems {
			if err := assignModel(ctx, e, elemType, s.Index(i)); err != nil {
				return err
			}
		}
		dst.Set(s)
		return nil
	case reflect.Struct:
		ot, ok := typ.(basetypes.ObjectType)
		if !ok {
			return fmt.Errorf("%s for a %s", dst.Type(), typ)
		}
		var attrs map[string]tftypes.Value
		if err := raw.As(&attrs); err != nil {
			return err
		}
		fields := modelFields(dst.Type())
		if len(fields) != len(ot.AttrTypes) {
			return fmt.Errorf("%s has %d tagged fields for %d attributes", dst.Type(), len(fields), len(ot.AttrTypes))
		}
		for name, at := range ot.AttrTypes {
			i, ok := fields[name]
			if !ok {
				return fmt.Errorf("%s has no field tagged %q", dst.Type(), name)
			}
			if err := assignModel(ctx, attrs[name], at, dst.Field(i)); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("cannot read into a %s", dst.Type())
}
