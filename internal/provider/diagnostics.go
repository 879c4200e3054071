package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// vsphereErrorDiag turns a service-layer error into a diagnostic whose
// summary says what failed and whose detail says what vCenter said and, for
// the failures a user can fix, what to do.
func vsphereErrorDiag(summary string, err error) diag.Diagnostic {
	detail := err.Error()
	switch {
	case errors.Is(err, vsphere.ErrNotConfigured):
		detail = "This needs vCenter, but the provider has no vCenter settings. Set vsphere_server, user and password " +
			"in the provider block, or the VSPHERE_SERVER, VSPHERE_USER and VSPHERE_PASSWORD environment variables."
	}
	return diag.NewErrorDiagnostic(summary, detail)
}

// clientFrom is the shared Configure step of resources and data sources.
func clientFrom(providerData any, diags *diag.Diagnostics) *vsphere.Client {
	if providerData == nil {
		return nil // the provider is not configured yet (validation, early plan)
	}
	client, ok := providerData.(*vsphere.Client)
	if !ok {
		diags.AddError("Unexpected provider data",
			fmt.Sprintf("Expected *vsphere.Client, got %T. Please report this issue to the provider developers.", providerData))
		return nil
	}
	return client
}

// sameVM reports whether two VM ids (UUID or managed object id) name one
// VM, so that swapping one for the other replaces nothing.
func sameVM(ctx context.Context, client *vsphere.Client, a, b string) bool {
	if !client.Configured() {
		return false
	}
	ua, err := client.VMUUID(ctx, a)
	if err != nil {
		return false
	}
	ub, err := client.VMUUID(ctx, b)
	return err == nil && ua == ub
}
