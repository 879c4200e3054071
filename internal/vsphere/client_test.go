package vsphere

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func labClient(lab *vcsimlab.Lab, mutate ...func(*Config)) *Client {
	cfg := Config{Server: lab.URL.Host, User: lab.Username, Password: lab.Password, CAFile: lab.CertFile}
	for _, m := range mutate {
		m(&cfg)
	}
	return New(cfg)
}

// recordingLogger keeps every line, for assertions on what gets logged, and
// the values the client asked it to mask (it masks none: what reaches it
// unmasked is what scrub let through).
type recordingLogger struct {
	mu     sync.Mutex
	lines  []string
	masked []string
}

func (r *recordingLogger) add(level, msg string, fields map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprint(level, " ", msg, " ", fields))
}

func (r *recordingLogger) Debug(_ context.Context, msg string, f map[string]any) {
	r.add("DEBUG", msg, f)
}
func (r *recordingLogger) Trace(_ context.Context, msg string, f map[string]any) {
	r.add("TRACE", msg, f)
}
func (r *recordingLogger) TraceEnabled() bool { return true }
func (r *recordingLogger) Mask(v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.masked = append(r.masked, v)
}

func (r *recordingLogger) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

func TestConnectsLazily(t *testing.T) {
	t.Parallel()
	c := New(Config{})
	if c.Configured() {
		t.Fatal("an empty config must not count as configured")
	}
	if _, err := c.DatacenterByName(context.Background(), ""); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("error = %v, want ErrNotConfigured", err)
	}
	var nilClient *Client
	if _, err := nilClient.Host(context.Background(), "host-1"); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("nil client error = %v, want ErrNotConfigured", err)
	}
}

func TestLoginAndTLS(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()

	cases := []struct {
		name    string
		mutate  func(*Config)
		wantErr error
		wantMsg []string
	}{
		{"ca_file", func(*Config) {}, nil, nil},
		{"thumbprint", func(c *Config) { c.CAFile, c.Thumbprint = "", lab.Thumbprint }, nil, nil},
		{"allow_unverified_ssl", func(c *Config) { c.CAFile, c.AllowUnverifiedSSL = "", true }, nil, nil},
		{"untrusted certificate", func(c *Config) { c.CAFile = "" }, ErrUntrustedCert,
			[]string{"not trusted", lab.Thumbprint}},
		{"wrong thumbprint", func(c *Config) { c.CAFile, c.Thumbprint = "", strings.Repeat("AB:", 19)+"AB" }, ErrUntrustedCert,
			[]string{"does not match", lab.Thumbprint}},
		// A pin is a pin: a certificate the CA bundle trusts is still refused.
		{"wrong thumbprint with a trusting CA", func(c *Config) { c.Thumbprint = strings.Repeat("AB:", 19) + "AB" }, ErrUntrustedCert,
			[]string{"does not match", lab.Thumbprint}},
		{"wrong password", func(c *Config) { c.Password = "not-" + lab.Password }, ErrLogin,
			[]string{"rejected the user name or password", lab.Username}},
		{"unreachable", func(c *Config) { c.Server = "127.0.0.1:1" }, ErrUnreachable, []string{"127.0.0.1:1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := labClient(lab, tc.mutate)
			_, err := c.DatacenterByName(ctx, "")
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

// tracedClient is a client of a new lab, with its log lines kept.
func tracedClient(t *testing.T) (*vcsimlab.Lab, *Client, *recordingLogger) {
	t.Helper()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	log := &recordingLogger{}
	return lab, labClient(lab, func(cfg *Config) { cfg.Logger = log }), log
}

func TestPasswordNeverLogged(t *testing.T) {
	t.Parallel()
	lab, c, log := tracedClient(t)
	ctx := context.Background()
	if _, err := c.Host(ctx, lab.HostID(lab.HostNames()[0])); err != nil {
		t.Fatal(err)
	}
	if err := lab.TerminateSessions(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	out := log.all()
	if !strings.Contains(out, "<Login") || !strings.Contains(out, "vSphere SOAP response") {
		t.Fatalf("expected traced SOAP bodies including the logins, got:\n%.2000s", out)
	}
	if strings.Contains(out, lab.Password) {
		t.Fatal("the password appears in the log")
	}
	if !strings.Contains(out, "<password>********</password>") {
		t.Fatal("expected the scrubbed password element in the traced Login request")
	}
}

// TestSessionSecretsNeverLogged traces the lab's real answers that carry a
// session or a ticket (two logins, SessionManager's session list and current
// session, a clone ticket, a service ticket, a session check) and asserts that
// none of the keys and tickets is in the log, and that the mask is.
func TestSessionSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	lab, c, log := tracedClient(t)
	ctx := context.Background()
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	first, err := lab.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(lab.TerminateSessions(ctx)) // the next call logs in again: a second LoginResponse
	vc, err := c.vimClient(ctx)
	must(err)
	sm := *vc.ServiceContent.SessionManager
	var mgr mo.SessionManager
	must(property.DefaultCollector(vc).RetrieveOne(ctx, sm, []string{"sessionList", "currentSession"}, &mgr))
	clone, err := methods.AcquireCloneTicket(ctx, vc, &types.AcquireCloneTicket{This: sm})
	must(err)
	ticket, err := methods.AcquireGenericServiceTicket(ctx, vc, &types.AcquireGenericServiceTicket{
		This: sm, Spec: &types.SessionManagerHttpServiceRequestSpec{Method: "httpGet", Url: "https://" + lab.URL.Host + "/folder"},
	})
	must(err)
	_, err = methods.SessionIsActive(ctx, vc, &types.SessionIsActive{This: sm, SessionID: mgr.CurrentSession.Key, UserName: lab.Username})
	must(err)

	secrets := append([]string{lab.Password, clone.Returnval, ticket.Returnval.Id}, first...)
	for _, s := range mgr.SessionList { // the lab's own session among them
		secrets = append(secrets, s.Key)
	}
	out := log.all()
	for _, want := range []string{"<LoginResponse", "<key>" + maskText + "</key>", "<returnval>" + maskText + "</returnval>", "<sessionID>" + maskText} {
		if !strings.Contains(out, want) {
			t.Fatalf("the log lacks %q; is the traffic traced and masked?\n%.3000s", want, out)
		}
	}
	if strings.Count(out, "<LoginResponse") != 2 {
		t.Fatalf("want two traced logins, got:\n%.3000s", out)
	}
	for _, s := range secrets {
		if s == "" || strings.Contains(out, s) {
			t.Fatalf("secret %q appears in the log (or is empty)", s)
		}
	}
	// The second guard learns the session keys as they are made.
	if !slices.Contains(log.masked, first[0]) || !slices.Contains(log.masked, mgr.CurrentSession.Key) {
		t.Fatalf("masked %v, want both session keys %s and %s", log.masked, first[0], mgr.CurrentSession.Key)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	const xsi = `xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"`
	cases := []struct{ name, in, want string }{
		{"login answer",
			`<LoginResponse xmlns="urn:vim25"><returnval><key>52a1</key><userName>u</userName></returnval></LoginResponse>`,
			`<LoginResponse xmlns="urn:vim25"><returnval><key>********</key><userName>u</userName></returnval></LoginResponse>`},
		{"current session, with a real xsi prefix",
			`<propSet ` + xsi + `><name>currentSession</name><val xsi:type="UserSession"><key>52a1</key></val></propSet>`,
			`<propSet ` + xsi + `><name>currentSession</name><val xsi:type="UserSession"><key>********</key></val></propSet>`},
		{"session list",
			`<val ` + xsi + ` xsi:type="ArrayOfUserSession"><UserSession><key>a</key></UserSession><UserSession><key>b</key></UserSession></val>`,
			`<val ` + xsi + ` xsi:type="ArrayOfUserSession">` +
				`<UserSession><key>********</key></UserSession><UserSession><key>********</key></UserSession></val>`},
		{"other keys stay readable",
			`<device ` + xsi + ` xsi:type="VirtualVmxnet3Vrdma"><key>4000</key><connectable><connectionCookie>7</connectionCookie></connectable></device>`,
			`<device ` + xsi + ` xsi:type="VirtualVmxnet3Vrdma"><key>4000</key><connectable><connectionCookie>7</connectionCookie></connectable></device>`},
		{"attributes, prefixes and escapes",
			`<v:password xmlns:v="urn:vim25" a="1">p&amp;w</v:password><password/>`,
			`<v:password xmlns:v="urn:vim25" a="1">********</v:password><password/>`},
		{"WS-Security header, whole",
			`<Header><Security><Assertion><Signature>s</Signature></Assertion></Security><operationID>op</operationID></Header>`,
			`<Header><Security>********</Security><operationID>op</operationID></Header>`},
		{"session cookie header", `<Header><vcSessionCookie>c</vcSessionCookie></Header>`, `<Header><vcSessionCookie>********</vcSessionCookie></Header>`},
		{"clone ticket", `<AcquireCloneTicketResponse><returnval>t</returnval></AcquireCloneTicketResponse>`,
			`<AcquireCloneTicketResponse><returnval>********</returnval></AcquireCloneTicketResponse>`},
		{"terminate", `<TerminateSession><sessionId>a</sessionId><sessionId>b</sessionId></TerminateSession>`,
			`<TerminateSession><sessionId>********</sessionId><sessionId>********</sessionId></TerminateSession>`},
		{"plain text is kept", `503 Service Unavailable`, `503 Service Unavailable`},
		{"not XML is withheld", `<html><br><password>p</html>`, `(body withheld: not well-formed XML, 28 bytes)`},
	}
	for _, tc := range cases {
		if got := string(scrub([]byte(tc.in))); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestWaitTaskLogsAndTranslates(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	log := &recordingLogger{}
	c := labClient(lab, func(cfg *Config) { cfg.Logger = log })
	vc, err := c.vimClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vmName := lab.VMNames()[0]
	vm := object.NewVirtualMachine(vc, types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(vmName)})

	task, err := vm.PowerOn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.waitTask(ctx, "powering on "+vmName, task); err != nil {
		t.Fatalf("waitTask: %v", err)
	}
	if !strings.Contains(log.all(), "vSphere task done") {
		t.Fatal("task completion was not logged")
	}

	lab.FailTaskOnce("PowerOffVM_Task", vmName, &types.InvalidPowerState{})
	task, err = vm.PowerOff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.waitTask(ctx, "powering off "+vmName, task)
	if !errors.Is(err, ErrInvalidState) || !strings.Contains(err.Error(), "powering off "+vmName) {
		t.Fatalf("failed task error = %v, want ErrInvalidState naming the operation", err)
	}

	// vCenter ends the session while the wait's property filter exists: the
	// filter is gone with it, so the wait starts over in the new session.
	lab.Delay("CreateFilter", 300*time.Millisecond)
	lab.ResetCalls()
	go func() {
		for lab.Calls()["CreateFilter"] == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		if err := lab.TerminateSessions(ctx); err != nil {
			t.Errorf("ending sessions: %v", err)
		}
	}()
	task, err = vm.PowerOff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.waitTask(ctx, "powering off "+vmName, task); err != nil {
		t.Fatalf("waiting across a session end: %v", err)
	}
	lab.Delay("CreateFilter", 0)

	lab.Delay("PowerOffVM_Task", 2*time.Second)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	task, err = vm.PowerOff(short)
	if err == nil {
		_, err = c.waitTask(short, "powering off "+vmName, task)
	}
	if err == nil || !errors.Is(short.Err(), context.DeadlineExceeded) {
		t.Fatalf("expected the deadline to stop the wait, got %v", err)
	}
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fault types.BaseMethodFault
		want  error
	}{
		{&types.ManagedObjectNotFound{}, ErrNotFound},
		{&types.InvalidPowerState{}, ErrInvalidState},
		{&types.ResourceInUse{}, ErrInUse},
		{&types.DuplicateName{}, ErrAlreadyExists},
		{&types.ConcurrentAccess{}, ErrConcurrent},
		{&types.InvalidName{}, ErrInvalidArg},
		{&types.NoPermission{}, ErrNoPermission},
	}
	for _, tc := range cases {
		err := translate("doing it", soap.WrapVimFault(tc.fault))
		if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "doing it: ") {
			t.Errorf("translate(%T) = %v, want %v", tc.fault, err, tc.want)
		}
	}
	denied := translate("reading host host-12", soap.WrapVimFault(&types.NoPermission{
		Object: &types.ManagedObjectReference{Type: "HostSystem", Value: "host-12"}, PrivilegeId: "Host.Config.AdvancedConfig",
	}))
	if !errors.Is(denied, ErrNoPermission) || !strings.Contains(denied.Error(), "lacks the privilege Host.Config.AdvancedConfig on host-12") {
		t.Errorf("NoPermission = %v, want the privilege and object named", denied)
	}
	if err := translate("doing it", errors.New("boom")); err.Error() != "doing it: boom" {
		t.Errorf("plain error = %q", err)
	}
	if translate("x", nil) != nil {
		t.Error("nil must stay nil")
	}
}

func TestNormalizeThumbprint(t *testing.T) {
	t.Parallel()
	sha1 := strings.Repeat("ab", 20)
	got, err := NormalizeThumbprint(" " + sha1[:6] + ":" + sha1[6:] + " ")
	if err != nil || got != strings.Repeat("AB:", 19)+"AB" {
		t.Fatalf("NormalizeThumbprint = %q, %v", got, err)
	}
	if _, err := NormalizeThumbprint(strings.Repeat("ab", 32)); err != nil {
		t.Fatalf("SHA-256: %v", err)
	}
	for _, bad := range []string{"", "xyz", strings.Repeat("ab", 19)} {
		if _, err := NormalizeThumbprint(bad); err == nil {
			t.Errorf("NormalizeThumbprint(%q) accepted", bad)
		}
	}
}

func TestParseServer(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"vc.example.com":              "vc.example.com",
		" 10.0.0.5:8443 ":             "10.0.0.5:8443",
		"https://vc.example.com/sdk":  "vc.example.com",
		"https://vc.example.com:443/": "vc.example.com:443",
	} {
		if got, err := ParseServer(in); err != nil || got != want {
			t.Errorf("ParseServer(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"https://admin:s3cret@vc.example.com/sdk": "user name or password",
		"http://vc.example.com":                   "https",
		"":                                        "no host name",
	} {
		_, err := ParseServer(in)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseServer(%q) error = %v, want it to say %q without the secret", in, err, want)
		}
	}
}
