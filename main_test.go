package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// TestTerraformStopLogsOut builds the provider and lets a real Terraform start
// it as a plugin and stop it, the way every run ends, then asks the lab
// whether the provider's vCenter session is still open. The in-process test
// servers of the acceptance tests are never stopped that way, so only this
// test covers main's logout. It needs TF_ACC=1: it builds the binary and runs
// terraform outside the testing framework.
func TestTerraformStopLogsOut(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("TF_ACC not set: this test builds the provider and runs terraform as a separate process")
	}
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		var err error
		if tf, err = exec.LookPath("terraform"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("no terraform on CI: make test sets TF_ACC_TERRAFORM_PATH")
			}
			t.Skip("no terraform: set TF_ACC_TERRAFORM_PATH or put terraform on PATH")
		}
	}
	ctx := context.Background()
	lab, err := vcsimlab.Start(ctx, vcsimlab.Options{})
	if err != nil {
		t.Fatalf("starting lab: %v", err)
	}
	t.Cleanup(lab.Close)

	dir := t.TempDir()
	bin := filepath.Join(dir, "providers", "terraform-provider-vspherehpc")
	build := exec.Command("go", "build", "-o", bin, ".") // the go that runs this test, from PATH
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	files := map[string]string{
		filepath.Join(dir, "dev.tfrc"): fmt.Sprintf(`provider_installation {
  dev_overrides {
    "vspherehpc/vspherehpc" = %q
  }
  direct {}
}
`, filepath.Dir(bin)),
		filepath.Join(work, "main.tf"): fmt.Sprintf(`terraform {
  required_providers {
    vspherehpc = { source = "vspherehpc/vspherehpc" }
  }
}
provider "vspherehpc" {
  vsphere_server = %q
  user           = %q
  ca_file        = %q
}
data "vspherehpc_datacenter" "dc" {}
`, lab.URL.Host, lab.Username, lab.CertFile),
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	plan := exec.Command(tf, "plan", "-input=false", "-no-color")
	plan.Dir = work
	plan.Env = append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+filepath.Join(dir, "dev.tfrc"), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1",
		"VSPHERE_PASSWORD="+lab.Password)
	if out, err := plan.CombinedOutput(); err != nil {
		t.Fatalf("terraform plan: %v\n%s", err, out)
	}

	calls := lab.Calls()
	if calls["Login"] == 0 || calls["RetrievePropertiesEx"] == 0 {
		t.Fatalf("calls %v: the plan did not log in and read, so this test proves nothing", calls)
	}
	// terraform exits only after its plugins have: what the provider did on
	// the way out is done.
	keys, err := lab.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 || calls["Logout"] != calls["Login"] {
		t.Fatalf("after terraform exited: %d session(s) still open, %d login(s), %d logout(s); want every session logged out",
			len(keys), calls["Login"], calls["Logout"])
	}
}

func TestLogsAsked(t *testing.T) {
	for _, c := range []struct {
		environ []string
		want    bool
	}{
		{nil, false},
		{[]string{"HOME=/root", "TF_CLI_CONFIG_FILE=/tmp/dev.tfrc", "CHECKPOINT_DISABLE=1"}, false},
		{[]string{"HOME=/root", "TF_LOG=DEBUG"}, true},
		{[]string{"TF_LOG_PROVIDER_VSPHEREHPC=TRACE"}, true},
		{[]string{"TF_LOG_SDK_FRAMEWORK=OFF"}, true},
	} {
		if got := logsAsked(c.environ); got != c.want {
			t.Errorf("logsAsked(%q) = %v, want %v", c.environ, got, c.want)
		}
	}
}

func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	setGCPercent([]string{"HOME=/root", "GOGC=50"})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=50 in the environment, the GC percent became %d; the runtime's own must stay", got)
	}
	setGCPercent([]string{"HOME=/root", "GOGCX=1"})
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC, the GC percent is %d, want %d", got, gcPercent)
	}
}
