# Import by the host's managed object id: every device with passthrough on is
# managed. Or name the devices after a colon. Destroy leaves imported devices on.
terraform import vspherehpc_host_pci_passthrough.gpus host-12
terraform import vspherehpc_host_pci_passthrough.gpus host-12:0000:3b:00.0,0000:af:00.0
