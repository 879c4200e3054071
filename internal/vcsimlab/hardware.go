package vcsimlab

import (
	"fmt"
	"slices"

	"github.com/vmware/govmomi/simulator/esx"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// The hardware and network every lab host has beside vcsim's stock host,
// as described in the package documentation.

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

// newerGPUs are the GPUs of the last host with Options.NewerGPUHost,
// instead of gpus: a host of a newer generation in the cluster, as when a
// cluster grows by a node of the next HGX generation. Two NVIDIA H200 SXM,
// device id 0x2335 (NVIDIA's gpu-admin-tools, gpu/devid_names.py: 0x2335
// "H200"; named as the PCI ID Repository names 10de:2335), 141 GB each
// (NVIDIA's H200 datasheet: 141 GB HBM3e), active for passthrough. Their
// PCI addresses differ from every other lab host's GPUs and avoid the
// buses of the lab's other devices; the addresses themselves are the lab's
// choice (a server's slot layout decides them).
var newerGPUs = []gpu{
	{id: "0000:19:00.0", bus: 0x19, device: 0x2335, name: "GH100 [H200 SXM 141GB]", memKB: 141 << 20, enabled: true},
	{id: "0000:9b:00.0", bus: 0x9b, device: 0x2335, name: "GH100 [H200 SXM 141GB]", memKB: 141 << 20, enabled: true},
}

// rdmaNIC is one RDMA-capable port of every lab host: a port of one
// dual-port ConnectX-6 Dx card on bus connectXBus, and an SR-IOV physical
// function (see ethPFs).
type rdmaNIC struct {
	pnic, rdma, pci string
	function        uint8
	vfOffset        int // the PF's First VF Offset
}

const connectXBus = 0xd8

// rdmaNICs' VF offsets keep both ports' VFs apart, stride 1: port 0's VFs
// take functions 00.2 to 01.1, port 1's 01.2 to 02.1. The card's real
// offsets are in its SR-IOV capability, which no public source gives.
var rdmaNICs = []rdmaNIC{
	{pnic: "vmnic4", rdma: "vmrdma0", pci: "0000:d8:00.0", function: 0, vfOffset: 2},
	{pnic: "vmnic5", rdma: "vmrdma1", pci: "0000:d8:00.1", function: 1, vfOffset: 9},
}

// sriovPF is an SR-IOV physical function (PF) of every lab host, at slot 0
// of its bus.
type sriovPF struct {
	id       string
	bus      uint8
	function uint8
	offset   int   // First VF Offset
	stride   int   // VF Stride
	maxVFs   int32 // maxVirtualFunctionSupported
}

// ibPFs are the PFs of the single-port ConnectX-7 InfiniBand cards, on
// buses no other lab device uses. Each card sits on its own bus, function
// 0, as lspci shows ConnectX-7 HCAs of HPC nodes. Their VFs follow them on
// their bus: 00.1 to 00.7, then 01.0 and on (offset 1, stride 1; the real
// values are in the card's SR-IOV capability, which no public source gives
// for ConnectX-7).
var ibPFs = []sriovPF{
	{id: "0000:86:00.0", bus: 0x86, offset: 1, stride: 1, maxVFs: connectX7MaxVFs},
	{id: "0000:87:00.0", bus: 0x87, offset: 1, stride: 1, maxVFs: connectX7MaxVFs},
}

// sriovPFs are every SR-IOV PF a lab host may have: the InfiniBand cards'
// and the ConnectX-6 Dx ports', and the compute cards of a DGX H100 host
// (topology.go). Their VFs' ids never meet another device's.
var sriovPFs = slices.Concat(ibPFs, ethPFs(), dgxCards())

// ethPFs are the ConnectX-6 Dx ports vmnic4 and vmnic5 as SR-IOV PFs.
func ethPFs() []sriovPF {
	var out []sriovPF
	for _, n := range rdmaNICs {
		out = append(out, sriovPF{id: n.pci, bus: connectXBus, function: n.function, offset: n.vfOffset, stride: 1, maxVFs: connectX6DxMaxVFs})
	}
	return out
}

const (
	// PCI device ids of the Linux mlx5_core driver's table
	// (drivers/net/ethernet/mellanox/mlx5/core/main.c, maintained by
	// NVIDIA): 0x1021 "ConnectX-7", 0x101e "ConnectX Family mlx5Gen Virtual
	// Function", the device id of VFs of ConnectX-6 Dx and later. The PCI ID
	// Repository names 15b3:1021 "MT2910 Family [ConnectX-7]".
	connectX7Device  = 0x1021
	connectXVFDevice = 0x101e
	// connectX7MaxVFs is the ConnectX-7 PFs' maxVirtualFunctionSupported:
	// the firmware's NUM_OF_VFS, which the VMware/NVIDIA paper "InfiniBand
	// Configuration on VMware vSphere 8" sets to 16 ("mlxconfig ... set
	// SRIOV_EN=1 NUM_OF_VFS=16"). NVIDIA's ESXi driver manual (nmlx5,
	// "Single Root IO Virtualization (SR-IOV)") allows up to 63/127 VFs
	// depending on firmware; the lab's firmware is configured as in the
	// paper.
	connectX7MaxVFs = 16
	// connectX6DxMaxVFs is the ConnectX-6 Dx ports'
	// maxVirtualFunctionSupported, also the firmware's NUM_OF_VFS (same
	// nmlx5 manual: SR-IOV is enabled in the firmware with mlxconfig, and
	// the driver's max_vfs parameter creates VFs up to it). The lab's
	// firmware has 8, the value of the firmware query in NVIDIA's "SR-IOV
	// Configuration" guide (MLNX_OFED for RHEL: "NUM_OF_VFS 8").
	connectX6DxMaxVFs = 8
)

// vfAddress is the PCI address of virtual function k (from 0) of pf. Its
// routing id follows the PCIe SR-IOV capability: the PF's routing id +
// First VF Offset + k × VF Stride, carrying into the next buses (Linux
// drivers/pci/iov.c, pci_iov_virtfn_bus and pci_iov_virtfn_devfn, after
// SR-IOV spec 3.3.10 and 3.3.11).
func vfAddress(pf sriovPF, k int) (bus, slot, function uint8) {
	rid := int(pf.function) + pf.offset + k*pf.stride
	devfn := rid & 0xff
	return pf.bus + uint8(rid>>8), uint8(devfn >> 3), uint8(devfn & 7)
}

// vfID is the PCI id of virtual function k of pf.
func vfID(pf sriovPF, k int) string {
	bus, slot, fn := vfAddress(pf, k)
	return fmt.Sprintf("0000:%02x:%02x.%d", bus, slot, fn)
}

// pfOf returns the PF whose virtual function id is, and its index.
func pfOf(id string) (sriovPF, int, bool) {
	for _, pf := range sriovPFs {
		for k := range int(pf.maxVFs) {
			if vfID(pf, k) == id {
				return pf, k, true
			}
		}
	}
	return sriovPF{}, 0, false
}

// sriovPFByID is the PF with PCI id id.
func sriovPFByID(id string) (sriovPF, bool) {
	i := slices.IndexFunc(sriovPFs, func(pf sriovPF) bool { return pf.id == id })
	if i < 0 {
		return sriovPF{}, false
	}
	return sriovPFs[i], true
}

func ibPFDevice(pf sriovPF) types.HostPciDevice {
	// Class Ethernet controller, not InfiniBand controller (0x0207): the
	// paper's firmware step FORCE_ETH_PCI_SUBCLASS=1 makes ESXi's native
	// nmlx5 driver claim the card; the fabric stays InfiniBand.
	return types.HostPciDevice{
		Id:              pf.id,
		ClassId:         0x0200,
		Bus:             pf.bus,
		VendorId:        mellanox,
		SubVendorId:     mellanox,
		VendorName:      "Mellanox Technologies",
		DeviceId:        connectX7Device,
		DeviceName:      "MT2910 Family [ConnectX-7]",
		DeviceClassName: "Ethernet controller",
	}
}

func vfDevice(pf sriovPF, k int) types.HostPciDevice {
	bus, slot, fn := vfAddress(pf, k)
	return types.HostPciDevice{
		Id:              vfID(pf, k),
		ClassId:         0x0200,
		Bus:             bus,
		Slot:            slot,
		Function:        fn,
		VendorId:        mellanox,
		SubVendorId:     mellanox,
		VendorName:      "Mellanox Technologies",
		DeviceId:        connectXVFDevice,
		DeviceName:      "ConnectX Family mlx5Gen Virtual Function",
		DeviceClassName: "Ethernet controller",
	}
}

// addNetwork adds the RDMA NICs and vmk1 to the (already per-host) network
// config of host i.
func addNetwork(i int, n *types.HostNetworkInfo) {
	addRDMANICs(i, n)
	addPVRDMAVmknic(i, n)
}

// addRDMANICs adds the RDMA NICs, with their RDMA devices, to host i.
func addRDMANICs(i int, n *types.HostNetworkInfo) {
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
}

// addPVRDMAVmknic adds vmk1, the vmknic for PVRDMA, to host i. It needs a
// port group on a switch whose MTU allows 9000; vSwitch1 has no uplink,
// leaving vmnic4/5 free for a distributed switch.
func addPVRDMAVmknic(i int, n *types.HostNetworkInfo) {
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
	out := gpuDevices(gpus)
	for _, n := range rdmaNICs {
		out = append(out, types.HostPciDevice{
			Id:              n.pci,
			ClassId:         0x0200, // Ethernet controller
			Bus:             connectXBus,
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
	for _, pf := range ibPFs {
		out = append(out, ibPFDevice(pf))
	}
	return out
}

// withVFs returns devices, a host's hardware.pciDevice, with the virtual
// functions present on it as infos (its pciPassthruInfo) report them: each
// PF followed by its numVirtualFunction VFs, no other VF.
func withVFs(devices []types.HostPciDevice, infos []types.BaseHostPciPassthruInfo) []types.HostPciDevice {
	present := map[string]int32{}
	for _, p := range infos {
		if sr, ok := p.(*types.HostSriovInfo); ok {
			present[sr.Id] = sr.NumVirtualFunction
		}
	}
	var out []types.HostPciDevice
	for _, d := range devices {
		if _, _, vf := pfOf(d.Id); vf {
			continue
		}
		out = append(out, d)
		for _, pf := range sriovPFs {
			if pf.id == d.Id {
				for k := range int(present[pf.id]) {
					// VFs sit on their PF's bus (or the next ones), behind
					// its bridge: Linux drivers/pci/iov.c puts them on the
					// PF's bus or a child bus of its parent.
					vf := vfDevice(pf, k)
					vf.ParentBridge = d.ParentBridge
					out = append(out, vf)
				}
			}
		}
	}
	return out
}

// tenGbENICs are the PCI functions of vmnic0 and vmnic1, the 10 GbE NICs
// of vcsim's stock host (its hardware.pciDevice and config.network.pnic).
var tenGbENICs = []string{"0000:0b:00.0", "0000:13:00.0"}

// passthruInfo is a host's config.pciPassthruInfo, which the vSphere API
// reference describes as "the state of PciPassthru for all pci devices",
// each with passthruCapable, "Whether passThru is even possible for this
// device (decided by vmkctl)" (HostPciPassthruInfo, vSphere Web Services API
// 8.0): every device of hardware.pciDevice has an entry, capable or not.
// It lists the GPUs, the lab's physical NICs (the ConnectX-6 Dx ports,
// SR-IOV PFs, and the 10 GbE NICs) and the ConnectX-7 InfiniBand PFs; VFs
// join once SR-IOV is active (withVFInfos). vSphere documents NICs as
// passthrough devices ("Enable Passthrough for a Network Device on a Host",
// vSphere 8.0 Networking, DirectPath I/O; for ConnectX ports the
// NVIDIA/VMware paper "InfiniBand Configuration on VMware vSphere 8" passes a
// whole PF to a VM), so they are capable, and not enabled: they are the
// host's NICs. vcsim's other stock devices (chipset, bridges, root ports,
// IDE, VMCI, SVGA, PVSCSI) are listed not capable: which of them vmkctl
// would offer is not public, and not capable is the answer that never lets
// a test pass through what a real host might refuse (a host bridge never).
func passthruInfo() []types.BaseHostPciPassthruInfo {
	out := gpuPassthruInfo(gpus)
	// The SR-IOV PFs (the ConnectX-6 Dx ports and the ConnectX-7 PFs) are
	// HostSriovInfo, the subtype of HostPciPassthruInfo "about the state of
	// SR-IOV device" (vSphere Web Services API 8.0): SR-IOV capable, off, no
	// VF. A whole PF can be passed to a VM (the paper's passthrough
	// alternative to SR-IOV).
	for _, pf := range ethPFs() {
		out = append(out, sriovInfo(pf))
	}
	for _, id := range tenGbENICs {
		out = append(out, &types.HostPciPassthruInfo{Id: id, PassthruCapable: true})
	}
	for _, pf := range ibPFs {
		out = append(out, sriovInfo(pf))
	}
	for _, d := range esx.HostHardwareInfo.PciDevice {
		if !slices.ContainsFunc(out, func(p types.BaseHostPciPassthruInfo) bool { return p.GetHostPciPassthruInfo().Id == d.Id }) {
			out = append(out, &types.HostPciPassthruInfo{Id: d.Id})
		}
	}
	return out
}

func sriovInfo(pf sriovPF) *types.HostSriovInfo {
	return &types.HostSriovInfo{
		HostPciPassthruInfo:         types.HostPciPassthruInfo{Id: pf.id, PassthruCapable: true},
		SriovCapable:                true,
		MaxVirtualFunctionSupported: pf.maxVFs,
	}
}

// withVFInfos returns infos with the passthrough entries of the virtual
// functions present: each SR-IOV PF followed by its numVirtualFunction VFs,
// passthrough capable (vSphere passes VFs to VMs as PCI devices, as the
// paper does with IB VFs); a VF already listed keeps its state.
func withVFInfos(infos []types.BaseHostPciPassthruInfo) []types.BaseHostPciPassthruInfo {
	old := map[string]types.BaseHostPciPassthruInfo{}
	var out []types.BaseHostPciPassthruInfo
	for _, p := range infos {
		id := p.GetHostPciPassthruInfo().Id
		if _, _, vf := pfOf(id); vf {
			old[id] = p
			continue
		}
		out = append(out, p)
	}
	for i := 0; i < len(out); i++ {
		sr, ok := out[i].(*types.HostSriovInfo)
		if !ok {
			continue
		}
		for _, pf := range sriovPFs {
			if pf.id != sr.Id {
				continue
			}
			var vfs []types.BaseHostPciPassthruInfo
			for k := range int(sr.NumVirtualFunction) {
				id := vfID(pf, k)
				if p, ok := old[id]; ok {
					vfs = append(vfs, p)
				} else {
					vfs = append(vfs, &types.HostPciPassthruInfo{Id: id, PassthruCapable: true})
				}
			}
			out = append(out[:i+1], append(vfs, out[i+1:]...)...)
			i += len(vfs)
		}
	}
	return out
}

// sriovPools is a host's config.sriovDevicePool (and its
// HostPciPassthruSystem's sriovDevicePoolInfo) for its network n and its
// passthrough state infos: one HostSriovNetworkDevicePoolInfo ("Information
// on networking specific SR-IOV device pools", vSphere Web Services API
// 8.0) per standard switch (switchKey) or distributed switch (switchUuid)
// with uplinks whose SR-IOV is active, those uplinks in pnic ("List of
// SR-IOV enabled physical nics that are backing the portgroup"). A PF stays
// an uplink with SR-IOV on: vSphere Networking, "Using an SR-IOV Physical
// Adapter to Handle Virtual Machine Traffic" (mixed mode). The reference
// leaves the inherited key undocumented; the lab sets it to the switch's
// key or UUID.
func sriovPools(n *types.HostNetworkInfo, infos []types.BaseHostPciPassthruInfo) []types.BaseHostSriovDevicePoolInfo {
	if n == nil {
		return nil
	}
	active := map[string]bool{}
	for _, p := range infos {
		if sr, ok := p.(*types.HostSriovInfo); ok && sr.SriovActive {
			active[sr.Id] = true
		}
	}
	sriovNICs := func(keys []string) []types.PhysicalNic {
		var out []types.PhysicalNic
		for _, key := range keys {
			for _, nic := range n.Pnic {
				if nic.Key == key && active[nic.Pci] {
					out = append(out, nic)
				}
			}
		}
		return out
	}
	var out []types.BaseHostSriovDevicePoolInfo
	for _, vs := range n.Vswitch {
		if nics := sriovNICs(vs.Pnic); len(nics) > 0 {
			out = append(out, &types.HostSriovNetworkDevicePoolInfo{
				HostSriovDevicePoolInfo: types.HostSriovDevicePoolInfo{Key: vs.Key}, SwitchKey: vs.Key, Pnic: nics,
			})
		}
	}
	for _, ps := range n.ProxySwitch {
		if nics := sriovNICs(ps.Pnic); len(nics) > 0 {
			out = append(out, &types.HostSriovNetworkDevicePoolInfo{
				HostSriovDevicePoolInfo: types.HostSriovDevicePoolInfo{Key: ps.DvsUuid}, SwitchUuid: ps.DvsUuid, Pnic: nics,
			})
		}
	}
	return out
}

// graphicsType is how the host drives a GPU that it drove as was (""
// before it started): "direct" once it is set aside for passthrough; given
// back to the host (or at start), as its graphics configuration
// (configured) starts it (see startedGraphicsType); otherwise as before,
// since a graphics configuration takes effect only when the host's
// graphics restart (see UpdateGraphicsConfig).
func graphicsType(passthrough bool, was, configured string) string {
	switch {
	case passthrough:
		return string(types.HostGraphicsInfoGraphicsTypeDirect)
	case was == string(types.HostGraphicsInfoGraphicsTypeDirect) || was == "":
		return startedGraphicsType(configured)
	}
	return was
}

func graphicsInfo() []types.HostGraphicsInfo {
	return gpuGraphicsInfo(gpus)
}

// gpuDevices are the GPUs gs as hardware.pciDevice lists them.
func gpuDevices(gs []gpu) []types.HostPciDevice {
	var out []types.HostPciDevice
	for _, g := range gs {
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
	return out
}

// gpuPassthruInfo are the GPUs gs as pciPassthruInfo lists them.
func gpuPassthruInfo(gs []gpu) []types.BaseHostPciPassthruInfo {
	var out []types.BaseHostPciPassthruInfo
	for _, g := range gs {
		out = append(out, &types.HostPciPassthruInfo{
			Id:              g.id,
			PassthruCapable: true,
			PassthruEnabled: g.enabled,
			PassthruActive:  g.enabled,
		})
	}
	return out
}

// gpuGraphicsInfo are the GPUs gs as config.graphicsInfo lists them.
func gpuGraphicsInfo(gs []gpu) []types.HostGraphicsInfo {
	var out []types.HostGraphicsInfo
	for _, g := range gs {
		out = append(out, types.HostGraphicsInfo{
			DeviceName:     g.name,
			VendorName:     "NVIDIA Corporation",
			PciId:          g.id,
			GraphicsType:   graphicsType(g.enabled, "", string(types.HostGraphicsConfigGraphicsTypeShared)),
			MemorySizeInKB: g.memKB,
		})
	}
	return out
}

// useGPUs gives a prepared host (and its passthrough system ps) the GPUs
// gs instead of the default ones: in hardware.pciDevice,
// config.pciPassthruInfo, config.graphicsInfo and ps's pciPassthruInfo,
// where the default GPUs were. Neither may be in use.
func useGPUs(h *mo.HostSystem, ps *mo.HostPciPassthruSystem, gs []gpu) {
	isDefault := func(id string) bool {
		return slices.ContainsFunc(gpus, func(g gpu) bool { return g.id == id })
	}
	if h.Hardware != nil {
		h.Hardware.PciDevice = replaceAll(h.Hardware.PciDevice, func(d types.HostPciDevice) bool { return isDefault(d.Id) }, gpuDevices(gs))
	}
	isDefaultInfo := func(p types.BaseHostPciPassthruInfo) bool { return isDefault(p.GetHostPciPassthruInfo().Id) }
	if h.Config != nil {
		h.Config.PciPassthruInfo = replaceAll(h.Config.PciPassthruInfo, isDefaultInfo, gpuPassthruInfo(gs))
		h.Config.GraphicsInfo = replaceAll(h.Config.GraphicsInfo, func(g types.HostGraphicsInfo) bool { return isDefault(g.PciId) }, gpuGraphicsInfo(gs))
	}
	if ps != nil {
		ps.PciPassthruInfo = replaceAll(ps.PciPassthruInfo, isDefaultInfo, gpuPassthruInfo(gs))
	}
}

// replaceAll returns list without the elements old matches, with with
// where the first of them was (at the start when none was).
func replaceAll[T any](list []T, old func(T) bool, with []T) []T {
	at := max(slices.IndexFunc(list, old), 0)
	out := slices.DeleteFunc(slices.Clone(list), old)
	return slices.Insert(out, min(at, len(out)), with...)
}
