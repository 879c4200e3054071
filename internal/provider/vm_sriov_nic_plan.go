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

// ModifyPlan checks a new adapter, or a changed port group, function or
// MAC, against the VM, its host and the port group's switch, and refuses a
// change that needs a running VM off unless power_off_allowed.
func (r *vmSRIOVNICResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	state, plan, movedFrom, ok := planAdapter[vmSRIOVNICModel](ctx, req, resp, r.client, r.claims, vsphere.WhatSRIOVNeedsOff)
	if !ok {
		return
	}
	newPF := state != nil && !plan.PhysicalFunction.Equal(state.PhysicalFunction)
	if state != nil && !newPF {
		// The function and its VF stay as they are.
		plan.AssignedPhysicalFunction, plan.VirtualFunction = state.AssignedPhysicalFunction, state.VirtualFunction
		resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
	}
	var configMAC types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("mac_address"), &configMAC)...)
	claimStaticMAC(ctx, r.claims, req, resp, configMAC, "SR-IOV", plan.VirtualMachineID)
	noteReplaced(resp, "SR-IOV", movedFrom, configMAC, plan.VirtualMachineID)
	if plan.VirtualMachineID.IsUnknown() || plan.PortGroupID.IsUnknown() || plan.PhysicalFunction.IsUnknown() {
		return
	}
	change := vsphere.SRIOVNICChange{
		VMID: plan.VirtualMachineID.ValueString(), PortGroupID: plan.PortGroupID.ValueString(), PhysicalFunction: plan.pf(),
		NewPF: newPF, PowerOffAllowed: plan.PowerOffAllowed.ValueBool(), Planned: r.claims.deviceInputs(), MovedFrom: movedFrom,
	}
	if !configMAC.IsUnknown() && (state == nil || !configMAC.Equal(state.MACAddress)) {
		change.MAC = configMAC.ValueString()
	}
	if state != nil {
		change.Key = int32(state.DeviceKey.ValueInt64())
		if plan.PortGroupID.Equal(state.PortGroupID) && !newPF && change.MAC == "" {
			return // nothing vCenter needs to be asked about
		}
	}
	p, err := r.client.PlanSRIOVNIC(ctx, change)
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(argumentOf(err, map[vsphere.Object]string{
			vsphere.ObjectVirtualMachine: "virtual_machine_id", vsphere.ObjectPortGroup: "distributed_port_group_id",
		}), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check the SR-IOV adapter", err))
		return
	}
	for _, f := range p.Findings {
		addSRIOVNICFinding(&resp.Diagnostics, f)
	}
	r.claims.besideReboots(ctx, req, resp, "vspherehpc_vm_sriov_nic", plan.VirtualMachineID, p.OnHost)
	if p.FreeVFs != nil {
		r.takeVF(ctx, req, resp, plan.VirtualMachineID, *p.FreeVFs)
	}
}

// takeVF counts the new adapters of this plan on a physical function, and
// its virtual functions the plan passes through, against its free virtual
// functions: one VM more than there are does not power on.
func (r *vmSRIOVNICResource) takeVF(
	ctx context.Context,
	req resource.ModifyPlanRequest,
	resp *resource.ModifyPlanResponse,
	vm types.String,
	f vsphere.FreeVFs,
) {
	takers := r.claims.takeVF(
		r.claims.instance(ctx, req, resp),
		vsphere.HostDeviceKey(f.HostID, f.PCIID),
		"an adapter of virtual machine "+vm.ValueString(),
	)
	addTooFewVFs(&resp.Diagnostics, path.Root("physical_function"), f, takers)
}

// addTooFewVFs refuses more takers of a physical function's virtual
// functions (SR-IOV adapters, VFs passed through) than it has free.
func addTooFewVFs(diags *diag.Diagnostics, at path.Path, f vsphere.FreeVFs, takers []string) {
	if len(takers) <= f.Free {
		return
	}
	has := "has"
	if f.Planned {
		has = "gets, as this configuration's vspherehpc_host_sriov sets it,"
	}
	diags.AddAttributeError(at, "Not enough free virtual functions",
		fmt.Sprintf("Physical function %s (%s) of host %s %s %d virtual functions, %d of them free, and this configuration takes %d "+
			"of them: %s. Each SR-IOV adapter takes a virtual function of its own at power on, and a VF passed through is one, so a "+
			"VM would not power on: raise num_virtual_functions of its vspherehpc_host_sriov, or put an adapter on another function.",
			f.PCIID, cmpOr(f.NIC, "no vmnic"), f.Host, has, f.VFs, f.Free, len(takers), strings.Join(takers, ", ")))
}

// addSRIOVNICFinding words one finding of the adapter's planner.
func addSRIOVNICFinding(diags *diag.Diagnostics, f vsphere.Finding) {
	pfPath, groupPath := path.Root("physical_function"), path.Root("distributed_port_group_id")
	switch f := f.(type) {
	case vsphere.HardwareTooOld:
		diags.AddAttributeError(path.Root("virtual_machine_id"), "Hardware version too old for SR-IOV",
			fmt.Sprintf("Virtual machine %s has hardware version %d (vmx-%d); SR-IOV adapters need vmx-%d (ESXi 5.5 compatibility) or "+
				"later. Upgrade the VM's compatibility while it is powered off.", f.VM, f.Version, f.Version, f.Minimum))
	case vsphere.StandardNetwork:
		diags.AddAttributeError(groupPath, "Not a distributed port group",
			fmt.Sprintf("%s (%s) is a standard network; this resource puts SR-IOV adapters on distributed port groups, such as the "+
				"port_group_id of a vspherehpc_rdma_dvs.", f.NetworkID, f.Name))
	case vsphere.DeviceNotOnHost:
		diags.AddAttributeError(pfPath, "No such physical function",
			fmt.Sprintf("The VM's host %s has no PCI device %s. Its SR-IOV capable devices: %s.", f.Host, f.PCIID, listOrNone(f.Capable)))
	case vsphere.NotSRIOVCapable:
		diags.AddAttributeError(pfPath, "Not an SR-IOV function",
			fmt.Sprintf("PCI device %s (%s) of the VM's host %s is not SR-IOV capable. Its SR-IOV capable devices: %s.",
				f.PCIID, strings.TrimSpace(f.Name), f.Host, listOrNone(f.Capable)))
	case vsphere.PFNotNIC:
		diags.AddAttributeError(pfPath, "Not a network adapter",
			fmt.Sprintf("PCI device %s (%s) of host %s is no network adapter of the host (it has no vmnic), so its virtual "+
				"functions cannot back an SR-IOV network adapter. Pass such a VF through as a pci_device of vspherehpc_vm_gpu_mmio "+
				"instead, or choose one of the host's SR-IOV capable NICs: %s.", f.PCIID, f.Name, f.Host, listOrNone(f.NICs)))
	case vsphere.SRIOVNotActive:
		if f.TurnedOnAtReboot {
			diags.AddAttributeError(pfPath, "SR-IOV active only after a host reboot", fmt.Sprintf(turnedOnAtReboot, "SR-IOV of", f.PCIID, f.Host))
			return
		}
		if f.Enabled {
			diags.AddAttributeError(pfPath, "SR-IOV waits for a host reboot",
				fmt.Sprintf("SR-IOV of %s (%s) on host %s is enabled but not active yet: the host must reboot first "+
					"(vspherehpc_host_sriov shows reboot_required). Reboot the host, then apply again.", f.PCIID, f.NIC, f.Host))
			return
		}
		diags.AddAttributeError(pfPath, "SR-IOV is off",
			fmt.Sprintf("SR-IOV of %s (%s) on host %s is off, so it has no virtual function to give. Turn it on with "+
				"vspherehpc_host_sriov (in this configuration or before it), or choose another physical function.", f.PCIID, f.NIC, f.Host))
	case vsphere.PFNotUplink:
		where := "is no uplink of any switch"
		if f.UplinkOf != "" {
			where = "is an uplink of switch " + f.UplinkOf
		}
		diags.AddAttributeWarning(pfPath, "Physical function not an uplink of the port group's switch",
			fmt.Sprintf("%s on host %s %s, not of %s. vSphere applies the port group's policies (VLAN, MAC security) to the virtual "+
				"function through the switch its physical NIC backs: make the NIC an uplink of %s, or choose one that is.",
				f.NIC, f.Host, where, f.Switch, f.Switch))
	case vsphere.VMHostNotOnSwitch:
		diags.AddAttributeError(groupPath, "The VM's host is not on the switch",
			fmt.Sprintf("Virtual machine %s runs on host %s, which is no member of switch %s (port group %s): vCenter gives an SR-IOV "+
				"adapter a port of the switch on the VM's own host. Add the host to the switch (a host block of its vspherehpc_rdma_dvs), "+
				"or move the VM to a member host.", f.VM, f.Host, f.Switch, f.PortGroup))
	case vsphere.NoSRIOVPool:
		diags.AddAttributeError(pfPath, "Nothing for vCenter to choose from",
			fmt.Sprintf("physical_function = \"automatic\" lets vCenter choose, at power on, among the SR-IOV-active uplinks of switch "+
				"%s on the VM's host %s, and it has none. Turn SR-IOV on for an uplink of %s on that host (vspherehpc_host_sriov), "+
				"or give a physical function.", f.Switch, f.Host, f.Switch))
	case vsphere.MACInUse:
		diags.AddAttributeError(path.Root("mac_address"), "MAC address in use",
			fmt.Sprintf("Virtual machine %s already has a network adapter with MAC address %s. Two adapters with one MAC break each "+
				"other's traffic: choose another address, or leave mac_address out to let vSphere generate one.", f.VM, f.MAC))
	default:
		if !addPowerFinding(diags, f) {
			unexpectedFinding(diags, f)
		}
	}
}
