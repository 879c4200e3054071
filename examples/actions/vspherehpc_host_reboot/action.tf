# Terraform 1.14 and later. Reboot a host on demand:
#   terraform apply -invoke=action.vspherehpc_host_reboot.esx
action "vspherehpc_host_reboot" "esx" {
  config {
    host_system_id = data.vspherehpc_host.esx.id
  }
}

data "vspherehpc_datacenter" "dc" {
  name = "hpc-dc"
}

data "vspherehpc_host" "esx" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = "esx01.example.com"
}

# Or after every passthrough change that waits for a reboot (the resource's
# reboot_allowed does the same inside its own apply).
resource "vspherehpc_host_pci_passthrough" "a100" {
  host_system_id = data.vspherehpc_host.esx.id
  match {
    vendor_id = "10de"
    device_id = "20f1"
  }
  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.vspherehpc_host_reboot.esx]
    }
  }
}
