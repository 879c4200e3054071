package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// privateState is the part of the framework's private state API used here;
// create, read, update, import and delete responses each carry one.
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// stateSetter is resp.State of create and update.
type stateSetter interface {
	Set(ctx context.Context, val any) diag.Diagnostics
}

// setPrivateJSON stores v under key; private state values must be JSON.
func setPrivateJSON(ctx context.Context, p privateState, key string, v any) diag.Diagnostics {
	b, err := json.Marshal(v)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Cannot record private state "+key, err.Error())
		return diags
	}
	return p.SetKey(ctx, key, b)
}

// getPrivateJSON loads key into v and reports whether it was there.
func getPrivateJSON(ctx context.Context, p privateState, key string, v any) (bool, diag.Diagnostics) {
	b, diags := p.GetKey(ctx, key)
	if diags.HasError() || len(b) == 0 {
		return false, diags
	}
	if err := json.Unmarshal(b, v); err != nil {
		diags.AddError("Cannot read private state "+key, err.Error())
		return false, diags
	}
	return true, diags
}
