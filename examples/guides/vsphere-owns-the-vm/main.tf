# The alternative for teams that want vsphere_virtual_machine to own the whole
# VM: vspherehpc only finds the GPUs and computes the MMIO window. No
# ignore_changes, but none of vspherehpc_vm_gpu_mmio's plan-time checks either
# (a GPU another VM uses, EFI before the guest OS, a window too small), and no
# RoCE version choice for the PVRDMA adapter.
terraform {
  required_version = ">= 1.5"

  required_providers {
    vsphere = {
      source  = "vmware/vsphere"
      version = ">= 2.4.0"
    }
    vspherehpc = {
      source = "vspherehpc/vspherehpc"
    }
  }
}

provider "vsphere" {}
provider "vspherehpc" {}

data "vsphere_datacenter" "dc" {
  name = "hpc-dc"
}

data "vsphere_compute_cluster" "hpc" {
  name          = "hpc-cluster"
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vsphere_datastore" "local" {
  name          = "nvme-ds-01"
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vsphere_network" "mgmt" {
  name          = "VM Network"
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vsphere_network" "pvrdma" {
  name          = "VM 100GbE Network"
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vsphere_host" "gpu" {
  name          = "esx-gpu-02.hpc.example.com"
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vspherehpc_host" "gpu" {
  host_system_id = data.vsphere_host.gpu.id
}

locals {
  # Two free, passthrough-ready GPUs of the host.
  gpus = slice([for g in data.vspherehpc_host.gpu.gpus : g if g.passthrough_active && length(g.used_by) == 0], 0, 2)
}

# The MMIO window for those GPUs, as an extra_config map:
# pciPassthru.use64bitMMIO = "TRUE", pciPassthru.64bitMMIOSizeGB = "512" for two 80 GB GPUs.
data "vspherehpc_mmio_size" "gpu_node" {
  gpu_memory_gb = local.gpus[*].memory_gb
}

resource "vsphere_virtual_machine" "gpu_node" {
  name             = "gpu-node-02"
  resource_pool_id = data.vsphere_compute_cluster.hpc.resource_pool_id
  host_system_id   = data.vsphere_host.gpu.id
  datastore_id     = data.vsphere_datastore.local.id
  num_cpus         = 32
  memory           = 262144
  guest_id         = "ubuntu64Guest"
  hardware_version = 19
  firmware         = "efi" # before the guest OS is installed

  memory_reservation_locked_to_max = true
  pci_device_id                    = local.gpus[*].pci_id
  extra_config                     = data.vspherehpc_mmio_size.gpu_node.extra_config

  network_interface {
    network_id = data.vsphere_network.mgmt.id
  }
  # PVRDMA, second: the RoCE version is the hardware's default.
  network_interface {
    network_id   = data.vsphere_network.pvrdma.id
    adapter_type = "vmxnet3vrdma"
  }

  disk {
    label = "disk0"
    size  = 200
  }
}
