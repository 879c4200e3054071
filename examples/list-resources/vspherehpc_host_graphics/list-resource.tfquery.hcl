# The hosts of a cluster whose graphics settings are not ESXi's defaults: a
# default graphics type other than Shared, the consolidation policy, or GPUs
# with a type of their own.
list "vspherehpc_host_graphics" "hosts" {
  provider         = vspherehpc
  include_resource = true
  config {
    cluster_id = "domain-c8"
  }
}
