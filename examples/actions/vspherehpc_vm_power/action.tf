# Terraform 1.14 and later:
#   terraform apply -invoke=action.vspherehpc_vm_power.restart
action "vspherehpc_vm_power" "restart" {
  config {
    virtual_machine_id = "4223b7a1-6f21-4a7e-9c1e-0f3d5a6b7c8d"
    power              = "restart"
    shutdown_timeout   = "5m"
    power_off_allowed  = true # power off hard if the guest does not shut down in time
  }
}
