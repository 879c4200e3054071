# A GPU + PVRDMA node: vsphere_virtual_machine creates the VM, vspherehpc adds
# the PVRDMA adapter and the GPU passthrough settings.
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

# Both providers read VSPHERE_SERVER, VSPHERE_USER and VSPHERE_PASSWORD.
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
  description = "The ESXi host of the GPU node, as vCenter names it."
  type        = string
  default     = "esx-gpu-01.hpc.example.com"
}

variable "management_network" {
  type    = string
  default = "VM Network"
}

locals {
  vm_name   = "gpu-node-01"
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

data "vsphere_host" "gpu" {
  name          = var.gpu_host
  datacenter_id = data.vsphere_datacenter.dc.id
}

# The PVRDMA switch, port group and host settings on every host of the
# cluster. vsphere_datacenter's id is the managed object id vspherehpc takes.
module "pvrdma" {
  source = "../../modules/pvrdma-cluster"

  datacenter_id = data.vsphere_datacenter.dc.id
  cluster_name  = var.cluster
  vmknic        = "vmk1"
}

# The GPU host's passthrough-ready GPUs; vsphere_host's id works as is.
data "vspherehpc_host" "gpu" {
  host_system_id = data.vsphere_host.gpu.id
}

locals {
  # Two GPUs that no other VM has: free ones, or this VM's own (after the
  # first apply they are in use, by this VM, and must still qualify).
  usable = [
    for g in data.vspherehpc_host.gpu.gpus : g.pci_id
    if g.passthrough_active && alltrue([for u in g.used_by : u.name == local.vm_name])
  ]
  gpus = slice(local.usable, 0, min(2, length(local.usable)))
}

resource "vsphere_virtual_machine" "gpu_node" {
  name             = local.vm_name
  resource_pool_id = data.vsphere_compute_cluster.hpc.resource_pool_id
  host_system_id   = data.vsphere_host.gpu.id
  datastore_id     = data.vsphere_datastore.local.id
  num_cpus         = 32
  memory           = local.memory_mb
  guest_id         = "ubuntu64Guest"
  hardware_version = 19    # PVRDMA needs 13 or later
  firmware         = "efi" # from the start: the guest is installed under EFI

  # All memory reserved, as passthrough and PVRDMA need. Without it the
  # vSphere provider sends memoryReservationLockedToMax = false with every
  # update of the VM, and the two providers undo each other forever.
  memory_reservation = local.memory_mb

  # The VM has no guest OS yet: do not wait for an IP address it will never
  # report (the first apply would time out after 5 minutes and taint the VM).
  wait_for_guest_net_timeout = 0

  # The regular adapter first: management traffic, and VMware's PVRDMA guidance.
  network_interface {
    network_id = data.vsphere_network.mgmt.id
  }

  disk {
    label = "disk0"
    size  = 200
  }

  lifecycle {
    ignore_changes = [
      network_interface,                # the PVRDMA adapter: vspherehpc_vm_pvrdma_nic
      pci_device_id,                    # the GPUs: vspherehpc_vm_gpu_mmio
      memory_reservation_locked_to_max, # set by both vspherehpc VM resources
    ]
  }
}

# vsphere_virtual_machine's id is the VM's UUID, which vspherehpc takes as is.
resource "vspherehpc_vm_pvrdma_nic" "gpu_node" {
  virtual_machine_id        = vsphere_virtual_machine.gpu_node.id
  distributed_port_group_id = module.pvrdma.port_group_id
  power_off_allowed         = true
}

resource "vspherehpc_vm_gpu_mmio" "gpu_node" {
  virtual_machine_id = vsphere_virtual_machine.gpu_node.id
  power_off_allowed  = true

  dynamic "gpu" {
    for_each = local.gpus
    content {
      pci_id = gpu.value
    }
  }

  # Both resources reconfigure the VM; one at a time.
  depends_on = [vspherehpc_vm_pvrdma_nic.gpu_node]
}

output "gpu_node" {
  value = {
    pvrdma_mac   = vspherehpc_vm_pvrdma_nic.gpu_node.mac_address
    gpus         = local.gpus
    mmio_size_gb = vspherehpc_vm_gpu_mmio.gpu_node.mmio_size_gb
  }
}
