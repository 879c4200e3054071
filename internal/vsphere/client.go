// Package vsphere is the provider's service layer: every call to vCenter goes
// through here, with typed inputs and results and no Terraform types.
package vsphere

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Config is how to reach and log in to one vCenter.
type Config struct {
	Server             string // host or host:port, as ParseServer returns it
	User               string
	Password           string
	AllowUnverifiedSSL bool
	CAFile             string // PEM bundle of trusted CAs
	Thumbprint         string // pins the one certificate to trust, as NormalizeThumbprint returns it
	APITimeout         time.Duration
	Logger             Logger
	SessionDir         string        // keeps the session between processes there (see session_file.go); "" logs out at the end
	UserAgent          string        // what vCenter's session list shows; "terraform-provider-vspherehpc" when empty
	KeepAliveIdle      time.Duration // how long the session may sit unused before a keep-alive call; 5 minutes when zero
}

// defaultKeepAliveIdle is how long a session may sit unused before a cheap
// call keeps it from expiring (vCenter's default idle timeout is 30 minutes).
const defaultKeepAliveIdle = 5 * time.Minute

// DefaultAPITimeout bounds each vSphere operation when Config gives none.
const DefaultAPITimeout = 5 * time.Minute

// Client is one provider instance's connection to vCenter. It connects on
// first use, so configurations that never touch vCenter need no settings.
type Client struct {
	cfg Config
	log Logger

	connMu     sync.Mutex
	vim        *vim25.Client // nil until connected
	connecting chan struct{} // closed when the connection attempt in flight ends
	lastErr    error         // the error of the last attempt
	trusted    Trust         // how vim trusts vCenter, for HandOff
	fatal      error         // a failure that retrying cannot fix, e.g. a rejected password

	loginMu   sync.Mutex
	loginGen  uint64 // bumped on every successful login
	loggedOut bool   // Logout ended the session; the next use logs in again
	rejected  error  // vCenter refused the user name or password: never tried again
	// sessionKept: the session is in its file for the next process
	// (Config.SessionDir), which Logout leaves it to.
	sessionKept atomic.Bool

	vms            objectLocks
	hosts          objectLocks
	reboots        objectLocks // by cluster: one host of a cluster reboots at a time
	hostGates      hostGates   // a host's reboot apart from the changes to its VMs
	batch          readBatch
	prefetch       prefetcher
	names          nameIndexes
	vmIDs          sync.Map // lower-case VM UUID -> types.ManagedObjectReference, see vmRef
	vmUUIDs        vmUUIDIndex
	protocols      sync.Map // hardware version ("vmx-19") -> *protocolsRead, see pvrdmaOption
	backings       sync.Map // port group id -> types.DistributedVirtualSwitchPortConnection, see portGroupBacking
	configManagers sync.Map // host id -> *types.HostConfigManager, see hostConfigManager
	applies        switchApplies

	keepAliveChecked func(at time.Time, sent bool) // test hook: see keepAlive.checked
}

// New returns a client that has not connected yet.
func New(cfg Config) *Client {
	if cfg.APITimeout <= 0 {
		cfg.APITimeout = DefaultAPITimeout
	}
	if cfg.KeepAliveIdle <= 0 {
		cfg.KeepAliveIdle = defaultKeepAliveIdle
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

// operationKey marks a context that an operation's bound already covers.
type operationKey struct{}

// withTimeout bounds one operation by the configured API timeout. An
// operation made of others (a planner reading each host, a create that
// reads back) is bounded once: what it calls shares its deadline, so the
// API timeout is the longest anyone waits for one operation.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Value(operationKey{}) != nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithTimeout(ctx, c.apiTimeout())
	return context.WithValue(ctx, operationKey{}, struct{}{}), cancel
}

func (c *Client) apiTimeout() time.Duration {
	if c == nil {
		return DefaultAPITimeout
	}
	return c.cfg.APITimeout
}

// vimClient returns the connected client, connecting and logging in first
// when needed. One attempt runs at a time; the others wait for it, each
// bounded by its own context. A rejected login or certificate is remembered
// and never retried: retrying a bad password can lock the account.
func (c *Client) vimClient(ctx context.Context) (*vim25.Client, error) {
	if !c.Configured() {
		return nil, ErrNotConfigured
	}
	for {
		c.connMu.Lock()
		vc, fatal := c.vim, c.fatal
		switch {
		case fatal != nil:
			c.connMu.Unlock()
			return nil, fatal
		case vc != nil:
			c.connMu.Unlock()
			if err := c.loginAfterLogout(ctx, vc); err != nil {
				return nil, err
			}
			return vc, nil
		case c.connecting == nil:
			done := make(chan struct{})
			c.connecting = done
			c.connMu.Unlock()
			trust, err := c.readTrust()
			var vc *vim25.Client
			if err == nil {
				vc, err = c.connect(ctx, trust)
			}
			c.connMu.Lock()
			c.vim, c.trusted, c.lastErr, c.connecting = vc, trust, err, nil
			if errors.Is(err, ErrLogin) || errors.Is(err, ErrUntrustedCert) {
				c.fatal = err
			}
			close(done)
			c.connMu.Unlock()
			return vc, err
		}
		wait := c.connecting
		c.connMu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.connMu.Lock()
		err := c.lastErr
		c.connMu.Unlock()
		// Another caller's attempt ended with its own context: try again.
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
	}
}

func (c *Client) connect(ctx context.Context, trust Trust) (*vim25.Client, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	sc := newSOAPClient(c.cfg.Server, c.userAgent(), trust)
	u := sc.URL()
	sc.Client.Transport = &bodyTracer{next: sc.Client.Transport, log: c.log}

	alive := &keepAlive{next: sc, idle: c.cfg.KeepAliveIdle, timeout: c.apiTimeout(), checked: c.keepAliveChecked}
	rt := &sessionRoundTripper{next: alive, client: c}
	if c.cfg.SessionDir != "" {
		if kept := c.keptSession(ctx); kept != nil {
			vc := resume(sc, rt, kept)
			rt.vim = vc
			c.sessionKept.Store(true)
			c.log.Debug(ctx, "Resumed the kept vCenter session", map[string]any{"server": u.Host, "user": c.cfg.User})
			return vc, nil
		}
	}

	// Log in while the service content is read: one round trip, not two.
	gen := c.generation()
	early := make(chan error, 1)
	go func() { early <- c.loginAt(ctx, rt, sc, vcenterSessionManager, gen) }()
	vc, err := vim25.NewClient(ctx, sc)
	earlyErr := <-early
	// A failed connection whose login went through ends its session, even
	// when ctx has ended: it would outlive the connection.
	abandon := func() {
		if earlyErr == nil {
			logoutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonedLogoutTimeout)
			_, _ = methods.Logout(logoutCtx, rt, &types.Logout{This: vcenterSessionManager})
			cancel()
		}
	}
	if err != nil {
		abandon()
		return nil, c.connectError(ctx, u, err)
	}
	if vc.ServiceContent.SessionManager == nil {
		abandon()
		return nil, &ConnectError{Op: "connecting to vCenter " + c.cfg.Server, Kind: ErrNotImplemented, Server: c.cfg.Server,
			Cause: errors.New("its service content names no session manager to log in to, as neither a vCenter nor an ESXi host would")}
	}
	rt.vim = vc
	vc.RoundTripper = rt
	switch {
	case earlyErr == nil:
		c.keepSession(ctx, vc)
	case errors.Is(earlyErr, ErrLogin) && *vc.ServiceContent.SessionManager == vcenterSessionManager:
		return nil, earlyErr
	default: // the guess was wrong, or its call failed: log in as the service content says
		if err := c.login(ctx, vc, gen); err != nil {
			return nil, err
		}
	}
	c.log.Debug(ctx, "Connected to vCenter", map[string]any{
		"server": u.Host, "user": c.cfg.User,
		"api_version": vc.ServiceContent.About.ApiVersion, "product": vc.ServiceContent.About.FullName,
	})
	return vc, nil
}

// abandonedLogoutTimeout bounds logging out of a session whose connection
// failed after its login went through, which happens after connect's own
// time has run out.
const abandonedLogoutTimeout = 5 * time.Second

// userAgent is what vCenter's list of sessions shows for the client's.
func (c *Client) userAgent() string {
	if c.cfg.UserAgent != "" {
		return c.cfg.UserAgent
	}
	return "terraform-provider-vspherehpc"
}

// vcenterSessionManager is vCenter's session manager, as its service
// content names it ("sessionManager": {"type": "SessionManager", "value":
// "SessionManager"} in VMware's "Automating vSphere workflows with VI/JSON",
// 2023). connect logs in to it before the service content has confirmed it;
// a server that names it otherwise (ESXi's is ha-sessionmgr) is logged in to
// again, as its service content says.
var vcenterSessionManager = types.ManagedObjectReference{Type: "SessionManager", Value: "SessionManager"}

// login logs in unless another goroutine already did so since generation
// seen, so a burst of NotAuthenticated faults leads to one new session.
func (c *Client) login(ctx context.Context, vc *vim25.Client, seen uint64) error {
	if err := c.loginAt(ctx, vc, vc.Client, *vc.ServiceContent.SessionManager, seen); err != nil {
		return err
	}
	c.keepSession(ctx, vc)
	return nil
}

// loginAt is login through rt, to the session manager manager of sc's
// server.
func (c *Client) loginAt(ctx context.Context, rt soap.RoundTripper, sc *soap.Client, manager types.ManagedObjectReference, seen uint64) error {
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	if c.rejected != nil { // retrying a bad password can lock the account
		return c.rejected
	}
	if c.loginGen != seen {
		return nil
	}
	op := "logging in to vCenter " + sc.URL().Host
	res, err := methods.Login(ctx, rt, &types.Login{
		This: manager, UserName: c.cfg.User, Password: c.cfg.Password, Locale: session.Locale,
	})
	if fault.Is(err, &types.InvalidLogin{}) {
		c.rejected = &ConnectError{Op: op, Kind: ErrLogin, Server: sc.URL().Host, User: c.cfg.User, Cause: err}
		return c.rejected
	}
	if err != nil {
		return translate(op, err)
	}
	// Whoever reads the session key or cookie holds the session: keep both
	// out of every log line, like the password.
	c.log.Mask(res.Returnval.Key)
	if cookie := sc.SessionCookie(); cookie != nil {
		c.log.Mask(cookie.Value)
	}
	c.loginGen++
	c.loggedOut = false
	return nil
}

// loginAfterLogout logs in again when Logout ended the session, so a client
// used after Logout works as before.
func (c *Client) loginAfterLogout(ctx context.Context, vc *vim25.Client) error {
	c.loginMu.Lock()
	out, gen := c.loggedOut, c.loginGen
	c.loginMu.Unlock()
	if !out {
		return nil
	}
	return c.login(ctx, vc, gen)
}

// Logout ends the client's vCenter session, if it has one, so that sessions
// do not pile up on vCenter until its idle timeout ends them. A connection
// in progress is waited for, so that its session ends too. ctx bounds that
// wait and the call. The client stays usable: its next call logs in again.
// A kept session (Config.SessionDir) is left for the next process; one
// that could not be kept is logged out.
func (c *Client) Logout(ctx context.Context) error {
	return c.endSession(ctx, func(vc *vim25.Client, _ Trust) error { return c.logoutLocked(ctx, vc) })
}

// endSession runs end, under loginMu, on the connection whose session the
// process should end, with how it trusts vCenter; not when there is none:
// never connected, logged out, or kept for the next process
// (Config.SessionDir). A connection in progress is waited for, as long as
// ctx lets.
func (c *Client) endSession(ctx context.Context, end func(vc *vim25.Client, trust Trust) error) error {
	if !c.Configured() {
		return nil
	}
	c.connMu.Lock()
	connecting := c.connecting
	c.connMu.Unlock()
	if connecting != nil {
		select {
		case <-connecting:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.connMu.Lock()
	vc, trust := c.vim, c.trusted
	c.connMu.Unlock()
	if vc == nil || vc.ServiceContent.SessionManager == nil {
		return nil
	}
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	// Asked once the connection in flight has ended, which may have kept
	// its session.
	if c.loggedOut || c.sessionKept.Load() {
		return nil
	}
	return end(vc, trust)
}

// logoutLocked logs vc's session out; loginMu is held.
func (c *Client) logoutLocked(ctx context.Context, vc *vim25.Client) error {
	_, err := methods.Logout(ctx, vc, &types.Logout{This: *vc.ServiceContent.SessionManager})
	if err != nil && !fault.Is(err, &types.NotAuthenticated{}) { // NotAuthenticated: already gone
		return translate("logging out of vCenter "+vc.URL().Host, err)
	}
	c.loggedOut = true
	c.log.Debug(ctx, "Logged out of vCenter", map[string]any{"server": vc.URL().Host, "user": c.cfg.User})
	return nil
}

// Clients are the clients of one provider process, kept so that the process
// can end their sessions when Terraform stops it.
type Clients struct {
	mu   sync.Mutex
	list []*Client
}

// Add keeps c for LogoutAll and HandOff.
func (cs *Clients) Add(c *Client) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.list = append(cs.list, c)
}

// LogoutAll logs every client out at once and returns when all are done or
// ctx ends, so a slow or unreachable vCenter cannot hold up the exit.
func (cs *Clients) LogoutAll(ctx context.Context) error {
	_, err := cs.each(ctx, func(c *Client) (*SessionEnd, error) { return nil, c.Logout(ctx) })
	return err
}

// each runs do on every client at once, and returns what those done when
// ctx ends returned, with ctx's error if any was not done: a client waiting
// for a login in flight (which holds it whatever ctx says) holds up nobody.
func (cs *Clients) each(ctx context.Context, do func(c *Client) (*SessionEnd, error)) ([]SessionEnd, error) {
	cs.mu.Lock()
	list := append([]*Client(nil), cs.list...)
	cs.mu.Unlock()
	type result struct {
		end *SessionEnd
		err error
	}
	results := make(chan result, len(list))
	for _, c := range list {
		go func() {
			end, err := do(c)
			results <- result{end, err}
		}()
	}
	var ends []SessionEnd
	var errs []error
	for range list {
		select {
		case r := <-results:
			if r.end != nil {
				ends = append(ends, *r.end)
			}
			errs = append(errs, r.err)
		case <-ctx.Done():
			return ends, errors.Join(append(errs, ctx.Err())...)
		}
	}
	return ends, errors.Join(errs...)
}

func (c *Client) generation() uint64 {
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	return c.loginGen
}

// connectError turns transport failures into errors that tell which
// connection setting is at fault.
func (c *Client) connectError(ctx context.Context, u *url.URL, err error) error {
	op := "connecting to vCenter " + u.Host
	ce := &ConnectError{Op: op, Server: u.Host, Cause: err}
	var mismatch thumbprintMismatch
	var netErr net.Error
	switch {
	case errors.As(err, &mismatch):
		ce.Kind, ce.Pinned, ce.Presented = ErrUntrustedCert, c.cfg.Thumbprint, mismatch.presented
	case soap.IsCertificateUntrusted(err):
		ce.Kind = ErrUntrustedCert
		if tp, terr := PeerThumbprint(ctx, u.Host); terr == nil {
			ce.Presented = tp
		}
	case errors.As(err, &netErr):
		ce.Kind = ErrUnreachable
	default:
		return translate(op, err)
	}
	return ce
}

// calledMethod is the vSphere method a request body calls: its type's name
// for govmomi's bodies (methods.LoginBody calls Login), or the one it says.
func calledMethod(req soap.HasFault) string {
	if m, ok := req.(interface{ vsphereMethod() string }); ok {
		return m.vsphereMethod()
	}
	return strings.TrimSuffix(reflect.TypeOf(req).Elem().Name(), "Body")
}

// errSessionRenewed reports that vCenter ended the session during a call on a
// session-scoped object (a property filter, a created collector): the client
// has logged in again, but the object is gone with the old session, so the
// caller must start over, e.g. wait on its task again.
var errSessionRenewed = errors.New("the vCenter session ended and was renewed")

// sessionRoundTripper logs every vSphere call and logs in again when vCenter
// says the session is gone (expired, or ended by an administrator or a
// vCenter restart), then retries the call once.
type sessionRoundTripper struct {
	next   soap.RoundTripper
	client *Client
	vim    *vim25.Client
}

func (s *sessionRoundTripper) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	method := calledMethod(req)
	s.client.prefetch.noteCall(method, req)
	if isLogin(req) { // runs under the login lock: no generation, no retry
		return s.call(ctx, method, req, res)
	}
	gen := s.client.generation()
	err := s.call(ctx, method, req, res)
	if err != nil && (soap.IsCertificateUntrusted(err) || errors.As(err, new(thumbprintMismatch))) {
		// A resumed session's first call is the connection's first: its
		// certificate is checked here, and said as connecting says it.
		return s.client.connectError(ctx, s.vim.URL(), err)
	}
	if !fault.Is(err, &types.NotAuthenticated{}) {
		return err
	}
	s.client.log.Debug(ctx, "vSphere session is gone; logging in again", map[string]any{"method": method})
	if lerr := s.client.login(ctx, s.vim, gen); lerr != nil {
		return lerr
	}
	if sessionScoped(method, req) {
		return fmt.Errorf("%s: %w", method, errSessionRenewed)
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

// sessionScoped reports whether a call works on state that dies with the
// session: objects vCenter creates per session (their ids start with
// "session["), and the filters and result tokens of the property collector.
func sessionScoped(method string, req soap.HasFault) bool {
	switch method {
	case "WaitForUpdatesEx", "WaitForUpdates", "CheckForUpdates", "CancelWaitForUpdates",
		"ContinueRetrievePropertiesEx", "CancelRetrievePropertiesEx":
		return true
	}
	body := reflect.ValueOf(req).Elem().FieldByName("Req")
	if !body.IsValid() || body.IsNil() {
		return false
	}
	this := body.Elem().FieldByName("This")
	if !this.IsValid() {
		return false
	}
	ref, ok := this.Interface().(types.ManagedObjectReference)
	return ok && strings.HasPrefix(ref.Value, "session[")
}

// ReadCAFile checks that a CA bundle exists and holds at least one PEM
// certificate, so a bad path is reported at configuration time.
func ReadCAFile(path string) error {
	_, err := caBundle(path)
	return err
}

// caBundle reads a CA bundle: a PEM file of one or more certificates.
func caBundle(path string) ([]byte, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pem, nil
}
