package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
)

// TestEveryConfigurableNumberHasAProviderType guards the class of issue 12's
// "1500.5 reaches the user as an error in the provider": every number a
// configuration can set, in attributes, list elements and blocks, has the
// provider's int64Type or float64Type, which word such values for the user.
func TestEveryConfigurableNumberHasAProviderType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := New("test")()
	check := func(where string, attrs map[string]configurable, blocks map[string]attr.Type) {
		for name, a := range attrs {
			if a.IsOptional() || a.IsRequired() {
				if plain := plainNumber(a.GetType()); plain != "" {
					t.Errorf("%s.%s: configurable %s without the provider's number type", where, name, plain)
				}
			}
		}
		for name, typ := range blocks {
			if plain := plainNumber(typ); plain != "" {
				t.Errorf("%s block %s: %s without the provider's number type", where, name, plain)
			}
		}
	}
	var presp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &presp)
	check("provider", configurables(presp.Schema.Attributes), nil)
	for _, newDS := range p.DataSources(ctx) {
		ds := newDS()
		var meta datasource.MetadataResponse
		ds.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "vspherehpc"}, &meta)
		var resp datasource.SchemaResponse
		ds.Schema(ctx, datasource.SchemaRequest{}, &resp)
		check(meta.TypeName, configurables(resp.Schema.Attributes), blockTypes(resp.Schema.Blocks))
	}
	for _, newRes := range p.Resources(ctx) {
		r := newRes()
		var meta fwresource.MetadataResponse
		r.Metadata(ctx, fwresource.MetadataRequest{ProviderTypeName: "vspherehpc"}, &meta)
		var resp fwresource.SchemaResponse
		r.Schema(ctx, fwresource.SchemaRequest{}, &resp)
		check(meta.TypeName, configurables(resp.Schema.Attributes), blockTypes(resp.Schema.Blocks))
	}
}
