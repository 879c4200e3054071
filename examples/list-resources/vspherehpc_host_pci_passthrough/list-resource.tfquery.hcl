# The hosts of a datacenter with passthrough on for any device, each with
# those devices.
list "vspherehpc_host_pci_passthrough" "gpus" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = "datacenter-3"
  }
}
