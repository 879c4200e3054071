package acctest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// StartLab gives a test its own simulated vCenter, closed when the test
// ends, so tests run in parallel.
func StartLab(t testing.TB, opts vcsimlab.Options) *vcsimlab.Lab {
	t.Helper()
	lab, err := vcsimlab.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting lab: %v", err)
	}
	t.Cleanup(lab.Close)
	return lab
}

// Must stops the test when a step of its own setup fails: a change made
// through the lab's admin methods (an administrator's change behind
// Terraform's back), a file written.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("setting up the test: %v", err)
	}
}

// RequiredProviders names the provider's source, in the namespace the
// testing framework serves it under (TF_ACC_PROVIDER_NAMESPACE, which the
// Makefile sets, else "hashicorp"). Test configurations need it only where
// the framework does not add it: import-block steps, and Terraform run
// directly.
var RequiredProviders = fmt.Sprintf(`
terraform {
  required_providers {
    vspherehpc = {
      source = "registry.terraform.io/%s/vspherehpc"
    }
  }
}
`, cmp.Or(os.Getenv("TF_ACC_PROVIDER_NAMESPACE"), "hashicorp"))

// ProviderConfig is the provider block for a lab, trusting its CA (an
// external vCenter without a CA file: not verifying it).
func ProviderConfig(lab *vcsimlab.Lab) string {
	if lab.CertFile == "" {
		return fmt.Sprintf(`
provider "vspherehpc" {
  vsphere_server       = %q
  user                 = %q
  password             = %q
  allow_unverified_ssl = true
}
`, lab.URL.Host, lab.Username, lab.Password)
	}
	return fmt.Sprintf(`
provider "vspherehpc" {
  vsphere_server = %q
  user           = %q
  password       = %q
  ca_file        = %q
}
`, lab.URL.Host, lab.Username, lab.Password, lab.CertFile)
}
