# A GPU/HPC node from the vSphere provider, with a regular vmxnet3 adapter
# first (for management) and hardware version 13 or later.
resource "vsphere_virtual_machine" "node" {
  # ...
  hardware_version = 19

  network_interface {
    network_id = data.vsphere_network.mgmt.id
  }

  lifecycle {
    # The PVRDMA adapter is managed by vspherehpc_vm_pvrdma_nic: without this,
    # the vSphere provider would plan to remove it.
    ignore_changes = [network_interface]
  }
}

resource "vspherehpc_vm_pvrdma_nic" "node" {
  virtual_machine_id        = vsphere_virtual_machine.node.id
  distributed_port_group_id = vspherehpc_rdma_dvs.pvrdma.port_group_id
  device_protocol           = "rocev2"

  # Without mac_address vSphere generates one. A static one with VMware's
  # prefix must be in its static range, 00:50:56:00:00:00 to 00:50:56:3f:ff:ff:
  # mac_address = "00:50:56:1a:2b:3c"

  # The VM runs: let the provider shut the guest down, add the adapter and
  # power it back on.
  power_off_allowed = true
}

output "pvrdma_mac" {
  value = vspherehpc_vm_pvrdma_nic.node.mac_address
}
