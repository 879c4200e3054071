variable "datacenter_id" {
  type        = string
  description = "Managed object id of the datacenter, e.g. data.vspherehpc_datacenter.dc.id."

  validation {
    condition     = length(trimspace(var.datacenter_id)) > 0
    error_message = "datacenter_id is empty: give the datacenter's managed object id, e.g. data.vspherehpc_datacenter.dc.id."
  }
}

variable "host_names" {
  type        = list(string)
  default     = []
  description = "Names of the ESXi hosts that join the PVRDMA switch, as vCenter shows them. Give either this or cluster_name."

  validation {
    condition     = length(distinct(var.host_names)) == length(var.host_names)
    error_message = "host_names lists ${join(", ", [for h in distinct(var.host_names) : h if length([for x in var.host_names : x if x == h]) > 1])} more than once: list each host once (PVRDMA gives a host one uplink on the switch)."
  }
}

variable "cluster_name" {
  type        = string
  default     = null
  description = "Name of a cluster whose hosts all join the PVRDMA switch, instead of host_names. A host added to the cluster joins at the next apply."

  validation {
    condition     = var.cluster_name == null || length(trimspace(coalesce(var.cluster_name, " "))) > 0
    error_message = "cluster_name is empty: name the cluster, or leave it null and list host_names."
  }
}

variable "vmnic" {
  type        = string
  default     = null
  description = "The RoCE NIC every host gives the switch as its uplink, e.g. \"vmnic4\". Leave null to pick, per host, the first RDMA-capable NIC of 100 Gb/s or more whose link is up and that no switch claims."

  validation {
    condition     = var.vmnic == null || can(regex("^vmnic[0-9]+$", var.vmnic))
    error_message = "vmnic must name a physical NIC such as vmnic4, or be null to pick one per host."
  }
}

variable "vmknic" {
  type        = string
  default     = "vmk1"
  description = "The VMkernel adapter PVRDMA uses on every host (Net.PVRDMAVmknic), and the one the MTU measurement probes over."

  validation {
    condition     = can(regex("^vmk[0-9]+$", var.vmknic))
    error_message = "vmknic must name a VMkernel adapter such as vmk1."
  }
}

variable "switch_name" {
  type        = string
  default     = "pvrdma-dvs"
  description = "Name of the distributed switch."
}

variable "port_group_name" {
  type        = string
  default     = "VM 100GbE Network"
  description = "Name of the port group the VMs' PVRDMA adapters connect to."
}

variable "mtu" {
  type        = number
  default     = 9000
  description = "The switch MTU. The module measures the fabric and stops the plan when it does not carry packets this big between every pair of hosts."

  validation {
    condition     = var.mtu >= 1280 && var.mtu <= 9000 && floor(var.mtu) == var.mtu
    error_message = "mtu must be a whole number from 1280 to 9000."
  }
}
