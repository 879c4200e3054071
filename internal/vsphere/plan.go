package vsphere

import "strings"

// Plan-time rules live in this package as planners (PlanDVSHosts,
// PlanPVRDMANIC, PlanGPUMMIO, PlanPower): each reads what it needs from
// vCenter and returns findings, one per rule the planned change breaks or
// fact the user should hear of. A finding carries the facts a message needs,
// never its words: the provider decides how to say it, which argument it
// concerns and whether it stops the plan.

// Finding is one result of a planner.
type Finding interface {
	finding()
}

// PlannedHostDevices is what host resources of the same plan turn on, keyed
// "host-id pci-id" (PCI id in lower case): devices turned to passthrough and
// physical functions turned to SR-IOV. The provider gives it to the planners
// of the VMs that use such devices; this package keeps no memory of plans.
type PlannedHostDevices struct {
	Passthrough, SRIOV map[string]bool
}

// HostDeviceKey is the key of a host's device in PlannedHostDevices.
func HostDeviceKey(hostID, pciID string) string { return hostID + " " + strings.ToLower(pciID) }
