# Terraform 1.16 and later: reboot after the passthrough change is destroyed
# too (turning passthrough off also waits for a reboot on such hosts), and stop
# the apply if the reboot fails.
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

resource "vspherehpc_host_pci_passthrough" "a100" {
  host_system_id = data.vspherehpc_host.esx.id
  match {
    vendor_id = "10de"
    device_id = "20f1"
  }
  lifecycle {
    action_trigger {
      events  = [after_create, after_update, after_destroy]
      actions = [action.vspherehpc_host_reboot.esx]
      # halt (the default, said here for the reader): a failed reboot stops the
      # apply before what depends on this resource, which stays in state as it
      # is. Not taint: the next apply would replace a resource just created,
      # turning passthrough off and on again (two more reboots). Not continue:
      # the GPU VMs that depend on it would change while the devices are not
      # active.
      on_failure = halt
    }
  }
}
