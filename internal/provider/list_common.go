package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// List resources (Terraform 1.14+, `terraform query`): one per resource,
// under its name, listing what that resource would manage in a scope. Each
// list makes one property-collector round trip, however many objects it
// finds. With include_resource, a result is the resource as importing it
// would leave it, written so that the configuration `terraform query
// -generate-config-out` generates plans imports and nothing else; where a
// hand-built object breaks a rule the resource keeps, the result holds what
// the rule asks for instead, with a warning saying why, so the plan shows
// that one change.

var (
	_ list.ListResource              = (*listResource)(nil)
	_ list.ListResourceWithConfigure = (*listResource)(nil)
)

// listed is one result of a list: what a person reads, the identity
// Terraform imports by, and the resource as import would leave it.
type listed struct {
	display  string
	identity any
	resource any
	warnings []string
	leftOut  bool // not a result: a warning about an object the list could not read
}

// leftOutOf is an object a list cannot read correctly (vCenter returns no
// configuration for it): listing what it does return would adopt wrong or
// missing settings, and leaving it out silently would pass for an object
// without any, so it is left out with a warning saying why.
func leftOutOf(name, why string) listed {
	return listed{display: name + " left out", leftOut: true, warnings: []string{why + "."}}
}

// listResource is a resource's list: the scope arguments every list takes,
// and a name filter where the objects have names.
type listResource struct {
	typeName string // the resource's type name after the provider's
	what     string // what it lists, for the schema's description
	byName   string // what `name` filters by; "" when the list has no name filter
	adopts   string // how a result differs from the object, for the schema's description; "" when it does not
	list     func(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, name string) ([]listed, error)
	client   *vsphere.Client
}

func (l *listResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + l.typeName
}

func (l *listResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (l *listResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	scopes := []path.Expression{path.MatchRoot("datacenter_id"), path.MatchRoot("cluster_id"), path.MatchRoot("host_system_ids")}
	attrs := map[string]schema.Attribute{
		"datacenter_id": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Only this datacenter (managed object id, e.g. `data.vspherehpc_datacenter.dc.id`). " +
				"At most one of `datacenter_id`, `cluster_id` and `host_system_ids`; none lists the whole vCenter.",
			Validators: []validator.String{
				notEmpty("give a datacenter's managed object id, or leave it out"),
				stringvalidator.ConflictsWith(scopes[1:]...),
			},
		},
		"cluster_id": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Only the hosts of this cluster (managed object id, e.g. `data.vspherehpc_cluster.c.id`) and the VMs on them.",
			Validators:          []validator.String{notEmpty("give a cluster's managed object id, or leave it out"), stringvalidator.ConflictsWith(scopes[2])},
		},
		"host_system_ids": schema.ListAttribute{
			ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Only these hosts (managed object ids) and the VMs on them.",
			Validators: []validator.List{
				listvalidator.SizeAtLeast(1),
				listvalidator.ValueStringsAre(notEmpty("give hosts' managed object ids, such as host-12")),
			},
		},
	}
	if l.byName != "" {
		attrs["name"] = schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Only " + l.byName + ".",
			Validators:          []validator.String{notEmpty("give a name, or leave it out")},
		}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Lists " + l.what + ", for `terraform query` (Terraform 1.14+), in one vCenter round trip. " +
			"With `include_resource = true`, `terraform query -generate-config-out=FILE` writes the resources and their import " +
			"blocks; their plan imports them and changes nothing, except where a result's warning names a rule the object breaks." +
			l.adopts,
		Attributes: attrs,
	}
}

func (l *listResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var diags diag.Diagnostics
	var scope vsphere.Scope
	var datacenter, cluster, name types.String
	var hosts []string
	diags.Append(req.Config.GetAttribute(ctx, path.Root("datacenter_id"), &datacenter)...)
	diags.Append(req.Config.GetAttribute(ctx, path.Root("cluster_id"), &cluster)...)
	diags.Append(req.Config.GetAttribute(ctx, path.Root("host_system_ids"), &hosts)...)
	if l.byName != "" {
		diags.Append(req.Config.GetAttribute(ctx, path.Root("name"), &name)...)
	}
	if l.client == nil {
		diags.AddError("No vCenter to list from", "Configure the provider's vCenter connection (server, user, password) to list objects.")
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	scope.DatacenterID, scope.ClusterID, scope.HostIDs = datacenter.ValueString(), cluster.ValueString(), hosts
	items, err := l.list(ctx, l.client, scope, name.ValueString())
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot list "+l.what, err))
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	warnSharedIdentities(items)
	stream.Results = func(push func(list.ListResult) bool) {
		// The warnings about objects left out come first, so a limit
		// never hides them; a result with only warnings is no result.
		for _, item := range items {
			if !item.leftOut {
				continue
			}
			var result list.ListResult
			for _, w := range item.warnings {
				result.Diagnostics.AddWarning(item.display, w)
			}
			if !push(result) {
				return
			}
		}
		n := int64(0)
		for _, item := range items {
			if item.leftOut {
				continue
			}
			if req.Limit > 0 && n >= req.Limit {
				return
			}
			n++
			result := req.NewListResult(ctx)
			result.DisplayName = item.display
			result.Diagnostics.Append(setModel(ctx, result.Identity.Schema, &result.Identity.Raw, item.identity)...)
			if req.IncludeResource {
				result.Diagnostics.Append(setModel(ctx, result.Resource.Schema, &result.Resource.Raw, item.resource)...)
			}
			for _, w := range item.warnings {
				result.Diagnostics.AddWarning(item.display, w)
			}
			if !push(result) {
				return
			}
		}
	}
}

// warnSharedIdentities warns on results that share an identity, such as
// the setups of two VMs with one BIOS UUID (vCenter allows it; a VM copied
// and registered with "I copied it" keeps the original's): an import by that
// identity adopts whichever object vCenter finds first.
func warnSharedIdentities(items []listed) {
	byIdentity := map[string][]int{}
	for i, item := range items {
		if item.leftOut {
			continue
		}
		key := fmt.Sprintf("%#v", item.identity)
		byIdentity[key] = append(byIdentity[key], i)
	}
	for _, same := range byIdentity {
		if len(same) < 2 {
			continue
		}
		names := make([]string, len(same))
		for j, i := range same {
			names[j] = items[i].display
		}
		for _, i := range same {
			items[i].warnings = append(items[i].warnings, fmt.Sprintf("The results %s have the same identity (for VMs, one BIOS "+
				"UUID): importing by it adopts whichever vCenter finds first, and their resources would manage one object. Give each "+
				"its own (a VM: a new BIOS UUID, uuid.bios) before adopting them.", strings.Join(names, " and ")))
		}
	}
}
