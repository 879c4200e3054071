# The demo `make demo` applies to the simulated lab (internal/vcsimlab): a
# PVRDMA cluster over every host of the lab's cluster, two PVRDMA client VMs
# (one of them with two NVIDIA vGPUs on its host's A100), and a GPU VM with
# a GPU and an InfiniBand VF from one PCIe switch of its host (a DGX H100 in
# the lab) and a PVRDMA adapter, as the two modules in ../modules compose
# them. The lab's hosts apply
# passthrough and SR-IOV changes when they reboot: with reboot_allowed, the
# host resources reboot the GPU VM's host within the apply, so one apply
# takes the lab from bare hosts to the GPU VM. The provider reads
# VSPHERE_SERVER, VSPHERE_USER, VSPHERE_PASSWORD and VSPHERE_CA_FILE from the
# environment the demo sets.
terraform {
  required_version = ">= 1.5"

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

variable "cluster" {
  type        = string
  description = "Name of the lab's cluster: all its hosts join the PVRDMA switch."
}

variable "client_vms" {
  type        = set(string)
  default     = ["hpc-node-0", "hpc-node-1"]
  description = "VMs that get a PVRDMA adapter only."
}

variable "vgpu_vm" {
  type        = string
  default     = "hpc-node-1"
  description = "A client VM that also gets two NVIDIA vGPUs, on a host other than gpu_vm's."
}

variable "gpu_vm" {
  type        = string
  default     = "hpc-node-2"
  description = "The VM that gets GPUs and a PVRDMA adapter."
}

data "vspherehpc_datacenter" "dc" {
  name = var.datacenter
}

# The switch, its port group and the host settings on every host of the
# cluster, after measuring that the fabric carries 9000-byte frames over vmk1.
module "pvrdma" {
  source = "../modules/pvrdma-cluster"

  datacenter_id = data.vspherehpc_datacenter.dc.id
  cluster_name  = var.cluster
  vmknic        = "vmk1"
}

data "vspherehpc_virtual_machine" "client" {
  for_each = var.client_vms

  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

# NVIDIA vGPU on the vGPU client's host: its GPUs in Shared Direct, which
# the host drives so once its graphics restart: reboot_allowed reboots it
# inside the apply. After the PVRDMA cluster's host settings, so the two do
# not change the host at once.
resource "vspherehpc_host_graphics" "vgpu_host" {
  host_system_id = data.vspherehpc_virtual_machine.client[var.vgpu_vm].host_system_id
  reboot_allowed = true

  depends_on = [module.pvrdma]
}

module "client" {
  source   = "../modules/gpu-node"
  for_each = data.vspherehpc_virtual_machine.client

  virtual_machine_id = each.value.id
  port_group_id      = module.pvrdma.port_group_id
  # Two 20 GB vGPUs share the A100 40GB of the vGPU client's host.
  vgpus = each.key == var.vgpu_vm ? { "grid_a100-20c" = 2 } : {}

  # The host's graphics, and its reboot, before the VMs' changes.
  depends_on = [vspherehpc_host_graphics.vgpu_host]
}

data "vspherehpc_virtual_machine" "gpu" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = var.gpu_vm
}

# The GPU VM's host, for its PCIe tree: which InfiniBand card sits under
# the same PCIe switch as which GPU (pcie_switch).
data "vspherehpc_host" "gpu" {
  host_system_id = data.vspherehpc_virtual_machine.gpu.host_system_id
}

# GPUDirect RDMA pairs: each GPU no other VM uses, with the ConnectX
# InfiniBand card (SR-IOV capable, no vmnic) under its PCIe switch. The VM
# takes the first pair: the GPU, and a VF of the card.
locals {
  ib_cards = [
    for d in data.vspherehpc_host.gpu.pci_devices : d
    if d.connectx && d.sriov_capable && d.physical_nic == "" && d.pcie_switch != ""
  ]
  pairs = flatten([
    for g in data.vspherehpc_host.gpu.gpus : [
      for c in local.ib_cards : { gpu = g.pci_id, card = c.pci_id, pcie_switch = g.pcie_switch, numa_node = g.numa_node }
      if c.pcie_switch == g.pcie_switch
    ]
    if alltrue([for u in g.used_by : u.virtual_machine_id == data.vspherehpc_virtual_machine.gpu.id])
  ])
}

check "gpudirect_pair" {
  assert {
    condition     = length(local.pairs) > 0
    error_message = "${data.vspherehpc_host.gpu.name} has no free GPU with an InfiniBand card under its PCIe switch (vspherehpc_host's pcie_switch)."
  }
}

module "gpu" {
  source = "../modules/gpu-node"

  virtual_machine_id = data.vspherehpc_virtual_machine.gpu.id
  port_group_id      = module.pvrdma.port_group_id
  gpu_pci_ids        = [local.pairs[0].gpu]
  pci_device_ids     = [vspherehpc_host_sriov.ib.virtual_function_ids[0]]
  # GPUDirect RDMA between the GPU and the InfiniBand VF beside it, and
  # the VM's vCPUs and memory on their NUMA node.
  peer_to_peer       = true
  numa_node_affinity = [local.pairs[0].numa_node]

  # The host's devices first: their passthrough is active once that
  # resource's apply (and its reboot) is done.
  depends_on = [vspherehpc_host_pci_passthrough.gpu_host]
}

# InfiniBand beside the GPU, as "InfiniBand on vSphere 8" does: SR-IOV on
# the pair's card, then passthrough on its first VF, then the VF to the GPU
# VM. The lab's hosts apply these changes at their next reboot, and the VFs
# exist only once SR-IOV is active: reboot_allowed reboots the host inside
# the apply (once for SR-IOV, once for passthrough), so the VF's id is known
# in time.
resource "vspherehpc_host_sriov" "ib" {
  host_system_id        = data.vspherehpc_host.gpu.id
  pci_id                = local.pairs[0].card
  num_virtual_functions = 4
  reboot_allowed        = true
}

# The host step of passthrough, in code: on for the first InfiniBand VF.
# The host's H100s are on already.
resource "vspherehpc_host_pci_passthrough" "gpu_host" {
  host_system_id = data.vspherehpc_host.gpu.id
  pci_ids        = [vspherehpc_host_sriov.ib.virtual_function_ids[0]]
  reboot_allowed = true
}

output "pvrdma_switch" {
  description = "The PVRDMA switch: its port group and each host's uplink."
  value = {
    switch_id     = module.pvrdma.switch_id
    port_group_id = module.pvrdma.port_group_id
    uplinks       = module.pvrdma.uplinks
  }
}

output "mtu_matrix" {
  description = "Measured MTU per ordered pair of hosts over vmk1 (the switch MTU is 9000)."
  value       = module.pvrdma.mtu_matrix
}

output "pvrdma_macs" {
  description = "MAC address of the PVRDMA adapter of every VM."
  value = merge(
    { for name, m in module.client : name => m.pvrdma_mac_address },
    { (var.gpu_vm) = module.gpu.pvrdma_mac_address },
  )
}

output "gpu_node" {
  description = "The GPU VM's GPU, the PCIe switch and NUMA node it shares with its InfiniBand card, and its MMIO window."
  value = {
    host                = data.vspherehpc_host.gpu.name
    gpus                = [local.pairs[0].gpu]
    pcie_switch         = local.pairs[0].pcie_switch
    numa_node           = local.pairs[0].numa_node
    total_gpu_memory_gb = module.gpu.total_gpu_memory_gb
    mmio_size_gb        = module.gpu.mmio_size_gb
  }
}

output "vgpu_node" {
  description = "The vGPU client: its host, the host's graphics, the VM's vGPUs and MMIO window."
  value = {
    vm              = var.vgpu_vm
    host            = vspherehpc_host_graphics.vgpu_host.host_system_id
    reboot_required = vspherehpc_host_graphics.vgpu_host.reboot_required
    vgpus           = module.client[var.vgpu_vm].vgpus
    mmio_size_gb    = module.client[var.vgpu_vm].mmio_size_gb
  }
}

output "infiniband" {
  description = "The InfiniBand PF with SR-IOV on, its VFs, and what the GPU VM has."
  value = {
    physical_function = vspherehpc_host_sriov.ib.pci_id
    virtual_functions = vspherehpc_host_sriov.ib.virtual_function_ids
    reboot_required   = vspherehpc_host_sriov.ib.reboot_required
    gpu_vm_devices    = module.gpu.pci_device_ids
  }
}

output "gpu_host_passthrough" {
  description = "The devices of the GPU VM's host this configuration turns passthrough on for (the InfiniBand VF), and whether the host still waits for a reboot."
  value = {
    devices         = [for d in vspherehpc_host_pci_passthrough.gpu_host.devices : "${d.pci_id} ${d.device_name} (active: ${d.active})"]
    reboot_required = vspherehpc_host_pci_passthrough.gpu_host.reboot_required
  }
}

output "gpu_node_guest_setup" {
  description = "What to run in the GPU VM's guest once it boots."
  value       = module.gpu.guest_setup
}
