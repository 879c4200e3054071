package vcsimlab

import (
	"context"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// startLab starts a lab with default options, closed when the test ends.
func startLab(t testing.TB) *Lab {
	t.Helper()
	l, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// newClient logs a second client in, as the provider would.
func newClient(t testing.TB, l *Lab) *govmomi.Client {
	t.Helper()
	c, err := l.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func retrieve(t testing.TB, c *govmomi.Client, ref types.ManagedObjectReference, props []string, dst any) {
	t.Helper()
	if err := tryRetrieve(c, ref, props, dst); err != nil {
		t.Fatalf("retrieve %s %v: %v", ref, props, err)
	}
}

func tryRetrieve(c *govmomi.Client, ref types.ManagedObjectReference, props []string, dst any) error {
	return property.DefaultCollector(c.Client).RetrieveOne(context.Background(), ref, props, dst)
}

func hostRef(l *Lab, i int) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(l.HostNames()[i])}
}

func vmRef(l *Lab, name string) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "VirtualMachine", Value: l.VMID(name)}
}

// lab is a started lab and a client of its own, as the provider has.
type lab struct {
	*Lab
	t *testing.T
	c *govmomi.Client
}

func newLab(t *testing.T) *lab {
	l := startLab(t)
	return &lab{Lab: l, t: t, c: newClient(t, l)}
}

func wantFault(t *testing.T, what string, err error, f types.BaseMethodFault) {
	t.Helper()
	if !fault.Is(err, f) {
		t.Errorf("%s: err = %v, want %s", what, err, faultName(f))
	}
}

func TestStartServesPinnedCredentialsOverTLS(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()

	if l.URL.Scheme != "https" || l.URL.User != nil || l.URL.Path != "/sdk" {
		t.Errorf("URL = %s, want https without user info and path /sdk", l.URL)
	}
	if l.Username != "administrator@vsphere.local" || len(l.Password) < 16 {
		t.Errorf("credentials = %q/%q, want the default user and a random password", l.Username, l.Password)
	}
	if !regexp.MustCompile(`^([0-9A-F]{2}:){19}[0-9A-F]{2}$`).MatchString(l.Thumbprint) {
		t.Errorf("Thumbprint = %q, want upper-case SHA-1 hex with colons", l.Thumbprint)
	}

	// The certificate file verifies the server.
	sc := soap.NewClient(l.URL, false)
	if err := sc.SetRootCAs(l.CertFile); err != nil {
		t.Fatal(err)
	}
	// So does the thumbprint alone.
	pinned := soap.NewClient(l.URL, false)
	pinned.SetThumbprint(l.URL.Host, l.Thumbprint)
	for name, sc := range map[string]*soap.Client{"ca": sc, "thumbprint": pinned} {
		vc, err := vim25.NewClient(ctx, sc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := session.NewManager(vc).Login(ctx, url.UserPassword(l.Username, l.Password)); err != nil {
			t.Fatalf("%s: login: %v", name, err)
		}
	}

	// A wrong password fails: the credentials are pinned.
	u := *l.URL
	u.User = url.UserPassword(l.Username, "wrong")
	if _, err := govmomi.NewClient(ctx, &u, true); !fault.Is(err, &types.InvalidLogin{}) {
		t.Errorf("login with a wrong password: err = %v, want InvalidLogin", err)
	}
	// Without the CA, TLS verification fails.
	u.User = url.UserPassword(l.Username, l.Password)
	if _, err := govmomi.NewClient(ctx, &u, false); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("login without CA: err = %v, want a certificate error", err)
	}
}

func TestStartOptions(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{Hosts: 2, VMs: 3, Username: "root", Password: "s3cret!"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := len(l.HostNames()); got != 2 {
		t.Errorf("hosts = %d, want 2", got)
	}
	want := []string{"hpc-node-0", "hpc-node-1", "hpc-node-2", "bare-node", "legacy-node", "installed-node"}
	if got := l.VMNames(); !slices.Equal(got, want) {
		t.Errorf("VMNames = %v, want %v", got, want)
	}
	if l.Username != "root" || l.Password != "s3cret!" {
		t.Errorf("credentials = %q/%q", l.Username, l.Password)
	}
	if _, err := l.NewClient(context.Background()); err != nil {
		t.Errorf("login with given credentials: %v", err)
	}
}

func TestCloseIsIdempotentAndRemovesFiles(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l.Close()
	if _, err := os.Stat(l.CertFile); !os.IsNotExist(err) {
		t.Errorf("cert file after Close: %v, want it removed", err)
	}
	if _, err := govmomi.NewClient(context.Background(), l.URL, true); err == nil {
		t.Error("the server still answers after Close")
	}
}

func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		l, err := Start(context.Background(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		l.Close()
	}
}
