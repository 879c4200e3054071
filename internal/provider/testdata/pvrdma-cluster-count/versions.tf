terraform {
  required_version = ">= 1.5"

  required_providers {
    vspherehpc = {
      source  = "vspherehpc/vspherehpc"
      version = ">= 0.1.0"
    }
  }
}
