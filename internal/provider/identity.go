package provider

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Resource identity (Terraform 1.12+): the fields that name a resource's
// object in vCenter. Every resource's identity follows from its state and
// leads back to an import id, so one import path serves `terraform import`,
// `import { id = ... }` and `import { identity = {...} }`. Most identities
// follow from the id alone and never change over an object's life; the two
// whose id names a host or switch that several resources can share (see
// fromState) change with what the resource manages on it. Terraform before
// 1.12 and OpenTofu neither send nor keep identity; the framework then drops
// it.
type identityKind[I any] struct {
	schema   identityschema.Schema
	fromID   func(id string) (I, bool)
	importID func(I) string
	// fromState, when set, adds what the state knows beyond the id: the
	// port group of a switch, the devices of a host's passthrough. Such an
	// identity changes when that does, so its resource declares
	// MutableIdentity.
	fromState func(ctx context.Context, state *tfsdk.State, identity *I) diag.Diagnostics
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

// importIDOf is the import id the user gave, or the one their identity
// names.
func (k identityKind[I]) importIDOf(ctx context.Context, req resource.ImportStateRequest, diags *diag.Diagnostics) string {
	if req.ID != "" || req.Identity == nil || req.Identity.Raw.IsNull() {
		return req.ID
	}
	var v I
	if diags.Append(getModel(ctx, req.Identity.Schema, req.Identity.Raw, &v)...); diags.HasError() {
		return ""
	}
	return k.importID(v)
}

func stringIdentity(desc string) identityschema.StringAttribute {
	return identityschema.StringAttribute{RequiredForImport: true, Description: desc}
}

type switchIdentityModel struct {
	ID           types.String `tfsdk:"id"`
	PortGroupKey types.String `tfsdk:"port_group_key"`
}

// switchIdentity names a switch by its UUID, as its id does, and the port
// group the resource manages on it: a switch can have several, each managed
// by another resource.
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
	importID: func(m switchIdentityModel) string {
		if m.PortGroupKey.IsNull() {
			return m.ID.ValueString()
		}
		return m.ID.ValueString() + ":" + m.PortGroupKey.ValueString()
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
	fromID:   func(id string) (hostIdentityModel, bool) { return hostIdentityModel{types.StringValue(id)}, id != "" },
	importID: func(m hostIdentityModel) string { return m.HostSystemID.ValueString() },
}

type passthroughIdentityModel struct {
	HostSystemID types.String `tfsdk:"host_system_id"`
	PCIIDs       types.List   `tfsdk:"pci_ids"`
}

// passthroughIdentity names a host and the devices whose passthrough the
// resource manages: several resources can each manage some of one host's.
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
	importID: func(m passthroughIdentityModel) string {
		if m.PCIIDs.IsNull() || m.PCIIDs.IsUnknown() {
			return m.HostSystemID.ValueString()
		}
		var ids []string
		for _, v := range m.PCIIDs.Elements() {
			if s, ok := v.(types.String); ok {
				ids = append(ids, s.ValueString())
			}
		}
		// An empty list names no device: the import refuses it.
		return m.HostSystemID.ValueString() + ":" + strings.Join(ids, ",")
	},
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
	importID: func(m hostDeviceIdentityModel) string {
		return m.HostSystemID.ValueString() + ":" + m.PCIID.ValueString()
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
	fromID:   func(id string) (vmIdentityModel, bool) { return vmIdentityModel{types.StringValue(id)}, id != "" },
	importID: func(m vmIdentityModel) string { return m.VirtualMachineID.ValueString() },
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
	fromID: func(id string) (vmDeviceIdentityModel, bool) {
		i := strings.LastIndex(id, ":")
		key, err := strconv.ParseInt(id[i+1:], 10, 32)
		if i <= 0 || err != nil {
			return vmDeviceIdentityModel{}, false
		}
		return vmDeviceIdentityModel{types.StringValue(id[:i]), types.Int64Value(key)}, true
	},
	importID: func(m vmDeviceIdentityModel) string {
		return m.VirtualMachineID.ValueString() + ":" + strconv.FormatInt(m.DeviceKey.ValueInt64(), 10)
	},
}
