package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// TestAccProvider_passwordNeverLogged runs a full acceptance test at TRACE,
// with SOAP bodies traced, and asserts the password is nowhere in the log.
// The password comes from the environment: an HCL literal would be logged by
// the test harness itself. Not parallel: it sets environment variables.
func TestAccProvider_passwordNeverLogged(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	logDir := t.TempDir()
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_LOG_PATH_MASK", filepath.Join(logDir, "%s.log"))
	t.Setenv(envPassword, lab.Password)

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "vspherehpc" {
  vsphere_server = %q
  user           = %q
  ca_file        = %q
}
data "vspherehpc_datacenter" "dc" {}
data "vspherehpc_host" "h" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = %q
}
data "vspherehpc_virtual_machine" "vm" {
  virtual_machine_id = %q
}
`, lab.URL.Host, lab.Username, lab.CertFile, lab.HostNames()[0], lab.VMUUID(lab.VMNames()[0])),
		}},
	})

	logs, err := filepath.Glob(filepath.Join(logDir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no log written (%v)", err)
	}
	var all strings.Builder
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	log := all.String()
	// The log must hold the traffic that carried the password, or this test proves nothing.
	for _, want := range []string{"vSphere SOAP request", "Login", "RetrievePropertiesEx"} {
		if !strings.Contains(log, want) {
			t.Fatalf("the TRACE log lacks %q; is SOAP tracing wired up?", want)
		}
	}
	if strings.Contains(log, lab.Password) {
		t.Fatal("the password appears in the TRACE log")
	}
}
