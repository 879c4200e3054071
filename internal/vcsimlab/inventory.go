package vcsimlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

const (
	pvrdmaOption  = "Net.PVRDMAVmknic"
	pvrdmaRuleset = "pvrdma"
	nvidia        = 0x10de
	mellanox      = 0x15b3
	maxHosts      = 200 // vmk1 addresses are 192.0.2.11 and up
)

// gpu is one GPU of every lab host.
type gpu struct {
	id      string
	bus     uint8
	device  int16
	name    string
	memKB   int64
	enabled bool // passthrough enabled (and active)
}

// gpus avoids the PCI addresses of the stock devices (bus 0x00, 0x03, 0x0b,
// 0x13) and of the RDMA NICs (bus 0xd8).
var gpus = []gpu{
	{id: "0000:3b:00.0", bus: 0x3b, device: 0x2330, name: "GH100 [H100 SXM5 80GB]", memKB: 80 << 20, enabled: true},
	{id: "0000:5e:00.0", bus: 0x5e, device: 0x2330, name: "GH100 [H100 SXM5 80GB]", memKB: 80 << 20, enabled: true},
	{id: "0000:af:00.0", bus: 0xaf, device: 0x20f1, name: "GA100 [A100 PCIe 40GB]", memKB: 40 << 20},
}

// rdmaNIC is one RDMA-capable port of every lab host.
type rdmaNIC struct {
	pnic, rdma, pci string
	function        uint8
}

var rdmaNICs = []rdmaNIC{
	{pnic: "vmnic4", rdma: "vmrdma0", pci: "0000:d8:00.0", function: 0},
	{pnic: "vmnic5", rdma: "vmrdma1", pci: "0000:d8:00.1", function: 1},
}

// internalContext returns a fresh context for changing objects outside of a
// SOAP call. Locks are shared per context, so each change needs its own.
func (l *Lab) internalContext() *simulator.Context {
	return &simulator.Context{Context: context.Background(), Map: l.model.Map()}
}

// prepareHosts gives every host of the model the lab's hardware and state.
// It runs before the server starts.
func (l *Lab) prepareHosts() error {
	reg := l.model.Map()
	var cluster *simulator.ClusterComputeResource
	for _, e := range reg.All("ClusterComputeResource") {
		if cr, ok := e.(*simulator.ClusterComputeResource); ok {
			cluster = cr
		}
	}
	if cluster == nil {
		return errors.New("vcsimlab: model has no cluster")
	}
	for i, hr := range cluster.Host {
		h, ok := reg.Get(hr).(*simulator.HostSystem)
		if !ok {
			return fmt.Errorf("vcsimlab: %s is not a host", hr)
		}
		if err := l.prepareHost(i, h); err != nil {
			return err
		}
	}
	return nil
}

func (l *Lab) prepareHost(i int, h *simulator.HostSystem) error {
	reg := l.model.Map()
	ctx := l.internalContext()
	if h.Config == nil || h.Config.Network == nil || h.Hardware == nil || h.ConfigManager.FirewallSystem == nil || h.ConfigManager.AdvancedOption == nil {
		return fmt.Errorf("vcsimlab: host %s lacks config", h.Name)
	}

	// Stock hosts share one firewall template across all hosts and all
	// simulators in the process; give each host its own copy.
	fw, ok := reg.Get(*h.ConfigManager.FirewallSystem).(*simulator.HostFirewallSystem)
	if !ok || fw.FirewallInfo == nil {
		return fmt.Errorf("vcsimlab: host %s has no firewall", h.Name)
	}
	var fwInfo types.HostFirewallInfo
	if err := clone(fw.FirewallInfo, &fwInfo); err != nil {
		return err
	}
	for j := range fwInfo.Ruleset {
		if fwInfo.Ruleset[j].Key == pvrdmaRuleset {
			fwInfo.Ruleset[j].Enabled = false
			fwInfo.Ruleset[j].AllowedHosts = &types.HostFirewallRulesetIpList{AllIp: true}
			fwInfo.Ruleset[j].UserControllable = types.NewBool(true)
			fwInfo.Ruleset[j].IpListUserConfigurable = types.NewBool(true)
		}
	}
	var fwCopy types.HostFirewallInfo
	if err := clone(&fwInfo, &fwCopy); err != nil {
		return err
	}
	ctx.WithLock(fw, func() { fw.FirewallInfo = &fwInfo })
	l.fwHost[fw.Self] = h.Self

	om, ok := reg.Get(*h.ConfigManager.AdvancedOption).(*simulator.OptionManager)
	if !ok {
		return fmt.Errorf("vcsimlab: host %s has no option manager", h.Name)
	}
	l.hostOptions[om.Self] = true
	// Through the OptionManager, which mirrors into config.option; the
	// reverse is not true.
	ctx.WithLock(om, func() {
		om.UpdateOptions(&types.UpdateOptions{ChangedValue: []types.BaseOptionValue{
			&types.OptionValue{Key: pvrdmaOption, Value: ""},
		}})
	})

	ps := newPciPassthruSystem(h)
	reg.Put(ps)

	ctx.WithLock(h, func() {
		h.Config.Firewall = &fwCopy
		addNetwork(i, h.Config.Network)
		// The hardware struct and its device slice are shared with the
		// package template and every other host.
		hw := *h.Hardware
		hw.PciDevice = append(slices.Clone(hw.PciDevice), pciDevices()...)
		h.Hardware = &hw
		h.Config.PciPassthruInfo = passthruInfo()
		h.Config.GraphicsInfo = graphicsInfo()
		psRef := ps.Self
		h.ConfigManager.PciPassthruSystem = &psRef
	})
	return nil
}

// addNetwork adds the RDMA NICs and vmk1 to a host's (already per-host)
// network config.
func addNetwork(i int, n *types.HostNetworkInfo) {
	for j, nic := range rdmaNICs {
		mac := fmt.Sprintf("b8:ce:f6:%02x:%02x:%02x", (i+1)>>8, (i+1)&0xff, 4+j)
		link := types.PhysicalNicLinkInfo{SpeedMb: 100000, Duplex: true}
		n.Pnic = append(n.Pnic, types.PhysicalNic{
			Key:                    "key-vim.host.PhysicalNic-" + nic.pnic,
			Device:                 nic.pnic,
			Pci:                    nic.pci,
			Driver:                 "nmlx5_core",
			DriverVersion:          "4.23.0.66",
			FirmwareVersion:        "22.39.1002",
			LinkSpeed:              &link,
			ValidLinkSpecification: []types.PhysicalNicLinkInfo{link},
			Spec:                   types.PhysicalNicSpec{LinkSpeed: &link},
			Mac:                    mac,
			RdmaDevice:             "key-vim.host.RdmaDevice-" + nic.rdma,
			AutoNegotiateSupported: types.NewBool(true),
		})
		n.RdmaDevice = append(n.RdmaDevice, types.HostRdmaDevice{
			Key:            "key-vim.host.RdmaDevice-" + nic.rdma,
			Device:         nic.rdma,
			Driver:         "nmlx5_rdma",
			Description:    "MT2892 Family [ConnectX-6 Dx]",
			Backing:        &types.HostRdmaDevicePnicBacking{PairedUplink: nic.pnic},
			ConnectionInfo: types.HostRdmaDeviceConnectionInfo{State: "active", Mtu: 4096, SpeedInMbps: 100000},
			Capability:     types.HostRdmaDeviceCapability{RoceV1Capable: true, RoceV2Capable: true},
		})
	}

	// vmk1 needs a port group on a switch whose MTU allows 9000; vSwitch1
	// has no uplink, leaving vmnic4/5 free for a distributed switch.
	const pg, vs = "pvrdma-vmk", "vSwitch1"
	mac := fmt.Sprintf("00:50:56:6b:%02x:%02x", (i+1)>>8, (i+1)&0xff)
	port := "key-vim.host.PortGroup.Port-50331660"
	n.Vswitch = append(n.Vswitch, types.HostVirtualSwitch{
		Name:              vs,
		Key:               "key-vim.host.VirtualSwitch-" + vs,
		NumPorts:          128,
		NumPortsAvailable: 127,
		Mtu:               9000,
		Portgroup:         []string{"key-vim.host.PortGroup-" + pg},
		Spec:              types.HostVirtualSwitchSpec{NumPorts: 128, Mtu: 9000},
	})
	n.Portgroup = append(n.Portgroup, types.HostPortGroup{
		Key:     "key-vim.host.PortGroup-" + pg,
		Port:    []types.HostPortGroupPort{{Key: port, Mac: []string{mac}, Type: "host"}},
		Vswitch: "key-vim.host.VirtualSwitch-" + vs,
		Spec:    types.HostPortGroupSpec{Name: pg, VswitchName: vs},
	})
	n.Vnic = append(n.Vnic, types.HostVirtualNic{
		Device:    "vmk1",
		Key:       "key-vim.host.VirtualNic-vmk1",
		Portgroup: pg,
		Port:      port,
		Spec: types.HostVirtualNicSpec{
			Ip: &types.HostIpConfig{
				IpAddress:  fmt.Sprintf("192.0.2.%d", 11+i),
				SubnetMask: "255.255.255.0",
			},
			Mac:                 mac,
			Portgroup:           pg,
			Mtu:                 9000,
			TsoEnabled:          types.NewBool(true),
			NetStackInstanceKey: "defaultTcpipStack",
		},
	})
}

func pciDevices() []types.HostPciDevice {
	var out []types.HostPciDevice
	for _, g := range gpus {
		out = append(out, types.HostPciDevice{
			Id:              g.id,
			ClassId:         0x0302, // 3D controller
			Bus:             g.bus,
			VendorId:        nvidia,
			SubVendorId:     nvidia,
			VendorName:      "NVIDIA Corporation",
			DeviceId:        g.device,
			SubDeviceId:     0x16c1,
			DeviceName:      g.name,
			DeviceClassName: "3D controller",
		})
	}
	for _, n := range rdmaNICs {
		out = append(out, types.HostPciDevice{
			Id:              n.pci,
			ClassId:         0x0200, // Ethernet controller
			Bus:             0xd8,
			Function:        n.function,
			VendorId:        mellanox,
			SubVendorId:     mellanox,
			VendorName:      "Mellanox Technologies",
			DeviceId:        0x101d,
			SubDeviceId:     0x0016,
			DeviceName:      "MT2892 Family [ConnectX-6 Dx]",
			DeviceClassName: "Ethernet controller",
		})
	}
	return out
}

func passthruInfo() []types.BaseHostPciPassthruInfo {
	var out []types.BaseHostPciPassthruInfo
	for _, g := range gpus {
		out = append(out, &types.HostPciPassthruInfo{
			Id:              g.id,
			PassthruCapable: true,
			PassthruEnabled: g.enabled,
			PassthruActive:  g.enabled,
		})
	}
	return out
}

// graphicsType is how the host drives a GPU: "direct" once it is set aside
// for passthrough, "basic" while no host driver has it (the API's enum).
func graphicsType(passthrough bool) string {
	if passthrough {
		return string(types.HostGraphicsInfoGraphicsTypeDirect)
	}
	return string(types.HostGraphicsInfoGraphicsTypeBasic)
}

func graphicsInfo() []types.HostGraphicsInfo {
	var out []types.HostGraphicsInfo
	for _, g := range gpus {
		out = append(out, types.HostGraphicsInfo{
			DeviceName:     g.name,
			VendorName:     "NVIDIA Corporation",
			PciId:          g.id,
			GraphicsType:   graphicsType(g.enabled),
			MemorySizeInKB: g.memKB,
		})
	}
	return out
}

// readInventory records names and ids so tests never hard-code them.
func (l *Lab) readInventory() error {
	reg := l.model.Map()
	dcs := reg.All("Datacenter")
	clusters := reg.All("ClusterComputeResource")
	if len(dcs) != 1 || len(clusters) != 1 {
		return errors.New("vcsimlab: want one datacenter and one cluster")
	}
	dc := dcs[0].Entity()
	l.dcName, l.dcID = dc.Name, dc.Self.Value
	cluster, ok := clusters[0].(*simulator.ClusterComputeResource)
	if !ok {
		return errors.New("vcsimlab: unexpected cluster type")
	}
	l.clusterName = cluster.Name
	for _, hr := range cluster.Host {
		if h, ok := reg.Get(hr).(*simulator.HostSystem); ok {
			l.hosts = append(l.hosts, entry{name: h.Name, id: hr.Value})
		}
	}
	return nil
}

// vmKind describes one VM the lab creates.
type vmKind struct {
	name      string
	version   string
	nic       bool
	installed bool
}

func vmKinds(modern int) []vmKind {
	var out []vmKind
	for i := range modern {
		out = append(out, vmKind{name: fmt.Sprintf("hpc-node-%d", i), version: "vmx-19", nic: true})
	}
	return append(out,
		vmKind{name: "bare-node", version: "vmx-19"},
		vmKind{name: "legacy-node", version: "vmx-11", nic: true},
		vmKind{name: "installed-node", version: "vmx-19", nic: true, installed: true},
	)
}

// createVMs creates the lab's VMs in parallel through the admin client:
// vcsim creates VMs slowly (file I/O and task round trips).
func (l *Lab) createVMs(ctx context.Context, modern int) error {
	c := l.client.Client
	reg := l.model.Map()
	dc, ok := reg.Get(ref("Datacenter", l.dcID)).(*simulator.Datacenter)
	if !ok {
		return errors.New("vcsimlab: datacenter not found")
	}
	folders := object.NewDatacenter(c, dc.Self)
	fs, err := folders.Folders(ctx)
	if err != nil {
		return err
	}
	var pool, network types.ManagedObjectReference
	for _, e := range reg.All("ClusterComputeResource") {
		if cr, ok := e.(*simulator.ClusterComputeResource); ok && cr.ResourcePool != nil {
			pool = *cr.ResourcePool
		}
	}
	for _, e := range reg.All("Network") {
		if e.Entity().Name == "VM Network" {
			network = e.Reference()
		}
	}
	if pool.Value == "" || network.Value == "" {
		return errors.New("vcsimlab: no resource pool or VM Network")
	}

	kinds := vmKinds(modern)
	l.vms = make([]vmEntry, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, k := range kinds {
		host := object.NewHostSystem(c, ref("HostSystem", l.hosts[i%len(l.hosts)].id))
		wg.Go(func() {
			vm, err := createVM(ctx, fs.VmFolder, object.NewResourcePool(c, pool), host, network, k)
			if err != nil {
				errs[i] = fmt.Errorf("vcsimlab: create %s: %w", k.name, err)
				return
			}
			l.vms[i] = vm
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, k := range kinds {
		l.setGuest(ref("VirtualMachine", l.vms[i].id), k.installed)
	}
	return nil
}

func createVM(ctx context.Context, folder *object.Folder, pool *object.ResourcePool, host *object.HostSystem, network types.ManagedObjectReference, k vmKind) (vmEntry, error) {
	spec := types.VirtualMachineConfigSpec{
		Name:     k.name,
		GuestId:  string(types.VirtualMachineGuestOsIdentifierUbuntu64Guest),
		Version:  k.version,
		Firmware: string(types.GuestOsDescriptorFirmwareTypeBios),
		NumCPUs:  4,
		MemoryMB: 8192,
		Files:    &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"},
	}
	var devices object.VirtualDeviceList
	scsi, err := devices.CreateSCSIController("pvscsi")
	if err != nil {
		return vmEntry{}, err
	}
	controller, ok := scsi.(types.BaseVirtualController)
	if !ok {
		return vmEntry{}, errors.New("no SCSI controller")
	}
	disk := devices.CreateDisk(controller, types.ManagedObjectReference{}, "[LocalDS_0] "+k.name+"/disk1.vmdk")
	disk.CapacityInKB = 20 << 20
	devices = append(devices, scsi, disk)
	if k.nic {
		backing := &types.VirtualEthernetCardNetworkBackingInfo{
			VirtualDeviceDeviceBackingInfo: types.VirtualDeviceDeviceBackingInfo{DeviceName: "VM Network"},
			Network:                        &network,
		}
		nic, err := devices.CreateEthernetCard("vmxnet3", backing)
		if err != nil {
			return vmEntry{}, err
		}
		devices = append(devices, nic)
	}
	if spec.DeviceChange, err = devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd); err != nil {
		return vmEntry{}, err
	}
	task, err := folder.CreateVM(ctx, spec, pool, host)
	if err != nil {
		return vmEntry{}, err
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return vmEntry{}, err
	}
	vmRef, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return vmEntry{}, errors.New("no VM reference in task result")
	}
	var vm mo.VirtualMachine
	if err := object.NewVirtualMachine(folder.Client(), vmRef).Properties(ctx, vmRef, []string{"config.uuid"}, &vm); err != nil {
		return vmEntry{}, err
	}
	if vm.Config == nil {
		return vmEntry{}, errors.New("VM has no config")
	}
	return vmEntry{entry: entry{name: k.name, id: vmRef.Value}, uuid: vm.Config.Uuid}, nil
}

// setGuest sets what vCenter reports about the guest OS: vcsim derives a
// guest family from the configured guest id even when no OS ever ran.
func (l *Lab) setGuest(vmRef types.ManagedObjectReference, installed bool) {
	ctx := l.internalContext()
	vm, ok := ctx.Map.Get(vmRef).(*simulator.VirtualMachine)
	if !ok {
		return
	}
	ctx.WithLock(vm, func() {
		g := types.GuestInfo{}
		summary := types.VirtualMachineGuestSummary{}
		if vm.Guest != nil {
			g = *vm.Guest
		}
		if installed {
			g.GuestFamily = string(types.VirtualMachineGuestOsFamilyLinuxGuest)
			g.GuestId = string(types.VirtualMachineGuestOsIdentifierUbuntu64Guest)
			g.GuestFullName = "Ubuntu Linux (64-bit)"
			g.ToolsStatus = types.VirtualMachineToolsStatusToolsNotRunning
			g.ToolsRunningStatus = string(types.VirtualMachineToolsRunningStatusGuestToolsNotRunning)
			g.ToolsVersionStatus2 = string(types.VirtualMachineToolsVersionStatusGuestToolsCurrent)
			g.ToolsVersion = "12389"
			summary.GuestId, summary.GuestFullName = g.GuestId, g.GuestFullName
			summary.ToolsStatus, summary.ToolsRunningStatus = g.ToolsStatus, g.ToolsRunningStatus
		} else {
			g.GuestFamily, g.GuestId, g.GuestFullName = "", "", ""
		}
		ctx.Update(vm, []types.PropertyChange{
			{Name: "guest", Val: &g},
			{Name: "summary.guest", Val: &summary},
		})
	})
}

// clone deep-copies src into dst the way vcsim copies its templates:
// through the SOAP encoding, which keeps every concrete type.
func clone(src, dst any) error {
	b, err := xml.Marshal(src)
	if err != nil {
		return err
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.TypeFunc = types.TypeFunc()
	return dec.Decode(dst)
}
