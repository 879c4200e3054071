data "vspherehpc_datacenter" "dc" {
  name = "dc-hpc"
}

# Every host's id in one object: what a configuration that needs only ids
# reads, rather than a vspherehpc_host (NICs, GPUs, PCI devices) per host.
data "vspherehpc_cluster" "hpc" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "hpc-cluster"
}

# Probe every ordered pair of hosts over the PVRDMA vmknic.
data "vspherehpc_max_mtu" "fabric" {
  host_system_ids = data.vspherehpc_cluster.hpc.host_system_ids
  vmknic          = "vmk1"
}

# Stop the plan when the fabric does not carry jumbo frames end to end.
check "jumbo_frames" {
  assert {
    condition     = data.vspherehpc_max_mtu.fabric.mtu >= 9000
    error_message = "The fabric carries ${data.vspherehpc_max_mtu.fabric.mtu}-byte packets, not 9000."
  }
}

# The host matrix: "source -> target" = MTU.
output "mtu_matrix" {
  value = {
    for p in data.vspherehpc_max_mtu.fabric.pairs :
    "${p.source_host_name} -> ${p.target_host_name}" => p.mtu
  }
}

# From the machine running Terraform to the storage network's gateways.
data "vspherehpc_max_mtu" "from_runner" {
  targets = ["10.20.0.1", "nfs.hpc.example.com"]
  max_mtu = 9000
}
