package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ datasource.DataSource              = (*datacenterDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*datacenterDataSource)(nil)
)

type datacenterDataSource struct {
	client *vsphere.Client
}

type datacenterModel struct {
	ID   types.String `tfsdk:"id"`
	Name types.String `tfsdk:"name"`
}

// NewDatacenterDataSource is the vspherehpc_datacenter data source.
func NewDatacenterDataSource() datasource.DataSource {
	return &datacenterDataSource{}
}

func (d *datacenterDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_datacenter"
}

func (d *datacenterDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Looks up a datacenter by name, for the `datacenter_id` of other resources and data sources.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Managed object id of the datacenter, e.g. `datacenter-3` (the same id `vsphere_datacenter.id` exports).",
			},
			"name": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "Name of the datacenter. When omitted, vCenter must have exactly one datacenter, and that one is used; " +
					"an empty name is refused rather than taken for an omitted one.",
				Validators: []validator.String{notEmpty("give the datacenter's name, or leave name out to use vCenter's only datacenter")},
			},
		},
	}
}

func (d *datacenterDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *datacenterDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var state datacenterModel
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dc, err := d.client.DatacenterByName(ctx, state.Name.ValueString())
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot find datacenter", err))
		return
	}
	tflog.Debug(ctx, "Found datacenter", map[string]any{"datacenter_id": dc.ID, "name": dc.Name})
	state.ID = types.StringValue(dc.ID)
	state.Name = types.StringValue(vsphere.EntityName(dc.Name))
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}
