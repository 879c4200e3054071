import {
  to = vspherehpc_host_pvrdma_settings.esx["esx01.example.com"]
  id = "host-12"
}
