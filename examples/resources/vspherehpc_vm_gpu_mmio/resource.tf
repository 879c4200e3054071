data "vspherehpc_datacenter" "dc" {
  name = "hpc-dc"
}

data "vspherehpc_host" "esx01" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "esx01.example.com"
}

locals {
  # Passthrough-ready GPUs of the VM's host that no other VM has: free ones,
  # or this VM's own (after the first apply they are in use, by this VM, and
  # must still qualify, or the next plan would drop them).
  usable_gpus = [
    for g in data.vspherehpc_host.esx01.gpus : g.pci_id
    if g.passthrough_active && alltrue([for u in g.used_by : u.name == vsphere_virtual_machine.gpu_node.name])
  ]
}

# Two of them (fewer if the host has fewer). The VM's guest OS is installed
# after this apply, under EFI.
resource "vspherehpc_vm_gpu_mmio" "gpu_node" {
  virtual_machine_id = vsphere_virtual_machine.gpu_node.id

  dynamic "gpu" {
    for_each = slice(local.usable_gpus, 0, min(2, length(local.usable_gpus)))
    content {
      pci_id = gpu.value
    }
  }

  power_off_allowed = true
}

output "mmio_size_gb" {
  value = vspherehpc_vm_gpu_mmio.gpu_node.mmio_size_gb # 512 for two 80 GB GPUs
}

# Two GPUs from the pool "training" (the hardware label of
# vspherehpc_host_pci_passthrough): vSphere picks them, and in a DRS cluster
# the host, when the VM powers on. peer_to_peer lets them and the VM's
# InfiniBand or RoCE card exchange data over PCIe (GPUDirect RDMA).
resource "vspherehpc_vm_gpu_mmio" "trainer" {
  virtual_machine_id = vsphere_virtual_machine.trainer.id

  gpu {
    vendor_id = "10de"
    device_id = "2330"
    count     = 2
    label     = "training"
  }

  peer_to_peer      = true
  power_off_allowed = true
}

# A GPU and an InfiniBand VF under one PCIe switch, with the VM's vCPUs and
# memory kept on their NUMA node (vspherehpc_host gives each device's
# pcie_switch and numa_node; the InfiniBand guide shows how to pick pairs).
resource "vspherehpc_vm_gpu_mmio" "gpudirect" {
  virtual_machine_id = vsphere_virtual_machine.rdma_node.id

  gpu {
    pci_id = "0000:19:00.0"
  }
  pci_device {
    pci_id = "0000:18:00.1"
  }

  peer_to_peer       = true
  numa_node_affinity = [0]
  power_off_allowed  = true
}
