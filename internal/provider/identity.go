package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// Resource identity (Terraform 1.12+): the fields that name a resource's
// object in vCenter. Every resource's identity follows from its state, and
// an import takes either a string id, parsed by its syntax (where ":" and ","
// separate the parts), or an identity, whose fields are read each as a
// field: never joined into a string id and parsed again, so a field holding
// a separator is refused, not split. Most identities follow from the id
// alone and never change over an object's life; the two whose id names a
// host or switch that several resources can share (see fromState) change
// with what the resource manages on it. Terraform before 1.12 and OpenTofu
// neither send nor keep identity; the framework then drops it.
type identityKind[I any] struct {
	schema identityschema.Schema
	fromID func(id string) (I, bool)
	// fromState, when set, adds what the state knows beyond the id: the
	// port group of a switch, the devices of a host's passthrough. Such an
	// identity changes when that does, so its resource declares
	// MutableIdentity.
	fromState func(ctx context.Context, state *tfsdk.State, identity *I) diag.Diagnostics
	// parse reads a string import id by its syntax into the identity's
	// fields; check refuses an identity's field that cannot name what it
	// stands for. Both word what is wrong.
	parse func(id string, diags *diag.Diagnostics) I
	check func(identity I, diags *diag.Diagnostics)
}

// record sets identity from the id in state, once state has one: a create
// that failed before vCenter made anything has none to record.
func (k identityKind[I]) record(ctx context.Context, state *tfsdk.State, identity *tfsdk.ResourceIdentity, diags *diag.Diagnostics) {
	if identity == nil || state.Raw.IsNull() {
		return
	}
	var id types.String
	if d := state.GetAttribute(ctx, path.Root("id"), &id); d.HasError() || id.IsNull() || id.IsUnknown() {
		return
	}
	v, ok := k.fromID(id.ValueString())
	if !ok {
		return
	}
	if k.fromState != nil {
		if diags.Append(k.fromState(ctx, state, &v)...); diags.HasError() {
			return
		}
	}
	diags.Append(setModel(ctx, identity.Schema, &identity.Raw, v)...)
}

// target is what an import names: the string id the user gave, parsed by
// its syntax, or the identity's fields, each checked as a field. It reports
// false when it cannot be imported (diags say why).
func (k identityKind[I]) target(ctx context.Context, req resource.ImportStateRequest, diags *diag.Diagnostics) (I, bool) {
	if !byIdentity(req) {
		v := k.parse(req.ID, diags)
		return v, !diags.HasError()
	}
	var v I
	if diags.Append(getModel(ctx, req.Identity.Schema, req.Identity.Raw, &v)...); diags.HasError() {
		return v, false
	}
	k.check(v, diags)
	return v, !diags.HasError()
}

// adopted ends an ImportState: it records the identity of what it adopted
// and marks the import for the plan that follows it (refuseImportOfOther).
func (k identityKind[I]) adopted(ctx context.Context, claims *claimBook, resp *resource.ImportStateResponse) {
	k.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	if resp.Diagnostics.HasError() || resp.State.Raw.IsNull() || claims == nil {
		return
	}
	var id types.String
	resp.Diagnostics.Append(resp.State.GetAttribute(ctx, path.Root("id"), &id)...)
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privateImported, claims.mint(id.ValueString()))...)
}

// privateImported is the private-state key of an import's token: the Read
// that follows the import keeps it, and so the plan that follows the Read
// finds it. The token is one this walk's claim book handed out (claims.go),
// so only the plan of the command that imported knows it: a later plan,
// with or without a refresh, is a plan like any other.
const privateImported = "imported"

// importedHere reports whether the prior state of a plan is what an import
// of this command adopted.
func importedHere(ctx context.Context, claims *claimBook, req resource.ModifyPlanRequest) bool {
	if claims == nil || req.State.Raw.IsNull() || req.Plan.Raw.IsNull() {
		return false
	}
	var token string
	ok, _ := getPrivateJSON(ctx, req.Private, privateImported, &token)
	if !ok {
		return false
	}
	claims.mu.Lock()
	defer claims.mu.Unlock()
	_, minted := claims.minted[token]
	return minted
}

// importedOther is an argument whose configured value names another object
// than the import adopted.
type importedOther struct {
	argument, imported, configured string
}

// refuseImportOfOther refuses, in the plan that follows an import in the
// same command, a configuration whose arguments at paths name another
// object (what) than the import adopted: planned as it is, the import would
// be followed by the destroy of what it adopted and the create of the
// configured one (or by changing the one into the other), with no word.
// Values not known yet, and what the import did not adopt (null in state),
// are left alone. It reports whether it refused.
func refuseImportOfOther(
	ctx context.Context,
	claims *claimBook,
	req resource.ModifyPlanRequest,
	diags *diag.Diagnostics,
	what string,
	paths ...path.Path,
) bool {
	if !importedHere(ctx, claims, req) {
		return false
	}
	var others []importedOther
	for _, p := range paths {
		var imported, planned attr.Value
		diags.Append(req.State.GetAttribute(ctx, p, &imported)...)
		diags.Append(req.Plan.GetAttribute(ctx, p, &planned)...)
		if imported == nil || planned == nil || imported.IsNull() || planned.IsNull() || planned.IsUnknown() || imported.Equal(planned) {
			continue
		}
		others = append(others, importedOther{p.String(), imported.String(), planned.String()})
	}
	return refuseOther(diags, what, others)
}

// refuseOther words importedOther findings (about the import of what) as
// one error; false when there are none.
func refuseOther(diags *diag.Diagnostics, what string, others []importedOther) bool {
	if len(others) == 0 {
		return false
	}
	var imported, configured, adopt []string
	for _, o := range others {
		imported = append(imported, fmt.Sprintf("%s %s", o.argument, o.imported))
		configured = append(configured, fmt.Sprintf("%s = %s", o.argument, o.configured))
		adopt = append(adopt, fmt.Sprintf("%s = %s", o.argument, o.imported))
	}
	diags.AddError("Import does not match the configuration", fmt.Sprintf("This plan imports the %s with %s, and the configuration "+
		"gives %s: applied, the import would be followed by destroying or changing what it adopts to make it the configured one. "+
		"Import what the configuration names (its id or identity in the import block), or set %s in the configuration to adopt "+
		"what the import names.", what, strings.Join(imported, " and "), strings.Join(configured, " and "), strings.Join(adopt, " and ")))
	return true
}

// byIdentity reports whether an import is by identity, not by string id.
func byIdentity(req resource.ImportStateRequest) bool {
	return req.ID == "" && req.Identity != nil && !req.Identity.Raw.IsNull()
}

// importWords names an import in a sentence: its string id, or its identity.
func importWords(req resource.ImportStateRequest) string {
	if byIdentity(req) {
		return "The import's identity"
	}
	return fmt.Sprintf("Import %q", req.ID)
}

// lookupFailed words a failed look-up of what an import names (summary
// says what failed); by identity, an id that names nothing, or cannot name
// anything, is worded with the field that holds it.
func lookupFailed(req resource.ImportStateRequest, diags *diag.Diagnostics, summary, field, value string, err error) {
	if byIdentity(req) && (errors.Is(err, vsphere.ErrNotFound) || errors.Is(err, vsphere.ErrInvalidArg)) {
		diags.AddError(summary, fmt.Sprintf("The identity's %s holds %q: %s.", field, value, errorDetail(err)))
		return
	}
	diags.Append(vsphereErrorDiag(summary, err))
}

// separators are what the string import ids put between their parts: an
// identity's field that holds one was joined by hand, as a string id is.
const separators = ":,"

// checkIDField refuses an identity's field that names an object of kind
// (expected says what its ids look like) when it is empty, holds a
// separator, or has the form of another kind's id. A name is left to the
// look-up, whose error says whose name it is.
func checkIDField(diags *diag.Diagnostics, field, value string, kind vsphere.Object, expected string) {
	looks := vsphere.ShapeOf(value)
	switch {
	case value == "":
		diags.AddError("Invalid identity", fmt.Sprintf("The identity's %s is empty; it takes %s.", field, expected))
	case strings.ContainsAny(value, separators):
		diags.AddError("Invalid identity", fmt.Sprintf("The identity's %s holds %q, with a %q no %s id has; it takes %s. "+
			"Each of an identity's fields holds one value: they are not joined as in a string import id.",
			field, value, string(value[strings.IndexAny(value, separators)]), kind, expected))
	case !looks.IsName() && !looks.Fits(kind):
		diags.AddError("Invalid identity", fmt.Sprintf("The identity's %s holds %s, which looks like %s; it takes %s.", field, value, looks, expected))
	}
}

// checkPCIField refuses an identity's PCI id (field names it) that is not
// one PCI id.
func checkPCIField(diags *diag.Diagnostics, field, value string) {
	if pciIDPattern.MatchString(strings.ToLower(value)) {
		return
	}
	why := "which is not a PCI id"
	if strings.Contains(value, ",") {
		why = "with a \",\": one PCI id per element, not a string import id's list"
	}
	diags.AddError("Invalid identity", fmt.Sprintf("The identity's %s holds %q, %s; it takes a PCI id such as 0000:3b:00.0 "+
		"(domain:bus:slot.function).", field, value, why))
}

// What the identities' id fields take.
const (
	hostIDExpected = "a host's managed object id, such as host-12"
	vmIDExpected   = "a VM's BIOS UUID (what vsphere_virtual_machine.id is) or its managed object id, such as vm-42"
)

func stringIdentity(desc string) identityschema.StringAttribute {
	return identityschema.StringAttribute{RequiredForImport: true, Description: desc}
}

type switchIdentityModel struct {
	ID           types.String `tfsdk:"id"`
	PortGroupKey types.String `tfsdk:"port_group_key"`
}

// switchIdentity names a switch by its UUID, as its id does, and the port
// group the resource manages on it: a switch can have several, each managed
// by another resource. Its string import id is the switch's UUID or
// inventory path, then ":" and the port group's name or key (":" alone for
// none); in the model it parses to, ID may then be a path, and a null
// PortGroupKey says none was named.
var switchIdentity = identityKind[switchIdentityModel]{
	schema: identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"id": stringIdentity("The switch's UUID, as vCenter reports it (`50 2a 6c ...`)."),
		"port_group_key": identityschema.StringAttribute{OptionalForImport: true,
			Description: "Key of the port group the resource manages, e.g. `dvportgroup-17`. Empty for a switch imported without " +
				"one, whose next apply creates the configuration's. Left out in an import, the switch's only port group is " +
				"adopted; a switch with several asks which."},
	}},
	fromID: func(id string) (switchIdentityModel, bool) {
		return switchIdentityModel{ID: types.StringValue(id), PortGroupKey: types.StringNull()}, id != ""
	},
	fromState: func(ctx context.Context, state *tfsdk.State, m *switchIdentityModel) diag.Diagnostics {
		var key types.String
		diags := state.GetAttribute(ctx, path.Root("port_group_key"), &key)
		m.PortGroupKey = types.StringValue(key.ValueString()) // null and unknown: none yet
		return diags
	},
	parse: func(id string, _ *diag.Diagnostics) switchIdentityModel {
		m := switchIdentityModel{ID: types.StringValue(id), PortGroupKey: types.StringNull()}
		if uuid, rest, ok := strings.Cut(id, ":"); ok && vsphere.LooksLikeDVSUUID(uuid) {
			// A UUID has no ":": the port group's name (which may) is
			// all after the first.
			m.ID, m.PortGroupKey = types.StringValue(uuid), types.StringValue(rest)
		} else if i := strings.LastIndex(id, ":"); i > 0 {
			m.ID, m.PortGroupKey = types.StringValue(id[:i]), types.StringValue(id[i+1:])
		}
		return m
	},
	check: func(m switchIdentityModel, diags *diag.Diagnostics) {
		id := m.ID.ValueString()
		if looks := vsphere.ShapeOf(id); !vsphere.LooksLikeDVSUUID(id) {
			what := fmt.Sprintf("%q, which looks like %s", id, looks)
			if strings.HasPrefix(id, "/") {
				what = fmt.Sprintf("%q, an inventory path (import by string id to give one)", id)
			}
			diags.AddError("Invalid identity", fmt.Sprintf("The identity's id holds %s; it takes the switch's UUID, as "+
				"vsphere_distributed_virtual_switch.id or a vspherehpc_rdma_dvs's id gives it (50 2a 6c ... -...).", what))
		}
		if key := m.PortGroupKey.ValueString(); key != "" {
			if looks := vsphere.ShapeOf(key); !looks.IsName() && !looks.Fits(vsphere.ObjectPortGroup) {
				diags.AddError("Invalid identity", fmt.Sprintf("The identity's port_group_key holds %s, which looks like %s; it takes "+
					"the key of one of the switch's port groups, such as dvportgroup-17, or \"\" for none.", key, looks))
			}
		}
	},
}

type hostIdentityModel struct {
	HostSystemID types.String `tfsdk:"host_system_id"`
}

// hostIdentity names a host's settings by the host: the id is the host's.
var hostIdentity = identityKind[hostIdentityModel]{
	schema: identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"host_system_id": stringIdentity("Managed object id of the host, e.g. `host-12`."),
	}},
	fromID: func(id string) (hostIdentityModel, bool) { return hostIdentityModel{types.StringValue(id)}, id != "" },
	parse: func(id string, _ *diag.Diagnostics) hostIdentityModel {
		return hostIdentityModel{types.StringValue(id)}
	},
	check: func(m hostIdentityModel, diags *diag.Diagnostics) {
		checkIDField(diags, "host_system_id", m.HostSystemID.ValueString(), vsphere.ObjectHost, hostIDExpected)
	},
}

type passthroughIdentityModel struct {
	HostSystemID types.String `tfsdk:"host_system_id"`
	PCIIDs       types.List   `tfsdk:"pci_ids"`
}

// passthroughIdentity names a host and the devices whose passthrough the
// resource manages: several resources can each manage some of one host's.
// Its string import id is "<host id>" for every device with passthrough on,
// or "<host id>:<PCI id>,<PCI id>"; null PCIIDs say every device.
var passthroughIdentity = identityKind[passthroughIdentityModel]{
	schema: identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"host_system_id": stringIdentity("Managed object id of the host, e.g. `host-12`."),
		"pci_ids": identityschema.ListAttribute{ElementType: types.StringType, OptionalForImport: true,
			Description: "PCI ids of the devices the resource manages (given by `pci_ids` or found by `match`), sorted; it changes with " +
				"them. Left out in an import, every device with passthrough on is adopted."},
	}},
	fromID: func(id string) (passthroughIdentityModel, bool) {
		return passthroughIdentityModel{HostSystemID: types.StringValue(id), PCIIDs: types.ListNull(types.StringType)}, id != ""
	},
	fromState: func(ctx context.Context, state *tfsdk.State, m *passthroughIdentityModel) diag.Diagnostics {
		// The devices the resource manages, whether pci_ids or match
		// chose them; pci_ids until they are read.
		var devices []passthroughDeviceModel
		diags := state.GetAttribute(ctx, path.Root("devices"), &devices)
		var ids []string
		for _, d := range devices {
			ids = append(ids, d.PCIID.ValueString())
		}
		if len(ids) == 0 {
			var set types.Set
			diags.Append(state.GetAttribute(ctx, path.Root("pci_ids"), &set)...)
			if !set.IsNull() && !set.IsUnknown() {
				diags.Append(set.ElementsAs(ctx, &ids, false)...)
			}
		}
		// None (a match that finds nothing now) is an empty list, which an
		// import refuses, not a null one, which adopts every device.
		m.PCIIDs = sortedPCIIDs(ctx, ids, &diags)
		return diags
	},
	parse: func(id string, diags *diag.Diagnostics) passthroughIdentityModel {
		host, list, listed := strings.Cut(id, ":")
		m := passthroughIdentityModel{HostSystemID: types.StringValue(host), PCIIDs: types.ListNull(types.StringType)}
		switch {
		case listed && list == "":
			diags.AddError("Nothing to import", fmt.Sprintf("Import %q names no device. List the devices after the colon, or give "+
				"the host alone to adopt every device with passthrough on.", id))
		case listed:
			m.PCIIDs = stringList(strings.Split(list, ","))
		}
		return m
	},
	check: func(m passthroughIdentityModel, diags *diag.Diagnostics) {
		checkIDField(diags, "host_system_id", m.HostSystemID.ValueString(), vsphere.ObjectHost, hostIDExpected)
		if m.PCIIDs.IsNull() {
			return
		}
		if len(m.PCIIDs.Elements()) == 0 {
			diags.AddError("Nothing to import", "The identity's pci_ids is empty: it names no device. List the devices in it, or "+
				"leave pci_ids out to adopt every device with passthrough on.")
		}
		for _, id := range listStrings(m.PCIIDs) {
			checkPCIField(diags, "pci_ids element", id)
		}
	},
}

// stringList is strs as a list value.
func stringList(strs []string) types.List {
	elems := make([]attr.Value, len(strs))
	for i, s := range strs {
		elems[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, elems)
}

// listStrings is a known list of strings as a slice.
func listStrings(list types.List) []string {
	var out []string
	for _, v := range list.Elements() {
		if s, ok := v.(types.String); ok {
			out = append(out, s.ValueString())
		}
	}
	return out
}

// sortedPCIIDs is ids as an identity's list, sorted: a set in state has no
// order of its own.
func sortedPCIIDs(ctx context.Context, ids []string, diags *diag.Diagnostics) types.List {
	ids = append([]string{}, slices.Sorted(slices.Values(ids))...) // none: empty, not null
	list, ds := types.ListValueFrom(ctx, types.StringType, ids)
	diags.Append(ds...)
	return list
}

type hostDeviceIdentityModel struct {
	HostSystemID types.String `tfsdk:"host_system_id"`
	PCIID        types.String `tfsdk:"pci_id"`
}

// hostDeviceIdentity names a PCI function of a host; the id is
// "<host id>:<PCI id>" (a PCI id has colons of its own).
var hostDeviceIdentity = identityKind[hostDeviceIdentityModel]{
	schema: identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"host_system_id": stringIdentity("Managed object id of the host, e.g. `host-12`."),
		"pci_id":         stringIdentity("PCI id of the physical function, e.g. `0000:86:00.0`."),
	}},
	fromID: func(id string) (hostDeviceIdentityModel, bool) {
		host, pci, ok := strings.Cut(id, ":")
		return hostDeviceIdentityModel{types.StringValue(host), types.StringValue(pci)}, ok
	},
	parse: func(id string, diags *diag.Diagnostics) hostDeviceIdentityModel {
		host, pci, ok := strings.Cut(id, ":")
		if !ok || !pciIDPattern.MatchString(pci) {
			diags.AddError("Invalid import id", fmt.Sprintf("Import SR-IOV as <host id>:<PCI id>, e.g. host-12:0000:86:00.0, not %q.", id))
		}
		return hostDeviceIdentityModel{types.StringValue(host), types.StringValue(pci)}
	},
	check: func(m hostDeviceIdentityModel, diags *diag.Diagnostics) {
		checkIDField(diags, "host_system_id", m.HostSystemID.ValueString(), vsphere.ObjectHost, hostIDExpected)
		checkPCIField(diags, "pci_id", m.PCIID.ValueString())
	},
}

type vmIdentityModel struct {
	VirtualMachineID types.String `tfsdk:"virtual_machine_id"`
}

// vmIdentity names a VM's setup by the VM's UUID, as its id does.
var vmIdentity = identityKind[vmIdentityModel]{
	schema: identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"virtual_machine_id": stringIdentity("The VM's UUID (what `vsphere_virtual_machine.id` is), lower case."),
	}},
	fromID: func(id string) (vmIdentityModel, bool) { return vmIdentityModel{types.StringValue(id)}, id != "" },
	parse:  func(id string, _ *diag.Diagnostics) vmIdentityModel { return vmIdentityModel{types.StringValue(id)} },
	check: func(m vmIdentityModel, diags *diag.Diagnostics) {
		checkIDField(diags, "virtual_machine_id", m.VirtualMachineID.ValueString(), vsphere.ObjectVirtualMachine, vmIDExpected)
	},
}

type vmDeviceIdentityModel struct {
	VirtualMachineID types.String `tfsdk:"virtual_machine_id"`
	DeviceKey        types.Int64  `tfsdk:"device_key"`
}

// vmDeviceIdentity names a VM's device: the id is "<VM UUID>:<device key>".
var vmDeviceIdentity = identityKind[vmDeviceIdentityModel]{
	schema: identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"virtual_machine_id": stringIdentity("The VM's UUID (what `vsphere_virtual_machine.id` is), lower case."),
		"device_key": identityschema.Int64Attribute{RequiredForImport: true,
			Description: "The adapter's device key in the VM, e.g. `4000`."},
	}},
	fromID: vmDeviceOf,
	parse: func(id string, diags *diag.Diagnostics) vmDeviceIdentityModel {
		m, ok := vmDeviceOf(id)
		if !ok {
			diags.AddError("Invalid import id", fmt.Sprintf("Import the adapter as <VM UUID>:<device key>, e.g. 4223b7a1-...-9c1e:4000, "+
				"not %q. vspherehpc_virtual_machine lists a VM's adapters with their keys.", id))
		}
		return m
	},
	check: func(m vmDeviceIdentityModel, diags *diag.Diagnostics) {
		checkIDField(diags, "virtual_machine_id", m.VirtualMachineID.ValueString(), vsphere.ObjectVirtualMachine, vmIDExpected)
		if key := m.DeviceKey.ValueInt64(); key < 0 || key > math.MaxInt32 {
			diags.AddError("Invalid identity", fmt.Sprintf("The identity's device_key holds %d, which no device has; it takes the "+
				"adapter's device key, such as 4000 (vspherehpc_virtual_machine lists a VM's adapters with their keys).", key))
		}
	},
}

// vmDeviceOf reads "<VM UUID or managed object id>:<device key>".
func vmDeviceOf(id string) (vmDeviceIdentityModel, bool) {
	i := strings.LastIndex(id, ":")
	key, err := strconv.ParseInt(id[i+1:], 10, 32)
	if i <= 0 || err != nil {
		return vmDeviceIdentityModel{}, false
	}
	return vmDeviceIdentityModel{types.StringValue(id[:i]), types.Int64Value(key)}, true
}
