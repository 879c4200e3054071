resource "vspherehpc_vm_pvrdma_nic" "this" {
  count = var.pvrdma_adapter ? 1 : 0

  virtual_machine_id        = var.virtual_machine_id
  distributed_port_group_id = var.port_group_id
  device_protocol           = var.device_protocol
  power_off_allowed         = var.power_off_allowed

  lifecycle {
    precondition {
      condition     = var.port_group_id != null
      error_message = "pvrdma_adapter is true but port_group_id is not set: give the PVRDMA port group, or set pvrdma_adapter = false for a node without one."
    }
  }
}

resource "vspherehpc_vm_gpu_mmio" "this" {
  # Devices without GPUs plan too, so the precondition refuses them instead of dropping them.
  count = length(var.gpu_pci_ids) + length(var.pci_device_ids) + length(var.vgpus) == 0 ? 0 : 1

  virtual_machine_id = var.virtual_machine_id
  power_off_allowed  = var.power_off_allowed
  peer_to_peer       = var.peer_to_peer
  numa_node_affinity = var.numa_node_affinity

  dynamic "gpu" {
    for_each = var.gpu_pci_ids
    content {
      pci_id = gpu.value
    }
  }

  dynamic "vgpu" {
    for_each = var.vgpus
    content {
      profile = vgpu.key
      count   = vgpu.value == 1 ? null : vgpu.value
    }
  }

  dynamic "pci_device" {
    for_each = var.pci_device_ids
    content {
      pci_id = pci_device.value
    }
  }

  # The GPUs and the PVRDMA adapter both reconfigure the VM; one at a time.
  depends_on = [vspherehpc_vm_pvrdma_nic.this]

  lifecycle {
    precondition {
      condition     = length(var.gpu_pci_ids) + length(var.vgpus) > 0 || length(var.pci_device_ids) == 0
      error_message = "pci_device_ids is given but gpu_pci_ids and vgpus are empty: this module passes devices (InfiniBand VFs, ConnectX PFs) through beside the VM's GPUs or vGPUs, which size the MMIO window. List the GPUs in gpu_pci_ids or the vGPUs in vgpus, or, for a node without GPUs, pass the devices through with a vspherehpc_vm_gpu_mmio of its own that sets mmio_size_gb."
    }
  }
}
