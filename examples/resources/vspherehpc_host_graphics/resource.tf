variable "datacenter" {
  type    = string
  default = "hpc-dc"
}

variable "vgpu_hosts" {
  description = "The ESXi hosts whose GPUs NVIDIA vGPU shares, as vCenter names them."
  type        = list(string)
  default     = ["esx01.example.com", "esx02.example.com"]
}

data "vspherehpc_datacenter" "dc" {
  name = var.datacenter
}

data "vspherehpc_host" "esx" {
  for_each = toset(var.vgpu_hosts)

  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = each.value
}

locals {
  host_ids = { for name, h in data.vspherehpc_host.esx : name => h.id }
}

# Every GPU of these hosts that is not passed through is shared by NVIDIA's
# vGPU manager (Shared Direct), and vGPU VMs fill one GPU before the next.
# The GPUs are driven so once the host's graphics restart: reboot_allowed lets
# the apply reboot each host (one per cluster at a time), moving its running
# VMs off with DRS first.
resource "vspherehpc_host_graphics" "esx" {
  for_each = local.host_ids

  host_system_id        = each.value
  default_graphics_type = "sharedDirect"
  assignment_policy     = "consolidation"
  reboot_allowed        = true
}
