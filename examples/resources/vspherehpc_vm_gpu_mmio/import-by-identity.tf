import {
  to = vspherehpc_vm_gpu_mmio.gpu_node
  identity = {
    virtual_machine_id = "4223b7a1-6f21-4a7e-9c1e-0f3d5a6b7c8d"
  }
}
