package provider

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// otherCA writes a PEM file with a CA certificate that did not sign the
// lab's: trusting only it, verification fails.
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "some other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// One environment for the vSphere provider and this one: VSPHERE_ALLOW_
// UNVERIFIED_SSL beside a CA file or thumbprint is no error. The provider
// block wins over the environment; between the two variables the CA file
// wins. Which one won shows in whether the lab's certificate is verified
// (against the lab's CA, or one that did not sign it). Not parallel: the
// provider runs in this process and reads its environment.
func TestAccProvider_tlsFromEnvironment(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	needsCAFile(t, lab)
	wrongCA := otherCA(t)
	login := fmt.Sprintf("  vsphere_server = %q\n  user = %q\n  password = %q\n", lab.URL.Host, lab.Username, lab.Password)
	notTrusted := regexp.MustCompile(`not\s+trusted`)
	for _, tc := range []struct {
		name, unverified, caFile, block string
		want                            *regexp.Regexp // nil: connects
	}{
		{"the CA file variable wins over the unverified one", "true", wrongCA, "", notTrusted},
		{"both variables, the right CA", "true", lab.CertFile, "", nil},
		{"allow_unverified_ssl in the block wins over the CA variable", "", wrongCA, "  allow_unverified_ssl = true\n", nil},
		{"ca_file in the block wins over the unverified variable", "true", "", fmt.Sprintf("  ca_file = %q\n", wrongCA), notTrusted},
		{"thumbprint in the block wins over the unverified variable", "true", "", fmt.Sprintf("  thumbprint = %q\n", lab.Thumbprint), nil},
		{"both in the block", "", "", fmt.Sprintf("  allow_unverified_ssl = true\n  ca_file = %q\n", lab.CertFile),
			regexp.MustCompile(`Conflicting TLS settings`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envAllowUnverifiedSSL, tc.unverified)
			t.Setenv(envCAFile, tc.caFile)
			step := resource.TestStep{
				Config:      "provider \"vspherehpc\" {\n" + login + tc.block + "}\n" + datacenterLookup(lab, "dc"),
				ExpectError: tc.want,
			}
			if tc.want == nil {
				step.ConfigStateChecks = []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.vspherehpc_datacenter.dc", tfjsonpath.New("id"), knownvalue.StringExact(lab.DatacenterID())),
				}
			}
			resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: []resource.TestStep{step}})
		})
	}
}

// A CA file that cannot be used is blamed on where it came from: the
// environment variable when the provider block has no ca_file. A directory
// is said to be one. Refused in Configure, before any connection. Not
// parallel: the provider reads its environment.
func TestAccProvider_caFileSource(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	login := "  vsphere_server = \"vc.example.com\"\n  user = \"u\"\n  password = \"p\"\n"
	for _, tc := range []struct {
		name, env, block, want string
	}{
		{"a directory in the variable", dir, "",
			"Cannot use VSPHERE_CA_FILE (environment variable): " + dir + " is a directory, not a PEM file."},
		{"a directory in ca_file", "", fmt.Sprintf("  ca_file = %q\n", dir),
			"Cannot use ca_file: " + dir + " is a directory, not a PEM file."},
		{"ca_file wins over the variable", dir, fmt.Sprintf("  ca_file = %q\n", missing),
			"Cannot use ca_file: open " + missing + ": no such file or directory."},
		{"a missing file in the variable", missing, "",
			"Cannot use VSPHERE_CA_FILE (environment variable): open " + missing + ": no such file or directory."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envAllowUnverifiedSSL, "")
			t.Setenv(envCAFile, tc.env)
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      "provider \"vspherehpc\" {\n" + login + tc.block + "}\ndata \"vspherehpc_datacenter\" \"dc\" {}\n",
					ExpectError: acctest.Wording(tc.want),
				}},
			})
		})
	}
}
