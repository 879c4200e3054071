data "vspherehpc_datacenter" "dc" {
  name = "hpc-dc"
}

data "vspherehpc_host" "esx01" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "esx01.example.com"
}

# Or by id: here the host a VM is registered on (vsphere_virtual_machine's
# host_system_id works the same way).
data "vspherehpc_virtual_machine" "node" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "gpu-node-01"
}

data "vspherehpc_host" "node_host" {
  host_system_id = data.vspherehpc_virtual_machine.node.host_system_id
}

locals {
  # The 100 GbE RDMA NICs no switch uses yet: candidates for the PVRDMA switch uplink.
  free_rdma_nics = [
    for nic in data.vspherehpc_host.esx01.physical_nics : nic.name
    if nic.rdma_capable && nic.link_up && nic.switch == ""
  ]

  # GPUs ready for passthrough that no VM on the host is configured with.
  free_gpus = [
    for gpu in data.vspherehpc_host.esx01.gpus : gpu.pci_id
    if gpu.passthrough_active && length(gpu.used_by) == 0
  ]

  # For GPUDirect RDMA: each free GPU with the ConnectX card under the same
  # PCIe switch, and the NUMA node they share.
  gpudirect_pairs = flatten([
    for gpu in data.vspherehpc_host.esx01.gpus : [
      for d in data.vspherehpc_host.esx01.pci_devices : { gpu = gpu.pci_id, card = d.pci_id, numa_node = gpu.numa_node }
      if d.connectx && d.pcie_switch != "" && d.pcie_switch == gpu.pcie_switch
    ]
    if contains(local.free_gpus, gpu.pci_id)
  ])
}

output "gpudirect_pairs" {
  value = local.gpudirect_pairs
}

output "free_rdma_nics" {
  value = local.free_rdma_nics
}

output "free_gpus" {
  value = local.free_gpus
}

output "node_host_gpus" {
  value = [for gpu in data.vspherehpc_host.node_host.gpus : "${gpu.pci_id} ${gpu.device_name}"]
}
