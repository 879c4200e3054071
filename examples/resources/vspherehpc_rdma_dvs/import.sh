# Import by the switch's UUID (as vCenter and vsphere_distributed_virtual_switch.id show it) ...
terraform import vspherehpc_rdma_dvs.pvrdma "50 1a 2b 3c 4d 5e 6f 70-81 92 a3 b4 c5 d6 e7 f8"

# ... or by its inventory path.
terraform import vspherehpc_rdma_dvs.pvrdma /hpc-dc/network/pvrdma-dvs

# A switch with more than one port group: name the one this resource manages.
terraform import vspherehpc_rdma_dvs.pvrdma "/hpc-dc/network/pvrdma-dvs:VM 100GbE Network"

# Or adopt the switch without any of its port groups: the next apply creates the
# configuration's.
terraform import vspherehpc_rdma_dvs.pvrdma "/hpc-dc/network/pvrdma-dvs:"
