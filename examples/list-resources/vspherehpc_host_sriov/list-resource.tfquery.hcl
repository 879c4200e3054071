# The physical functions with SR-IOV on, on two hosts.
list "vspherehpc_host_sriov" "connectx" {
  provider         = vspherehpc
  include_resource = true
  config {
    host_system_ids = ["host-12", "host-15"]
  }
}
