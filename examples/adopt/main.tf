# Adopting a lab built by hand (Terraform 1.14 and later): `terraform query` runs adopt.tfquery.hcl, and
# `terraform query -generate-config-out=adopted.tf` writes a resource and an import block for everything it
# lists. The vCenter connection comes from VSPHERE_SERVER, VSPHERE_USER and VSPHERE_PASSWORD.
terraform {
  required_version = ">= 1.14.0"
  required_providers {
    vspherehpc = {
      source = "vspherehpc/vspherehpc"
    }
  }
}

variable "datacenter" {
  type        = string
  description = "Name of the datacenter whose PVRDMA and GPU setup to adopt."
}

data "vspherehpc_datacenter" "dc" {
  name = var.datacenter
}
