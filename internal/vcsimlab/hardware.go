package vcsimlab

import (
	"fmt"

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

// rdmaNIC is one RDMA-capable port of every lab host.
type rdmaNIC struct {
	pnic, rdma, pci string
	function        uint8
}

var rdmaNICs = []rdmaNIC{
	{pnic: "vmnic4", rdma: "vmrdma0", pci: "0000:d8:00.0", function: 0},
	{pnic: "vmnic5", rdma: "vmrdma1", pci: "0000:d8:00.1", function: 1},
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

// tenGbENICs are the PCI functions of vmnic0 and vmnic1, the 10 GbE NICs
// of vcsim's stock host (its hardware.pciDevice and config.network.pnic).
var tenGbENICs = []string{"0000:0b:00.0", "0000:13:00.0"}

// passthruInfo is a host's config.pciPassthruInfo, which the vSphere API
// reference describes as "the state of PciPassthru for all pci devices"
// (HostPciPassthruInfo, vSphere Web Services API 8.0). It lists the GPUs and
// the lab's physical NICs: the ConnectX ports and the 10 GbE NICs. vSphere
// documents NICs as passthrough devices ("Enable Passthrough for a Network
// Device on a Host", vSphere 8.0 Networking, DirectPath I/O; for ConnectX
// ports the NVIDIA/VMware paper "InfiniBand Configuration on VMware vSphere
// 8" passes a whole PF to a VM), so they are capable, and not enabled: they
// are the host's NICs. vcsim's other stock devices (chipset, bridges, IDE,
// VMCI, SVGA, PVSCSI) are left out: whether vmkctl reports such devices as
// capable is not settled by any public source.
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
	for _, n := range rdmaNICs {
		out = append(out, &types.HostPciPassthruInfo{Id: n.pci, PassthruCapable: true})
	}
	for _, id := range tenGbENICs {
		out = append(out, &types.HostPciPassthruInfo{Id: id, PassthruCapable: true})
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
