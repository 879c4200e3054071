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
	_ datasource.DataSource              = (*clusterDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*clusterDataSource)(nil)
)

type clusterDataSource struct {
	client *vsphere.Client
}

type clusterModel struct {
	DatacenterID  types.String   `tfsdk:"datacenter_id"`
	Name          types.String   `tfsdk:"name"`
	ID            types.String   `tfsdk:"id"`
	HostNames     []types.String `tfsdk:"host_names"`
	HostSystemIDs []types.String `tfsdk:"host_system_ids"`
}

// NewClusterDataSource is the vspherehpc_cluster data source.
func NewClusterDataSource() datasource.DataSource {
	return &clusterDataSource{}
}

func (d *clusterDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

func (d *clusterDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Looks up a cluster by name and lists its hosts, so a configuration can build the PVRDMA switch " +
			"over \"every host of the cluster\" and follow the cluster as hosts are added.",
		Attributes: map[string]schema.Attribute{
			"datacenter_id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Managed object id of the datacenter to search, e.g. `data.vspherehpc_datacenter.dc.id`.",
				Validators:          []validator.String{notEmpty("give the datacenter's managed object id, e.g. data.vspherehpc_datacenter.dc.id")},
			},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the cluster.",
				Validators:          []validator.String{notEmpty("give the cluster's name")},
			},
			"id": computedString("Managed object id of the cluster, e.g. `domain-c7` (the same id `vsphere_compute_cluster.id` exports)."),
			"host_names": schema.ListAttribute{
				Computed:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Names of the cluster's hosts, sorted, whatever their connection or maintenance state.",
			},
			"host_system_ids": schema.ListAttribute{
				Computed:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Managed object ids of the cluster's hosts, in the order of `host_names`.",
			},
		},
	}
}

func (d *clusterDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *clusterDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var state clusterModel
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cl, err := d.client.ClusterByName(ctx, state.DatacenterID.ValueString(), state.Name.ValueString())
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot find cluster", err))
		return
	}
	tflog.Debug(ctx, "Found cluster", map[string]any{"cluster_id": cl.ID, "name": cl.Name, "hosts": len(cl.Hosts)})
	state.ID = types.StringValue(cl.ID)
	var names, ids []string
	for _, h := range cl.Hosts {
		names, ids = append(names, vsphere.EntityName(h.Name)), append(ids, h.ID)
	}
	state.HostNames, state.HostSystemIDs = stringValues(names), stringValues(ids)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}
