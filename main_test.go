package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
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
	if m := regexp.MustCompile(`handed 1 vCenter session\(s\) to process (-?\d+)`).FindStringSubmatch(logged); m == nil || m[1][0] == '-' || m[1] == "0" {
		t.Fatalf("terraform's log does not show the plugin handing its session over to a process by its id; it logged out itself, or not at all, or logged no id:\n%s",
			grepLines(logged, "vCenter"))
	}
	// terraform has exited while vCenter held the logout; the session
	// ender's logout reaches it and ends the session once answered.
	waitFor(t, "the session ender's logout", func() (bool, string) {
		n := lab.Calls()["Logout"]
		return n == 1, fmt.Sprintf("%d Logout calls", n)
	})
	release()
	waitFor(t, "every session logged out after terraform exited", func() (bool, string) {
		keys, err := lab.Sessions(ctx)
		return err == nil && len(keys) == 0, fmt.Sprintf("%d session(s) open (%v)", len(keys), err)
	})
	// The session ender says so in terraform's log, after terraform's own
	// last line.
	waitFor(t, "the session ender's line in terraform's log", func() (bool, string) {
		text, err := os.ReadFile(logFile)
		last := strings.TrimSpace(string(text))
		last = last[strings.LastIndex(last, "\n")+1:]
		return err == nil && strings.Contains(last, "[DEBUG] provider.terraform-provider-vspherehpc: logged out of the vCenter sessions the plugin handed over: sessions=1"),
			fmt.Sprintf("its last line %q (%v)", last, err)
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

// TestMain makes the test binary a session ender when started as one, as
// the provider's binary is: endSessionsOnExit starts os.Executable().
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "-"+endSessionsFlag {
		os.Exit(runSessionEnder(os.Stdin, os.Stdout, enderLog(os.Getenv, os.Args[0])))
	}
	os.Exit(m.Run())
}

// TestSessionsEndAfterThePlugin: the plugin hands its sessions to a process
// of its own and returns while vCenter has not answered the logout (held
// by the lab), so Terraform does not wait for it; that process logs them out
// once vCenter answers. Under a debugger the plugin logs out itself.
func TestSessionsEndAfterThePlugin(t *testing.T) {
	ctx := context.Background()
	lab, err := vcsimlab.Start(ctx, vcsimlab.Options{})
	if err != nil {
		t.Fatalf("starting lab: %v", err)
	}
	t.Cleanup(lab.Close)
	connected := func(n int) *vsphere.Clients {
		var all vsphere.Clients
		for range n {
			c := vsphere.New(vsphere.Config{Server: lab.URL.Host, User: lab.Username, Password: lab.Password, CAFile: lab.CertFile})
			if _, err := c.DatacenterByName(ctx, ""); err != nil {
				t.Fatal(err)
			}
			all.Add(c)
		}
		return &all
	}

	sessions := connected(2)
	lab.ResetCalls()
	release := lab.Hold("Logout")
	defer release()
	if ender := endSessionsOnExit(sessions, false); ender <= 0 {
		t.Fatalf("no session ender was started (pid %d): the plugin logged out itself", ender)
	}
	waitFor(t, "the session ender's logouts reaching vCenter", func() (bool, string) {
		n := lab.Calls()["Logout"]
		return n == 2, fmt.Sprintf("%d Logout calls", n)
	})
	if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 2 {
		t.Fatalf("sessions while vCenter holds the logouts: %v (%v), want both still open", keys, err)
	}
	release()
	waitFor(t, "the sessions ended", func() (bool, string) {
		keys, err := lab.Sessions(ctx)
		return err == nil && len(keys) == 0, fmt.Sprintf("sessions %v (%v)", keys, err)
	})

	sessions = connected(1)
	lab.ResetCalls()
	if ender := endSessionsOnExit(sessions, true); ender != 0 {
		t.Fatalf("under a debugger a session ender (pid %d) was started", ender)
	}
	if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 0 || lab.Calls()["Logout"] != 1 {
		t.Fatalf("under a debugger, after the plugin's end: sessions %v (%v), %d Logout calls; want it logged out",
			keys, err, lab.Calls()["Logout"])
	}
}

// TestSessionEnderRefusesWhatItCannotRead: a session ender given anything
// but the JSON of session ends exits with status 2, calling nobody.
func TestSessionEnderRefusesWhatItCannotRead(t *testing.T) {
	for _, in := range []string{"", "not json", `{"server": "vc"}`} {
		var ack ackBuffer
		if got := runSessionEnder(strings.NewReader(in), &ack, hclog.NewNullLogger()); got != 2 || ack.Len() != 0 {
			t.Errorf("runSessionEnder(%q) = %d, acknowledged %q; want 2 and no acknowledgement", in, got, ack.String())
		}
	}
	var ack ackBuffer
	if got := runSessionEnder(strings.NewReader("[]"), &ack, hclog.NewNullLogger()); got != 0 || ack.String() != "\n" || !ack.closed {
		t.Errorf("runSessionEnder([]) = %d, acknowledged %q (closed: %v); want 0 (nothing to end), acknowledged and closed", got, ack.String(), ack.closed)
	}
}

// ackBuffer is a session ender's acknowledgement, as the plugin reads it.
type ackBuffer struct {
	strings.Builder
	closed bool
}

func (a *ackBuffer) Close() error {
	a.closed = true
	return nil
}

// TestSessionEnderMustTakeTheSessions: a binary that does not say it read
// the sessions (one that does not know -end-sessions, now at the plugin's
// path) is no session ender: the plugin logs out itself.
func TestSessionEnderMustTakeTheSessions(t *testing.T) {
	other, err := exec.LookPath("true")
	if err != nil {
		t.Fatalf("no true on PATH: %v", err)
	}
	ends := []vsphere.SessionEnd{{Server: "vc.example.com", Cookie: "secret"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if pid, err := startSessionEnder(ctx, other, ends); err == nil {
		t.Fatalf("%s took the sessions as process %d, want an error", other, pid)
	}
}

// TestSessionEnderReportsInTerraformsLog: a session ender's failed logout
// is a warning in Terraform's log file, in Terraform's format, at the level
// Terraform logs providers at; a logout that went through is a debug line;
// without a log file, or with provider logs off, nothing is written.
func TestSessionEnderReportsInTerraformsLog(t *testing.T) {
	// Nothing listens on port 1: the logout fails at once.
	unreachable := []vsphere.SessionEnd{{Server: "127.0.0.1:1", Cookie: "secret-cookie"}}
	for _, c := range []struct {
		name string
		env  map[string]string
		ends []vsphere.SessionEnd
		want []string // "" for no file
	}{
		{"a failure, text", map[string]string{"TF_LOG": "warn"}, unreachable,
			[]string{`[WARN]  provider.terraform-provider-vspherehpc: the session ends at vCenter's idle timeout: error=`, "127.0.0.1:1"}},
		{"a failure, JSON", map[string]string{"TF_LOG": "json"}, unreachable,
			[]string{`"@level":"warn"`, `"@module":"provider.terraform-provider-vspherehpc"`, "127.0.0.1:1"}},
		{"TF_LOG_PROVIDER before TF_LOG", map[string]string{"TF_LOG": "trace", "TF_LOG_PROVIDER": "error"}, unreachable, nil},
		{"provider logs off", map[string]string{"TF_LOG": "debug", "TF_LOG_PROVIDER": "off"}, unreachable, nil},
		{"no log file", map[string]string{"TF_LOG": "trace", "TF_LOG_PATH": ""}, unreachable, nil},
		{"nothing to end", map[string]string{"TF_LOG": "debug"}, []vsphere.SessionEnd{},
			[]string{"[DEBUG] provider.terraform-provider-vspherehpc: logged out of the vCenter sessions the plugin handed over: sessions=0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "terraform.log")
			env := map[string]string{"TF_LOG_PATH": path}
			maps.Copy(env, c.env)
			in, err := json.Marshal(c.ends)
			if err != nil {
				t.Fatal(err)
			}
			report := enderLog(func(name string) string { return env[name] }, "/plugins/terraform-provider-vspherehpc")
			runSessionEnder(bytes.NewReader(in), &ackBuffer{}, report)
			logged, err := os.ReadFile(path)
			switch {
			case c.want == nil && !errors.Is(err, fs.ErrNotExist):
				t.Fatalf("wrote %q (%v), want no log file", logged, err)
			case c.want != nil && err != nil:
				t.Fatalf("no log: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(logged), w) {
					t.Errorf("log %q lacks %q", logged, w)
				}
			}
			if strings.Contains(string(logged), "secret-cookie") {
				t.Errorf("the log holds the session cookie: %q", logged)
			}
		})
	}
}

// TestEnderEnv: the session ender keeps what reaching vCenter takes of the
// environment, and none of the credentials.
func TestEnderEnv(t *testing.T) {
	got := enderEnv([]string{"VSPHERE_PASSWORD=secret", "VSPHERE_USER=admin", "TF_LOG=debug", "HOME=/root",
		"https_proxy=http://proxy:3128", "NO_PROXY=.lab", "SSL_CERT_FILE=/etc/ca.pem", "SystemRoot=C:\\Windows",
		"TF_LOG_PATH=/tmp/tf.log", "TF_LOG_SDK=off", "TF_ACC=1"})
	want := []string{"TF_LOG=debug", "https_proxy=http://proxy:3128", "NO_PROXY=.lab", "SSL_CERT_FILE=/etc/ca.pem", "SystemRoot=C:\\Windows",
		"TF_LOG_PATH=/tmp/tf.log"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("enderEnv = %q, want %q", got, want)
	}
}

// waitFor waits until ok says so, failing the test with its last word after
// a minute: a bound for a broken run, not a timing the verdict rests on.
func waitFor(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		done, state := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still %s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
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
