# Import by <host id>:<PCI id of the physical function>. Destroy then leaves
# SR-IOV as it was found.
terraform import 'vspherehpc_host_sriov.connectx["0000:86:00.0"]' host-12:0000:86:00.0
