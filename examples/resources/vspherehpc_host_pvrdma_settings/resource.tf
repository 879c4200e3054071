variable "datacenter" {
  type    = string
  default = "hpc-dc"
}

variable "esxi_hosts" {
  description = "The ESXi hosts of the PVRDMA cluster, as vCenter names them."
  type        = list(string)
  default     = ["esx01.example.com", "esx02.example.com", "esx03.example.com"]
}

data "vspherehpc_datacenter" "dc" {
  name = var.datacenter
}

data "vspherehpc_host" "esx" {
  for_each = toset(var.esxi_hosts)

  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

locals {
  # Computed once: each host's settings then read one value, not every look-up
  # (see the guide "Building a PVRDMA cluster", "At fleet size").
  host_ids = { for name, h in data.vspherehpc_host.esx : name => h.id }
  vmk1_addresses = [
    for h in data.vspherehpc_host.esx : one([for v in h.vmkernel_nics : v.ip_address if v.name == "vmk1"])
  ]
}

# Every host of the cluster: PVRDMA control traffic on vmk1, and the pvrdma
# ruleset open only to the other hosts' vmk1 addresses.
resource "vspherehpc_host_pvrdma_settings" "esx" {
  for_each = local.host_ids

  host_system_id       = each.value
  vmknic               = "vmk1"
  firewall_allowed_ips = local.vmk1_addresses
}
