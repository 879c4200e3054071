import {
  to = vspherehpc_host_pci_passthrough.gpus
  id = "host-12:0000:3b:00.0,0000:af:00.0"
}
