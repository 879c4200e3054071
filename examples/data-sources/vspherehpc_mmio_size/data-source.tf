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
