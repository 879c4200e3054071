import {
  to = vspherehpc_host_pvrdma_settings.esx["esx01.example.com"]
  identity = {
    host_system_id = "host-12"
  }
}
