package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestUnorderedListSemanticEquals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	list := func(items ...string) unorderedList {
		l, diags := newUnorderedList(ctx, append([]string{}, items...))
		if diags.HasError() {
			t.Fatal(diags)
		}
		return l
	}
	for _, tc := range []struct {
		a, b unorderedList
		want bool
	}{
		{list("10.0.0.2", "10.0.0.1"), list("10.0.0.1", "10.0.0.2"), true},
		{list(), list(), true},
		{list("10.0.0.1", "10.0.0.1"), list("10.0.0.1", "10.0.0.2"), false},
		{list("10.0.0.1"), list("10.0.0.1", "10.0.0.2"), false},
		{list("10.0.0.1"), unorderedList{types.ListNull(types.StringType)}, false},
	} {
		got, diags := tc.a.ListSemanticEquals(ctx, tc.b)
		if diags.HasError() || got != tc.want {
			t.Errorf("%s semantically equals %s = %v (%v), want %v", tc.a, tc.b, got, diags, tc.want)
		}
	}
}
