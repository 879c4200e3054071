# Adopts every device of the host with passthrough on.
import {
  to = vspherehpc_host_pci_passthrough.gpus
  identity = {
    host_system_id = "host-12"
  }
}
