data "vspherehpc_datacenter" "dc" {
  name = "hpc-dc"
}

# With a single datacenter in vCenter, the name can be left out.
data "vspherehpc_datacenter" "only" {}
