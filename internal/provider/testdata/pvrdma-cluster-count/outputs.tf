output "switch_id" {
  description = "UUID of the PVRDMA distributed switch."
  value       = vspherehpc_rdma_dvs.this.id
}

output "port_group_id" {
  description = "Managed object id of the port group: distributed_port_group_id of vspherehpc_vm_pvrdma_nic."
  value       = vspherehpc_rdma_dvs.this.port_group_id
}

output "uplinks" {
  description = "The uplink NIC of every host, by host name."
  value       = local.uplinks
}

output "measured_mtu" {
  description = "The largest MTU every ordered pair of hosts carries over the PVRDMA vmknic."
  value       = data.vspherehpc_max_mtu.fabric.mtu
}

output "mtu_matrix" {
  description = "Measured MTU per ordered pair of hosts."
  value       = { for p in data.vspherehpc_max_mtu.fabric.pairs : "${p.source_host_name} -> ${p.target_host_name}" => p.mtu }
}
