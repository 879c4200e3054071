package vsphere

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Host is an ESXi host as the HPC resources need it: its NICs, vmknics and
// passthrough GPUs.
type Host struct {
	ID              string // managed object id, e.g. "host-12"
	Name            string
	ClusterID       string // empty for a standalone host
	ClusterName     string
	ConnectionState string
	InMaintenance   bool
	PhysicalNICs    []PhysicalNIC
	VMKernelNICs    []VMKernelNIC
	GPUs            []GPU
	PCIDevices      []PassthroughDevice // every device the host reports a passthrough state for
	// AppliesWithoutReboot: passthrough and SR-IOV changes take effect at
	// once (capability.deviceRebindWithoutRebootSupported); otherwise at
	// the next reboot.
	AppliesWithoutReboot bool
	Graphics             HostGraphics
	VGPUProfiles         []VGPUProfile // the vGPU types the host offers
	topology             pciTopology
}

// PhysicalNIC is one vmnic.
type PhysicalNIC struct {
	Name       string // vmnic4
	MAC        string
	PCIID      string
	Driver     string
	SpeedMbps  int64 // 0 when the link is down
	LinkUp     bool
	RDMADevice string // vmrdma0, empty when the NIC has no RDMA function
	RoCEv1     bool
	RoCEv2     bool
	// Switch is the name of the standard or distributed switch that uses the
	// NIC as an uplink, empty when none does; SwitchUUID is set for a
	// distributed switch.
	Switch     string
	SwitchUUID string
}

// VMKernelNIC is one vmknic.
type VMKernelNIC struct {
	Name       string // vmk0
	MTU        int64
	IPAddress  string
	MAC        string
	PortGroup  string // standard port group name, empty on a distributed switch
	SwitchUUID string // distributed switch UUID, empty on a standard switch
	Netstack   string
}

// GPU is a display-class PCI device that the host can pass through or reports
// as a graphics device, and what the host says about using it.
type GPU struct {
	PCIID              string // 0000:3b:00.0
	VendorID           string // four lower-case hex digits, e.g. "10de"
	DeviceID           string
	VendorName         string
	DeviceName         string
	MemoryGB           float64 // framebuffer size; 0 when the host does not report it
	PassthroughCapable bool
	PassthroughEnabled bool
	PassthroughActive  bool
	// HardwareLabel is the device's hardware label (API 7.0.2.0), which a
	// VM's Dynamic DirectPath device may ask for; "" for none.
	HardwareLabel string
	// NUMANode is the NUMA node the host lists the GPU on (API 6.7), -1
	// when it lists none; PCIeSwitch is the upstream port of the PCIe
	// switch it is under, "" when none or unknown (see topology.go).
	NUMANode   int
	PCIeSwitch string
	// GraphicsType is how the host drives the GPU now: "basic" (no host
	// driver), "shared", "direct" (passthrough) or "sharedDirect" (vGPU);
	// empty when the host does not list it as a graphics device.
	GraphicsType string
	// VGPUMode is how the GPU places vGPUs (HostGraphicsInfo.vgpuMode, API
	// 8.0.3): "sameSize", "mixedSize", "multiInstanceGpu", or empty.
	VGPUMode string
	// ConfiguredGraphicsType is the graphics type the host's configuration
	// gives it ("shared" or "sharedDirect"), which GraphicsType follows
	// when the host's graphics restart; empty with no configuration.
	ConfiguredGraphicsType string
	VMs                    []VMRef // VMs on this host configured with the device
	VGPUs                  []VGPUUser
}

// ErrHostDisconnected is the Cause of the error for a host vCenter returns
// no configuration or hardware for: the vSphere API reference, HostSystem,
// config and hardware, "might not be available for a disconnected host".
// Its devices and settings are unknown then, not gone.
var ErrHostDisconnected = errors.New("host has no configuration")

// hostDisconnected is the error for a host read with no configuration or
// hardware.
func hostDisconnected(op string, h *mo.HostSystem) error {
	state := string(h.Runtime.ConnectionState)
	if state == "" {
		state = "not read"
	}
	return &Error{Op: op, Kind: ErrInvalidState, Object: ObjectHost, ID: h.Self.Value, Cause: ErrHostDisconnected, Message: fmt.Sprintf(
		"vCenter returns no configuration for host %s (connection state: %s). Reconnect the host in vCenter "+
			"(right-click it > Connection > Connect), then run Terraform again", h.Name, state)}
}

var hostProps = []string{
	"name", "parent", "runtime.connectionState", "runtime.inMaintenanceMode", "runtime.bootTime",
	"config.network.pnic", "config.network.vnic", "config.network.vswitch",
	"config.network.proxySwitch", "config.network.rdmaDevice",
	"config.pciPassthruInfo", "config.graphicsInfo", "hardware.pciDevice", "hardware.numaInfo",
	"capability.deviceRebindWithoutRebootSupported",
	"config.graphicsConfig", "config.sharedPassthruGpuTypes", "config.sharedGpuCapabilities",
}

// Host reads a host by managed object id in one property-collector round
// trip: the host, its cluster's name and the VMs registered on it. It
// reports what is there (a data source's read): the command's prefetch of
// every host may answer it.
func (c *Client) Host(ctx context.Context, id string) (*Host, error) {
	h, cluster, vms, err := c.readHost(ctx, "reading host "+id, id, refresh)
	if err != nil {
		return nil, err
	}
	return hostFromMO(h, cluster, vms), nil
}

// readHost reads a host, its cluster and the VMs registered on it in one
// property-collector round trip; a refresh read may be answered from the
// command's prefetch of every host (see prefetch.go).
func (c *Client) readHost(ctx context.Context, op, id string, f freshness) (*mo.HostSystem, *mo.ManagedEntity, []mo.VirtualMachine, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	host := types.ManagedObjectReference{Type: "HostSystem", Value: id}
	if prefetchMayAnswer(ctx, f) {
		if h, cluster, vms, ok := c.prefetchedHost(ctx, vc, host); ok {
			return h, cluster, vms, nil
		}
	}
	objs, err := c.readShared(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: host, SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "HostSystem", Path: "parent"},
			&types.TraversalSpec{Type: "HostSystem", Path: "vm"},
		}}},
		PropSet: []types.PropertySpec{
			{Type: "HostSystem", PathSet: append(slices.Clone(hostProps), "vm")},
			{Type: "ComputeResource", PathSet: []string{"name"}},
			{Type: "VirtualMachine", PathSet: hostVMProps},
		},
	})
	if errors.Is(translate(op, err), ErrNotFound) {
		return nil, nil, nil, c.notFoundError(ctx, vc, op, ObjectHost, id)
	}
	if err != nil {
		return nil, nil, nil, translate(op, err)
	}
	// The call may carry other reads' objects: take the host's own.
	oc, ok := objs[host]
	if !ok {
		return nil, nil, nil, c.notFoundError(ctx, vc, op, ObjectHost, id)
	}
	var h mo.HostSystem
	if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &h); err != nil {
		return nil, nil, nil, translate(op, err)
	}
	var cluster *mo.ManagedEntity
	if h.Parent != nil && h.Parent.Type == "ClusterComputeResource" {
		if oc, ok := objs[*h.Parent]; ok {
			var cr mo.ClusterComputeResource
			if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &cr); err == nil {
				cluster = &cr.ManagedEntity
			}
		}
	}
	var vms []mo.VirtualMachine
	for _, ref := range h.Vm {
		if oc, ok := objs[ref]; ok {
			var vm mo.VirtualMachine
			if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &vm); err == nil {
				vms = append(vms, vm)
			}
		}
	}
	return &h, cluster, vms, nil
}

// hostVMProps are what a host read takes of the VMs registered on it.
var hostVMProps = []string{"name", "runtime.powerState", "config.uuid", "config.hardware.device"}

// prefetchedHost is readHost answered from the command's prefetch of every
// host with its cluster (see prefetch.go) and from its prefetch of every
// VM, the one every VM read of the refresh shares, the two made at once;
// false when the host or one of its VMs is not there, and it is read from
// vCenter.
func (c *Client) prefetchedHost(
	ctx context.Context,
	vc *vim25.Client,
	host types.ManagedObjectReference,
) (*mo.HostSystem, *mo.ManagedEntity, []mo.VirtualMachine, bool) {
	hosts := c.hostsPrefetch(ctx, vc)
	allVMs := c.kindPrefetch(ctx, vc, "VirtualMachine", hostVMProps)
	if !hosts.wait(ctx) || !allVMs.wait(ctx) {
		return nil, nil, nil, false
	}
	var h mo.HostSystem
	if !hosts.object(host, &h) {
		return nil, nil, nil, false
	}
	var cluster *mo.ManagedEntity
	if h.Parent != nil && h.Parent.Type == "ClusterComputeResource" {
		var cr mo.ClusterComputeResource
		if !hosts.object(*h.Parent, &cr) {
			return nil, nil, nil, false
		}
		cluster = &cr.ManagedEntity
	}
	vms := make([]mo.VirtualMachine, 0, len(h.Vm))
	for _, ref := range h.Vm {
		var vm mo.VirtualMachine
		if !allVMs.object(ref, &vm) { // registered between the two calls
			return nil, nil, nil, false
		}
		vms = append(vms, vm)
	}
	return &h, cluster, vms, true
}

// HostByName finds a host by name within a datacenter.
func (c *Client) HostByName(ctx context.Context, datacenterID, name string) (*Host, error) {
	op := fmt.Sprintf("finding host %q in datacenter %s", name, datacenterID)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	refs, err := c.byName(ctx, vc, datacenterRef(datacenterID), "HostSystem", name)
	if err != nil {
		return nil, c.datacenterError(ctx, vc, op, datacenterID, err)
	}
	switch len(refs) {
	case 0:
		return nil, notFound(op, "datacenter %s has no host called %q; names are as vCenter shows them (often the FQDN or IP address)", datacenterID, name)
	case 1:
		return c.Host(ctx, refs[0].Value)
	default:
		return nil, &Error{
			Op:      op,
			Kind:    ErrAmbiguous,
			Message: fmt.Sprintf("%d hosts are called %q (%s): use the host's id instead", len(refs), name, refValues(refs)),
		}
	}
}

// folderTreeWith is folderTree that also applies extra selections to each
// child entity (e.g. from a cluster on to its hosts).
func folderTreeWith(extra ...types.BaseSelectionSpec) *types.TraversalSpec {
	ts := folderTree()
	ts.SelectSet = append(ts.SelectSet, extra...)
	return ts
}

func hostFromMO(h *mo.HostSystem, cluster *mo.ManagedEntity, vms []mo.VirtualMachine) *Host {
	out := &Host{
		ID:              h.Self.Value,
		Name:            h.Name,
		ConnectionState: string(h.Runtime.ConnectionState),
		InMaintenance:   h.Runtime.InMaintenanceMode,
	}
	if cluster != nil {
		out.ClusterID, out.ClusterName = cluster.Self.Value, cluster.Name
	}
	if h.Config != nil && h.Config.Network != nil {
		out.PhysicalNICs = physicalNICs(h.Config.Network)
		out.VMKernelNICs = vmkernelNICs(h.Config.Network.Vnic)
	}
	out.topology = topologyFromMO(h.Hardware)
	out.GPUs = gpus(h, vms, out.topology)
	out.PCIDevices = hostPassthroughFromMO(h, vms, out.topology).Devices
	out.Graphics, out.VGPUProfiles = hostGraphicsFromMO(h), vgpuProfilesFromMO(h)
	vgpuAvailability(out)
	if c := h.Capability; c != nil && c.DeviceRebindWithoutRebootSupported != nil {
		out.AppliesWithoutReboot = *c.DeviceRebindWithoutRebootSupported
	}
	return out
}

// Actionable reports whether d is a device of h a configuration can act on:
// one that can be or is passed through, an SR-IOV physical or virtual
// function, a GPU, a physical NIC or a device a VM is configured with. The
// rest (bridges, root ports, controllers that can never be passed through)
// are most of what a real host reports: a hundred devices or more.
func (h *Host) Actionable(d PassthroughDevice) bool {
	return d.Capable || d.Enabled || d.SRIOV != nil && d.SRIOV.Capable || d.PhysicalFunction != "" || d.NIC != "" ||
		len(d.VMs) > 0 || slices.ContainsFunc(h.GPUs, func(g GPU) bool { return g.PCIID == d.PCIID })
}

func physicalNICs(n *types.HostNetworkInfo) []PhysicalNIC {
	claimedBy := map[string][2]string{} // pnic key -> switch name, DVS uuid
	for _, vs := range n.Vswitch {
		for _, key := range vs.Pnic {
			claimedBy[key] = [2]string{vs.Name, ""}
		}
	}
	for _, ps := range n.ProxySwitch {
		for _, key := range ps.Pnic {
			claimedBy[key] = [2]string{EntityName(ps.DvsName), ps.DvsUuid}
		}
	}
	rdma := map[string]types.HostRdmaDevice{} // RDMA device key -> device
	for _, d := range n.RdmaDevice {
		rdma[d.Key] = d
	}
	nics := make([]PhysicalNIC, 0, len(n.Pnic))
	for _, p := range n.Pnic {
		nic := PhysicalNIC{Name: p.Device, MAC: p.Mac, PCIID: p.Pci, Driver: p.Driver}
		if p.LinkSpeed != nil {
			nic.LinkUp, nic.SpeedMbps = true, int64(p.LinkSpeed.SpeedMb)
		}
		if d, ok := rdma[p.RdmaDevice]; ok {
			nic.RDMADevice = d.Device
			nic.RoCEv1, nic.RoCEv2 = d.Capability.RoceV1Capable, d.Capability.RoceV2Capable
		}
		sw := claimedBy[p.Key]
		nic.Switch, nic.SwitchUUID = sw[0], sw[1]
		nics = append(nics, nic)
	}
	sort.Slice(nics, func(i, j int) bool { return lessDeviceName(nics[i].Name, nics[j].Name) })
	return nics
}

func vmkernelNICs(vnics []types.HostVirtualNic) []VMKernelNIC {
	out := make([]VMKernelNIC, 0, len(vnics))
	for _, v := range vnics {
		nic := VMKernelNIC{Name: v.Device, MTU: int64(v.Spec.Mtu), MAC: v.Spec.Mac, PortGroup: v.Portgroup, Netstack: v.Spec.NetStackInstanceKey}
		if v.Spec.Ip != nil {
			nic.IPAddress = v.Spec.Ip.IpAddress
		}
		if v.Spec.DistributedVirtualPort != nil {
			nic.SwitchUUID = v.Spec.DistributedVirtualPort.SwitchUuid
		}
		out = append(out, nic)
	}
	sort.Slice(out, func(i, j int) bool { return lessDeviceName(out[i].Name, out[j].Name) })
	return out
}

// pciClassDisplay is the PCI base class of display controllers (VGA and 3D).
const pciClassDisplay = 0x03

func gpus(h *mo.HostSystem, vms []mo.VirtualMachine, t pciTopology) []GPU {
	passthru := map[string]*types.HostPciPassthruInfo{}
	var graphics []types.HostGraphicsInfo
	if h.Config != nil {
		for _, p := range h.Config.PciPassthruInfo {
			if info := p.GetHostPciPassthruInfo(); info != nil {
				passthru[info.Id] = info
			}
		}
		graphics = h.Config.GraphicsInfo
	}
	memoryKB, graphicsType, vgpuMode := map[string]int64{}, map[string]string{}, map[string]string{}
	for _, g := range graphics {
		memoryKB[g.PciId], graphicsType[g.PciId], vgpuMode[g.PciId] = g.MemorySizeInKB, g.GraphicsType, g.VgpuMode
	}
	users := pciUsers(vms)
	vgpuUsers := vgpuUsersByGPU(graphics, vms)
	var out []GPU
	if h.Hardware == nil {
		return out
	}
	for _, d := range h.Hardware.PciDevice {
		// Onboard VGA (a BMC's, or ESXi's own console) is display class too,
		// but neither passthrough-capable nor a graphics device of the host.
		p := passthru[d.Id]
		_, graphicsDevice := memoryKB[d.Id]
		usable := graphicsDevice || (p != nil && p.PassthruCapable)
		if uint16(d.ClassId)>>8 != pciClassDisplay || !usable {
			continue
		}
		g := GPU{
			PCIID: d.Id, VendorID: HexID(d.VendorId), DeviceID: HexID(d.DeviceId),
			VendorName: d.VendorName, DeviceName: d.DeviceName,
			MemoryGB:     float64(memoryKB[d.Id]) / (1024 * 1024),
			GraphicsType: graphicsType[d.Id], VGPUMode: vgpuMode[d.Id], ConfiguredGraphicsType: configuredGraphicsType(h, d.Id),
			VMs: users[d.Id], VGPUs: vgpuUsers[d.Id], NUMANode: t.numaNode(d.Id), PCIeSwitch: t.pcieSwitch(d.Id),
		}
		if p != nil {
			g.PassthroughCapable, g.PassthroughEnabled, g.PassthroughActive = p.PassthruCapable, p.PassthruEnabled, p.PassthruActive
			g.HardwareLabel = p.HardwareLabel
		}
		out = append(out, g)
	}
	return out
}

// pciUsers maps a host PCI id to the VMs configured to pass it through:
// static backings name the id; dynamic ones and SR-IOV adapters once
// vSphere assigned a device.
func pciUsers(vms []mo.VirtualMachine) map[string][]VMRef {
	users := passthroughUsers(vms)
	for id, refs := range sriovVFUsers(vms) {
		users[id] = append(users[id], refs...)
		sort.Slice(users[id], func(i, j int) bool { return users[id][i].Name < users[id][j].Name })
	}
	return users
}

// passthroughUsers maps a host PCI id to the VMs with it as a PCI
// passthrough device: a static backing names it, a dynamic one once vSphere
// assigned it.
func passthroughUsers(vms []mo.VirtualMachine) map[string][]VMRef {
	users := map[string][]VMRef{}
	eachDevice(vms, func(ref VMRef, dev types.BaseVirtualDevice) {
		pt, ok := dev.(*types.VirtualPCIPassthrough)
		if !ok || pt.Backing == nil {
			return
		}
		switch b := pt.Backing.(type) {
		case *types.VirtualPCIPassthroughDeviceBackingInfo:
			users[b.Id] = append(users[b.Id], ref)
		case *types.VirtualPCIPassthroughDynamicBackingInfo:
			if b.AssignedId != "" {
				users[b.AssignedId] = append(users[b.AssignedId], ref)
			}
		}
	})
	return users
}

// sriovVFUsers maps a virtual function's PCI id to the VMs whose SR-IOV
// adapters vSphere gave it at power on.
func sriovVFUsers(vms []mo.VirtualMachine) map[string][]VMRef {
	users := map[string][]VMRef{}
	eachDevice(vms, func(ref VMRef, dev types.BaseVirtualDevice) {
		if card, ok := dev.(*types.VirtualSriovEthernetCard); ok {
			if sb := card.SriovBacking; sb != nil && sb.VirtualFunctionBacking != nil && sb.VirtualFunctionBacking.Id != "" {
				users[sb.VirtualFunctionBacking.Id] = append(users[sb.VirtualFunctionBacking.Id], ref)
			}
		}
	})
	return users
}

// eachDevice calls f with every device of every VM, VMs by name.
func eachDevice(vms []mo.VirtualMachine, f func(VMRef, types.BaseVirtualDevice)) {
	sort.Slice(vms, func(i, j int) bool { return vms[i].Name < vms[j].Name })
	for i := range vms {
		if vms[i].Config == nil {
			continue
		}
		ref := vmRefOf(&vms[i])
		for _, dev := range vms[i].Config.Hardware.Device {
			f(ref, dev)
		}
	}
}

// sriovAdapterUsers maps a physical function's PCI id to the VMs whose
// SR-IOV network adapters name it, given or chosen automatically ("
// Automatic-<PCI id>"), once per adapter.
func sriovAdapterUsers(vms []mo.VirtualMachine) map[string][]VMRef {
	users := map[string][]VMRef{}
	eachDevice(vms, func(ref VMRef, dev types.BaseVirtualDevice) {
		if card, ok := dev.(*types.VirtualSriovEthernetCard); ok && card.SriovBacking != nil && card.SriovBacking.PhysicalFunctionBacking != nil {
			pf := strings.TrimPrefix(card.SriovBacking.PhysicalFunctionBacking.Id, automaticPrefix)
			users[pf] = append(users[pf], ref)
		}
	})
	return users
}

// HexID formats a PCI vendor or device id the way lspci and vSphere's UI
// show it. vSphere reports ids as signed 16-bit numbers, so ids above 0x7fff
// (NVIDIA is 0x10de, Intel 0x8086) must be read as unsigned.
func HexID(id int16) string {
	return fmt.Sprintf("%04x", uint16(id))
}

// lessDeviceName orders vmnic2 before vmnic10.
func lessDeviceName(a, b string) bool {
	pa, na := splitDeviceName(a)
	pb, nb := splitDeviceName(b)
	if pa != pb {
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitDeviceName(s string) (string, int) {
	i := strings.LastIndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) + 1
	n := 0
	for _, r := range s[i:] {
		n = n*10 + int(r-'0')
	}
	return s[:i], n
}

// siblingHosts lists the hosts of a host's cluster (or of its standalone
// compute resource), the host itself included, by name, in a shared read.
func (c *Client) siblingHosts(ctx context.Context, vc *vim25.Client, host types.ManagedObjectReference) ([]mo.HostSystem, error) {
	objs, err := c.readShared(ctx, vc, types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: host, SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "HostSystem", Path: "parent", SelectSet: []types.BaseSelectionSpec{
				&types.TraversalSpec{Type: "ComputeResource", Path: "host"},
			}},
		}}},
		PropSet: []types.PropertySpec{
			{Type: "HostSystem", PathSet: []string{"name", "parent"}},
			{Type: "ComputeResource", PathSet: []string{"host"}},
		},
	})
	if err != nil {
		return nil, err
	}
	// The call may carry other reads' objects: take this host's siblings.
	oc, ok := objs[host]
	if !ok {
		return nil, nil
	}
	var self mo.HostSystem
	if err := mo.LoadObjectContent([]types.ObjectContent{oc}, &self); err != nil || self.Parent == nil {
		return nil, err
	}
	var members []types.ManagedObjectReference
	if oc, ok := objs[*self.Parent]; ok {
		switch cr := asMO(oc).(type) {
		case mo.ClusterComputeResource:
			members = cr.Host
		case mo.ComputeResource:
			members = cr.Host
		}
	}
	var hosts []mo.HostSystem
	for _, ref := range members {
		var h mo.HostSystem
		if oc, ok := objs[ref]; ok && mo.LoadObjectContent([]types.ObjectContent{oc}, &h) == nil {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// asMO is an object's content as its mo type (mo.ClusterComputeResource,
// ...), nil when it has none.
func asMO(oc types.ObjectContent) any {
	v, err := mo.ObjectContentToType(oc)
	if err != nil {
		return nil
	}
	return v
}

// hostConfigManager is a host's configManager: the references of its
// option manager, firewall system, passthrough system and the rest. They
// do not change while the host is in the inventory, so they are read once
// per client (one Terraform command), all in one call.
func (c *Client) hostConfigManager(ctx context.Context, vc *vim25.Client, op, hostID string) (*types.HostConfigManager, error) {
	if m, ok := c.configManagers.Load(hostID); ok {
		return m.(*types.HostConfigManager), nil
	}
	var h mo.HostSystem
	if err := c.readObject(ctx, vc, types.ManagedObjectReference{Type: "HostSystem", Value: hostID}, []string{"configManager"}, &h); err != nil {
		return nil, translate(op, err)
	}
	c.configManagers.Store(hostID, &h.ConfigManager)
	return &h.ConfigManager, nil
}

// rememberConfigManager keeps a host's configManager read with other
// properties, when it was (a read without it leaves it empty).
func (c *Client) rememberConfigManager(hostID string, m *types.HostConfigManager) {
	if m.AdvancedOption != nil || m.FirewallSystem != nil || m.PciPassthruSystem != nil {
		c.configManagers.Store(hostID, m)
	}
}
