package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// NewVMPVRDMANICListResource lists PVRDMA adapters for
// vspherehpc_vm_pvrdma_nic.
func NewVMPVRDMANICListResource() list.ListResource {
	return &listResource{typeName: "_vm_pvrdma_nic", what: "the PVRDMA adapters of VMs", list: listPVRDMANICs,
		adopts: " `mac_address` is left out of the results: an adopted adapter keeps the MAC it has, " +
			"and a MAC vCenter generated is never written into configuration as if chosen."}
}

// listPVRDMANICs lists adapters with their MAC address left to vCenter: an
// adapter keeps the one it has, and a generated MAC is never written into
// configuration as if an administrator chose it.
func listPVRDMANICs(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, _ string) ([]listed, error) {
	nics, unreadable, err := c.ListPVRDMANICs(ctx, scope)
	if err != nil {
		return nil, err
	}
	out := leftOutVMs(unreadable, "The PVRDMA adapters")
	for _, nic := range nics {
		uuid := strings.ToLower(nic.VM.ID)
		m := vmPVRDMANICModel{VirtualMachineID: types.StringValue(uuid), ReserveAllMemory: types.BoolNull(), PowerOffAllowed: types.BoolNull()}
		nicToModel(nic, &m)
		m.MACAddress = types.StringNull()
		out = append(out, listedAdapter(nic.VM, nic.Key, nic.MAC, m))
	}
	return out, nil
}

// leftOutVMs warns of the VMs a VM list could not read, what says what of
// them is not listed.
func leftOutVMs(vms []vsphere.LeftOutVM, what string) []listed {
	var out []listed
	for _, vm := range vms {
		out = append(out, leftOutOf("Virtual machine "+vm.VM.Name, what+" of virtual machine "+vm.VM.Name+" are not listed: "+vm.Why))
	}
	return out
}

// listedAdapter is a VM's network adapter as a list result: named by its
// VM and MAC, identified by the VM's UUID and the device key.
func listedAdapter(vm vsphere.VMRef, key int32, mac string, model any) listed {
	return listed{
		display:  vm.Name + " " + mac,
		identity: vmDeviceIdentityModel{VirtualMachineID: types.StringValue(strings.ToLower(vm.ID)), DeviceKey: types.Int64Value(int64(key))},
		resource: model,
	}
}
