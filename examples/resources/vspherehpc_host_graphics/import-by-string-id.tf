import {
  to = vspherehpc_host_graphics.esx["esx01.example.com"]
  id = "host-12"
}
