package provider

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

func TestProviderSchemas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := New("test")()
	var presp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &presp)
	if presp.Diagnostics.HasError() {
		t.Fatalf("provider schema: %v", presp.Diagnostics)
	}
	if diags := presp.Schema.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("provider schema: %v", diags)
	}
	for _, newDS := range p.DataSources(ctx) {
		ds := newDS()
		var meta datasource.MetadataResponse
		ds.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "vspherehpc"}, &meta)
		var resp datasource.SchemaResponse
		ds.Schema(ctx, datasource.SchemaRequest{}, &resp)
		if diags := resp.Schema.ValidateImplementation(ctx); diags.HasError() {
			t.Errorf("%s schema: %v", meta.TypeName, diags)
		}
		for name, a := range resp.Schema.Attributes {
			if a.GetMarkdownDescription() == "" {
				t.Errorf("%s.%s has no MarkdownDescription", meta.TypeName, name)
			}
		}
	}
	for _, newRes := range p.Resources(ctx) {
		r := newRes()
		var meta fwresource.MetadataResponse
		r.Metadata(ctx, fwresource.MetadataRequest{ProviderTypeName: "vspherehpc"}, &meta)
		var resp fwresource.SchemaResponse
		r.Schema(ctx, fwresource.SchemaRequest{}, &resp)
		if diags := resp.Schema.ValidateImplementation(ctx); diags.HasError() {
			t.Errorf("%s schema: %v", meta.TypeName, diags)
		}
		for name, a := range resp.Schema.Attributes {
			if a.GetMarkdownDescription() == "" {
				t.Errorf("%s.%s has no MarkdownDescription", meta.TypeName, name)
			}
		}
	}
	for name, a := range presp.Schema.Attributes {
		if a.GetMarkdownDescription() == "" {
			t.Errorf("provider.%s has no MarkdownDescription", name)
		}
	}
}

// datacenterLookup is a look-up of the lab's datacenter for tests of
// something else: the default datacenter in the lab, which has one; by name
// on an external vCenter, which may have more.
func datacenterLookup(lab *vcsimlab.Lab, label string) string {
	if lab.Simulated() {
		return fmt.Sprintf(`data "vspherehpc_datacenter" %q {}`, label)
	}
	return fmt.Sprintf("data \"vspherehpc_datacenter\" %q {\n  name = %q\n}", label, lab.DatacenterName())
}

// tlsSetting is the provider argument that has it trust the lab: its CA
// file, or on an external vCenter without one not verifying it.
func tlsSetting(lab *vcsimlab.Lab) string {
	if lab.CertFile == "" {
		return "allow_unverified_ssl = true"
	}
	return fmt.Sprintf("ca_file        = %q", lab.CertFile)
}

// needsCAFile skips a test of certificate verification on an external
// vCenter given without its CA file (VSPHERE_ALLOW_UNVERIFIED_SSL).
func needsCAFile(t *testing.T, lab *vcsimlab.Lab) {
	t.Helper()
	if lab.CertFile == "" {
		t.Skip("needs vCenter's CA file (VSPHERE_CA_FILE) to verify its certificate against")
	}
}

func TestAccProvider_tls(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	needsCAFile(t, lab)
	login := fmt.Sprintf(`vsphere_server = %q
  user = %q
  password = %q`, lab.URL.Host, lab.Username, lab.Password)
	dc := "\n" + datacenterLookup(lab, "dc") + "\n"
	found := []statecheck.StateCheck{
		statecheck.ExpectKnownValue("data.vspherehpc_datacenter.dc", tfjsonpath.New("id"), knownvalue.StringExact(lab.DatacenterID())),
	}
	var steps []resource.TestStep
	if lab.Simulated() || !systemTrusts(lab) {
		steps = append(steps, resource.TestStep{
			// Verification is on by default; the error says both ways out and shows the thumbprint.
			Config:      fmt.Sprintf("provider \"vspherehpc\" {\n  %s\n}\n", login) + dc,
			ExpectError: regexp.MustCompile(`(?s)not trusted.*ca_file.*thumbprint.*` + regexp.QuoteMeta(lab.Thumbprint) + `.*allow_unverified_ssl`),
		})
	}
	steps = append(steps,
		resource.TestStep{
			Config:            fmt.Sprintf("provider \"vspherehpc\" {\n  %s\n  ca_file = %q\n}\n", login, lab.CertFile) + dc,
			ConfigStateChecks: found,
		},
		resource.TestStep{
			Config:            fmt.Sprintf("provider \"vspherehpc\" {\n  %s\n  thumbprint = %q\n}\n", login, lab.Thumbprint) + dc,
			ConfigStateChecks: found,
		},
		resource.TestStep{
			Config:            fmt.Sprintf("provider \"vspherehpc\" {\n  %s\n  allow_unverified_ssl = true\n}\n", login) + dc,
			ConfigStateChecks: found,
		},
	)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
	})
}

// systemTrusts reports whether this machine's trust store verifies the
// lab's certificate: an external vCenter's may be signed by a public CA,
// and then the provider connects without a CA file.
func systemTrusts(lab *vcsimlab.Lab) bool {
	host := lab.URL.Hostname()
	addr := lab.URL.Host
	if lab.URL.Port() == "" {
		addr = net.JoinHostPort(host, "443")
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func TestAccProvider_wrongPassword(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "vspherehpc" {
  vsphere_server = %q
  user           = %q
  password       = "wrong"
  %s
}
%s
`, lab.URL.Host, lab.Username, tlsSetting(lab), datacenterLookup(lab, "dc")),
			ExpectError: wrapped(`vCenter rejected the user name or password for "` + lab.Username + `". Check user and password`),
		}},
	})
}

func TestAccProvider_invalidSettings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, config string
		want         *regexp.Regexp
	}{
		{"partial login", `vsphere_server = "vc.example.com"`, regexp.MustCompile(`(?s)Missing vCenter user.*VSPHERE_USER.*Missing vCenter password`)},
		{"conflicting TLS", `allow_unverified_ssl = true
  thumbprint = "AB:CD"`, regexp.MustCompile(`Conflicting TLS settings`)},
		{"bad thumbprint", `thumbprint = "xyz"`, regexp.MustCompile(`Invalid certificate thumbprint`)},
		{"missing CA file", `ca_file = "/nonexistent/ca.pem"`, regexp.MustCompile(`(?s)Unusable CA file.*no such file`)},
		{"bad timeout", `api_timeout = "soon"`, regexp.MustCompile(`api_timeout must be a positive duration`)},
		{"session path a file", `persist_session = true
  session_path = "/dev/null"`, regexp.MustCompile(`(?s)session_path is not a directory.*/dev/null`)},
		{"credentials in the address", `vsphere_server = "https://root:s3cret@vc.example.com"
  user = "u"
  password = "p"`, regexp.MustCompile(`(?s)Invalid vCenter address.*user name or\s+password`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
provider "vspherehpc" {
  %s
}
data "vspherehpc_mmio_size" "x" {
  gpu_memory_gb = [16]
}
`, tc.config),
					ExpectError: tc.want,
				}},
			})
		})
	}
}

func TestAccProvider_noSettingsNeedsVCenter(t *testing.T) {
	t.Parallel()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
data "vspherehpc_datacenter" "dc" {}
`,
			ExpectError: regexp.MustCompile(`(?s)no vCenter settings.*VSPHERE_SERVER`),
		}},
	})
}

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
			Config: providerConfig(lab) + fmt.Sprintf(`
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
				Config: providerConfig(lab) + `data "vspherehpc_datacenter" "dc" {}`,
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

// onlyReads checks that the calls since the last lab.ResetCalls connected
// and disconnected nothing.
func onlyReads(lab *vcsimlab.Lab, what string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		calls := lab.Calls()
		if calls["Login"] != 0 || calls["RetrieveServiceContent"] != 0 || calls["Logout"] != 0 || calls["RetrievePropertiesEx"] == 0 {
			return fmt.Errorf("%s with a kept session made %v, want reads alone", what, calls)
		}
		return nil
	}
}

// Without vCenter settings, every resource that needs vCenter is refused at
// plan, not at apply.
func TestAccProvider_resourcesNeedVCenterAtPlan(t *testing.T) {
	t.Parallel()
	configs := map[string]string{
		"host settings": `resource "vspherehpc_host_pvrdma_settings" "h" {
  host_system_id = "host-12"
}`,
		"PVRDMA adapter": `resource "vspherehpc_vm_pvrdma_nic" "n" {
  virtual_machine_id        = "vm-42"
  distributed_port_group_id = "dvportgroup-17"
}`,
		"SR-IOV adapter": `resource "vspherehpc_vm_sriov_nic" "n" {
  virtual_machine_id        = "vm-42"
  distributed_port_group_id = "dvportgroup-17"
  physical_function         = "automatic"
}`,
		"GPU setup": `resource "vspherehpc_vm_gpu_mmio" "g" {
  virtual_machine_id = "vm-42"
  mmio_size_gb       = 64
}`,
	}
	for name, config := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: config, PlanOnly: true,
					ExpectError: wrapped(`This needs vCenter, but the provider has no vCenter settings. Set vsphere_server, user and password`),
				}},
			})
		})
	}
}

// TestAccProvider_apiTimeout: vCenter slower than api_timeout, when first
// connecting, at login and at a read, names api_timeout as the setting to
// raise; connecting named only vsphere_server.
func TestAccProvider_apiTimeout(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"RetrieveServiceContent", "Login", "RetrievePropertiesEx"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			lab := startLab(t, vcsimlab.Options{})
			simulatedOnly(t, lab, "slows vCenter's calls beyond api_timeout")
			lab.Delay(method, 3*time.Second)
			config := strings.Replace(providerConfig(lab), `provider "vspherehpc" {`, `provider "vspherehpc" {
  api_timeout = "1s"`, 1)
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: config + "data \"vspherehpc_datacenter\" \"dc\" {}\n",
					ExpectError: regexp.MustCompile(`(?s)` + wrapped(`vCenter did not finish within api_timeout (default 5m0s)`).String() +
						`.*` + wrapped(`raise api_timeout in the provider block`).String()),
				}},
			})
		})
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

// A module passing its variables to the provider block, with "" as their
// default, leaves the login to the environment, as with the vSphere
// provider: an empty setting is unset, and a CA file from the environment
// is blamed on the environment. Not parallel: the provider reads its
// environment.
func TestAccProvider_emptySettingsUseEnvironment(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	needsCAFile(t, lab)
	t.Setenv(envServer, lab.URL.Host)
	t.Setenv(envUser, lab.Username)
	t.Setenv(envPassword, lab.Password)
	t.Setenv(envAllowUnverifiedSSL, "")
	config := `
variable "server" {
  default = ""
}
provider "vspherehpc" {
  vsphere_server = var.server
  user           = var.server
  password       = var.server
  ca_file        = var.server
}
` + datacenterLookup(lab, "dc")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { t.Setenv(envCAFile, "/nonexistent/ca.pem") },
				Config:      config,
				ExpectError: wrapped("Cannot use " + envCAFile + " (environment variable)"),
			},
			{
				// Last, as the destroy after it needs a usable CA file.
				PreConfig: func() { t.Setenv(envCAFile, lab.CertFile) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.vspherehpc_datacenter.dc", tfjsonpath.New("id"), knownvalue.StringExact(lab.DatacenterID())),
				},
			},
		},
	})
}
