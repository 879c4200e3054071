data "vspherehpc_datacenter" "dc" {
  name = "hpc-dc"
}

# The VM's host.
data "vspherehpc_host" "esx01" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "esx01.example.com"
}

data "vspherehpc_cluster" "hpc" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "hpc-cluster"
}

# The HPC switch: vmnic4 of every host of the VM's cluster as its uplink.
resource "vspherehpc_rdma_dvs" "hpc" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "hpc-dvs"

  port_group {
    name = "HPC Network"
  }

  dynamic "host" {
    for_each = toset(data.vspherehpc_cluster.hpc.host_system_ids)
    content {
      host_system_id = host.value
      vmnic          = "vmnic4"
    }
  }
}

# SR-IOV on vmnic4's ConnectX port (PCI function 0000:d8:00.0) on the VM's
# host: its virtual functions back the VMs' SR-IOV adapters.
resource "vspherehpc_host_sriov" "esx01_vmnic4" {
  host_system_id        = data.vspherehpc_host.esx01.id
  pci_id                = "0000:d8:00.0"
  num_virtual_functions = 8
}

resource "vspherehpc_vm_sriov_nic" "node" {
  virtual_machine_id        = vsphere_virtual_machine.node.id
  distributed_port_group_id = vspherehpc_rdma_dvs.hpc.port_group_id

  # A PCI id pins the physical NIC; "automatic" lets vCenter pick an
  # SR-IOV-active uplink of the port group's switch at power on.
  physical_function = vspherehpc_host_sriov.esx01_vmnic4.pci_id

  # The VM runs: let the provider shut the guest down, add the adapter and
  # power it back on.
  power_off_allowed = true
}

output "virtual_function" {
  value = vspherehpc_vm_sriov_nic.node.virtual_function # assigned at power on
}
