import {
  to = vspherehpc_host_sriov.connectx["0000:86:00.0"]
  id = "host-12:0000:86:00.0"
}
