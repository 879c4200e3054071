# Two vGPU nodes sharing one host's A100s with NVIDIA vGPU, each with a
# PVRDMA adapter: the host's graphics set to Shared Direct (and the host
# rebooted for it in the same apply), then the VMs' vGPUs and adapters.
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
  type    = string
  default = "hpc-dc"
}

variable "vgpu_host" {
  description = "The ESXi host whose GPUs NVIDIA vGPU shares, as vCenter names it."
  type        = string
  default     = "esx-vgpu-01.hpc.example.com"
}

variable "vgpu_vms" {
  description = "The VMs on that host that get vGPUs, by name."
  type        = set(string)
  default     = ["inference-01", "inference-02"]
}

variable "port_group_id" {
  description = "The PVRDMA port group (the pvrdma-cluster module's port_group_id)."
  type        = string
  default     = "dvportgroup-42"
}

data "vspherehpc_datacenter" "dc" {
  name = var.datacenter
}

data "vspherehpc_host" "vgpu" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = var.vgpu_host
}

data "vspherehpc_virtual_machine" "node" {
  for_each = var.vgpu_vms

  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

# Every GPU of the host that is not passed through is shared by NVIDIA's vGPU
# manager; vGPU VMs fill one GPU before the next. The host drives its GPUs
# so once its graphics restart: the apply reboots it (maintenance mode first).
resource "vspherehpc_host_graphics" "vgpu" {
  host_system_id    = data.vspherehpc_host.vgpu.id
  assignment_policy = "consolidation"
  reboot_allowed    = true
}

resource "vspherehpc_vm_pvrdma_nic" "node" {
  for_each = data.vspherehpc_virtual_machine.node

  virtual_machine_id        = each.value.id
  distributed_port_group_id = var.port_group_id
  power_off_allowed         = true

  # The host's reboot first: a VM change planned before it is refused.
  depends_on = [vspherehpc_host_graphics.vgpu]
}

# Two 20 GB vGPUs each: an A100 40GB holds two of them (equal-size mode).
resource "vspherehpc_vm_gpu_mmio" "node" {
  for_each = data.vspherehpc_virtual_machine.node

  virtual_machine_id = each.value.id
  power_off_allowed  = true

  vgpu {
    profile = "grid_a100-20c"
    count   = 2
  }

  # The host's graphics first, so the plan checks the profile against what
  # the host offers after them; both VM resources reconfigure the VM, one at
  # a time.
  depends_on = [vspherehpc_host_graphics.vgpu, vspherehpc_vm_pvrdma_nic.node]
}

output "vgpu_nodes" {
  value = {
    for name, m in vspherehpc_vm_gpu_mmio.node : name => {
      vgpus        = m.vgpu
      mmio_size_gb = m.mmio_size_gb
      pvrdma_mac   = vspherehpc_vm_pvrdma_nic.node[name].mac_address
    }
  }
}
