# Everything of the datacenter that a vspherehpc resource would manage, with the resources themselves
# (include_resource), so that -generate-config-out can write their configuration.

list "vspherehpc_rdma_dvs" "switch" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = data.vspherehpc_datacenter.dc.id
  }
}

list "vspherehpc_host_pvrdma_settings" "host" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = data.vspherehpc_datacenter.dc.id
  }
}

list "vspherehpc_host_pci_passthrough" "host" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = data.vspherehpc_datacenter.dc.id
  }
}

list "vspherehpc_host_sriov" "pf" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = data.vspherehpc_datacenter.dc.id
  }
}

list "vspherehpc_host_graphics" "host" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = data.vspherehpc_datacenter.dc.id
  }
}

list "vspherehpc_vm_pvrdma_nic" "adapter" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = data.vspherehpc_datacenter.dc.id
  }
}

list "vspherehpc_vm_sriov_nic" "adapter" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = data.vspherehpc_datacenter.dc.id
  }
}

list "vspherehpc_vm_gpu_mmio" "vm" {
  provider         = vspherehpc
  include_resource = true
  config {
    datacenter_id = data.vspherehpc_datacenter.dc.id
  }
}
