package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ resource.Resource                   = (*rdmaDVSResource)(nil)
	_ resource.ResourceWithConfigure      = (*rdmaDVSResource)(nil)
	_ resource.ResourceWithImportState    = (*rdmaDVSResource)(nil)
	_ resource.ResourceWithIdentity       = (*rdmaDVSResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*rdmaDVSResource)(nil)
	_ resource.ResourceWithValidateConfig = (*rdmaDVSResource)(nil)
)

// privateSwitch is the private-state key holding the switch's UUID and full
// managed object reference: reads need no UUID search, and the plan of a
// replacement still knows which switch holds the hosts' NICs.
const privateSwitch = "switch"

type rdmaDVSResource struct {
	client *vsphere.Client
	claims *claimBook
}

type rdmaDVSModel struct {
	ID           types.String    `tfsdk:"id"`
	MOID         types.String    `tfsdk:"moid"`
	DatacenterID types.String    `tfsdk:"datacenter_id"`
	Name         types.String    `tfsdk:"name"`
	Description  types.String    `tfsdk:"description"`
	Version      types.String    `tfsdk:"version"`
	UplinkCount  types.Int64     `tfsdk:"uplink_count"`
	UplinkNames  types.List      `tfsdk:"uplink_names"`
	MTU          types.Int64     `tfsdk:"mtu"`
	NIOC         types.Bool      `tfsdk:"network_io_control_enabled"`
	PortGroup    *portGroupModel `tfsdk:"port_group"`
	PortGroupID  types.String    `tfsdk:"port_group_id"`
	PortGroupKey types.String    `tfsdk:"port_group_key"`
	Hosts        largeSet        `tfsdk:"host"`
}

type portGroupModel struct {
	Name       types.String `tfsdk:"name"`
	VLANID     types.Int64  `tfsdk:"vlan_id"`
	PortCount  types.Int64  `tfsdk:"port_count"`
	AutoExpand types.Bool   `tfsdk:"auto_expand"`
}

type dvsHostModel struct {
	HostSystemID types.String `tfsdk:"host_system_id"`
	Vmnic        types.String `tfsdk:"vmnic"`
}

var dvsHostType = types.ObjectType{AttrTypes: map[string]attr.Type{"host_system_id": types.StringType, "vmnic": types.StringType}}

// NewRDMADVSResource is the vspherehpc_rdma_dvs resource.
func NewRDMADVSResource() resource.Resource {
	return &rdmaDVSResource{}
}

func (r *rdmaDVSResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_rdma_dvs"
	resp.ResourceBehavior.MutableIdentity = true // see its identity's fromState
}

func (r *rdmaDVSResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = switchIdentity.schema
}

func (r *rdmaDVSResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The distributed switch for PVRDMA: MTU 9000 by default, Network I/O Control off, one port group for the " +
			"VMs' PVRDMA adapters, and each host joined with exactly one physical NIC, its RDMA HCA, as the only uplink " +
			"(PVRDMA supports no NIC teaming).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The switch's UUID, as `vsphere_distributed_virtual_switch.id` is.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"moid": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Managed object id of the switch, e.g. `dvs-21`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"datacenter_id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Managed object id of the datacenter, e.g. `data.vspherehpc_datacenter.dc.id`. Changing it replaces the switch.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Name of the switch, up to 80 characters. Renamed in place. It may hold `/`, `%` and `\\`: vCenter stores them " +
					"escaped (`%2f`, `%25`, `%5c`), as an inventory path (an import id) names the switch, and the provider reads the name back as given.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 80)},
			},
			"description": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Description of the switch. vSphere cannot clear a description, so removing this argument " +
					"leaves the current text in place.",
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"version": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Switch version, e.g. `8.0.3`; one that vCenter offers. Defaults to the newest. Raising it upgrades the " +
					"switch in place; lowering it is refused, as vSphere cannot downgrade a switch.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"uplink_count": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(4),
				MarkdownDescription: "Number of uplink ports per host, 1 to 32; 4 by default, as the public PVRDMA setup guides use. " +
					"Only one carries traffic: each host gives the switch one NIC.",
				CustomType: wholeNumber(1, 32),
				Validators: []validator.Int64{int64validator.Between(1, 32)},
			},
			"uplink_names": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "Names of the uplink ports (`uplink1`, ...).",
				PlanModifiers:       []planmodifier.List{uplinkNamesPlan{}},
			},
			"mtu": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(9000),
				MarkdownDescription: "Maximum MTU of the switch, 1280 to 9000. Default 9000 (jumbo frames), which the physical fabric must carry too.",
				CustomType:          wholeNumber(1280, 9000),
				Validators:          []validator.Int64{int64validator.Between(1280, 9000)},
			},
			"network_io_control_enabled": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Network I/O Control. Off by default, as the public PVRDMA setup guides set it.",
			},
			"port_group_id": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Managed object id of the port group, e.g. `dvportgroup-17`: " +
					"what `vspherehpc_vm_pvrdma_nic` and `vsphere_virtual_machine`'s `network_id` take.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseNonNullStateForUnknown()},
			},
			"port_group_key": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Key of the port group, as VM adapters' backings name it.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseNonNullStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"port_group": schema.SingleNestedBlock{
				MarkdownDescription: "The distributed port group the VMs' PVRDMA adapters connect to. Required.",
				Validators:          []validator.Object{objectvalidator.IsRequired()},
				Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{
						Required: true, MarkdownDescription: "Name of the port group, up to 80 characters; free in the datacenter, where standard port " +
							"groups such as `VM Network` count. `/`, `%` and `\\` are stored escaped by vCenter and read back as given, as in the switch's name.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 80)},
					},
					"vlan_id": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(0),
						MarkdownDescription: "VLAN id, 1 to 4094; 0 (the default) for none. " +
							"Reads as -1 when the port group was set to a trunk or private VLAN in vCenter.",
						CustomType: wholeNumber(0, 4094),
						Validators: []validator.Int64{int64validator.Between(0, 4094)},
					},
					"port_count": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(8),
						MarkdownDescription: "Number of ports, 1 to 8192. Default 8. With `auto_expand`, it is the minimum: ports vCenter " +
							"adds as adapters connect are not drift.",
						CustomType:    wholeNumber(1, 8192),
						Validators:    []validator.Int64{int64validator.Between(1, 8192)},
						PlanModifiers: []planmodifier.Int64{autoExpandedPorts{}},
					},
					"auto_expand": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(true),
						MarkdownDescription: "Whether vCenter adds ports when all are in use. Default true.",
					},
				},
			},
			"host": schema.SetNestedBlock{
				MarkdownDescription: "A member host, with the one physical NIC it gives the switch. One block per host.",
				CustomType:          newLargeSetType(dvsHostType),
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"host_system_id": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Managed object id of the host, e.g. `data.vspherehpc_host.esx.id`.",
					},
					"vmnic": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "The host's RDMA NIC to use as the switch's only uplink on that host, e.g. `vmnic4`.",
						Validators:          []validator.String{stringvalidator.RegexMatches(vmnicPattern, "must name a physical NIC such as vmnic4")},
					},
				}},
			},
		},
	}
}

func (r *rdmaDVSResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client, r.claims = resourceDataFrom(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig refuses a host listed twice: PVRDMA allows one uplink.
func (r *rdmaDVSResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var hosts largeSet
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("host"), &hosts)...)
	if resp.Diagnostics.HasError() || hosts.IsNull() || hosts.IsUnknown() {
		return
	}
	var list []dvsHostModel
	resp.Diagnostics.Append(hosts.ElementsAs(ctx, &list, true)...)
	seen := map[string]string{}
	for _, h := range list {
		if h.HostSystemID.IsUnknown() || h.Vmnic.IsUnknown() {
			continue
		}
		id := h.HostSystemID.ValueString()
		if nic, dup := seen[id]; dup {
			resp.Diagnostics.AddAttributeError(path.Root("host"), "Host listed twice",
				fmt.Sprintf("Host %s is listed with %s and with %s. PVRDMA supports no NIC teaming: the HCA must be the host's only "+
					"uplink on the switch, so list each host once, with one vmnic.", id, nic, h.Vmnic.ValueString()))
		}
		seen[id] = h.Vmnic.ValueString()
	}
}

// dvsHosts lists the known members of a host set.
func dvsHosts(ctx context.Context, set largeSet, diags *diag.Diagnostics) []vsphere.DVSHost {
	var hosts []dvsHostModel
	diags.Append(set.ElementsAs(ctx, &hosts, true)...)
	var out []vsphere.DVSHost
	for _, h := range hosts {
		if !h.HostSystemID.IsUnknown() && !h.Vmnic.IsUnknown() {
			out = append(out, vsphere.DVSHost{HostID: h.HostSystemID.ValueString(), Vmnic: h.Vmnic.ValueString()})
		}
	}
	return out
}

func (r *rdmaDVSResource) spec(ctx context.Context, m *rdmaDVSModel, diags *diag.Diagnostics) vsphere.DVSSpec {
	var hosts []dvsHostModel
	diags.Append(m.Hosts.ElementsAs(ctx, &hosts, false)...)
	spec := vsphere.DVSSpec{
		DatacenterID: m.DatacenterID.ValueString(),
		Name:         m.Name.ValueString(),
		Description:  m.Description.ValueString(),
		Version:      m.Version.ValueString(),
		UplinkCount:  int(m.UplinkCount.ValueInt64()),
		MTU:          int(m.MTU.ValueInt64()),
		NIOC:         m.NIOC.ValueBool(),
	}
	if m.PortGroup != nil {
		spec.PortGroup = vsphere.PortGroupSpec{
			Name: m.PortGroup.Name.ValueString(), VLANID: int(m.PortGroup.VLANID.ValueInt64()),
			Ports: int(m.PortGroup.PortCount.ValueInt64()), AutoExpand: m.PortGroup.AutoExpand.ValueBool(),
		}
	}
	for _, h := range hosts {
		spec.Hosts = append(spec.Hosts, vsphere.DVSHost{HostID: h.HostSystemID.ValueString(), Vmnic: h.Vmnic.ValueString()})
	}
	return spec
}

func (r *rdmaDVSResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer switchIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan rdmaDVSModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec := r.spec(ctx, &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	id, key, err := r.client.CreateDVS(ctx, spec)
	if id.UUID != "" || id.Ref != "" {
		// The switch exists: track it whatever happens next, so a failed
		// step leaves a tainted resource to replace, never an orphan.
		tflog.Debug(ctx, "Created distributed switch", map[string]any{"id": id.UUID, "ref": id.Ref, "name": spec.Name})
		resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateSwitch, id)...)
		r.readInto(ctx, id, key, &plan, &resp.State, &resp.Diagnostics)
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot create distributed switch "+spec.Name, err))
	}
}

// readInto reads the switch into m and sets it as state. If the read fails
// right after a create, the state still records the switch's id.
func (r *rdmaDVSResource) readInto(ctx context.Context, id vsphere.DVSID, key string, m *rdmaDVSModel, state stateSetter, diags *diag.Diagnostics) {
	dvs, err := r.client.DVS(ctx, id, key)
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read distributed switch "+id.UUID, err))
		m.ID = types.StringValue(id.UUID)
		if key != "" { // the next read finds the port group by it
			m.PortGroupKey = types.StringValue(key)
		}
		knownOrNull(m)
		diags.Append(state.Set(ctx, m)...)
		return
	}
	diags.Append(dvsToModel(ctx, dvs, m)...)
	diags.Append(state.Set(ctx, m)...)
}

// knownOrNull replaces the unknown computed values of a plan with nulls, as
// state cannot hold unknowns.
func knownOrNull(m *rdmaDVSModel) {
	if m.MOID.IsUnknown() {
		m.MOID = types.StringNull()
	}
	if m.Version.IsUnknown() {
		m.Version = types.StringNull()
	}
	if m.UplinkNames.IsUnknown() {
		m.UplinkNames = types.ListNull(types.StringType)
	}
	if m.PortGroupID.IsUnknown() {
		m.PortGroupID = types.StringNull()
	}
	if m.PortGroupKey.IsUnknown() {
		m.PortGroupKey = types.StringNull()
	}
}

func dvsToModel(ctx context.Context, d *vsphere.DVS, m *rdmaDVSModel) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(d.UUID)
	m.MOID = types.StringValue(d.MOID)
	if d.DatacenterID != "" { // unreadable (no permission on it): keep what state has, never force a replace
		m.DatacenterID = types.StringValue(d.DatacenterID)
	}
	m.Name = types.StringValue(d.Name)
	m.Description = types.StringValue(d.Description)
	m.Version = types.StringValue(d.Version)
	m.UplinkCount = types.Int64Value(int64(len(d.UplinkNames)))
	names, ds := types.ListValueFrom(ctx, types.StringType, d.UplinkNames)
	diags.Append(ds...)
	m.UplinkNames = names
	m.MTU = types.Int64Value(int64(d.MTU))
	m.NIOC = types.BoolValue(d.NIOC)
	if pg := d.PortGroup; pg != nil {
		m.PortGroup = &portGroupModel{
			Name: types.StringValue(pg.Name), VLANID: types.Int64Value(int64(pg.VLANID)),
			PortCount: types.Int64Value(int64(pg.Ports)), AutoExpand: types.BoolValue(pg.AutoExpand),
		}
		m.PortGroupID, m.PortGroupKey = types.StringValue(pg.ID), types.StringValue(pg.Key)
	} else {
		// Deleted out of band: the plan creates it again.
		m.PortGroup = nil
		m.PortGroupID, m.PortGroupKey = types.StringNull(), types.StringNull()
	}
	hosts := make([]attr.Value, 0, len(d.Hosts))
	for _, h := range d.Hosts {
		host, ds := types.ObjectValue(dvsHostType.AttrTypes,
			map[string]attr.Value{"host_system_id": types.StringValue(h.HostID), "vmnic": types.StringValue(h.Vmnic)})
		diags.Append(ds...)
		hosts = append(hosts, host)
	}
	set, ds := types.SetValue(dvsHostType, hosts)
	diags.Append(ds...)
	m.Hosts = largeSet{set}
	return diags
}

func (r *rdmaDVSResource) dvsID(ctx context.Context, m *rdmaDVSModel, p privateState, diags *diag.Diagnostics) vsphere.DVSID {
	var id vsphere.DVSID
	_, ds := getPrivateJSON(ctx, p, privateSwitch, &id)
	diags.Append(ds...)
	if uuid := m.ID.ValueString(); uuid != "" {
		id.UUID = uuid
	}
	return id
}

func (r *rdmaDVSResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	// The framework wants an identity even from a read that finds the
	// object gone; one that finds it records what it read (the port group
	// may have changed).
	switchIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics)
	defer switchIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var state rdmaDVSModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := r.dvsID(ctx, &state, req.Private, &resp.Diagnostics)
	dvs, err := r.client.DVS(ctx, id, state.PortGroupKey.ValueString())
	if errors.Is(err, vsphere.ErrNotFound) {
		tflog.Warn(ctx, "Distributed switch is gone; removing it from state", map[string]any{"id": id.UUID})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read distributed switch "+id.UUID, err))
		return
	}
	r.claims.noteSwitchRead(dvs.UUID)
	if dvs.DVSID != id {
		resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateSwitch, dvs.DVSID)...)
	}
	resp.Diagnostics.Append(dvsToModel(ctx, dvs, &state)...)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, &state)...)
}

func (r *rdmaDVSResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = vsphere.ForChange(ctx)
	defer switchIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan, state rdmaDVSModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan.Schema, req.Plan.Raw, &plan)...)
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	// Until the switch is read back, state stays as it was: on a failure the
	// framework would otherwise record the plan as applied.
	resp.State.Raw = req.State.Raw.Copy()
	if resp.Diagnostics.HasError() {
		return
	}
	id := r.dvsID(ctx, &state, req.Private, &resp.Diagnostics)
	current, err := r.client.DVS(ctx, id, state.PortGroupKey.ValueString())
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot read distributed switch "+id.UUID, err))
		return
	}
	if !r.refuseHostsInUse(ctx, &plan, &state, &resp.Diagnostics) {
		return
	}
	spec := r.spec(ctx, &plan, &resp.Diagnostics)
	key, err := r.client.UpdateDVS(ctx, current, spec)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot update distributed switch "+spec.Name, err))
		// Record what did change, so the next plan shows what is left.
		if key == "" {
			key = state.PortGroupKey.ValueString()
		}
	}
	r.readInto(ctx, current.DVSID, key, &plan, &resp.State, &resp.Diagnostics)
}

func (r *rdmaDVSResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = vsphere.ForChange(ctx)
	var state rdmaDVSModel
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := r.dvsID(ctx, &state, req.Private, &resp.Diagnostics)
	err := r.client.DeleteDVS(ctx, id)
	switch {
	case errors.Is(err, vsphere.ErrInUse):
		resp.Diagnostics.AddError("Cannot destroy distributed switch "+state.Name.ValueString(),
			errorDetail(err)+". PVRDMA adapters are removed by destroying their vspherehpc_vm_pvrdma_nic resources.")
	case err != nil:
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot destroy distributed switch "+state.Name.ValueString(), err))
	}
}

// ImportState takes the switch's UUID or its inventory path
// ("/<datacenter>/network/<switch>"), followed by ":<port group>" (its name
// or key) when the switch has more than one port group, or by ":" alone to
// adopt the switch without one: its next apply creates the configuration's.
func (r *rdmaDVSResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	defer switchIdentity.adopted(ctx, r.claims, resp)
	target, ok := switchIdentity.target(ctx, req, &resp.Diagnostics)
	if !ok {
		return
	}
	switchID, portGroup, named := target.ID.ValueString(), target.PortGroupKey.ValueString(), !target.PortGroupKey.IsNull()
	id := vsphere.DVSID{UUID: strings.ToLower(switchID)}
	if !vsphere.LooksLikeDVSUUID(switchID) {
		found, err := r.client.FindDVSByPath(ctx, switchID)
		if err != nil {
			resp.Diagnostics.Append(vsphereErrorDiag("Cannot import distributed switch "+switchID, err))
			return
		}
		id = found
	}
	dvs, err := r.client.DVS(ctx, id, "")
	if err != nil {
		lookupFailed(req, &resp.Diagnostics, "Cannot import distributed switch "+switchID, "id", switchID, err)
		return
	}
	if !named {
		dvs.OnlyPortGroup()
	}
	// An identity names its port group by key; a string id by name or key.
	var names, keyed []string
	for _, pg := range dvs.PortGroups {
		names, keyed = append(names, pg.Name), append(keyed, fmt.Sprintf("%s (%s)", pg.Name, pg.Key))
		if portGroup != "" && (pg.Key == portGroup || !byIdentity(req) && pg.Name == portGroup) {
			dvs.PortGroup = &pg
		}
	}
	switch {
	case portGroup != "" && dvs.PortGroup == nil && byIdentity(req):
		resp.Diagnostics.AddError(
			"No such port group",
			fmt.Sprintf(
				"The identity's port_group_key, %q, is the key of none of switch %s's port groups: %s.",
				portGroup,
				dvs.Name,
				strings.Join(keyed, ", "),
			),
		)
		return
	case portGroup != "" && dvs.PortGroup == nil:
		resp.Diagnostics.AddError("No such port group",
			fmt.Sprintf("Switch %s has no port group %q; its port groups are %s.", dvs.Name, portGroup, strings.Join(names, ", ")))
		return
	case !named && dvs.PortGroup == nil && len(names) > 1 && byIdentity(req):
		resp.Diagnostics.AddError("Which port group?",
			fmt.Sprintf("Switch %s has %d port groups (%s). Give the key of the one this resource manages in the identity's "+
				"port_group_key, or \"\" to adopt the switch without one (the next apply creates the configuration's).",
				dvs.Name, len(names), strings.Join(keyed, ", ")))
		return
	case !named && dvs.PortGroup == nil && len(names) > 1:
		resp.Diagnostics.AddError("Which port group?",
			fmt.Sprintf("Switch %s has %d port groups (%s). Import it as %s:<port group name> to say which one this resource manages, "+
				"or as %s: to adopt the switch without one (the next apply creates the configuration's).",
				dvs.Name, len(names), strings.Join(names, ", "), switchID, switchID))
		return
	}
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateSwitch, dvs.DVSID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), dvs.UUID)...)
	if dvs.PortGroup != nil {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("port_group_key"), dvs.PortGroup.Key)...)
	}
}
