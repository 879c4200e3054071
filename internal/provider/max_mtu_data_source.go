package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mtu"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/runnerprobe"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ datasource.DataSource                     = (*maxMTUDataSource)(nil)
	_ datasource.DataSourceWithConfigure        = (*maxMTUDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig   = (*maxMTUDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*maxMTUDataSource)(nil)
)

// Defaults of the search; the schema descriptions quote them.
const (
	defaultVMKernelNIC = "vmk0"
	defaultMinMTU      = 1280 // the IPv6 minimum: any smaller answer means a broken path, not a small MTU
	defaultMaxMTU      = 9000 // the largest MTU ESXi vmknics and distributed switches accept
	defaultProbeWait   = "1s"
	defaultRetries     = 1
	defaultConcurrency = 8
	lowestMTU          = 576 // the smallest datagram every IPv4 host must accept (RFC 791)
	maxRetries         = 10
	maxConcurrency     = 64
)

type maxMTUDataSource struct {
	client *vsphere.Client
}

type maxMTUModel struct {
	HostSystemIDs types.List     `tfsdk:"host_system_ids"`
	Paths         types.String   `tfsdk:"paths"`
	Targets       types.List     `tfsdk:"targets"`
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
	mtuRange, mtuType := int64validator.Between(lowestMTU, defaultMaxMTU), wholeNumber(lowestMTU, defaultMaxMTU)
	resp.Schema = schema.Schema{
		MarkdownDescription: "The largest MTU that crosses the fabric unfragmented, measured with don't-fragment pings and a binary " +
			"search for the largest packet that gets through: between every ordered pair of ESXi hosts (`host_system_ids`: the pings run " +
			"on the source host, esxcli `network diag ping`), or from the machine running Terraform to a list of addresses (`targets`). " +
			"It answers \"is jumbo frame actually working end to end?\" in at most 16 pings per path instead of the thousands a 4-byte walk needs.",
		Attributes: map[string]schema.Attribute{
			"host_system_ids": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Host-to-host mode: managed object ids of the hosts to probe (two or more), " +
					"e.g. `data.vspherehpc_host.node[*].id`. `paths` chooses which ordered pairs are probed (A to B and B to A can differ); " +
					"with `star`, the first host is the hub. Exactly one of `host_system_ids` and `targets` is set.",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(2),
					listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1)),
				},
			},
			"paths": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Host-to-host mode: which ordered pairs of `host_system_ids` are probed. Defaults to `all`.\n" +
					"  - `all`: every ordered pair, k(k-1) paths. Sees every path in both directions, so a bad link or switch port " +
					"anywhere shows, and so does an asymmetric path; the cost grows with the square of the hosts (32 hosts: 992 paths).\n" +
					"  - `star`: the first host to every other and back, 2(k-1) paths. Sees each host's own link and switch port; " +
					"misses a path between two other hosts that the first host's paths do not cross (e.g. leaf to leaf in a " +
					"leaf-spine fabric when the first host sits on a third leaf, or an inter-switch link). Fits a single switch.\n" +
					"  - `ring`: each host to the next and the last to the first, k paths. Every host sends and receives once, so " +
					"each host's link is crossed both ways; misses paths between hosts that are not neighbours in the list and an " +
					"asymmetry between two neighbours (one direction only is probed). Fits a quick check of a large flat fabric.",
				Validators: []validator.String{stringvalidator.OneOf(string(vsphere.PathsAll), string(vsphere.PathsStar), string(vsphere.PathsRing))},
			},
			"targets": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Runner mode: IPv4 addresses or host names to probe from the machine running Terraform, with ICMP echo requests " +
					"that have the don't-fragment bit set. Needs Linux and either the process's group in `net.ipv4.ping_group_range` or " +
					"`CAP_NET_RAW` (see below).",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1),
					listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1)),
				},
			},
			"vmknic": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Host-to-host mode: the VMkernel adapter to probe from and to on every host, e.g. the PVRDMA vmknic. " +
					"Defaults to `" + defaultVMKernelNIC + "`.",
				Validators: []validator.String{stringvalidator.RegexMatches(vmknicPattern, "must name a VMkernel adapter such as vmk1")},
			},
			"min_mtu": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf(
					"Smallest MTU to try, in bytes, %d to %d. A pair that gets no reply even at this size is an error. Defaults to `%d`.",
					lowestMTU,
					defaultMaxMTU,
					defaultMinMTU,
				),
				CustomType: mtuType,
				Validators: []validator.Int64{mtuRange},
			},
			"max_mtu": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf(
					"Largest MTU to try, in bytes, %d to %d. Each search is also capped at what the path's configuration allows: "+
						"the vmknics and switches of a host pair, or the outgoing interface of the machine running Terraform. Defaults to `%d`.",
					lowestMTU,
					defaultMaxMTU,
					defaultMaxMTU,
				),
				CustomType: mtuType,
				Validators: []validator.Int64{mtuRange},
			},
			"timeout": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "How long a probe waits for its reply, as a duration; ESXi takes whole seconds, " +
					"so host-to-host probes round it up. Defaults to `" + defaultProbeWait + "`.",
				Validators: []validator.String{positiveDuration{}},
			},
			"retries": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf(
					"How many more times a lost probe at the boundary is re-sent before its size counts as too big: "+
						"real fabrics lose packets. 0 to %d. Defaults to `%d`.",
					maxRetries,
					defaultRetries,
				),
				CustomType: wholeNumber(0, maxRetries),
				Validators: []validator.Int64{int64validator.Between(0, maxRetries)},
			},
			"concurrency": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: fmt.Sprintf("How many pairs or targets are probed at once, 1 to %d. Defaults to `%d`.", maxConcurrency, defaultConcurrency),
				CustomType:          wholeNumber(1, maxConcurrency),
				Validators:          []validator.Int64{int64validator.Between(1, maxConcurrency)},
			},
			"mtu": computedInt64("The largest MTU every pair carries: the minimum over `pairs`. Feed it to `vspherehpc_rdma_dvs.mtu` or a check block."),
			"configured_mtu": computedInt64("The MTU the configuration allows on every path: the minimum over `pairs` of their `configured_mtu`. " +
				"When a path carries less than it is configured for, something on it (a physical switch port, a link) has a smaller MTU, " +
				"and the data source warns naming the worst path."),
			"pairs": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "One entry per path: per ordered pair of hosts that `paths` chooses, source by source " +
					"in the order of `host_system_ids` (for `star`, the hub's paths first); or per target, in the order of `targets`, " +
					"with the source fields empty.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"source_host_id":   computedString("Managed object id of the host the pings ran on; empty in runner mode."),
					"source_host_name": computedString("Name of that host; empty in runner mode."),
					"target_host_id":   computedString("Managed object id of the host pinged; empty in runner mode."),
					"target_host_name": computedString("Name of that host, or the target as given in `targets`."),
					"target_address":   computedString("The IPv4 address pinged: the target vmknic's, or what the target resolved to."),
					"mtu":              computedInt64("The largest packet (payload + 28 bytes of headers) that got through with don't-fragment set."),
					"configured_mtu": computedInt64("The search's upper bound: the smaller of the two ends' vmknic and switch MTUs, " +
						"or the MTU of the interface the machine running Terraform sends through; capped by `max_mtu`."),
					"probes": computedInt64("Pings sent for this path, retries included."),
				}},
			},
		},
	}
}

func (d *maxMTUDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *maxMTUDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.ExactlyOneOf(path.MatchRoot("host_system_ids"), path.MatchRoot("targets")),
		datasourcevalidator.Conflicting(path.MatchRoot("targets"), path.MatchRoot("vmknic")),
		datasourcevalidator.Conflicting(path.MatchRoot("targets"), path.MatchRoot("paths")),
	}
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
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &state)...)
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

	bounds := mtu.Options{Min: int(state.MinMTU.ValueInt64()), Max: int(state.MaxMTU.ValueInt64()), Retries: int(state.Retries.ValueInt64())}
	concurrency := int(state.Concurrency.ValueInt64())
	start := time.Now()
	var pairs []measuredPath
	if !state.Targets.IsNull() {
		state.VMKernelNIC, state.Paths = types.StringNull(), types.StringNull()
		var targets []string
		resp.Diagnostics.Append(state.Targets.ElementsAs(ctx, &targets, false)...)
		if resp.Diagnostics.HasError() {
			return
		}
		found, err := runnerprobe.PathMTUs(ctx, targets, runnerprobe.Options{Options: bounds, Timeout: wait, Concurrency: concurrency})
		if err != nil {
			resp.Diagnostics.AddError("Cannot measure the path MTU from this machine", errorDetail(err))
			return
		}
		for _, t := range found {
			pairs = append(pairs, measuredPath{targetName: t.Target, address: t.Address, mtu: t.MTU, configured: t.ConfiguredMTU, probes: t.Probes})
		}
	} else {
		state.Paths = types.StringValue(stringOr(state.Paths, string(vsphere.PathsAll)))
		spec := vsphere.PathMTUSpec{
			Paths:       vsphere.PathChoice(state.Paths.ValueString()),
			VMKernelNIC: state.VMKernelNIC.ValueString(), Min: bounds.Min, Max: bounds.Max,
			Timeout: wait, Retries: bounds.Retries, Concurrency: concurrency,
		}
		resp.Diagnostics.Append(state.HostSystemIDs.ElementsAs(ctx, &spec.HostIDs, false)...)
		if resp.Diagnostics.HasError() {
			return
		}
		found, err := d.client.PathMTUs(ctx, spec)
		var missing *vsphere.Error
		if errors.As(err, &missing) && missing.Kind == vsphere.ErrNotFound && missing.Object == vsphere.ObjectHost {
			resp.Diagnostics.AddAttributeError(path.Root("host_system_ids"), "Host not found",
				err.Error()+"; data.vspherehpc_host looks one up by name, and data.vspherehpc_cluster lists a cluster's in host_system_ids.")
			return
		}
		if err != nil {
			resp.Diagnostics.Append(vsphereErrorDiag("Cannot measure the path MTU", err))
			return
		}
		for _, p := range found {
			pairs = append(pairs, measuredPath{
				sourceID: p.SourceHostID, sourceName: p.SourceHostName, targetID: p.TargetHostID, targetName: p.TargetHostName,
				address: p.TargetAddress, mtu: p.MTU, configured: p.ConfiguredMTU, probes: p.Probes,
			})
		}
	}

	if len(pairs) == 0 { // the validators ask for two hosts or a target
		resp.Diagnostics.AddError("Nothing to measure", "Set host_system_ids to two or more hosts, or targets to one or more addresses.")
		return
	}
	state.Pairs = make([]mtuPairModel, 0, len(pairs))
	lowest, lowestConfigured := pairs[0].mtu, pairs[0].configured
	var short []measuredPath // paths carrying less than they are configured for
	for _, p := range pairs {
		tflog.Debug(ctx, "Measured path MTU", map[string]any{
			"source_host_id": p.sourceID, "target": p.targetName, "target_address": p.address,
			"mtu": p.mtu, "configured_mtu": p.configured, "probes": p.probes,
		})
		state.Pairs = append(state.Pairs, mtuPairModel{
			SourceHostID: types.StringValue(p.sourceID), SourceHostName: types.StringValue(p.sourceName),
			TargetHostID: types.StringValue(p.targetID), TargetHostName: types.StringValue(p.targetName),
			TargetAddress: types.StringValue(p.address), MTU: types.Int64Value(int64(p.mtu)),
			ConfiguredMTU: types.Int64Value(int64(p.configured)), Probes: types.Int64Value(int64(p.probes)),
		})
		lowest, lowestConfigured = min(lowest, p.mtu), min(lowestConfigured, p.configured)
		if p.mtu < p.configured {
			short = append(short, p)
		}
	}
	state.MTU = types.Int64Value(int64(lowest))
	state.ConfiguredMTU = types.Int64Value(int64(lowestConfigured))
	tflog.Info(ctx, "Measured path MTUs", map[string]any{"paths": len(pairs), "mtu": lowest, "elapsed_ms": time.Since(start).Milliseconds()})
	if len(short) > 0 {
		resp.Diagnostics.AddWarning("The fabric carries less than it is configured for", shortfall(short, len(pairs)))
	}
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
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

// measuredPath is one measurement of either mode.
type measuredPath struct {
	sourceID, sourceName, targetID, targetName, address string
	mtu, configured, probes                             int
}

// shortfall describes the paths whose measured MTU is below their
// configuration, naming the one that falls shortest.
func shortfall(short []measuredPath, paths int) string {
	worst := short[0]
	for _, p := range short {
		if p.configured-p.mtu > worst.configured-worst.mtu {
			worst = p
		}
	}
	from := worst.sourceName
	if from == "" {
		from = "this machine"
	}
	return fmt.Sprintf("%d of %d paths carry smaller packets than they are configured for. "+
		"The worst is %s to %s (%s): %d bytes get through, %d are configured. A physical switch port or link on that path "+
		"has a smaller MTU; until it is raised, traffic that relies on %d-byte packets (RDMA, jumbo-frame vMotion) is silently dropped. "+
		"See pairs for every measurement.",
		len(short), paths, from, worst.targetName, worst.address, worst.mtu, worst.configured, worst.configured)
}
