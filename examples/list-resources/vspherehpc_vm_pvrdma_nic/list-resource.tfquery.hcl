# The PVRDMA adapters of the VMs on a cluster's hosts.
list "vspherehpc_vm_pvrdma_nic" "nodes" {
  provider         = vspherehpc
  include_resource = true
  config {
    cluster_id = "domain-c8"
  }
}
