# port_group_key names the port group the resource manages; left out, the
# switch's only one is adopted, and "" adopts the switch without one.
import {
  to = vspherehpc_rdma_dvs.pvrdma
  identity = {
    id             = "50 1a 2b 3c 4d 5e 6f 70-81 92 a3 b4 c5 d6 e7 f8"
    port_group_key = "dvportgroup-17"
  }
}
