data "vspherehpc_cluster" "this" {
  count = var.cluster_name == null ? 0 : 1

  datacenter_id = var.datacenter_id
  name          = var.cluster_name
}

# Keyed by host name: a host added to or removed from the middle of the list
# changes that host only.
data "vspherehpc_host" "this" {
  for_each = toset(local.host_names)

  datacenter_id = var.datacenter_id
  name          = each.key
}

locals {
  host_names = var.cluster_name == null ? var.host_names : data.vspherehpc_cluster.this[0].host_names
  # The host settings' for_each: a map computed once, not the look-ups themselves, which Terraform would read
  # in full again for each host (see the guide's "At fleet size").
  host_ids = { for name, h in data.vspherehpc_host.this : name => h.id }

  # The uplink per host: the given vmnic, or the first RDMA NIC of 100 Gb/s or more with its link up that
  # no other switch claims (this one does after the first apply, and must keep it).
  uplinks = {
    for h in data.vspherehpc_host.this : h.name => coalesce(var.vmnic, try([
      for n in h.physical_nics : n.name if n.rdma_capable && n.link_up && n.speed_mbps >= 100000 && contains(["", var.switch_name], n.switch)
    ][0], "none"))
  }
  # Hosts whose PVRDMA vmknic itself is below the switch MTU, as "name (mtu)".
  low_vmknic_hosts = [
    for h in data.vspherehpc_host.this : "${h.name} (${one([for v in h.vmkernel_nics : v.mtu if v.name == var.vmknic])})"
    if coalesce(one([for v in h.vmkernel_nics : v.mtu if v.name == var.vmknic]), var.mtu) < var.mtu
  ]
  # Every host's PVRDMA vmknic address: the firewall lets only these in.
  vmknic_addresses = [
    for h in data.vspherehpc_host.this : one([for v in h.vmkernel_nics : v.ip_address if v.name == var.vmknic])
  ]
}

# Measure before building: every ordered pair of hosts, over the PVRDMA vmknic.
data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = [for h in data.vspherehpc_host.this : h.id]
  vmknic          = var.vmknic
  max_mtu         = var.mtu

  lifecycle {
    precondition {
      condition     = (var.cluster_name == null) != (length(var.host_names) == 0)
      error_message = "Give either host_names or cluster_name, not both and not neither."
    }
    precondition {
      condition     = length(local.host_names) >= 2
      error_message = "PVRDMA connects VMs across hosts, and the switch would have ${length(local.host_names)}: ${var.cluster_name == null ? "list two or more hosts in host_names" : "cluster ${var.cluster_name} needs two or more hosts"}."
    }
    # Two causes, two fixes: the hosts' own vmknic or switch MTU (configured_mtu), or the physical path.
    postcondition {
      condition = self.mtu >= var.mtu
      error_message = format("The fabric carries %d-byte packets, not the switch MTU %d. %s", self.mtu, var.mtu,
        self.configured_mtu >= var.mtu ? "Worst paths: ${join(", ", [for p in self.pairs : "${p.source_host_name} -> ${p.target_host_name} ${p.mtu}" if p.mtu < var.mtu])}. Raise the MTU of the physical ports on those paths, or lower var.mtu." :
        length(local.low_vmknic_hosts) > 0 ? "The hosts allow less themselves: ${var.vmknic} MTU ${join(", ", local.low_vmknic_hosts)}. Raise it, or lower var.mtu." :
      "The switch that ${var.vmknic} is on allows only ${self.configured_mtu} on some hosts. Raise its MTU, or lower var.mtu.")
    }
  }
}

resource "vspherehpc_rdma_dvs" "this" {
  datacenter_id = var.datacenter_id
  name          = var.switch_name
  mtu           = var.mtu

  port_group {
    name = var.port_group_name
  }

  dynamic "host" {
    for_each = data.vspherehpc_host.this
    content {
      host_system_id = host.value.id
      vmnic          = local.uplinks[host.value.name]
    }
  }

  lifecycle {
    precondition {
      condition     = !contains(values(local.uplinks), "none")
      error_message = "No free RDMA-capable NIC of 100 Gb/s or more with its link up on: ${join(", ", [for h, n in local.uplinks : h if n == "none"])}. Set var.vmnic, or free a NIC."
    }
  }
}

resource "vspherehpc_host_pvrdma_settings" "this" {
  for_each = local.host_ids

  host_system_id       = each.value
  vmknic               = var.vmknic
  firewall_allowed_ips = local.vmknic_addresses
}
