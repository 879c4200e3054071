// Package vsphere is the provider's service layer: every call to vCenter goes
// through here, with typed inputs and results and no Terraform types.
package vsphere

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Config is how to reach and log in to one vCenter.
type Config struct {
	Server             string // host or host:port
	User               string
	Password           string
	AllowUnverifiedSSL bool
	CAFile             string // PEM bundle of trusted CAs
	Thumbprint         string // SHA-1 thumbprint of the one certificate to trust
	APITimeout         time.Duration
	Logger             Logger
}

// keepAliveIdle is how long a session may sit unused before a cheap call
// keeps it from expiring (vCenter's default idle timeout is 30 minutes).
const keepAliveIdle = 5 * time.Minute

// DefaultAPITimeout bounds each vSphere operation when Config gives none.
const DefaultAPITimeout = 5 * time.Minute

// Client is one provider instance's connection to vCenter. It connects on
// first use, so configurations that never touch vCenter need no settings.
type Client struct {
	cfg Config
	log Logger

	mu  sync.Mutex
	vim *vim25.Client // nil until connected

	loginMu    sync.Mutex
	loginGen   uint64 // bumped on every successful login
	loginCount int
}

// New returns a client that has not connected yet.
func New(cfg Config) *Client {
	if cfg.APITimeout <= 0 {
		cfg.APITimeout = DefaultAPITimeout
	}
	log := cfg.Logger
	if log == nil {
		log = discardLogger{}
	}
	return &Client{cfg: cfg, log: log}
}

// Configured reports whether the client has the settings to connect.
func (c *Client) Configured() bool {
	return c != nil && c.cfg.Server != "" && c.cfg.User != "" && c.cfg.Password != ""
}

// Logins is how many times the client has logged in (tests assert re-login).
func (c *Client) Logins() int {
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	return c.loginCount
}

// withTimeout bounds one operation by the configured API timeout.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c == nil {
		return context.WithTimeout(ctx, DefaultAPITimeout)
	}
	return context.WithTimeout(ctx, c.cfg.APITimeout)
}

// vimClient returns the connected client, connecting and logging in first
// when needed. A failed connection is not cached: the next call tries again.
func (c *Client) vimClient(ctx context.Context) (*vim25.Client, error) {
	if c == nil {
		return nil, ErrNotConfigured
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vim != nil {
		return c.vim, nil
	}
	if !c.Configured() {
		return nil, ErrNotConfigured
	}
	vc, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.vim = vc
	return vc, nil
}

func (c *Client) serverURL() (*url.URL, error) {
	server := strings.TrimSpace(c.cfg.Server)
	if strings.Contains(server, "://") {
		u, err := url.Parse(server)
		if err != nil {
			return nil, fmt.Errorf("vCenter address %q is not a host name or URL: %w", c.cfg.Server, err)
		}
		server = u.Host
	}
	if server == "" {
		return nil, fmt.Errorf("vCenter address %q has no host name", c.cfg.Server)
	}
	return &url.URL{Scheme: "https", Host: server, Path: vim25.Path}, nil
}

func (c *Client) connect(ctx context.Context) (*vim25.Client, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	u, err := c.serverURL()
	if err != nil {
		return nil, err
	}
	sc := soap.NewClient(u, c.cfg.AllowUnverifiedSSL)
	if c.cfg.CAFile != "" {
		if err := sc.SetRootCAs(c.cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading ca_file %s: %w", c.cfg.CAFile, err)
		}
	}
	if c.cfg.Thumbprint != "" {
		sc.SetThumbprint(u.Host, NormalizeThumbprint(c.cfg.Thumbprint))
	}
	sc.Client.Transport = &bodyTracer{next: sc.Client.Transport, log: c.log}

	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, c.connectError(ctx, u, err)
	}
	vc.RoundTripper = &sessionRoundTripper{
		next:   keepalive.NewHandlerSOAP(sc, keepAliveIdle, nil),
		client: c,
		vim:    vc,
	}
	if err := c.login(ctx, vc, 0); err != nil {
		return nil, err
	}
	c.log.Debug(ctx, "Connected to vCenter", map[string]any{
		"vsphere_server": u.Host, "vsphere_user": c.cfg.User,
		"api_version": vc.ServiceContent.About.ApiVersion, "product": vc.ServiceContent.About.FullName,
	})
	return vc, nil
}

// login logs in unless another goroutine already did so since generation
// seen, so a burst of NotAuthenticated faults leads to one new session.
func (c *Client) login(ctx context.Context, vc *vim25.Client, seen uint64) error {
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	if c.loginGen != seen {
		return nil
	}
	err := session.NewManager(vc).Login(ctx, url.UserPassword(c.cfg.User, c.cfg.Password))
	if err != nil {
		if fault.Is(err, &types.InvalidLogin{}) {
			return &Error{Op: "logging in to vCenter " + vc.URL().Host, Kind: ErrLogin, Message: fmt.Sprintf(
				"vCenter rejected the user name or password for %q. Check user and password in the provider block (or VSPHERE_USER and VSPHERE_PASSWORD)", c.cfg.User)}
		}
		return translate("logging in to vCenter "+vc.URL().Host, err)
	}
	c.loginGen++
	c.loginCount++
	return nil
}

func (c *Client) generation() uint64 {
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	return c.loginGen
}

// connectError turns transport failures into errors that say what to do.
func (c *Client) connectError(ctx context.Context, u *url.URL, err error) error {
	op := "connecting to vCenter " + u.Host
	switch {
	case soap.IsCertificateUntrusted(err):
		msg := fmt.Sprintf("the TLS certificate of %s is not trusted (%v). Either trust it, by setting ca_file (or VSPHERE_CA_FILE) to a PEM bundle with the CA that issued it or thumbprint to the certificate's thumbprint", u.Host, err)
		if tp, terr := PeerThumbprint(ctx, u.Host); terr == nil {
			msg += fmt.Sprintf(" (the server presents %s)", tp)
		}
		msg += "; or set allow_unverified_ssl = true (or VSPHERE_ALLOW_UNVERIFIED_SSL=true) to skip verification, which is not recommended"
		return &Error{Op: op, Kind: ErrUntrustedCert, Message: msg}
	case strings.Contains(err.Error(), "thumbprint does not match"):
		msg := fmt.Sprintf("the certificate of %s does not match thumbprint %s", u.Host, NormalizeThumbprint(c.cfg.Thumbprint))
		if tp, terr := PeerThumbprint(ctx, u.Host); terr == nil {
			msg += fmt.Sprintf("; it presents %s. If the certificate was replaced on purpose, update thumbprint", tp)
		}
		return &Error{Op: op, Kind: ErrUntrustedCert, Message: msg}
	}
	var netErr net.Error
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.As(err, &netErr) {
		return &Error{Op: op, Kind: ErrUnreachable, Message: fmt.Sprintf("%v. Check vsphere_server (or VSPHERE_SERVER) and that vCenter is reachable from this machine", err)}
	}
	return translate(op, err)
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

// NormalizeThumbprint accepts SHA-1 or SHA-256 thumbprints with or without
// colons, in any case, and returns the form govmomi compares against.
func NormalizeThumbprint(tp string) string {
	hex := strings.ToUpper(strings.NewReplacer(":", "", " ", "", "-", "").Replace(strings.TrimSpace(tp)))
	if len(hex)%2 != 0 {
		return hex
	}
	parts := make([]string, 0, len(hex)/2)
	for i := 0; i < len(hex); i += 2 {
		parts = append(parts, hex[i:i+2])
	}
	return strings.Join(parts, ":")
}

// sessionRoundTripper logs every vSphere call and logs in again when vCenter
// says the session is gone (expired, or ended by an administrator or a
// vCenter restart), then retries the call once.
type sessionRoundTripper struct {
	next   soap.RoundTripper
	client *Client
	vim    *vim25.Client
}

func (s *sessionRoundTripper) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	method := strings.TrimSuffix(reflect.TypeOf(req).Elem().Name(), "Body")
	if isLogin(req) { // runs under the login lock: no generation, no retry
		return s.call(ctx, method, req, res)
	}
	gen := s.client.generation()
	err := s.call(ctx, method, req, res)
	if !notAuthenticated(err, res) {
		return err
	}
	s.client.log.Debug(ctx, "vSphere session is gone; logging in again", map[string]any{"method": method})
	if lerr := s.client.login(ctx, s.vim, gen); lerr != nil {
		return lerr
	}
	// Decode the retry into a fresh value: XML decoding does not clear fields,
	// so the first attempt's fault would otherwise survive.
	fresh := reflect.New(reflect.TypeOf(res).Elem())
	err = s.call(ctx, method, req, fresh.Interface().(soap.HasFault))
	reflect.ValueOf(res).Elem().Set(fresh.Elem())
	return err
}

func (s *sessionRoundTripper) call(ctx context.Context, method string, req, res soap.HasFault) error {
	start := time.Now()
	err := s.next.RoundTrip(ctx, req, res)
	s.client.log.Debug(ctx, "vSphere call", map[string]any{"method": method, "duration_ms": time.Since(start).Milliseconds(), "error": errText(err)})
	return err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func isLogin(req soap.HasFault) bool {
	switch req.(type) {
	case *methods.LoginBody, *methods.LoginByTokenBody, *methods.LoginExtensionByCertificateBody, *methods.LogoutBody:
		return true
	}
	return false
}

// notAuthenticated recognises a lost session both as a SOAP fault and as the
// per-object fault some property-collector implementations return instead.
func notAuthenticated(err error, res soap.HasFault) bool {
	if err != nil {
		return fault.Is(err, &types.NotAuthenticated{})
	}
	var objects []types.ObjectContent
	switch r := res.(type) {
	case *methods.RetrievePropertiesExBody:
		if r.Res != nil && r.Res.Returnval != nil {
			objects = r.Res.Returnval.Objects
		}
	case *methods.RetrievePropertiesBody:
		if r.Res != nil {
			objects = r.Res.Returnval
		}
	}
	for _, o := range objects {
		for _, m := range o.MissingSet {
			if _, ok := m.Fault.Fault.(*types.NotAuthenticated); ok {
				return true
			}
		}
	}
	return false
}

// ReadCAFile checks that a CA bundle exists and holds at least one PEM
// certificate, so a bad path is reported at configuration time.
func ReadCAFile(path string) error {
	pem, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s holds no PEM certificate", path)
	}
	return nil
}
