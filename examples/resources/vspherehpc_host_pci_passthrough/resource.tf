data "vspherehpc_datacenter" "dc" {}

data "vspherehpc_host" "esx" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "esx01.example.com"
}

# Passthrough on for one device by PCI id, and for every A100 (10de:20f1) of
# the host. Devices not listed are left as they are.
resource "vspherehpc_host_pci_passthrough" "gpus" {
  host_system_id = data.vspherehpc_host.esx.id
  pci_ids        = ["0000:3b:00.0"]

  match {
    vendor_id = "10de"
    device_id = "20f1"
  }
}

# Older ESXi (and some devices) need a reboot before VMs can use a device.
output "reboot_required" {
  value = vspherehpc_host_pci_passthrough.gpus.reboot_required
}

# A GPU pool: every H100 (10de:2330) of another host, labelled "training".
# VMs ask for the pool with a gpu block's label; destroy puts back the labels
# the devices had.
data "vspherehpc_host" "esx02" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "esx02.example.com"
}

resource "vspherehpc_host_pci_passthrough" "training" {
  host_system_id = data.vspherehpc_host.esx02.id

  match {
    vendor_id = "10de"
    device_id = "2330"
  }

  hardware_label = "training"
}
