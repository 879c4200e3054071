# The hosts of a cluster with PVRDMA set up: Net.PVRDMAVmknic set, or the
# pvrdma firewall ruleset on.
list "vspherehpc_host_pvrdma_settings" "hosts" {
  provider         = vspherehpc
  include_resource = true
  config {
    cluster_id = "domain-c8"
  }
}
