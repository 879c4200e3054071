package vsphere

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// TestHandOffEndsTheSessionElsewhere: a client hands its session over with
// no call, and a session end carried as JSON (as over the pipe to the
// session ender) logs it out from a client of its own, whichever way the
// configuration trusts vCenter. The CA bundle travels with it: the file may
// be gone by then.
func TestHandOffEndsTheSessionElsewhere(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	pem, err := os.ReadFile(lab.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		trust func(t *testing.T, cfg *Config)
	}{
		{"ca_file removed before the end", func(t *testing.T, cfg *Config) {
			cfg.CAFile = filepath.Join(t.TempDir(), "ca.pem")
			if err := os.WriteFile(cfg.CAFile, pem, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"thumbprint", func(_ *testing.T, cfg *Config) { cfg.CAFile, cfg.Thumbprint = "", lab.Thumbprint }},
		{"allow_unverified_ssl", func(_ *testing.T, cfg *Config) { cfg.CAFile, cfg.AllowUnverifiedSSL = "", true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cfg Config
			c.trust(t, &cfg)
			client := labClient(lab, func(base *Config) {
				base.CAFile, base.Thumbprint, base.AllowUnverifiedSSL = cfg.CAFile, cfg.Thumbprint, cfg.AllowUnverifiedSSL
			})
			if end, err := client.HandOff(ctx); end != nil || err != nil {
				t.Fatalf("HandOff before any connection: %+v, %v; want nothing to hand over", end, err)
			}
			if _, err := client.DatacenterByName(ctx, ""); err != nil {
				t.Fatal(err)
			}
			if cfg.CAFile != "" {
				if err := os.Remove(cfg.CAFile); err != nil {
					t.Fatal(err)
				}
			}
			before := lab.Calls()["Logout"]
			end, err := client.HandOff(ctx)
			if err != nil || end == nil {
				t.Fatalf("HandOff: %+v, %v", end, err)
			}
			keys, err := lab.Sessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 1 || lab.Calls()["Logout"] != before {
				t.Fatalf("after HandOff: sessions %v, Logout calls %d; want the session open and no call", keys, lab.Calls()["Logout"]-before)
			}
			if err := client.Logout(ctx); err != nil || lab.Calls()["Logout"] != before {
				t.Fatalf("Logout after HandOff: %v, %d calls; want nothing to do: the session is the session ender's", err, lab.Calls()["Logout"]-before)
			}

			b, err := json.Marshal([]SessionEnd{*end})
			if err != nil {
				t.Fatal(err)
			}
			var carried []SessionEnd
			if err := json.Unmarshal(b, &carried); err != nil {
				t.Fatal(err)
			}
			handed, err := lab.Sessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The client works on after handing its session over, in a
			// session of its own that the session ender does not end.
			if _, err := client.DatacenterByName(ctx, ""); err != nil {
				t.Fatalf("call after HandOff: %v", err)
			}
			if err := EndSessions(ctx, carried); err != nil {
				t.Fatalf("EndSessions: %v", err)
			}
			left, err := lab.Sessions(ctx)
			if err != nil || len(left) != 1 || left[0] == handed[0] || lab.Calls()["Logout"] != before+1 {
				t.Fatalf("after EndSessions: sessions %v (%v), Logout calls %d; want the handed session %s ended with one call, and the client's new one open",
					left, err, lab.Calls()["Logout"]-before, handed[0])
			}
			// Ended twice (the ender and a fallback): vCenter's NotAuthenticated is no error.
			if err := EndSessions(ctx, carried); err != nil {
				t.Fatalf("EndSessions of an ended session: %v", err)
			}
			if err := client.Logout(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHandOffAll: every connected client's session is handed over, kept
// sessions are not (the next process resumes them), and what the session
// ender gets carries no password.
func TestHandOffAll(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	all := connectedClients(t, lab, 2)
	kept := labClient(lab, func(cfg *Config) { cfg.SessionDir = filepath.Join(t.TempDir(), "sessions") })
	if _, err := kept.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	all.Add(kept)
	all.Add(labClient(lab)) // never connected
	all.Add(New(Config{}))  // not configured

	ends, err := all.HandOff(ctx)
	if err != nil || len(ends) != 2 {
		t.Fatalf("HandOff: %d sessions, %v; want the two connected clients' and not the kept one", len(ends), err)
	}
	b, err := json.Marshal(ends)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), lab.Password) {
		t.Fatal("the session ends carry the password")
	}
	if shown := fmt.Sprintf("%v %+v %s", ends[0], ends, ends[0]); strings.Contains(shown, ends[0].Cookie) || !strings.Contains(shown, lab.URL.Host) {
		t.Fatalf("a session end printed shows %q: want its vCenter, never its cookie", shown)
	}
	if err := EndSessions(ctx, ends); err != nil {
		t.Fatal(err)
	}
	if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 1 {
		t.Fatalf("sessions after EndSessions: %v (%v); want the kept one alone", keys, err)
	}
}

// TestEndSessionsReportsAnUntrustedVCenter: a session ender that cannot
// trust the server it is sent to sends no cookie there, and says why.
func TestEndSessionsReportsAnUntrustedVCenter(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	end, err := c.HandOff(ctx)
	if err != nil || end == nil {
		t.Fatalf("HandOff: %+v, %v", end, err)
	}
	pinned := *end
	pinned.Trust = Trust{Thumbprint: strings.Repeat("AB:", 19) + "AB"}
	before := lab.Calls()["Logout"]
	err = EndSessions(ctx, []SessionEnd{pinned})
	var mismatch thumbprintMismatch
	if !errors.As(err, &mismatch) || lab.Calls()["Logout"] != before {
		t.Fatalf("EndSessions with the wrong thumbprint: %v, %d calls; want the mismatch and no call", err, lab.Calls()["Logout"]-before)
	}
	foreign := *end
	foreign.Trust = Trust{CAPEM: selfSignedPEM(t)} // a CA that did not sign the lab's certificate
	if err := EndSessions(ctx, []SessionEnd{foreign}); err == nil || lab.Calls()["Logout"] != before {
		t.Fatalf("EndSessions trusting another CA: %v, %d calls; want the certificate refused and no call", err, lab.Calls()["Logout"]-before)
	}
	if err := EndSessions(ctx, []SessionEnd{*end}); err != nil {
		t.Fatal(err)
	}
}

// selfSignedPEM is a new self-signed CA certificate, as PEM.
func selfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
