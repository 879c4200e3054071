package provider

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
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
