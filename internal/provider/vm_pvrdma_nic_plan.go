package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// ModifyPlan checks a new adapter, or a changed port group or protocol,
// against the VM and the port group's switch, and refuses a change that
// needs a running VM off unless power_off_allowed.
func (r *vmPVRDMANICResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	state, plan, movedFrom, ok := planAdapter[vmPVRDMANICModel](ctx, req, resp, r.client, r.claims, vsphere.WhatPVRDMANeedsOff)
	if !ok {
		return
	}
	var configMAC, configProtocol types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("mac_address"), &configMAC)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("device_protocol"), &configProtocol)...)
	claimStaticMAC(ctx, r.claims, req, resp, configMAC, "PVRDMA", plan.VirtualMachineID)
	noteReplaced(resp, "PVRDMA", movedFrom, configMAC, plan.VirtualMachineID)
	// An unset device_protocol is planned from the VM's protocol choice. A
	// new adapter takes it from the checks below, which read it anyway; an
	// existing one whose protocol it may change reads it first, as whether
	// the protocol changes is what the checks need to know.
	choose := configProtocol.IsNull() && !plan.VirtualMachineID.IsUnknown()
	if choose && state != nil {
		plan.DeviceProtocol, choose = r.stateOrChosenProtocol(ctx, *plan, *state, resp), false
	}
	var change *vsphere.PVRDMANICChange
	if !plan.VirtualMachineID.IsUnknown() && !plan.PortGroupID.IsUnknown() && !configProtocol.IsUnknown() {
		change = pvrdmaNICChange(*plan, state, configMAC, configProtocol)
	}
	if change != nil {
		change.MovedFrom = movedFrom
		change.SwitchHosts = r.claims.plannedSwitchHosts(change.PortGroupID)
	}
	if change == nil {
		if choose {
			r.planProtocol(ctx, *plan, state, resp, nil)
		}
		return
	}
	checked, err := r.client.PlanPVRDMANIC(ctx, *change)
	if choose && checked != nil {
		r.planProtocol(ctx, *plan, state, resp, checked)
	}
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(argumentOf(err, map[vsphere.Object]string{
			vsphere.ObjectVirtualMachine: "virtual_machine_id", vsphere.ObjectPortGroup: "distributed_port_group_id",
		}), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check the PVRDMA adapter", err))
		return
	}
	for _, f := range checked.Findings {
		addPVRDMANICFinding(&resp.Diagnostics, f)
	}
	r.claims.besideReboots(ctx, req, resp, "vspherehpc_vm_pvrdma_nic", plan.VirtualMachineID, checked.OnHost)
}

// pvrdmaNICChange is what the planner checks; nil when nothing vCenter
// needs to be asked about changes.
func pvrdmaNICChange(plan vmPVRDMANICModel, state *vmPVRDMANICModel, configMAC, configProtocol types.String) *vsphere.PVRDMANICChange {
	change := &vsphere.PVRDMANICChange{
		VMID: plan.VirtualMachineID.ValueString(), PortGroupID: plan.PortGroupID.ValueString(),
		DeviceProtocol: configProtocol.ValueString(), PowerOffAllowed: plan.PowerOffAllowed.ValueBool(),
	}
	if !configMAC.IsUnknown() && (state == nil || !configMAC.Equal(state.MACAddress)) {
		change.MAC = configMAC.ValueString()
	}
	if state != nil {
		change.Key = int32(state.DeviceKey.ValueInt64())
		change.ProtocolChange = !plan.DeviceProtocol.Equal(state.DeviceProtocol)
		if plan.PortGroupID.Equal(state.PortGroupID) && !change.ProtocolChange && change.MAC == "" {
			return nil
		}
	}
	return change
}

// defaultProtocol is device_protocol's default, where the VM's hardware
// version offers a choice.
const defaultProtocol = "rocev2"

// stateOrChosenProtocol plans an unset device_protocol of an existing
// adapter: the state's when that is the default, or no protocol (an adapter
// of a VM without a choice), which stays whatever else changes, with no
// call; else as planProtocol chooses.
func (r *vmPVRDMANICResource) stateOrChosenProtocol(
	ctx context.Context,
	plan, state vmPVRDMANICModel,
	resp *resource.ModifyPlanResponse,
) types.String {
	if state.DeviceProtocol.IsNull() || state.DeviceProtocol.ValueString() == defaultProtocol {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("device_protocol"), state.DeviceProtocol)...)
		return state.DeviceProtocol
	}
	return r.planProtocol(ctx, plan, &state, resp, nil)
}

// planProtocol plans an unset device_protocol: the default where the VM's
// hardware version offers a choice of protocol; where it offers PVRDMA with
// none, the adapter asks for none and the attribute is what vSphere says
// (known once the adapter exists). The choice comes from the planner's
// checks when they ran (checked), else from a read of its own.
func (r *vmPVRDMANICResource) planProtocol(
	ctx context.Context,
	plan vmPVRDMANICModel,
	state *vmPVRDMANICModel,
	resp *resource.ModifyPlanResponse,
	checked *vsphere.PVRDMANICPlan,
) types.String {
	var choice bool
	if checked != nil {
		choice = checked.ProtocolChoice
	} else {
		var err error
		if choice, err = r.client.PVRDMAProtocolChoice(ctx, plan.VirtualMachineID.ValueString()); err != nil {
			if !errors.Is(err, vsphere.ErrNotFound) { // a missing VM: the checks name the argument
				resp.Diagnostics.Append(vsphereErrorDiag("Cannot read the PVRDMA protocols of virtual machine "+plan.VirtualMachineID.ValueString(), err))
			}
			return plan.DeviceProtocol
		}
	}
	protocol := types.StringUnknown()
	switch {
	case choice:
		protocol = types.StringValue(defaultProtocol)
	case state != nil:
		protocol = state.DeviceProtocol
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("device_protocol"), protocol)...)
	return protocol
}

// addPVRDMANICFinding words one finding of the adapter's planner.
func addPVRDMANICFinding(diags *diag.Diagnostics, f vsphere.Finding) {
	vmPath, groupPath := path.Root("virtual_machine_id"), path.Root("distributed_port_group_id")
	switch f := f.(type) {
	case vsphere.HardwareTooOld:
		diags.AddAttributeError(vmPath, "Hardware version too old for PVRDMA",
			fmt.Sprintf("Virtual machine %s has hardware version %d (vmx-%d); PVRDMA adapters need vmx-%d or later. Upgrade the VM's "+
				"compatibility while it is powered off: with the vSphere provider, set hardware_version = %d (or later) on its "+
				"vsphere_virtual_machine; in the vSphere Client, Actions > Compatibility > Upgrade VM Compatibility.",
				f.VM, f.Version, f.Version, f.Minimum, f.Minimum))
	case vsphere.NoProtocolChoice:
		diags.AddAttributeError(path.Root("device_protocol"), "No protocol choice",
			fmt.Sprintf("Virtual machine %s (hardware version %d) offers PVRDMA with no choice of protocol, so it cannot be %s. "+
				"Remove device_protocol: vSphere gives the adapter the hardware version's own protocol.", f.VM, f.Version, f.Wanted))
	case vsphere.ProtocolNotOffered:
		diags.AddAttributeError(path.Root("device_protocol"), "Protocol not offered",
			fmt.Sprintf("Virtual machine %s (hardware version %d) offers PVRDMA protocol %s, not %s. Use one of those, or upgrade the "+
				"VM's hardware version.", f.VM, f.Version, orNone(f.Offered), f.Wanted))
	case vsphere.StandardNetwork:
		diags.AddAttributeError(groupPath, "Not a distributed port group",
			fmt.Sprintf("%s (%s) is a standard network; PVRDMA adapters need a distributed port group, such as the port_group_id "+
				"of a vspherehpc_rdma_dvs.", f.NetworkID, f.Name))
	case vsphere.HostsNotOnSwitch:
		members := "are not members of switch " + f.Switch
		if f.Planned {
			members = "are not among the hosts this plan gives switch " + f.Switch
		}
		diags.AddAttributeError(groupPath, "Cluster hosts missing from the switch",
			fmt.Sprintf("Hosts %s of the cluster of virtual machine %s %s, which port group %s is on. "+
				"vSphere refuses the adapter unless every host of the VM's cluster is: add them to the switch (host blocks of "+
				"vspherehpc_rdma_dvs). Hosts the same plan adds count when distributed_port_group_id refers to the switch's port_group_id.",
				strings.Join(f.Hosts, ", "), f.VM, members, f.PortGroup))
	case vsphere.PVRDMAFirstAdapter:
		diags.AddAttributeWarning(vmPath, "PVRDMA adapter first",
			fmt.Sprintf("The PVRDMA adapter would be the first network adapter of virtual machine %s. Keep a regular vmxnet3 adapter "+
				"first, for the guest's management traffic, as VMware's guidance for PVRDMA and Bitfusion says.", f.VM))
	case vsphere.MACInUse:
		diags.AddAttributeError(path.Root("mac_address"), "MAC address in use",
			fmt.Sprintf("Virtual machine %s already has a network adapter with MAC address %s. Two adapters with one MAC break each "+
				"other's traffic: choose another address, or leave mac_address out to let vSphere generate one.", f.VM, f.MAC))
	case vsphere.PVRDMASharedNetwork:
		diags.AddAttributeWarning(groupPath, "Two PVRDMA adapters on one network",
			fmt.Sprintf("Virtual machine %s already has a PVRDMA adapter on port group %s. Several PVRDMA adapters of a VM should be "+
				"on separate networks.", f.VM, f.PortGroup))
	default:
		if !addPowerFinding(diags, f) {
			unexpectedFinding(diags, f)
		}
	}
}
