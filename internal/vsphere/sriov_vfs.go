package vsphere

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vmware/govmomi/vim25/types"
)

// Which virtual functions belong to which physical function. vSphere's API
// links no VF to its PF: HostSriovInfo counts a PF's VFs, and the VFs are
// plain entries of hardware.pciDevice. The PCIe SR-IOV capability places a
// PF's VFs at its routing id + First VF Offset + k × VF Stride (SR-IOV spec
// 3.3.10-11; Linux drivers/pci/iov.c), so a PF's VFs follow it in PCI order,
// and the VFs of a card's PFs follow each other in PF order: the offsets are
// chosen so the ranges do not overlap. Offset and stride are not in the API,
// so the VFs are read from that order: per vendor, the PFs in PCI order each
// take the next numVirtualFunction of the vendor's VF-like functions (same
// vendor, a device id no PF of the vendor has, not an SR-IOV function itself)
// that lie after them. When the count of such functions is not exactly the
// sum of the PFs' VFs the order is ambiguous, and no PF of that vendor gets
// VF ids rather than wrong ones.

// virtualFunctions maps each SR-IOV physical function with VFs present to
// its VFs' PCI ids, VF 0 first.
func virtualFunctions(devices []types.HostPciDevice, sriov map[string]*types.HostSriovInfo) map[string][]string {
	byVendor := map[int16][]types.HostPciDevice{}
	for _, d := range devices {
		byVendor[d.VendorId] = append(byVendor[d.VendorId], d)
	}
	out := map[string][]string{}
	for _, devs := range byVendor {
		slices.SortFunc(devs, func(a, b types.HostPciDevice) int { return strings.Compare(routingKey(a.Id), routingKey(b.Id)) })
		pfDeviceIDs := map[int16]bool{}
		var pfs []types.HostPciDevice
		want := 0
		for _, d := range devs {
			if sr, ok := sriov[d.Id]; ok {
				pfDeviceIDs[d.DeviceId] = true
				if sr.NumVirtualFunction > 0 {
					pfs = append(pfs, d)
					want += int(sr.NumVirtualFunction)
				}
			}
		}
		if len(pfs) == 0 {
			continue
		}
		var vfs []string
		for _, d := range devs {
			if _, pf := sriov[d.Id]; !pf && !pfDeviceIDs[d.DeviceId] {
				vfs = append(vfs, d.Id)
			}
		}
		if len(vfs) != want {
			continue
		}
		if assigned, ok := splitVFs(pfs, vfs, sriov); ok {
			maps.Copy(out, assigned)
		}
	}
	return out
}

// splitVFs gives each PF, in PCI order, the next of its VFs that follow it;
// false when some PF finds too few.
func splitVFs(pfs []types.HostPciDevice, vfs []string, sriov map[string]*types.HostSriovInfo) (map[string][]string, bool) {
	out := map[string][]string{}
	next := 0
	for _, pf := range pfs {
		n := int(sriov[pf.Id].NumVirtualFunction)
		for next < len(vfs) && routingKey(vfs[next]) < routingKey(pf.Id) {
			next++
		}
		if next+n > len(vfs) {
			return nil, false
		}
		out[pf.Id] = vfs[next : next+n]
		next += n
	}
	return out, true
}

// routingKey orders PCI ids ("0000:d8:00.2": segment, bus, slot, function)
// by routing id: the id with fixed-width lower-case fields. An id of another
// form sorts as itself.
func routingKey(id string) string {
	var seg, bus, slot, fn uint
	if n, err := fmt.Sscanf(id, "%x:%x:%x.%x", &seg, &bus, &slot, &fn); err != nil || n != 4 {
		return id
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", seg, bus, slot, fn)
}
