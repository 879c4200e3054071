package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ datasource.DataSource                   = (*maxMTUDataSource)(nil)
	_ datasource.DataSourceWithConfigure      = (*maxMTUDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig = (*maxMTUDataSource)(nil)
)

// Defaults of the search; the schema descriptions quote them.
const (
	defaultVMKernelNIC = "vmk0"
	defaultMinMTU      = 1280 // the IPv6 minimum: any smaller answer means a broken path, not a small MTU
	defaultMaxMTU      = 9000 // the largest MTU ESXi vmknics and distributed switches accept
	defaultProbeWait   = "1s"
	defaultRetries     = 1
	defaultConcurrency = 8
)

type maxMTUDataSource struct {
	client *vsphere.Client
}

type maxMTUModel struct {
	HostSystemIDs types.List     `tfsdk:"host_system_ids"`
	VMKernelNIC   types.String   `tfsdk:"vmknic"`
	MinMTU        types.Int64    `tfsdk:"min_mtu"`
	MaxMTU        types.Int64    `tfsdk:"max_mtu"`
	Timeout       types.String   `tfsdk:"timeout"`
	Retries       types.Int64    `tfsdk:"retries"`
	Concurrency   types.Int64    `tfsdk:"concurrency"`
	MTU           types.Int64    `tfsdk:"mtu"`
	ConfiguredMTU types.Int64    `tfsdk:"configured_mtu"`
	Pairs         []mtuPairModel `tfsdk:"pairs"`
}

type mtuPairModel struct {
	SourceHostID   types.String `tfsdk:"source_host_id"`
	SourceHostName types.String `tfsdk:"source_host_name"`
	TargetHostID   types.String `tfsdk:"target_host_id"`
	TargetHostName types.String `tfsdk:"target_host_name"`
	TargetAddress  types.String `tfsdk:"target_address"`
	MTU            types.Int64  `tfsdk:"mtu"`
	ConfiguredMTU  types.Int64  `tfsdk:"configured_mtu"`
	Probes         types.Int64  `tfsdk:"probes"`
}

// NewMaxMTUDataSource is the vspherehpc_max_mtu data source.
func NewMaxMTUDataSource() datasource.DataSource {
	return &maxMTUDataSource{}
}

func (d *maxMTUDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_max_mtu"
}

func (d *maxMTUDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	mtuRange := int64validator.Between(576, defaultMaxMTU)
	resp.Schema = schema.Schema{
		MarkdownDescription: "The largest MTU that crosses the fabric unfragmented, measured: between every ordered pair of ESXi hosts, " +
			"don't-fragment pings run on the source host (esxcli `network diag ping`) and a binary search finds the largest packet " +
			"that gets through. It answers \"is jumbo frame actually working end to end?\" in about a dozen pings per pair instead " +
			"of the thousands a 4-byte walk needs.",
		Attributes: map[string]schema.Attribute{
			"host_system_ids": schema.ListAttribute{
				ElementType:         types.StringType,
				Required:            true,
				MarkdownDescription: "Managed object ids of the hosts to probe (two or more), e.g. `[for h in data.vspherehpc_host.node : h.id]`. Every ordered pair is probed: A to B and B to A can differ.",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(2),
					listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1)),
				},
			},
			"vmknic": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The VMkernel adapter to probe from and to on every host, e.g. the PVRDMA vmknic. Defaults to `" + defaultVMKernelNIC + "`.",
				Validators:          []validator.String{stringvalidator.RegexMatches(vmknicPattern, "must name a VMkernel adapter such as vmk1")},
			},
			"min_mtu": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("Smallest MTU to try, in bytes. A pair that gets no reply even at this size is an error. Defaults to `%d`.", defaultMinMTU),
				Validators:          []validator.Int64{mtuRange},
			},
			"max_mtu": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("Largest MTU to try, in bytes. Each pair's search is also capped at what its vmknics and switches are configured for. Defaults to `%d`.", defaultMaxMTU),
				Validators:          []validator.Int64{mtuRange},
			},
			"timeout": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "How long a host waits for the reply to one probe, as a duration; ESXi takes whole seconds, so it is rounded up. Defaults to `" + defaultProbeWait + "`.",
				Validators:          []validator.String{positiveDuration{}},
			},
			"retries": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("How many more times a lost probe at the boundary is re-sent before its size counts as too big: real fabrics lose packets. Defaults to `%d`.", defaultRetries),
				Validators:          []validator.Int64{int64validator.Between(0, 10)},
			},
			"concurrency": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("How many pairs are probed at once. Defaults to `%d`.", defaultConcurrency),
				Validators:          []validator.Int64{int64validator.Between(1, 64)},
			},
			"mtu": computedInt64("The largest MTU every pair carries: the minimum over `pairs`. Feed it to `vspherehpc_rdma_dvs.mtu` or a check block."),
			"configured_mtu": computedInt64("The MTU the configuration allows on every pair: the minimum over `pairs` of what the vmknics and their " +
				"standard switches are set to. When `mtu` is smaller, something on the path (a physical switch port, a link) is not configured " +
				"for it, and the data source warns naming the worst pair."),
			"pairs": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "One entry per ordered pair of hosts, source by source in the order of `host_system_ids`.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"source_host_id":   computedString("Managed object id of the host the pings ran on."),
					"source_host_name": computedString("Name of that host."),
					"target_host_id":   computedString("Managed object id of the host pinged."),
					"target_host_name": computedString("Name of that host."),
					"target_address":   computedString("The target vmknic's IPv4 address."),
					"mtu":              computedInt64("The largest packet (payload + 28 bytes of headers) that got through with don't-fragment set."),
					"configured_mtu":   computedInt64("The smaller of the two ends' vmknic and switch MTUs: the search's upper bound."),
					"probes":           computedInt64("Pings sent for this pair, retries included."),
				}},
			},
		},
	}
}

func (d *maxMTUDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig compares the bounds with their defaults applied, which
// attribute validators cannot.
func (d *maxMTUDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var minMTU, maxMTU types.Int64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("min_mtu"), &minMTU)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("max_mtu"), &maxMTU)...)
	if resp.Diagnostics.HasError() || minMTU.IsUnknown() || maxMTU.IsUnknown() {
		return
	}
	lo, hi := int64Or(minMTU, defaultMinMTU), int64Or(maxMTU, defaultMaxMTU)
	if lo > hi {
		resp.Diagnostics.AddAttributeError(path.Root("max_mtu"), "MTU bounds out of order",
			fmt.Sprintf("min_mtu (%d) is larger than max_mtu (%d); the search needs min_mtu <= max_mtu.", lo, hi))
	}
}

func (d *maxMTUDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var state maxMTUModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.VMKernelNIC = types.StringValue(stringOr(state.VMKernelNIC, defaultVMKernelNIC))
	state.MinMTU = types.Int64Value(int64Or(state.MinMTU, defaultMinMTU))
	state.MaxMTU = types.Int64Value(int64Or(state.MaxMTU, defaultMaxMTU))
	state.Timeout = types.StringValue(stringOr(state.Timeout, defaultProbeWait))
	state.Retries = types.Int64Value(int64Or(state.Retries, defaultRetries))
	state.Concurrency = types.Int64Value(int64Or(state.Concurrency, defaultConcurrency))
	wait, _ := time.ParseDuration(state.Timeout.ValueString()) // validated by positiveDuration

	spec := vsphere.PathMTUSpec{
		VMKernelNIC: state.VMKernelNIC.ValueString(),
		Min:         int(state.MinMTU.ValueInt64()), Max: int(state.MaxMTU.ValueInt64()),
		Timeout: wait, Retries: int(state.Retries.ValueInt64()), Concurrency: int(state.Concurrency.ValueInt64()),
	}
	resp.Diagnostics.Append(state.HostSystemIDs.ElementsAs(ctx, &spec.HostIDs, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	start := time.Now()
	pairs, err := d.client.PathMTUs(ctx, spec)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot measure the path MTU", err))
		return
	}

	state.Pairs = make([]mtuPairModel, 0, len(pairs))
	lowest, lowestConfigured := pairs[0].MTU, pairs[0].ConfiguredMTU
	var short []vsphere.PathMTU // pairs carrying less than they are configured for
	for _, p := range pairs {
		tflog.Debug(ctx, "Measured path MTU", map[string]any{
			"source_host_id": p.SourceHostID, "target_host_id": p.TargetHostID, "target_address": p.TargetAddress,
			"mtu": p.MTU, "configured_mtu": p.ConfiguredMTU, "probes": p.Probes,
		})
		state.Pairs = append(state.Pairs, mtuPairModel{
			SourceHostID: types.StringValue(p.SourceHostID), SourceHostName: types.StringValue(p.SourceHostName),
			TargetHostID: types.StringValue(p.TargetHostID), TargetHostName: types.StringValue(p.TargetHostName),
			TargetAddress: types.StringValue(p.TargetAddress), MTU: types.Int64Value(int64(p.MTU)),
			ConfiguredMTU: types.Int64Value(int64(p.ConfiguredMTU)), Probes: types.Int64Value(int64(p.Probes)),
		})
		lowest, lowestConfigured = min(lowest, p.MTU), min(lowestConfigured, p.ConfiguredMTU)
		if p.MTU < p.ConfiguredMTU {
			short = append(short, p)
		}
	}
	state.MTU = types.Int64Value(int64(lowest))
	state.ConfiguredMTU = types.Int64Value(int64(lowestConfigured))
	tflog.Info(ctx, "Measured path MTUs", map[string]any{"pairs": len(pairs), "mtu": lowest, "elapsed_ms": time.Since(start).Milliseconds()})
	if len(short) > 0 {
		resp.Diagnostics.AddWarning("The fabric carries less than it is configured for", shortfall(short, len(pairs)))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func int64Or(v types.Int64, def int64) int64 {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueInt64()
}

func stringOr(v types.String, def string) string {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueString()
}

// shortfall describes the pairs whose measured MTU is below their
// configuration, naming the one that falls shortest.
func shortfall(short []vsphere.PathMTU, pairs int) string {
	worst := short[0]
	for _, p := range short {
		if p.ConfiguredMTU-p.MTU > worst.ConfiguredMTU-worst.MTU {
			worst = p
		}
	}
	return fmt.Sprintf("%d of %d host pairs carry smaller packets than their vmknics and switches are configured for. "+
		"The worst is %s to %s (%s): %d bytes get through, %d are configured. A physical switch port or link on that path "+
		"has a smaller MTU; until it is raised, traffic that relies on %d-byte packets (RDMA, jumbo-frame vMotion) is silently dropped. "+
		"See pairs for every measurement.",
		len(short), pairs, worst.SourceHostName, worst.TargetHostName, worst.TargetAddress, worst.MTU, worst.ConfiguredMTU, worst.ConfiguredMTU)
}
