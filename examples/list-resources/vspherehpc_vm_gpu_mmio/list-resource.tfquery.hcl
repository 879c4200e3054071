# The VMs of a datacenter with passthrough devices or the MMIO keys.
list "vspherehpc_vm_gpu_mmio" "gpu_nodes" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = "datacenter-3"
  }
}
