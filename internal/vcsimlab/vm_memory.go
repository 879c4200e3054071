package vcsimlab

import (
	"github.com/vmware/govmomi/vim25/types"
)

// lockedReservation makes a VM whose memory reservation is locked to its
// maximum report a reservation of all its memory: "If set true, memory
// resource reservation for this virtual machine will always be equal to
// the virtual machine's memory size" (vSphere Web Services API,
// VirtualMachineConfigSpec.memoryReservationLockedToMax and
// VirtualMachineConfigInfo.memoryReservationLockedToMax). vcsim only stores
// the flag, so a VM locked to its maximum reads a reservation of 0. It
// adjusts spec, the change to a VM whose current configuration is current
// (nil for a VM being created), before vcsim applies it. vcsim replaces the
// whole allocation with the spec's, so the allocation it is given keeps the
// current shares and limit.
func lockedReservation(spec *types.VirtualMachineConfigSpec, current *types.VirtualMachineConfigInfo) {
	locked := spec.MemoryReservationLockedToMax
	memoryMB := spec.MemoryMB
	var allocation types.ResourceAllocationInfo
	if current != nil {
		if locked == nil {
			locked = current.MemoryReservationLockedToMax
		}
		if memoryMB == 0 {
			memoryMB = int64(current.Hardware.MemoryMB)
		}
		if current.MemoryAllocation != nil {
			allocation = *current.MemoryAllocation
		}
	}
	if locked == nil || !*locked || memoryMB == 0 {
		return
	}
	if a := spec.MemoryAllocation; a != nil {
		if a.Limit != nil {
			allocation.Limit = a.Limit
		}
		if a.Shares != nil {
			allocation.Shares = a.Shares
		}
		if a.ExpandableReservation != nil {
			allocation.ExpandableReservation = a.ExpandableReservation
		}
	}
	allocation.Reservation = types.NewInt64(memoryMB)
	spec.MemoryAllocation = &allocation
}
