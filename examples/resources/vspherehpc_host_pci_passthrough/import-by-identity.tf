# Adopts the two devices named; leave pci_ids out to adopt every device of
# the host with passthrough on.
import {
  to = vspherehpc_host_pci_passthrough.gpus
  identity = {
    host_system_id = "host-12"
    pci_ids        = ["0000:3b:00.0", "0000:5e:00.0"]
  }
}
