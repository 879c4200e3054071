# Credentials usually come from the environment (VSPHERE_SERVER, VSPHERE_USER,
# VSPHERE_PASSWORD, VSPHERE_CA_FILE), the same variables the vSphere provider reads.
provider "vspherehpc" {
  vsphere_server = "vcenter.example.com"
  user           = "administrator@vsphere.local"
  password       = var.vsphere_password

  # Trust the VMCA root that signed vCenter's certificate.
  ca_file = "${path.module}/vmca-root.pem"
}

variable "vsphere_password" {
  type      = string
  sensitive = true
}
