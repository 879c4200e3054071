package vsphere

import (
	"slices"
	"strings"
)

// Plan-time rules live in this package as planners (PlanDVS,
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
// physical functions turned to SR-IOV; and the hosts (by id) the plan
// reboots to make such changes active. The provider gives it to the
// planners of the VMs that use such devices; this package keeps no memory
// of plans.
type PlannedHostDevices struct {
	Passthrough, SRIOV map[string]bool
	Rebooting          map[string]bool
	// VFs are the virtual functions a host resource of the plan gives a
	// physical function, by HostDeviceKey: what its adapters count on.
	VFs map[string]int
	// Graphics are the hosts, by id, whose GPUs a host graphics resource of
	// the plan sets to Shared Direct, driven so once its apply ends (the
	// host's graphics restarted): their vGPU profiles are known only then.
	Graphics map[string]bool
	// LeavingSharedDirect are the GPUs (PCI ids, by host id) a host
	// graphics resource of the plan takes out of Shared Direct, driven so
	// once the same apply's reboot restarts the host's graphics: the vGPU
	// profiles only they offer go with them.
	LeavingSharedDirect map[string][]string
	// Labels are the hardware labels host resources of the plan give
	// devices, by HostDeviceKey ("" for none): a pool counts them.
	Labels map[string]string
}

// PlannedVGPUs is a VM (its host, managed object id and name) and the vGPU
// profiles a VM resource of the plan gives it.
type PlannedVGPUs struct {
	HostID, MOID, Name string
	Profiles           []string
}

// VMOnHost is where a planned VM change runs, for the provider to set it
// beside the host reboots of the same plan: maintenance mode moves no
// running VM that has passthrough or SR-IOV devices, and a VM's change fails
// while its host is in maintenance mode or rebooting.
type VMOnHost struct {
	VM          string // "name (id as given)"
	HostID      string // "" for a VM without a host
	Running     bool   // powered on now: a change that needs it off powers it back on
	Passthrough bool   // it has DirectPath I/O or SR-IOV devices once changed
}

// HostDeviceKey is the key of a host's device in PlannedHostDevices.
func HostDeviceKey(hostID, pciID string) string { return hostID + " " + strings.ToLower(pciID) }

// Leaving is what resources of the same plan take away from VMs before a
// switch or host resource they depend on is destroyed (Terraform destroys
// dependents first, and plans their destroy first too). The provider gives
// it to the planners of those destroys, so they refuse only uses that stay.
type Leaving []VMUse

// VMUse is one use a VM makes of a switch or a host's devices.
type VMUse struct {
	VM               string // UUID or managed object id, as the resource names it
	PortGroupID      string // an adapter on this port group
	PhysicalFunction string // an SR-IOV adapter of this physical function
	Passthrough      bool   // all the VM's passthrough devices
}

func (l Leaving) adapter(vm VMRef, portGroupID string) bool {
	return slices.ContainsFunc(l, func(u VMUse) bool { return vm.Is(u.VM) && u.PortGroupID == portGroupID })
}

func (l Leaving) sriovAdapter(vm VMRef, pf string) bool {
	return slices.ContainsFunc(l, func(u VMUse) bool { return vm.Is(u.VM) && strings.EqualFold(u.PhysicalFunction, pf) })
}

func (l Leaving) passthrough(vm VMRef) bool {
	return slices.ContainsFunc(l, func(u VMUse) bool { return vm.Is(u.VM) && u.Passthrough })
}

// staying lists the VMs of refs whose use does not leave.
func staying(refs []VMRef, leaves func(VMRef) bool) []VMRef {
	var out []VMRef
	for _, r := range refs {
		if !leaves(r) {
			out = append(out, r)
		}
	}
	return out
}

// What each planner can find: the provider words every one of them, and its
// tests feed each list to the wording (TestFindingsListed checks that every
// finding type of this package is in a list).
var (
	// DVSFindings: PlanDVS and PlanDVSDelete.
	DVSFindings = []Finding{VersionNotOffered{}, DowngradeRefused{}, NameTaken{}, SwitchInUse{}, HostNotChecked{},
		NICNotOnHost{}, NICInUse{}, NICWithoutRDMA{}, NICLinkDown{}, HostTooOld{}, HostInUse{}, HostInOtherDatacenter{}}
	// HostPVRDMAFindings: PlanHostPVRDMA.
	HostPVRDMAFindings = []Finding{NoSuchVmknic{}}
	// PassthroughFindings: PlanHostPassthrough.
	PassthroughFindings = []Finding{DeviceNotOnHost{}, DeviceNotCapable{}, DeviceUsedByHost{}, NoDeviceMatches{},
		DeviceUsedByVMs{}, DeviceServesVFs{}, DeviceSharedAsVGPUs{}}
	// HostSRIOVFindings: PlanHostSRIOV and PlanSRIOVRestore.
	HostSRIOVFindings = []Finding{DeviceNotOnHost{}, NotSRIOVCapable{}, TooManyVFs{}, PassedThroughWhole{}, VFsInUse{}}
	// HostGraphicsFindings: PlanHostGraphics.
	HostGraphicsFindings = []Finding{GraphicsDeviceNotGPU{}, GraphicsDevicePassedThrough{}}
	// PowerFindings: PlanPower, part of every VM planner's.
	PowerFindings = []Finding{&PowerOffNeeded{}, &VMSuspended{}}
	// PowerActionFindings: PlanVMPowerAction.
	PowerActionFindings = []Finding{&NotRestarted{}, &NotShutDownSuspended{}}
	// GPUMMIOFindings: PlanGPUMMIO and PlanMMIOSize, beside PowerFindings.
	GPUMMIOFindings = []Finding{NoDynamicGPU{}, PoolTooSmall{}, PoolOnOtherHost{}, TooFewGPUs{}, GPUNotActive{}, GPUInUse{}, GPUNotOnHost{},
		VGPUProfileNotOffered{}, VGPUProfileLeavesHost{}, TooManyVGPUs{}, VGPUsMixed{}, VGPUsDoNotFit{},
		DeviceNotOnVMHost{}, DeviceNotActive{}, DeviceInUse{}, DeviceIsGPU{}, FirmwareChangeRefused{},
		MMIOSizeUnknown{}, NothingToSize{}, MMIOSizeImpossible{}, MMIONotPowerOfTwo{}, MMIOTooSmall{}, GPUFarFromCard{},
		NUMANodeNotOnHost{}, NUMAAffinityMissesDevice{}}
	// PVRDMANICFindings: PlanPVRDMANIC, beside PowerFindings.
	PVRDMANICFindings = []Finding{HardwareTooOld{}, ProtocolNotOffered{}, NoProtocolChoice{}, StandardNetwork{},
		HostsNotOnSwitch{}, PVRDMAFirstAdapter{}, PVRDMASharedNetwork{}, MACInUse{}}
	// SRIOVNICFindings: PlanSRIOVNIC, beside PowerFindings.
	SRIOVNICFindings = []Finding{HardwareTooOld{}, StandardNetwork{}, DeviceNotOnHost{}, NotSRIOVCapable{}, PFNotNIC{},
		SRIOVNotActive{}, PFNotUplink{}, NoSRIOVPool{}, VMHostNotOnSwitch{}, MACInUse{}}
)
