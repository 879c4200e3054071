package sessionender

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
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// TestMain makes the test binary a session ender when started as one, as
// the provider's binary is: OnExit starts os.Executable().
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "-"+Flag {
		os.Exit(Run(os.Stdin, os.Stdout, Log(os.Getenv, os.Args[0])))
	}
	os.Exit(m.Run())
}

// TestSessionsEndAfterThePlugin: the plugin hands its sessions to a process
// of its own and returns while vCenter has not answered the logout (held
// by the lab), so Terraform does not wait for it; that process logs them out
// once vCenter answers. Under a debugger the plugin logs out itself.
func TestSessionsEndAfterThePlugin(t *testing.T) {
	ctx := context.Background()
	lab := acctest.StartLab(t, vcsimlab.Options{})
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
	if ender := OnExit(sessions, false); ender <= 0 {
		t.Fatalf("no session ender was started (pid %d): the plugin logged out itself", ender)
	}
	acctest.WaitFor(t, "the session ender's logouts reaching vCenter", func() (bool, string) {
		n := lab.Calls()["Logout"]
		return n == 2, fmt.Sprintf("%d Logout calls", n)
	})
	if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 2 {
		t.Fatalf("sessions while vCenter holds the logouts: %v (%v), want both still open", keys, err)
	}
	release()
	acctest.WaitFor(t, "the sessions ended", func() (bool, string) {
		keys, err := lab.Sessions(ctx)
		return err == nil && len(keys) == 0, fmt.Sprintf("sessions %v (%v)", keys, err)
	})

	sessions = connected(1)
	lab.ResetCalls()
	if ender := OnExit(sessions, true); ender != 0 {
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
		if got := Run(strings.NewReader(in), &ack, hclog.NewNullLogger()); got != 2 || ack.Len() != 0 {
			t.Errorf("Run(%q) = %d, acknowledged %q; want 2 and no acknowledgement", in, got, ack.String())
		}
	}
	var ack ackBuffer
	if got := Run(strings.NewReader("[]"), &ack, hclog.NewNullLogger()); got != 0 || ack.String() != "\n" || !ack.closed {
		t.Errorf("Run([]) = %d, acknowledged %q (closed: %v); want 0 (nothing to end), acknowledged and closed", got, ack.String(), ack.closed)
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
			report := Log(func(name string) string { return env[name] }, "/plugins/terraform-provider-vspherehpc")
			Run(bytes.NewReader(in), &ackBuffer{}, report)
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
