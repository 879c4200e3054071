data "vspherehpc_datacenter" "dc" {
  name = "hpc-dc"
}

data "vspherehpc_cluster" "hpc" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "hpc-cluster"
}

# Every host of the cluster, with its NICs and GPUs.
data "vspherehpc_host" "all" {
  count = length(data.vspherehpc_cluster.hpc.host_names)

  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = data.vspherehpc_cluster.hpc.host_names[count.index]
}

output "hosts" {
  value = data.vspherehpc_cluster.hpc.host_names
}
