variable "virtual_machine_id" {
  type        = string
  description = "The VM's UUID (vsphere_virtual_machine.id) or managed object id (vm-42)."

  validation {
    condition     = length(trimspace(var.virtual_machine_id)) > 0
    error_message = "virtual_machine_id is empty: give the VM's UUID or managed object id."
  }
}

variable "pvrdma_adapter" {
  type        = bool
  default     = true
  description = "Add a PVRDMA adapter on port_group_id. A separate switch because count must be known at plan time, and a port group created in the same apply is not."
}

variable "port_group_id" {
  type        = string
  default     = null
  description = "Managed object id of the PVRDMA port group (the pvrdma-cluster module's port_group_id). Required with pvrdma_adapter; may be known only after apply."
}

variable "device_protocol" {
  type        = string
  default     = "rocev2"
  description = "RoCE version of the PVRDMA adapter: rocev2 or rocev1."

  validation {
    condition     = contains(["rocev2", "rocev1"], var.device_protocol)
    error_message = "device_protocol must be rocev2 or rocev1."
  }
}

variable "gpu_pci_ids" {
  type        = list(string)
  default     = []
  description = "PCI ids of the GPUs to pass through, on the VM's host, e.g. [\"0000:3b:00.0\"] (vspherehpc_host's gpus). Empty for a PVRDMA node without GPUs."

  validation {
    condition     = alltrue([for id in var.gpu_pci_ids : can(regex("^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$", id))]) && length(distinct(var.gpu_pci_ids)) == length(var.gpu_pci_ids)
    error_message = "gpu_pci_ids must be distinct PCI ids such as 0000:3b:00.0 (lower-case hex)."
  }
}

variable "vgpus" {
  type        = map(number)
  default     = {}
  description = "NVIDIA vGPUs: profile to count, e.g. { \"grid_a100-20c\" = 2 }. The profiles must be offered by the VM's host (vspherehpc_host's vgpu_profiles; its GPUs in Shared Direct, vspherehpc_host_graphics), of one board and series, at most 8 in all."

  validation {
    condition     = alltrue([for p, n in var.vgpus : n >= 1 && n <= 8 && floor(n) == n]) && sum(concat([0], values(var.vgpus))) <= 8
    error_message = "vgpus gives each profile a whole count from 1 to 8, and at most 8 vGPUs in all (vSphere 8)."
  }
}

variable "pci_device_ids" {
  type        = list(string)
  default     = []
  description = "PCI ids of other devices to pass through beside the GPUs, on the VM's host: InfiniBand VFs or whole ConnectX PFs (vspherehpc_host's pci_devices), with passthrough active."

  validation {
    condition     = alltrue([for id in var.pci_device_ids : can(regex("^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$", id))]) && length(distinct(var.pci_device_ids)) == length(var.pci_device_ids)
    error_message = "pci_device_ids must be distinct PCI ids such as 0000:86:00.1 (lower-case hex)."
  }
}

variable "peer_to_peer" {
  type        = bool
  default     = null
  description = "GPUDirect RDMA: true sets pciPassthru.allowP2P and pciPassthru.RelaxACSforP2P, so the GPUs and an InfiniBand or RoCE device exchange data over PCIe; false removes them; null leaves them as they are."
}

variable "numa_node_affinity" {
  type        = set(number)
  default     = null
  description = "NUMA nodes to keep the VM's vCPUs and memory on (numa.nodeAffinity): the numa_node vspherehpc_host gives the GPUs and the InfiniBand card; an empty set removes the key; null leaves it as it is."
}

variable "power_off_allowed" {
  type        = bool
  default     = false
  description = "Let the provider shut a running VM down for the changes and power it back on. Off: the plan fails on a running VM."
}
