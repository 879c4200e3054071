package vsphere

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
)

// How a client reaches vCenter: the address as people write it, and how it
// trusts the certificate vCenter presents.

// ErrCredentialsInURL: a vCenter address with a user name or password in it.
var ErrCredentialsInURL = errors.New("it contains a user name or password")

// ParseServer accepts a vCenter address as people write it: a host name or
// address, with an optional port, or an https URL. It refuses credentials in
// the address, which would otherwise end up in logs.
func ParseServer(server string) (string, error) {
	s := strings.TrimSpace(server)
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", errors.New("it is not a host name, host:port or https URL")
	case u.User != nil:
		return "", ErrCredentialsInURL
	case u.Scheme != "https":
		return "", fmt.Errorf("vCenter is reached over https, not %s", u.Scheme)
	case u.Host == "":
		return "", errors.New("it has no host name")
	}
	return u.Host, nil
}

var hexDigits = regexp.MustCompile(`^([0-9A-F]{40}|[0-9A-F]{64})$`)

// NormalizeThumbprint accepts a SHA-1 or SHA-256 certificate thumbprint with
// or without colons, in any case, and returns it as govmomi and vSphere show
// it ("AB:CD:...").
func NormalizeThumbprint(tp string) (string, error) {
	hex := strings.ToUpper(strings.NewReplacer(":", "", " ", "", "-", "").Replace(strings.TrimSpace(tp)))
	if !hexDigits.MatchString(hex) {
		return "", errors.New("a thumbprint is a SHA-1 (40 hex digits) or SHA-256 (64 hex digits) fingerprint, with or without colons")
	}
	parts := make([]string, 0, len(hex)/2)
	for i := 0; i < len(hex); i += 2 {
		parts = append(parts, hex[i:i+2])
	}
	return strings.Join(parts, ":"), nil
}

// thumbprintMismatch is the TLS failure of a pinned certificate.
type thumbprintMismatch struct{ presented string }

func (e thumbprintMismatch) Error() string {
	return "certificate thumbprint " + e.presented + " does not match the pinned thumbprint"
}

// pinThumbprint makes the TLS handshake accept exactly the certificate with
// the given thumbprint, whoever signed it. govmomi's own thumbprint support
// only applies after normal verification fails, which pins nothing.
func pinThumbprint(cfg *tls.Config, thumbprint string) {
	cfg.InsecureSkipVerify = true //nolint:gosec // VerifyConnection below checks the certificate.
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server presented no certificate")
		}
		cert := cs.PeerCertificates[0]
		if thumbprint == soap.ThumbprintSHA1(cert) || thumbprint == soap.ThumbprintSHA256(cert) {
			return nil
		}
		return thumbprintMismatch{presented: soap.ThumbprintSHA1(cert)}
	}
}

// newSOAPClient is a client of server's SDK endpoint that trusts its
// certificate as trust says.
func newSOAPClient(server, userAgent string, trust Trust) *soap.Client {
	sc := soap.NewClient(&url.URL{Scheme: "https", Host: server, Path: vim25.Path}, trust.AllowUnverifiedSSL)
	// Set before any call, as vim25.NewClient would set the first two: the
	// login goes out while the service content is read, and both calls
	// read them.
	sc.Namespace, sc.Version, sc.UserAgent = "urn:"+vim25.Namespace, vim25.Version, userAgent
	switch {
	case trust.Thumbprint != "":
		pinThumbprint(sc.DefaultTransport().TLSClientConfig, trust.Thumbprint)
	case trust.CAPEM != "":
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(trust.CAPEM))
		sc.DefaultTransport().TLSClientConfig.RootCAs = pool
	}
	return sc
}

// Trust is how a client trusts vCenter's certificate: by the CAs of a PEM
// bundle, by a pinned thumbprint, or not at all.
type Trust struct {
	AllowUnverifiedSSL bool
	CAPEM              string
	Thumbprint         string
}

// readTrust reads the configuration's CA bundle, if it names one.
func (c *Client) readTrust() (Trust, error) {
	t := Trust{AllowUnverifiedSSL: c.cfg.AllowUnverifiedSSL, Thumbprint: c.cfg.Thumbprint}
	if t.Thumbprint == "" && c.cfg.CAFile != "" {
		pem, err := caBundle(c.cfg.CAFile)
		if err != nil {
			return t, &ConnectError{
				Op:     "connecting to vCenter " + c.cfg.Server,
				Kind:   ErrUntrustedCert,
				Server: c.cfg.Server,
				CAFile: c.cfg.CAFile,
				Cause:  err,
			}
		}
		t.CAPEM = string(pem)
	}
	return t, nil
}

// PeerThumbprint returns the SHA-1 thumbprint of the certificate a server
// presents, without trusting it; used only to tell the user what to pin.
func PeerThumbprint(ctx context.Context, host string) (string, error) {
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "443")
	}
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // reads the certificate only, sends nothing
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "", errors.New("no certificate presented")
	}
	return soap.ThumbprintSHA1(certs[0]), nil
}
