# The demo configuration `make demo` applies against the simulated lab
# (internal/vcsimlab). The provider reads VSPHERE_SERVER, VSPHERE_USER,
# VSPHERE_PASSWORD and VSPHERE_CA_FILE from the environment the demo sets.
terraform {
  required_providers {
    vspherehpc = {
      source = "vspherehpc/vspherehpc"
    }
  }
}

provider "vspherehpc" {}

variable "datacenter" {
  type        = string
  description = "Name of the lab's datacenter."
}

variable "hosts" {
  type        = list(string)
  description = "Names of the lab's ESXi hosts."
}

data "vspherehpc_datacenter" "dc" {
  name = var.datacenter
}

data "vspherehpc_host" "esx" {
  for_each = toset(var.hosts)

  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

# The largest MTU every pair of hosts carries over vmk1, measured with
# don't-fragment pings run on the hosts (one ping per pair on a healthy
# fabric), checked before anything relies on jumbo frames.
data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = [for name in var.hosts : data.vspherehpc_host.esx[name].id]
  vmknic          = "vmk1"
}

check "jumbo_frames" {
  assert {
    condition     = data.vspherehpc_max_mtu.fabric.mtu >= 9000
    error_message = "The fabric carries ${data.vspherehpc_max_mtu.fabric.mtu}-byte packets between some hosts, not 9000: see the mtu_matrix output."
  }
}

# The PVRDMA switch over every host, each with its first RDMA NIC (vmnic4).
resource "vspherehpc_rdma_dvs" "pvrdma" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "pvrdma-dvs"

  port_group {
    name = "VM 100GbE Network"
  }

  dynamic "host" {
    for_each = data.vspherehpc_host.esx
    content {
      host_system_id = host.value.id
      vmnic          = [for n in host.value.physical_nics : n.name if n.rdma_capable && n.link_up][0]
    }
  }
}

# Host side of PVRDMA on every host: control traffic on vmk1 (the lab's MTU 9000
# adapter), and the pvrdma ruleset open only to the other hosts' vmk1 addresses.
resource "vspherehpc_host_pvrdma_settings" "esx" {
  for_each = data.vspherehpc_host.esx

  host_system_id = each.value.id
  vmknic         = "vmk1"
  firewall_allowed_ips = [
    for h in data.vspherehpc_host.esx :
    one([for v in h.vmkernel_nics : v.ip_address if v.name == "vmk1"])
  ]
}

data "vspherehpc_virtual_machine" "node" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "hpc-node-0"
}

# A PVRDMA adapter on each of two lab nodes (each keeps its regular vmxnet3
# adapter first).
data "vspherehpc_virtual_machine" "pvrdma_node" {
  for_each = toset(["hpc-node-0", "hpc-node-1"])

  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

resource "vspherehpc_vm_pvrdma_nic" "node" {
  for_each = data.vspherehpc_virtual_machine.pvrdma_node

  virtual_machine_id        = each.value.id
  distributed_port_group_id = vspherehpc_rdma_dvs.pvrdma.port_group_id
}

# hpc-node-1 becomes a GPU node: its host's two H100 (80 GB each), EFI, and
# the MMIO window computed from them.
resource "vspherehpc_vm_gpu_mmio" "gpu_node" {
  virtual_machine_id = data.vspherehpc_virtual_machine.pvrdma_node["hpc-node-1"].id

  gpu {
    pci_id = "0000:3b:00.0"
  }
  gpu {
    pci_id = "0000:5e:00.0"
  }
}

# Size the MMIO window for every passthrough-ready GPU of the node's host.
locals {
  node_host = one([for h in data.vspherehpc_host.esx : h if h.id == data.vspherehpc_virtual_machine.node.host_system_id])
}

data "vspherehpc_mmio_size" "node" {
  gpu_memory_gb = [for g in local.node_host.gpus : g.memory_gb if g.passthrough_active]
}

output "rdma_nics" {
  description = "RDMA-capable NICs per host: what the PVRDMA switch will use as uplinks."
  value = {
    for name, h in data.vspherehpc_host.esx : name => [
      for n in h.physical_nics : "${n.name} (${n.speed_mbps / 1000} GbE, ${n.rdma_device})" if n.rdma_capable
    ]
  }
}

output "gpus" {
  description = "Passthrough GPUs per host."
  value = {
    for name, h in data.vspherehpc_host.esx : name => [
      for g in h.gpus : "${g.pci_id} ${g.device_name} ${g.memory_gb} GB${g.passthrough_active ? "" : " (passthrough not active)"}"
    ]
  }
}

output "node" {
  description = "The VM the later resources turn into a GPU + PVRDMA node."
  value = {
    name             = data.vspherehpc_virtual_machine.node.name
    hardware_version = data.vspherehpc_virtual_machine.node.hardware_version
    host             = local.node_host.name
  }
}

output "node_mmio" {
  description = "MMIO window for all passthrough-ready GPUs of the node's host."
  value = {
    gpus         = data.vspherehpc_mmio_size.node.gpu_count
    total_gb     = data.vspherehpc_mmio_size.node.total_gpu_memory_gb
    mmio_size_gb = data.vspherehpc_mmio_size.node.mmio_size_gb
    extra_config = data.vspherehpc_mmio_size.node.extra_config
  }
}

output "pvrdma_hosts" {
  description = "PVRDMA host settings per host."
  value = {
    for name, s in vspherehpc_host_pvrdma_settings.esx : name => "${s.vmknic}, firewall ${s.firewall_enabled ? "on" : "off"} for ${join(", ", s.firewall_allowed_ips)}"
  }
}

output "pvrdma_switch" {
  description = "The PVRDMA switch and its port group."
  value = {
    name          = vspherehpc_rdma_dvs.pvrdma.name
    version       = vspherehpc_rdma_dvs.pvrdma.version
    mtu           = vspherehpc_rdma_dvs.pvrdma.mtu
    port_group_id = vspherehpc_rdma_dvs.pvrdma.port_group_id
    uplinks       = { for h in vspherehpc_rdma_dvs.pvrdma.host : h.host_system_id => h.vmnic }
  }
}

output "pvrdma_adapters" {
  description = "The PVRDMA adapters: MAC, protocol, and N of pvrdmaDevices/<world>_<N>."
  value = {
    for name, n in vspherehpc_vm_pvrdma_nic.node : name => "${n.mac_address} ${n.device_protocol} index ${n.adapter_index}"
  }
}

output "gpu_node" {
  description = "The GPU node's passthrough setup."
  value = {
    gpus                = [for g in vspherehpc_vm_gpu_mmio.gpu_node.gpu : g.pci_id]
    total_gpu_memory_gb = vspherehpc_vm_gpu_mmio.gpu_node.total_gpu_memory_gb
    mmio_size_gb        = vspherehpc_vm_gpu_mmio.gpu_node.mmio_size_gb
    firmware            = vspherehpc_vm_gpu_mmio.gpu_node.firmware
  }
}

output "mtu_matrix" {
  description = "Measured MTU per ordered pair of hosts over vmk1, and the pings each search took."
  value = {
    for p in data.vspherehpc_max_mtu.fabric.pairs :
    "${p.source_host_name} -> ${p.target_host_name}" => "${p.mtu} (configured ${p.configured_mtu}, ${p.probes} ping${p.probes == 1 ? "" : "s"})"
  }
}
