variable "esxi_hosts" {
  description = "The ESXi hosts of the PVRDMA cluster, as vCenter names them: every host of the cluster its VMs run in, as vSphere refuses a PVRDMA adapter otherwise."
  type        = list(string)
  default     = ["esx01.example.com", "esx02.example.com", "esx03.example.com"]
}

data "vspherehpc_datacenter" "dc" {
  name = "hpc-dc"
}

data "vspherehpc_host" "esx" {
  for_each = toset(var.esxi_hosts)

  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

# The PVRDMA switch as it is built by hand: 4 uplink ports, NIOC off, MTU 9000,
# one port group for the VMs, and on each host its 100 GbE RDMA NIC as the
# only uplink.
resource "vspherehpc_rdma_dvs" "pvrdma" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "pvrdma-dvs"

  port_group {
    name = "VM 100GbE Network"
  }

  dynamic "host" {
    for_each = data.vspherehpc_host.esx
    content {
      host_system_id = host.value.id
      # The first RDMA NIC with a link that no other switch uses.
      vmnic = [for n in host.value.physical_nics : n.name if n.rdma_capable && n.link_up && (n.switch == "" || n.switch == "pvrdma-dvs")][0]
    }
  }
}

output "pvrdma_port_group_id" {
  value = vspherehpc_rdma_dvs.pvrdma.port_group_id
}
