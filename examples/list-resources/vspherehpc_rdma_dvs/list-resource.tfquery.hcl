# The distributed switches of a datacenter, with their resources, so that
# `terraform query -generate-config-out=switches.tf` writes them to adopt.
list "vspherehpc_rdma_dvs" "switches" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = "datacenter-3"
  }
}

# One switch, by name.
list "vspherehpc_rdma_dvs" "pvrdma" {
  provider = vspherehpc
  config {
    name = "pvrdma-dvs"
  }
}
