package vcsimlab

import (
	"fmt"

	"github.com/vmware/govmomi/vim25/types"
)

// Labels of new network adapters. vCenter labels a VM's network adapters
// "Network adapter 1", "Network adapter 2" and so on, the names the vSphere
// Client shows and scripts find adapters by (pyvmomi-community-samples,
// change_vm_vif.py: nic_label = 'Network adapter ' + nic_number). vcsim
// labels a new device with govmomi's device name before giving it a unit
// number (simulator/virtual_machine.go configureDevice), so an adapter
// added without one, as the provider adds them, was labelled
// "ethernet--7". Where vSphere puts virtual functions ("Ethernet devices of
// UnitNumber 45-36 descending are SRIOV", govmomi
// object/virtual_device_list.go, Name) the lab does not follow: vcsim's
// unit numbering (govmomi's newUnitNumber) cannot hold units past 29 on the
// PCI controller and panics, so SR-IOV adapters take the next unit after
// the other adapters, as in vcsim.

// labelAdapters labels each adapter changes add without a label after the
// adapters the VM has (devices, nil for a VM being created).
func labelAdapters(devices []types.BaseVirtualDevice, changes []types.BaseVirtualDeviceConfigSpec) {
	adapters := 0
	for _, dev := range devices {
		if _, ok := dev.(types.BaseVirtualEthernetCard); ok {
			adapters++
		}
	}
	for _, change := range changes {
		if change == nil {
			continue
		}
		ds := change.GetVirtualDeviceConfigSpec()
		if _, ok := ds.Device.(types.BaseVirtualEthernetCard); !ok || ds.Operation != types.VirtualDeviceConfigSpecOperationAdd {
			continue
		}
		adapters++
		d := ds.Device.GetVirtualDevice()
		if d.DeviceInfo == nil || d.DeviceInfo.GetDescription().Label == "" {
			summary := ""
			if d.DeviceInfo != nil {
				summary = d.DeviceInfo.GetDescription().Summary
			}
			d.DeviceInfo = &types.Description{Label: fmt.Sprintf("Network adapter %d", adapters), Summary: summary}
		}
	}
}
