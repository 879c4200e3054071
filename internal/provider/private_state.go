package provider

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// privateVM is the private-state key holding a VM resource's managed object
// id, so reads need no search by UUID.
const privateVM = "vm"

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

// vmRef is the VM to act on: its remembered managed object id, which needs no
// search, else the configured id.
func vmRef(ctx context.Context, p privateState, configured string, diags *diag.Diagnostics) string {
	var moid string
	_, ds := getPrivateJSON(ctx, p, privateVM, &moid)
	diags.Append(ds...)
	return cmp.Or(moid, configured)
}

// readVM reads a VM through vmRef and, when the remembered id is stale (a
// re-registered VM), once more through the configured id.
func readVM[T any](ctx context.Context, p privateState, configured string, diags *diag.Diagnostics, read func(vmID string) (T, error)) (T, error) {
	vmID := vmRef(ctx, p, configured, diags)
	got, err := read(vmID)
	if errors.Is(err, vsphere.ErrNotFound) && vmID != configured {
		got, err = read(configured)
	}
	return got, err
}
