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
)

// setModelState is state.Set for the data sources whose models hold lists
// of nested objects (a host's PCI devices, a VM's adapters). The
// framework's reflection compiles a regular expression for every field of
// every element it converts (internal/reflect's isValidFieldName, v1.19.0),
// which made the host data source's conversion a third of the provider's
// CPU in a refresh; this one reads each model type's tfsdk tags once and is
// 7x faster on a host of 50 devices (BenchmarkHostState). It takes what
// those models hold: attr.Values, model structs and slices of either (nil
// is null).
func setModelState(ctx context.Context, state *tfsdk.State, model any) diag.Diagnostics {
	var diags diag.Diagnostics
	typ, ok := state.Schema.Type().(basetypes.ObjectType)
	if !ok {
		diags.AddError("Internal error", fmt.Sprintf("the schema's type is %T, not an object", state.Schema.Type()))
		return diags
	}
	v, err := modelValue(reflect.ValueOf(model), typ)
	if err != nil {
		diags.AddError("Internal error", "converting the model to state: "+err.Error())
		return diags
	}
	raw, err := v.ToTerraformValue(ctx)
	if err != nil {
		diags.AddError("Internal error", "converting the model to state: "+err.Error())
		return diags
	}
	state.Raw = raw
	return diags
}

var attrValueType = reflect.TypeFor[attr.Value]()

// modelValue converts v to a value of typ.
func modelValue(v reflect.Value, typ attr.Type) (attr.Value, error) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, fmt.Errorf("nil %s", v.Type())
		}
		v = v.Elem()
	}
	if v.Type().Implements(attrValueType) {
		return v.Interface().(attr.Value), nil
	}
	switch v.Kind() {
	case reflect.Slice:
		lt, ok := typ.(basetypes.ListType)
		if !ok {
			return nil, fmt.Errorf("%s for a %s", v.Type(), typ)
		}
		if v.IsNil() {
			return types.ListNull(lt.ElemType), nil
		}
		elems := make([]attr.Value, v.Len())
		for i := range elems {
			e, err := modelValue(v.Index(i), lt.ElemType)
			if err != nil {
				return nil, err
			}
			elems[i] = e
		}
		list, diags := types.ListValue(lt.ElemType, elems)
		if diags.HasError() {
			return nil, fmt.Errorf("%s: %s", v.Type(), diags[0].Detail())
		}
		return list, nil
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
