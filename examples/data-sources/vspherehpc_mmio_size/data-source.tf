# Four H100 80 GB: 320 GB of framebuffer -> a 1024 GB MMIO window.
data "vspherehpc_mmio_size" "four_h100" {
  gpu {
    count     = 4
    memory_gb = 80
  }
}

# Feed it to a VM created by the vSphere provider. No vCenter settings are
# needed for this data source.
resource "vsphere_virtual_machine" "gpu_node" {
  # ...
  firmware                         = "efi"
  memory_reservation_locked_to_max = true
  extra_config                     = data.vspherehpc_mmio_size.four_h100.extra_config
}

# A VM with two NVIDIA vGPUs: at least 64 GB, whatever their frame buffer.
data "vspherehpc_mmio_size" "two_vgpus" {
  vgpu_profiles = ["grid_a100-20c", "grid_a100-20c"]
}
