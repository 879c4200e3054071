terraform {
  required_version = ">= 1.8"
  required_providers {
    vspherehpc = {
      source = "vspherehpc/vspherehpc"
    }
  }
}

locals {
  gpu_memory_gb = [80, 80] # two H100 80GB
}

# With the vSphere provider:
#   extra_config = provider::vspherehpc::mmio_extra_config(local.gpu_memory_gb)
output "extra_config" {
  value = provider::vspherehpc::mmio_extra_config(local.gpu_memory_gb)
}
