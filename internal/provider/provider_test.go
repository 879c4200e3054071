package provider

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
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
			ExpectError: acctest.Wording(`vCenter rejected the user name or password for "` + lab.Username + `". Check user and password`),
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
					ExpectError: acctest.Wording(`This needs vCenter, but the provider has no vCenter settings. Set vsphere_server, user and password`),
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
			config := strings.Replace(acctest.ProviderConfig(lab), `provider "vspherehpc" {`, `provider "vspherehpc" {
  api_timeout = "1s"`, 1)
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: config + "data \"vspherehpc_datacenter\" \"dc\" {}\n",
					ExpectError: regexp.MustCompile(`(?s)` + acctest.Wording(`vCenter did not finish within api_timeout (default 5m0s)`).String() +
						`.*` + acctest.Wording(`raise api_timeout in the provider block`).String()),
				}},
			})
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
				ExpectError: acctest.Wording("Cannot use " + envCAFile + " (environment variable)"),
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
