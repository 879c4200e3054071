package provider

import (
	"context"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

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
