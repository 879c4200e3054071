package provider

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
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
