# Import by the VM's UUID. The MMIO settings found at import are the ones destroy leaves in place.
terraform import vspherehpc_vm_gpu_mmio.gpu_node 4223b7a1-6f21-4a7e-9c1e-0f3d5a6b7c8d
