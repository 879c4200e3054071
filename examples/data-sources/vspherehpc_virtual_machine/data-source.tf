# By the id the vSphere provider exports (the VM's UUID) ...
data "vspherehpc_virtual_machine" "node" {
  virtual_machine_id = vsphere_virtual_machine.node.id
}

# ... or by name within a datacenter.
data "vspherehpc_datacenter" "dc" {
  name = "hpc-dc"
}

data "vspherehpc_virtual_machine" "login" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "login-01"
}

output "node_ready_for_pvrdma" {
  value = data.vspherehpc_virtual_machine.node.hardware_version >= 13
}
