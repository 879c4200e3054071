output "pvrdma_mac_address" {
  description = "MAC address of the PVRDMA adapter; null without one."
  value       = one(vspherehpc_vm_pvrdma_nic.this[*].mac_address)
}

output "mmio_size_gb" {
  description = "pciPassthru.64bitMMIOSizeGB of the VM; null without GPUs."
  value       = one(vspherehpc_vm_gpu_mmio.this[*].mmio_size_gb)
}

output "total_gpu_memory_gb" {
  description = "Framebuffer memory of the passed-through GPUs; null without GPUs."
  value       = one(vspherehpc_vm_gpu_mmio.this[*].total_gpu_memory_gb)
}

output "guest_setup" {
  description = "What to run inside the guest (Ubuntu) once it boots: the packages, module load order and checks of the guide Guest configuration and troubleshooting."
  value = join("\n", compact([
    length(var.gpu_pci_ids) == 0 ? "" : <<-EOT
      # GPUs: ${length(var.gpu_pci_ids)} passed through, MMIO window ${one(vspherehpc_vm_gpu_mmio.this[*].mmio_size_gb)} GB, EFI firmware.
      # Install the GPU driver, then check that every GPU is visible:
      nvidia-smi -L   # expect ${length(var.gpu_pci_ids)} GPU(s)
    EOT
    ,
    !var.pvrdma_adapter ? "" : <<-EOT
      # PVRDMA adapter ${one(vspherehpc_vm_pvrdma_nic.this[*].mac_address)} (${var.device_protocol}).
      sudo apt-get install rdma-core infiniband-diags ibverbs-utils perftest   # perftest: ib_send_bw
      # vmw_pvrdma must load after these modules (run at every boot, e.g. from a systemd unit):
      sudo modprobe mlx4_ib
      sudo modprobe ib_umad
      sudo modprobe rdma_cm
      sudo modprobe rdma_ucm
      sudo modprobe -r vmw_pvrdma   # udev loaded it first; reload it last
      sudo modprobe vmw_pvrdma
      ibv_devinfo     # expect one device, port state PORT_ACTIVE
      # Line rate between two nodes: on one, `ib_send_bw --report_gbits`; on the other:
      ib_send_bw --report_gbits <first node's PVRDMA address>
    EOT
  ]))
}

output "vgpus" {
  description = "The VM's vGPUs, profile to count, as vCenter reports them."
  value       = length(vspherehpc_vm_gpu_mmio.this) == 0 ? {} : { for v in vspherehpc_vm_gpu_mmio.this[0].vgpu : v.profile => coalesce(v.count, 1) }
}

output "pci_device_ids" {
  description = "The other passthrough devices of the VM (InfiniBand VFs or PFs), as vCenter reports them."
  value       = length(vspherehpc_vm_gpu_mmio.this) == 0 ? [] : vspherehpc_vm_gpu_mmio.this[0].pci_device[*].pci_id
}
