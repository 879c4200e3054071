package provider

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// TestAccProvider_passwordNeverLogged runs a full acceptance test at TRACE,
// with SOAP bodies traced, and asserts the password is nowhere in the log.
// Not parallel: it sets environment variables.
func TestAccProvider_passwordNeverLogged(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	log := traceLog(t, lab)
	if strings.Contains(log, lab.Password) {
		t.Fatal("the password appears in the TRACE log")
	}
	if !strings.Contains(log, "<password>********</password>") {
		t.Fatal("the traced Login request lacks the masked password")
	}
}

// TestAccProvider_sessionKeysNeverLogged: whoever reads a session key holds
// the session (on the lab the key is the session cookie). The keys are the
// lab's own list of the sessions the run opened, which the in-process test
// server never logs out. Not parallel: it sets environment variables.
func TestAccProvider_sessionKeysNeverLogged(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	log := traceLog(t, lab)
	keys, err := lab.Sessions(context.Background())
	if err != nil || len(keys) == 0 {
		t.Fatalf("sessions of the run: %v, %v; want at least one", keys, err)
	}
	for _, k := range keys {
		if strings.Contains(log, k) {
			t.Fatalf("session key %s appears in the TRACE log", k)
		}
	}
	if !strings.Contains(log, "LoginResponse") || !strings.Contains(log, "<key>********</key>") {
		t.Fatal("the TRACE log lacks a login answer with its session key masked")
	}
}

// traceLog runs a plan that logs in and reads at TRACE, with SOAP bodies
// traced, and returns everything Terraform and the provider logged. The
// password comes from the environment: an HCL literal would be logged by the
// test harness itself.
func traceLog(t *testing.T, lab *vcsimlab.Lab) string {
	t.Helper()
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
  %s
}
%s
data "vspherehpc_host" "h" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = %q
}
data "vspherehpc_virtual_machine" "vm" {
  virtual_machine_id = %q
}
`, lab.URL.Host, lab.Username, tlsSetting(lab), datacenterLookup(lab, "dc"), lab.HostNames()[0], lab.VMUUID(lab.VMNames()[0])),
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
	// The log must hold the traffic that carried the secrets, or the tests prove nothing.
	for _, want := range []string{"vSphere SOAP request", "vSphere SOAP response", "Login", "RetrievePropertiesEx"} {
		if !strings.Contains(log, want) {
			t.Fatalf("the TRACE log lacks %q; is SOAP tracing wired up?", want)
		}
	}
	return log
}

// TestTFLoggerMasks: the bridge hides the password and every value the
// client hands it later, in messages and fields, at every level.
func TestTFLoggerMasks(t *testing.T) {
	var out bytes.Buffer
	ctx := tflogtest.RootLogger(context.Background(), &out)
	t.Setenv("TF_LOG", "TRACE")
	l := newTFLogger("pw-secret")
	l.Mask("session-key-1")
	l.Mask("")
	l.Debug(ctx, "login as pw-secret", map[string]any{"key": "session-key-1"})
	l.Trace(ctx, "trace", map[string]any{"body": "<x>pw-secret session-key-1</x>"})
	got := out.String()
	if strings.Contains(got, "pw-secret") || strings.Contains(got, "session-key-1") || strings.Count(got, "***") < 4 {
		t.Fatalf("unmasked or missing lines:\n%s", got)
	}
	if !l.TraceEnabled() {
		t.Fatal("TF_LOG=TRACE must enable SOAP tracing")
	}
}
