package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// TestAccProvider_sessionEndedMidRun ends every vCenter session while a plan
// is between its reads (the datacenter, then the host that depends on it):
// the provider must log in again and carry on.
func TestAccProvider_sessionEndedMidRun(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "slows calls, counts them and ends sessions")
	// Slow reads leave time to end the session after the first one started.
	lab.Delay("RetrievePropertiesEx", 200*time.Millisecond)
	terminated := make(chan struct{})
	go func() {
		defer close(terminated)
		for lab.Calls()["RetrievePropertiesEx"] == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		if err := lab.TerminateSessions(context.Background()); err != nil {
			t.Errorf("ending sessions: %v", err)
		}
	}()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_datacenter" "dc" {}
data "vspherehpc_host" "h" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = %q
}
`, lab.HostNames()[0]),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.vspherehpc_host.h", tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(lab.HostNames()[0]))),
			},
		}},
	})
	<-terminated
}

// TestAccProvider_logoutOnStop: what main does once Terraform has stopped
// the plugin (hand the sessions over, and the session ender logs them out)
// ends every session the provider's instances opened over a run of several
// terraform commands, and a provider used again afterwards logs in again. TestTerraformStopLogsOut (main_test.go) runs the
// same path through a real plugin process.
func TestAccProvider_logoutOnStop(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "counts Logout calls, and needs a vCenter without sessions of others")
	ctx := context.Background()
	factory, sessions := NewWithSessions("test")
	factories := map[string]func() (tfprotov6.ProviderServer, error){
		"vspherehpc": providerserver.NewProtocol6WithError(factory()),
	}
	run := func() {
		resource.UnitTest(t, resource.TestCase{
			ProtoV6ProviderFactories: factories,
			Steps: []resource.TestStep{{
				Config: acctest.ProviderConfig(lab) + `data "vspherehpc_datacenter" "dc" {}`,
			}},
		})
	}
	run()
	// The in-process server is never stopped the way Terraform stops a plugin:
	// the sessions are still open, and the test proves something.
	open, err := lab.Sessions(ctx)
	if err != nil || len(open) < 2 {
		t.Fatalf("sessions after the run: %v, %v; want one per terraform command", open, err)
	}
	stop, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	ends, err := sessions.HandOff(stop)
	if err != nil || len(ends) != len(open) || lab.Calls()["Logout"] != 0 {
		t.Fatalf("handing over: %d sessions, %v, %d Logout calls; want the %d open ones, with no call", len(ends), err, lab.Calls()["Logout"], len(open))
	}
	if err := vsphere.EndSessions(stop, ends); err != nil {
		t.Fatalf("ending the sessions handed over: %v", err)
	}
	if left, err := lab.Sessions(ctx); err != nil || len(left) != 0 {
		t.Fatalf("sessions after logout: %v, %v; want none", left, err)
	}
	if got := lab.Calls()["Logout"]; got != len(open) {
		t.Fatalf("Logout calls = %d, want %d", got, len(open))
	}

	run()
	if again, err := lab.Sessions(ctx); err != nil || len(again) == 0 {
		t.Fatalf("sessions after using the provider again: %v, %v; want new ones", again, err)
	}
}

// TestAccProvider_persistSession: with persist_session, the provider's runs
// in a series of terraform commands share one vCenter session: the first
// logs in, every later one resumes it with no call to connect (a refresh
// makes its reads alone), and the logout at the plugin's end leaves it for
// the next command.
func TestAccProvider_persistSession(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "counts Login calls and sessions")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sessions")
	factory, sessions := NewWithSessions("test")
	config := fmt.Sprintf(`
provider "vspherehpc" {
  vsphere_server  = %q
  user            = %q
  password        = %q
  ca_file         = %q
  persist_session = true
  session_path    = %q
}
data "vspherehpc_datacenter" "dc" {}
data "vspherehpc_host" "h" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = %q
}
`, lab.URL.Host, lab.Username, lab.Password, lab.CertFile, dir, lab.HostNames()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
			"vspherehpc": providerserver.NewProtocol6WithError(factory()),
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					if calls := lab.Calls(); calls["Login"] != 1 {
						return fmt.Errorf("the commands of the first step made %v, want one Login", calls)
					}
					return nil
				},
			},
			{
				Config:    config,
				PreConfig: lab.ResetCalls,
				Check:     onlyReads(lab, "the second step's commands"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.vspherehpc_host.h", tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(lab.HostNames()[0]))),
				},
			},
			{
				RefreshState: true,
				PreConfig:    lab.ResetCalls,
				Check:        onlyReads(lab, "a refresh"),
			},
		},
	})
	stop, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if ends, err := sessions.HandOff(stop); err != nil || len(ends) != 0 {
		t.Fatalf("handing over: %d sessions (%v), want none: the kept one is the next command's", len(ends), err)
	}
	if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 1 || lab.Calls()["Logout"] != 0 {
		t.Fatalf("after the plugin's end: sessions %v (%v), Logout calls %d; want the one kept session, not logged out",
			keys, err, lab.Calls()["Logout"])
	}
	files, err := os.ReadDir(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("%s holds %v (%v), want one session file", dir, files, err)
	}
	if fi, err := files[0].Info(); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the session file: %v (%v), want mode 0600", fi, err)
	}
}

// TestSessionDir: where persist_session keeps sessions, from the block or
// the environment, and what is said of settings that do not fit.
func TestSessionDir(t *testing.T) {
	// A home of its own, so that the user cache directory and the home
	// directory are both defined, whatever the machine's environment.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	under := filepath.Join(shared, "kept") // owner-only, in a directory others may write to
	if err := os.Mkdir(under, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct { // a zero types.Bool or types.String is null
		name        string
		cfg         providerModel
		env         map[string]string
		want        string
		warn, error string
	}{
		{"off", providerModel{}, nil, "", "", ""},
		{"on, default directory", providerModel{PersistSession: types.BoolValue(true)}, nil, filepath.Join(cache, "vspherehpc", "sessions"), "", ""},
		{"on from the environment", providerModel{}, map[string]string{envPersistSession: "true", envSessionPath: "/tmp/kept"}, "/tmp/kept", "", ""},
		{"in the home directory", providerModel{PersistSession: types.BoolValue(true), SessionPath: types.StringValue("~/kept")}, nil,
			filepath.Join(home, "kept"), "", ""},
		{"off in the block wins", providerModel{PersistSession: types.BoolValue(false)}, map[string]string{envPersistSession: "true"}, "", "", ""},
		{"path without persisting", providerModel{SessionPath: types.StringValue("/tmp/kept")}, nil, "", "session_path not used", ""},
		{"a directory others may write to", providerModel{PersistSession: types.BoolValue(true), SessionPath: types.StringValue(shared)}, nil,
			"", "Sessions not kept", ""},
		{"a directory under one others may write to", providerModel{PersistSession: types.BoolValue(true), SessionPath: types.StringValue(under)}, nil,
			"", "Sessions not kept", ""},
		{"bad environment", providerModel{}, map[string]string{envPersistSession: "yes please"}, "", "", "Invalid " + envPersistSession},
		{"a relative path", providerModel{PersistSession: types.BoolValue(true), SessionPath: types.StringValue("kept")}, nil,
			"", "", "session_path is not absolute"},
		{"~ without a home", providerModel{PersistSession: types.BoolValue(true), SessionPath: types.StringValue("~/kept")},
			map[string]string{"HOME": ""}, "", "Sessions not kept", ""},
		{"no cache directory", providerModel{PersistSession: types.BoolValue(true)}, map[string]string{"HOME": ""}, "", "Sessions not kept", ""},
	}
	if os.Geteuid() != 0 && os.Getenv("CI") != "" { // never counted as tested when it was not
		t.Fatal("giving a directory to another user needs root")
	}
	if os.Geteuid() == 0 { // giving a directory to another user needs root
		theirs := t.TempDir()
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name        string
			cfg         providerModel
			env         map[string]string
			want        string
			warn, error string
		}{"a directory of another user", providerModel{PersistSession: types.BoolValue(true), SessionPath: types.StringValue(theirs)}, nil,
			"", "Sessions not kept", ""})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envPersistSession, "")
			t.Setenv(envSessionPath, "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var diags diag.Diagnostics
			got := sessionDir(tc.cfg, &diags)
			if got != tc.want {
				t.Errorf("directory %q, want %q", got, tc.want)
			}
			var warns, errs []string
			for _, d := range diags.Warnings() {
				warns = append(warns, d.Summary())
			}
			for _, d := range diags.Errors() {
				errs = append(errs, d.Summary())
			}
			if strings.Join(warns, "; ") != tc.warn || strings.Join(errs, "; ") != tc.error {
				t.Errorf("warnings %q, errors %q; want %q and %q", warns, errs, tc.warn, tc.error)
			}
		})
	}
}
