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

variable "datacenter" {
  type    = string
  default = "hpc-dc"
}

variable "cluster" {
  type    = string
  default = "hpc-cluster"
}

variable "datastore" {
  type    = string
  default = "nvme-ds-01"
}

variable "gpu_host" {
  type    = string
  default = "esx-gpu-02.hpc.example.com"
}

variable "management_network" {
  type    = string
  default = "VM Network"
}

variable "pvrdma_network" {
  type    = string
  default = "VM 100GbE Network"
}

# The vSphere provider cannot add PCI devices to a VM it is creating (it
# looks the new VM up by a UUID it does not have yet): create the VM with
# attach_gpus = false, then apply again with attach_gpus = true.
variable "attach_gpus" {
  type    = bool
  default = false
}

locals {
  vm_name   = "gpu-node-02"
  memory_mb = 262144
}

data "vsphere_datacenter" "dc" {
  name = var.datacenter
}

data "vsphere_compute_cluster" "hpc" {
  name          = var.cluster
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vsphere_datastore" "local" {
  name          = var.datastore
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vsphere_network" "mgmt" {
  name          = var.management_network
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vsphere_network" "pvrdma" {
  name          = var.pvrdma_network
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vsphere_host" "gpu" {
  name          = var.gpu_host
  datacenter_id = data.vsphere_datacenter.dc.id
}

data "vspherehpc_host" "gpu" {
  host_system_id = data.vsphere_host.gpu.id
}

locals {
  # Two passthrough-ready GPUs no other VM has (this VM's own still qualify
  # once it has them).
  usable = [
    for g in data.vspherehpc_host.gpu.gpus : g
    if g.passthrough_active && alltrue([for u in g.used_by : u.name == local.vm_name])
  ]
  gpus = slice(local.usable, 0, min(2, length(local.usable)))
}

# The MMIO window for those GPUs, as an extra_config map:
# pciPassthru.use64bitMMIO = "TRUE", pciPassthru.64bitMMIOSizeGB = "512" for two 80 GB GPUs.
data "vspherehpc_mmio_size" "gpu_node" {
  gpu_memory_gb = local.gpus[*].memory_gb
}

resource "vsphere_virtual_machine" "gpu_node" {
  name             = local.vm_name
  resource_pool_id = data.vsphere_compute_cluster.hpc.resource_pool_id
  host_system_id   = data.vsphere_host.gpu.id
  datastore_id     = data.vsphere_datastore.local.id
  num_cpus         = 32
  memory           = local.memory_mb
  guest_id         = "ubuntu64Guest"
  hardware_version = 19
  firmware         = "efi" # before the guest OS is installed

  memory_reservation               = local.memory_mb
  memory_reservation_locked_to_max = true
  pci_device_id                    = var.attach_gpus ? local.gpus[*].pci_id : []
  extra_config                     = data.vspherehpc_mmio_size.gpu_node.extra_config
  wait_for_guest_net_timeout       = 0 # no guest OS yet: no IP address to wait for

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
