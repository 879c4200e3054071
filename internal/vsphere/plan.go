package vsphere

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
