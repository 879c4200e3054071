package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// TestTerraformStopLogsOut builds the provider and lets a real Terraform start
// it as a plugin and stop it, the way every run ends, then asks the lab
// whether the provider's vCenter session ends. The in-process test
// servers of the acceptance tests are never stopped that way, so only this
// test covers main's logout. It needs TF_ACC=1: it builds the binary and runs
// terraform outside the testing framework.
func TestTerraformStopLogsOut(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("TF_ACC not set: this test builds the provider and runs terraform as a separate process")
	}
	tf, err := acctest.TerraformPath()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no terraform on CI: make test sets TF_ACC_TERRAFORM_PATH")
		}
		t.Skip("no terraform: set TF_ACC_TERRAFORM_PATH or put terraform on PATH")
	}
	ctx := context.Background()
	lab := acctest.StartLab(t, vcsimlab.Options{})

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

	// plan runs terraform plan (after the command prefix), logging at debug
	// level, and returns the log and its file.
	plan := func(prefix ...string) (logged, logFile string) {
		t.Helper()
		lab.ResetCalls()
		tfLog := filepath.Join(t.TempDir(), "terraform.log")
		args := append(prefix, tf, "plan", "-input=false", "-no-color")
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(),
			"TF_CLI_CONFIG_FILE="+filepath.Join(dir, "dev.tfrc"), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1",
			"VSPHERE_PASSWORD="+lab.Password, "TF_LOG=debug", "TF_LOG_PATH="+tfLog)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("terraform plan: %v\n%s", err, out)
		}
		if calls := lab.Calls(); calls["Login"] != 1 || calls["RetrievePropertiesEx"] == 0 {
			t.Fatalf("calls %v: the plan did not log in once and read, so this test proves nothing", calls)
		}
		text, err := os.ReadFile(tfLog)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), lab.Password) {
			t.Fatal("terraform's debug log holds the password")
		}
		return string(text), tfLog
	}

	// Terraform as the first process of a PID namespace, as in a container
	// of the hashicorp/terraform image: its exit kills every process left,
	// so the plugin logs out itself before it exits.
	t.Run("terraform is PID 1", func(t *testing.T) {
		unshare, err := exec.LookPath("unshare")
		if err != nil || os.Geteuid() != 0 {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI runs this as root with util-linux's unshare: %v (uid %d)", err, os.Geteuid())
			}
			t.Skip("needs root and unshare for a PID namespace")
		}
		logged, _ := plan(unshare, "--pid", "--fork", "--mount-proc")
		if strings.Contains(logged, "vCenter session(s) to process") {
			t.Fatalf("the plugin handed its session over with terraform as PID 1:\n%s", grepLines(logged, "vCenter"))
		}
		if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 0 || lab.Calls()["Logout"] != 1 {
			t.Fatalf("after terraform exited: sessions %v (%v), %d Logout calls; want it logged out before", keys, err, lab.Calls()["Logout"])
		}
	})

	// vCenter holds the logout: terraform must not wait for it.
	release := lab.Hold("Logout")
	defer release()
	logged, logFile := plan()
	if m := regexp.MustCompile(`handed 1 vCenter session\(s\) to process (-?\d+)`).FindStringSubmatch(logged); m == nil || m[1][0] == '-' ||
		m[1] == "0" {
		t.Fatalf(
			"terraform's log does not show the plugin handing its session over to a process by its id; it logged out itself, "+
				"or not at all, or logged no id:\n%s",
			grepLines(logged, "vCenter"),
		)
	}
	// terraform has exited while vCenter held the logout; the session
	// ender's logout reaches it and ends the session once answered.
	acctest.WaitFor(t, "the session ender's logout", func() (bool, string) {
		n := lab.Calls()["Logout"]
		return n == 1, fmt.Sprintf("%d Logout calls", n)
	})
	release()
	acctest.WaitFor(t, "every session logged out after terraform exited", func() (bool, string) {
		keys, err := lab.Sessions(ctx)
		return err == nil && len(keys) == 0, fmt.Sprintf("%d session(s) open (%v)", len(keys), err)
	})
	// The session ender says so in terraform's log, after terraform's own
	// last line.
	acctest.WaitFor(t, "the session ender's line in terraform's log", func() (bool, string) {
		text, err := os.ReadFile(logFile)
		last := strings.TrimSpace(string(text))
		last = last[strings.LastIndex(last, "\n")+1:]
		return err == nil &&
				strings.Contains(last, "[DEBUG] provider.terraform-provider-vspherehpc: logged out of the vCenter sessions the plugin handed over: sessions=1"),
			fmt.Sprintf(
				"its last line %q (%v)",
				last,
				err,
			)
	})
}

// grepLines is the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
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
