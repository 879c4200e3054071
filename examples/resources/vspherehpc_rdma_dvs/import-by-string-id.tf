import {
  to = vspherehpc_rdma_dvs.pvrdma
  id = "/hpc-dc/network/pvrdma-dvs"
}
