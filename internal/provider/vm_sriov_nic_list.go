package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// NewVMSRIOVNICListResource lists SR-IOV adapters for vspherehpc_vm_sriov_nic.
func NewVMSRIOVNICListResource() list.ListResource {
	return &listResource{typeName: "_vm_sriov_nic", what: "the SR-IOV adapters of VMs", list: listSRIOVNICs,
		adopts: " `mac_address` is left out of the results: an adopted adapter keeps the MAC it has, " +
			"and a MAC vCenter generated is never written into configuration as if chosen."}
}

// listSRIOVNICs lists adapters with their MAC address left to vCenter, as
// listPVRDMANICs does.
func listSRIOVNICs(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, _ string) ([]listed, error) {
	nics, unreadable, err := c.ListSRIOVNICs(ctx, scope)
	if err != nil {
		return nil, err
	}
	out := leftOutVMs(unreadable, "The SR-IOV adapters")
	for _, nic := range nics {
		uuid := strings.ToLower(nic.VM.ID)
		m := vmSRIOVNICModel{VirtualMachineID: types.StringValue(uuid), PowerOffAllowed: types.BoolNull()}
		sriovNICToModel(nic, &m)
		m.MACAddress = types.StringNull()
		out = append(out, listedAdapter(nic.VM, nic.Key, nic.MAC, m))
	}
	return out, nil
}
