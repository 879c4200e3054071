package vcsimlab

import (
	"fmt"

	"github.com/vmware/govmomi/vim25/types"
)

// MAC addresses of new network adapters, as vCenter assigns them: "a MAC
// address has the format 00:50:56:XX:YY:ZZ where 00:50:56 represents the
// VMware OUI, XX is calculated as (128+ vCenter Server ID), and YY and ZZ
// are random two-digit hexadecimal numbers", in "the range 00:50:56:80:YY:ZZ
// - 00:50:56:BF:YY:ZZ" (vSphere Networking, "MAC Address Assignment from
// vCenter Server", VMware OUI allocation). vcsim instead generates them as a
// standalone ESXi host does (00:0C:29 and the end of the VM's UUID,
// simulator/virtual_machine.go generateMAC). The lab's vCenter has server
// ID labVCenterID and picks YY:ZZ in order rather than at random, so a run
// is repeatable. The range is the lab vCenter's alone (static addresses
// must be 00:50:56:00-3F, vSphere Networking, "Assign a Static MAC
// Address"), so the order keeps its addresses unique, without looking at
// other VMs, whose locks a reconfigure must not take.

// labVCenterID is the lab vCenter's server ID (vCenter's instance.id, 0-63).
const labVCenterID = 7

// assignMACs gives each adapter changes add without a MAC, and not asking
// for a manual one, the next address of the lab vCenter's range.
func (x *extension) assignMACs(changes []types.BaseVirtualDeviceConfigSpec) {
	for _, change := range changes {
		if change == nil {
			continue
		}
		ds := change.GetVirtualDeviceConfigSpec()
		card, ok := ds.Device.(types.BaseVirtualEthernetCard)
		if !ok || ds.Operation != types.VirtualDeviceConfigSpecOperationAdd {
			continue
		}
		e := card.GetVirtualEthernetCard()
		if e.MacAddress != "" || e.AddressType == string(types.VirtualEthernetCardMacTypeManual) {
			continue
		}
		x.mu.Lock()
		x.nextMAC++
		e.MacAddress = fmt.Sprintf("00:50:56:%02x:%02x:%02x", 0x80+labVCenterID, byte(x.nextMAC>>8), byte(x.nextMAC))
		x.mu.Unlock()
	}
}
