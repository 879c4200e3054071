terraform {
  required_version = ">= 1.8"
  required_providers {
    vspherehpc = {
      source = "vspherehpc/vspherehpc"
    }
  }
}

# Two H100 80GB: 160 GB in all, so a 512 GB window (the smallest power of
# two at least twice the total).
output "mmio_size_gb" {
  value = provider::vspherehpc::mmio_size_gb([80, 80])
}

# No passthrough GPU, two NVIDIA vGPUs: 64 GB.
output "mmio_size_gb_vgpus" {
  value = provider::vspherehpc::mmio_size_gb([], "grid_a100-20c", "grid_a100-20c")
}
