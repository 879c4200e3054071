package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mtu"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/runnerprobe"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// The service layer names no argument; errorDetail adds what to change in
// the configuration.
func TestErrorDetail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want []string
	}{
		{vsphere.ErrNotConfigured, []string{"no vCenter settings", "VSPHERE_SERVER"}},
		{&vsphere.ConnectError{Op: "logging in", Kind: vsphere.ErrLogin, User: "admin"},
			[]string{`rejected the user name or password for "admin". Check user and password in the provider block (or VSPHERE_USER and VSPHERE_PASSWORD)`}},
		{&vsphere.ConnectError{Op: "connecting", Kind: vsphere.ErrUnreachable, Server: "vc:443", Cause: errors.New("refused")},
			[]string{"connecting: refused. Check vsphere_server (or VSPHERE_SERVER)"}},
		{&vsphere.ConnectError{Op: "connecting", Kind: vsphere.ErrUntrustedCert, Server: "vc", CAFile: "/ca.pem", Cause: errors.New("no PEM")},
			[]string{"/ca.pem", "Check ca_file (or VSPHERE_CA_FILE)"}},
		{&vsphere.ConnectError{Op: "connecting", Kind: vsphere.ErrUntrustedCert, Server: "vc", Pinned: "AA", Presented: "BB"},
			[]string{"does not match thumbprint AA: it presents BB", "update thumbprint"}},
		{&vsphere.ConnectError{Op: "connecting", Kind: vsphere.ErrUntrustedCert, Server: "vc", Presented: "BB", Cause: errors.New("unknown authority")},
			[]string{"not trusted (unknown authority)", "ca_file (or VSPHERE_CA_FILE)", "(the server presents BB)", "allow_unverified_ssl = true"}},
		{fmt.Errorf("adding: %w", &vsphere.PowerOffNeeded{VM: "n1", Change: "it"}),
			[]string{"adding: virtual machine n1 is powered on, and it needs it powered off. Power it off first, or set power_off_allowed = true"}},
		{&vsphere.Error{Op: "reading host host-9", Kind: vsphere.ErrNotFound, Object: vsphere.ObjectHost, ID: "host-9", Message: "no host has id host-9"},
			[]string{"no host has id host-9; data.vspherehpc_host looks one up by name"}},
		{fmt.Errorf("listing: %w", vsphere.ErrNeedsVCenter), []string{"point vsphere_server at the vCenter"}},
		{&vsphere.Error{Op: "probing", Kind: vsphere.ErrInvalidArg, Cause: mtu.ErrBelowMin, Message: "below the smallest size to try, 9100"},
			[]string{"probing: below the smallest size to try, 9100: lower min_mtu"}},
		{runnerprobe.ErrNotLinux, []string{"needs Linux; use host_system_ids"}},
		{
			fmt.Errorf("reading host host-9: %w", context.DeadlineExceeded),
			[]string{"context deadline exceeded. vCenter did not finish within api_timeout", "raise api_timeout"},
		},
		{
			&vsphere.ConnectError{
				Op:     "connecting",
				Kind:   vsphere.ErrUnreachable,
				Server: "vc:443",
				Cause:  &url.Error{Op: "Post", URL: "https://vc/sdk", Err: context.DeadlineExceeded},
			},
			[]string{
				"vCenter did not finish within api_timeout (default 5m0s) while connecting: check vsphere_server (or VSPHERE_SERVER)",
				"raise api_timeout in the provider block",
			},
		},
		{&vsphere.Error{Op: "setting SR-IOV", Kind: vsphere.ErrConnectionLost, Message: "the connection to vCenter closed before its answer came (EOF)"},
			[]string{
				"setting SR-IOV: the connection to vCenter closed before its answer came (EOF). " +
					"vCenter may or may not have done what was asked: run the command again",
			}},
		{&vsphere.ConnectError{Op: "connecting", Kind: vsphere.ErrUnreachable, Server: "vc:443", Cause: &net.OpError{Op: "dial", Err: timeoutError{}}},
			[]string{"within api_timeout (default 5m0s) while connecting", "raise api_timeout"}},
	}
	for _, tc := range cases {
		got := errorDetail(tc.err)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("errorDetail(%v) = %q, want it to contain %q", tc.err, got, w)
			}
		}
	}
}

// timeoutError is a network timeout that is not the context's deadline, as
// a dialer's own timeout is.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestServerProblem(t *testing.T) {
	t.Parallel()
	_, err := vsphere.ParseServer("https://admin:pw@vc.example.com")
	if got := serverProblem(err); got != "it contains a user name or password: give those in user and password instead" {
		t.Fatalf("serverProblem = %q", got)
	}
}
