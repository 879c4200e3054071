import {
  to = vspherehpc_host_graphics.esx["esx01.example.com"]
  identity = {
    host_system_id = "host-12"
  }
}
