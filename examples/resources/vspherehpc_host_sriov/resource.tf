data "vspherehpc_datacenter" "dc" {}

data "vspherehpc_host" "esx" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "esx01.example.com"
}

# SR-IOV with 8 virtual functions on every ConnectX physical function of the
# host that can do SR-IOV (their firmware must allow it: mlxconfig SRIOV_EN=1).
resource "vspherehpc_host_sriov" "connectx" {
  for_each = toset([for d in data.vspherehpc_host.esx.pci_devices : d.pci_id if d.connectx && d.sriov_capable])

  host_system_id        = data.vspherehpc_host.esx.id
  pci_id                = each.value
  num_virtual_functions = 8
}
