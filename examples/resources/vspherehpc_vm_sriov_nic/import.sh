# Import by <VM UUID>:<device key>; vspherehpc_virtual_machine lists a VM's adapters with their keys.
terraform import vspherehpc_vm_sriov_nic.node 4223b7a1-6f21-4a7e-9c1e-0f3d5a6b7c8d:4001
