package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// alwaysString and alwaysBool plan their value whatever the configuration
// or the state holds, so a value read from vSphere shows as drift.
func TestAlwaysPlansItsValue(t *testing.T) {
	ctx := context.Background()
	s := &planmodifier.StringResponse{PlanValue: types.StringValue("rocev1")}
	alwaysString("rocev2").PlanModifyString(ctx, planmodifier.StringRequest{StateValue: types.StringValue("rocev1")}, s)
	if s.PlanValue.ValueString() != "rocev2" {
		t.Errorf("alwaysString planned %s, want rocev2", s.PlanValue)
	}
	b := &planmodifier.BoolResponse{PlanValue: types.BoolUnknown()}
	alwaysBool(true).PlanModifyBool(ctx, planmodifier.BoolRequest{StateValue: types.BoolValue(false)}, b)
	if !b.PlanValue.Equal(types.BoolValue(true)) {
		t.Errorf("alwaysBool planned %s, want true", b.PlanValue)
	}
}
