package provider

import (
	"context"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// planned sets m's computed values that the plan left unknown to null
// (whether a device just turned on is active, so whether the host waits for
// a reboot): state as the plan has it, before the host is read back.
func planned(m *hostPCIPassthroughModel, want []vsphere.PassthroughDevice) {
	m.ID = m.HostSystemID
	if m.RebootRequired.IsUnknown() {
		m.RebootRequired = types.BoolNull()
	}
	var devices []attr.Value
	if !m.Devices.IsUnknown() && !m.Devices.IsNull() {
		devices = m.Devices.Elements()
	} else { // not planned (an unknown input then): the devices as wanted
		for _, d := range want {
			devices = append(devices, types.ObjectValueMust(passthroughDeviceType.AttrTypes, map[string]attr.Value{
				"pci_id": types.StringValue(d.PCIID), "vendor_id": types.StringValue(d.VendorID), "device_id": types.StringValue(d.DeviceID),
				"device_name": types.StringValue(d.DeviceName), "enabled": types.BoolValue(true), "active": types.BoolUnknown(),
				"hardware_label": types.StringValue(plannedLabel(m.HardwareLabel, d, nil)),
			}))
		}
	}
	known := make([]attr.Value, 0, len(devices))
	for _, d := range devices {
		attrs := maps.Clone(d.(types.Object).Attributes())
		for k, v := range attrs {
			if v.IsUnknown() {
				attrs[k] = nullOf(v)
			}
		}
		known = append(known, types.ObjectValueMust(passthroughDeviceType.AttrTypes, attrs))
	}
	m.Devices = types.ListValueMust(passthroughDeviceType, known)
	rebootDefaults(&m.RebootAllowed, &m.RebootTimeout)
}

// plannedLabel is the label a device has once hardware_label is applied:
// the configured one, or, left out, the one it had before this resource
// labelled it (labelsBefore, by PCI id) or else its own.
func plannedLabel(configured types.String, d vsphere.PassthroughDevice, labelsBefore map[string]string) string {
	if !configured.IsNull() && !configured.IsUnknown() {
		return configured.ValueString()
	}
	if was, recorded := labelsBefore[d.PCIID]; recorded {
		return was
	}
	return d.Label
}

// nullOf is the null of v's type (a device's string or bool).
func nullOf(v attr.Value) attr.Value {
	if _, ok := v.(types.Bool); ok {
		return types.BoolNull()
	}
	return types.StringNull()
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// fillPassthrough fills m's computed values from the host for the managed
// devices. A managed device the host no longer has stays listed, with
// passthrough off (and what prior says of it otherwise), so the plan shows
// it: gone, or back without passthrough, it is drift, never dropped silently.
func fillPassthrough(ctx context.Context, m *hostPCIPassthroughModel, host *vsphere.HostPassthrough, managed []string,
	prior map[string]passthroughDeviceModel, diags *diag.Diagnostics) {
	var devices []passthroughDeviceModel
	reboot, labelDrift := false, false
	for _, id := range managed {
		d := host.Device(id)
		if d == nil {
			gone, ok := prior[id]
			if !ok {
				gone = passthroughDeviceModel{PCIID: types.StringValue(id), VendorID: types.StringNull(), DeviceID: types.StringNull(),
					DeviceName: types.StringNull()}
			}
			gone.Enabled, gone.Active = types.BoolValue(false), types.BoolValue(false)
			if gone.HardwareLabel.IsUnknown() {
				gone.HardwareLabel = types.StringNull()
			}
			devices = append(devices, gone)
			continue
		}
		reboot = reboot || (d.Enabled && !d.Active)
		devices = append(devices, passthroughDeviceModel{
			PCIID: types.StringValue(d.PCIID), VendorID: types.StringValue(d.VendorID), DeviceID: types.StringValue(d.DeviceID),
			DeviceName: types.StringValue(d.DeviceName), Enabled: types.BoolValue(d.Enabled), Active: types.BoolValue(d.Active),
			HardwareLabel: types.StringValue(d.Label),
		})
		// A device labelled otherwise in vCenter is drift: hardware_label
		// reads as its label, and the plan sets it back.
		if !m.HardwareLabel.IsNull() && !m.HardwareLabel.IsUnknown() && d.Label != m.HardwareLabel.ValueString() && !labelDrift {
			m.HardwareLabel, labelDrift = types.StringValue(d.Label), true
		}
	}
	list, ds := types.ListValueFrom(ctx, passthroughDeviceType, devices)
	diags.Append(ds...)
	m.ID, m.Devices, m.RebootRequired = types.StringValue(host.HostID), list, types.BoolValue(reboot)
	if m.Before.ElementType(ctx) == nil { // a model built from nothing (a list result): nothing recorded
		m.Before = types.MapNull(types.BoolType)
	}
	if m.LabelsBefore.ElementType(ctx) == nil || m.LabelsBefore.IsUnknown() {
		m.LabelsBefore = types.MapNull(types.StringType)
	}
	rebootDefaults(&m.RebootAllowed, &m.RebootTimeout)
}

// boolMap is a map(bool) value.
func boolMap(m map[string]bool) types.Map {
	elems := make(map[string]attr.Value, len(m))
	for k, v := range m {
		elems[k] = types.BoolValue(v)
	}
	return types.MapValueMust(types.BoolType, elems)
}

// adoptedLabel is hardware_label as adopting devices finds it: the label
// they all carry, else null (mixed or none: left as they are).
func adoptedLabel(host *vsphere.HostPassthrough, ids []string) types.String {
	label := ""
	for i, id := range ids {
		d := host.Device(id)
		if d == nil || d.Label == "" || (i > 0 && d.Label != label) {
			return types.StringNull()
		}
		label = d.Label
	}
	if label == "" {
		return types.StringNull()
	}
	return types.StringValue(label)
}

// labelsOf is the labels of the devices ids as host has them now.
func labelsOf(host *vsphere.HostPassthrough, ids []string) map[string]string {
	out := map[string]string{}
	for _, id := range ids {
		if d := host.Device(id); d != nil {
			out[id] = d.Label
		}
	}
	return out
}

// stringMapOf is m's string map, empty when null or unknown.
func stringMapOf(ctx context.Context, m types.Map, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	if !m.IsNull() && !m.IsUnknown() {
		diags.Append(m.ElementsAs(ctx, &out, false)...)
	}
	return out
}
