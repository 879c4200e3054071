import {
  to = vspherehpc_host_sriov.connectx["0000:86:00.0"]
  identity = {
    host_system_id = "host-12"
    pci_id         = "0000:86:00.0"
  }
}
