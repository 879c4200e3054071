# The SR-IOV adapters of every VM of the vCenter.
list "vspherehpc_vm_sriov_nic" "nodes" {
  provider         = vspherehpc
  include_resource = true
}
