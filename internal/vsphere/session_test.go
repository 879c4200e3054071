package vsphere

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestRejectedLoginIsNotRetried(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab, func(cfg *Config) { cfg.Password = "wrong" })
	for range 3 {
		if _, err := c.DatacenterByName(ctx, ""); !errors.Is(err, ErrLogin) {
			t.Fatalf("error = %v, want ErrLogin", err)
		}
	}
	if got := lab.Calls()["Login"]; got != 1 {
		t.Fatalf("logins = %d, want 1: retrying a rejected password can lock the account", got)
	}
}

func TestWaitingForTheConnectionHonoursContext(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	lab.Delay("Login", time.Second)
	c := labClient(lab)
	first := make(chan error, 1)
	go func() {
		_, err := c.DatacenterByName(context.Background(), "")
		first <- err
	}()
	for lab.Calls()["Login"] == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.DatacenterByName(short, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the caller's own deadline", err)
	}
	if waited := time.Since(start); waited > 500*time.Millisecond {
		t.Fatalf("waited %v for another caller's login", waited)
	}
	if err := <-first; err != nil {
		t.Fatalf("the connecting call: %v", err)
	}
	if got := lab.Calls()["Login"]; got != 1 {
		t.Fatalf("logins = %d, want 1", got)
	}
}

func TestReloginAfterSessionTerminated(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := ForChange(context.Background()) // every read reaches vCenter: no prefetch answers it
	c := labClient(lab)
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := lab.TerminateSessions(ctx); err != nil {
		t.Fatal(err)
	}
	// Both a property-collector read and a plain method call must recover.
	if _, err := c.Host(ctx, lab.HostID(lab.HostNames()[0])); err != nil {
		t.Fatalf("read after the session ended: %v", err)
	}
	if err := lab.TerminateSessions(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.VM(ctx, lab.VMUUID(lab.VMNames()[0])); err != nil {
		t.Fatalf("UUID search after the session ended: %v", err)
	}
	if got := lab.Calls()["Login"]; got != 3 {
		t.Fatalf("logins = %d, want 3 (one per session)", got)
	}
}

func TestConcurrentCallsLogInOnce(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := ForChange(context.Background()) // every read reaches vCenter: no prefetch answers it
	c := labClient(lab)
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := lab.TerminateSessions(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.DatacenterByName(ctx, "")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := lab.Calls()["Login"]; got != 2 {
		t.Fatalf("logins = %d, want 2: concurrent calls that find the session gone must share one new login", got)
	}
}

// TestLoginGoesWithTheServiceContent: connecting logs in while the service
// content is read, one round trip instead of two. The login does not wait
// for the service content: when that read fails, Login was sent all the
// same, and its session is ended rather than left behind.
func TestLoginGoesWithTheServiceContent(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	lab.FailCall("RetrieveServiceContent", "", &types.SystemError{Reason: "vpxd is starting"}, 1)
	if _, err := c.DatacenterByName(ctx, ""); err == nil {
		t.Fatal("connecting succeeded without the service content")
	}
	if calls := lab.Calls(); calls["Login"] != 1 || calls["Logout"] != 1 {
		t.Fatalf("calls = %v, want Login sent with the service content's read, and its session ended", calls)
	}
	if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("sessions = %v (%v), want none", keys, err)
	}
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}

// TestLoginOfAConnectionOutOfTimeIsEnded: when the connection's time ends
// after its login went through, before the service content came, the
// session is still ended: its logout does not go out on the ended context.
// The context is cancelled once the client has the login's answer, whatever
// the machine's speed.
func TestLoginOfAConnectionOutOfTimeIsEnded(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	log := &recordingLogger{}
	c := labClient(lab, func(cfg *Config) { cfg.Logger = log })
	lab.Delay("RetrieveServiceContent", 5*time.Second) // far longer than the login takes to answer
	ctx, cancel := context.WithCancel(context.Background())
	connected := make(chan error, 1)
	go func() {
		_, err := c.DatacenterByName(ctx, "")
		connected <- err
	}()
	for !strings.Contains(log.all(), "method:Login") {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-connected; err == nil {
		t.Fatal("connecting succeeded though its context ended before the service content came")
	}
	lab.Delay("RetrieveServiceContent", 0)
	if calls := lab.Calls(); calls["Login"] != 1 || calls["Logout"] != 1 {
		t.Fatalf("calls = %v, want the Login and its session ended", calls)
	}
	if keys, err := lab.Sessions(context.Background()); err != nil || len(keys) != 0 {
		t.Fatalf("sessions = %v (%v), want none", keys, err)
	}
}

// TestSessionShowsTheUserAgent: vCenter's list of sessions names the
// provider and its version, so an administrator can tell its sessions apart.
func TestSessionShowsTheUserAgent(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab, func(cfg *Config) { cfg.UserAgent = "terraform-provider-vspherehpc/1.2.3" })
	vc, err := c.vimClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sm mo.SessionManager
	if err := property.DefaultCollector(vc).RetrieveOne(ctx, *vc.ServiceContent.SessionManager, []string{"currentSession"}, &sm); err != nil {
		t.Fatal(err)
	}
	if sm.CurrentSession == nil || sm.CurrentSession.UserAgent != "terraform-provider-vspherehpc/1.2.3" {
		t.Fatalf("the session is %+v, want the provider's user agent", sm.CurrentSession)
	}
}

// TestLoginFollowsTheServiceContent: where the session manager is not the
// one logged in to before the service content came (an ESXi host names its
// own ha-sessionmgr), the client logs in again to the one the service
// content names.
func TestLoginFollowsTheServiceContent(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	lab.FailCall("Login", "", &types.ManagedObjectNotFound{Obj: vcenterSessionManager}, 1)
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); calls["Login"] != 2 || calls["RetrieveServiceContent"] != 1 {
		t.Fatalf("calls = %v, want a second Login after the service content", calls)
	}
}

// TestLogoutEndsTheSession: Logout ends the session on vCenter, a second
// Logout costs nothing, and a client used after Logout logs in again.
func TestLogoutEndsTheSession(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	if err := c.Logout(ctx); err != nil || lab.Calls()["Logout"] != 0 {
		t.Fatalf("Logout before any connection: %v, %d calls; want nothing to do", err, lab.Calls()["Logout"])
	}
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if keys, _ := lab.Sessions(ctx); len(keys) != 1 {
		t.Fatalf("sessions = %v, want the client's", keys)
	}
	for range 2 {
		if err := c.Logout(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("sessions after Logout = %v (%v), want none", keys, err)
	}
	if got := lab.Calls()["Logout"]; got != 1 {
		t.Fatalf("Logout calls = %d, want 1", got)
	}
	if _, err := c.Host(ctx, lab.HostID(lab.HostNames()[0])); err != nil {
		t.Fatalf("call after Logout: %v", err)
	}
	if keys, _ := lab.Sessions(ctx); len(keys) != 1 || lab.Calls()["Login"] != 2 {
		t.Fatalf("after reuse: sessions %v, logins %d; want one new session", keys, lab.Calls()["Login"])
	}
	// A call that finds the session gone (ended on vCenter after Logout and a
	// new login) still recovers as before.
	if err := lab.TerminateSessions(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DatacenterByName(ctx, ""); err != nil {
		t.Fatalf("re-login after Logout and a terminated session: %v", err)
	}
}

// TestLogoutWaitsForALoginInProgress: a login still running when the process
// stops must not leave its session behind.
func TestLogoutWaitsForALoginInProgress(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	lab.Delay("Login", 300*time.Millisecond)
	ctx := context.Background()
	c := labClient(lab)
	done := make(chan error, 1)
	go func() {
		_, err := c.DatacenterByName(ctx, "")
		done <- err
	}()
	for lab.Calls()["Login"] == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, _ := lab.Sessions(ctx); len(keys) != 0 {
		t.Fatalf("sessions after Logout = %v, want none", keys)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// connectedClients are n clients of lab, each with a session.
func connectedClients(t *testing.T, lab *vcsimlab.Lab, n int) *Clients {
	t.Helper()
	var all Clients
	for range n {
		c := labClient(lab)
		if _, err := c.DatacenterByName(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		all.Add(c)
	}
	return &all
}

// TestLogoutAllIsBounded: clients log out together, and a client stuck
// behind a login in flight (which holds it whatever the context says) holds
// up neither the others nor LogoutAll and HandOff past their context.
func TestLogoutAllIsBounded(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := ForChange(context.Background()) // every read reaches vCenter: no prefetch answers it
	all := connectedClients(t, lab, 3)
	all.Add(labClient(lab)) // never connected
	all.Add(New(Config{}))  // not configured
	if err := all.LogoutAll(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, _ := lab.Sessions(ctx); len(keys) != 0 {
		t.Fatalf("sessions after LogoutAll = %v, want none", keys)
	}

	var some Clients
	for _, stuck := range []bool{false, true} {
		c := labClient(lab)
		if _, err := c.DatacenterByName(ctx, ""); err != nil {
			t.Fatal(err)
		}
		some.Add(c)
		if !stuck {
			continue
		}
		// Its session ends on vCenter; its next call logs in again, and
		// vCenter holds that login until the end of the test.
		if err := lab.TerminateSessions(ctx); err != nil {
			t.Fatal(err)
		}
		logins := lab.Calls()["Login"]
		release := lab.Hold("Login")
		defer release()
		go func() { _, _ = c.DatacenterByName(ctx, "") }()
		for lab.Calls()["Login"] == logins {
			time.Sleep(5 * time.Millisecond)
		}
	}
	type outcome struct {
		ends []SessionEnd
		err  error
	}
	within := func(what string, do func(context.Context) outcome) outcome {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		done := make(chan outcome, 1)
		go func() { done <- do(short) }()
		select {
		case o := <-done:
			return o
		case <-time.After(time.Minute):
			t.Fatalf("%s waited for the login in flight past its context", what)
			return outcome{}
		}
	}
	if o := within("HandOff", func(ctx context.Context) outcome { ends, err := some.HandOff(ctx); return outcome{ends, err} }); !errors.Is(
		o.err,
		context.DeadlineExceeded,
	) ||
		len(o.ends) != 1 {
		t.Fatalf("HandOff with a client stuck behind a login: %v, %v; want the other client's session and the deadline", o.ends, o.err)
	}
	if o := within("LogoutAll", func(ctx context.Context) outcome { return outcome{err: some.LogoutAll(ctx)} }); !errors.Is(
		o.err,
		context.DeadlineExceeded,
	) {
		t.Fatalf("LogoutAll with a client stuck behind a login: %v, want the deadline", o.err)
	}
}

// TestServiceContentWithoutASessionManager: an endpoint whose service
// content names no session manager (not a vCenter) is an error that says
// so, not a nil dereference, and the login that went out beside the read is
// logged out.
func TestServiceContentWithoutASessionManager(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := map[string]int{}
	answers := map[string]string{
		"RetrieveServiceContent": `<RetrieveServiceContentResponse xmlns="urn:vim25"><returnval>` +
			`<rootFolder type="Folder">group-d1</rootFolder><propertyCollector type="PropertyCollector">propertyCollector</propertyCollector>` +
			`<about><name>x</name><fullName>x</fullName><vendor>x</vendor><version>8.0.3</version><build>1</build><osType>linux</osType>` +
			`<productLineId>x</productLineId><apiType>x</apiType><apiVersion>8.0.3.0</apiVersion></about></returnval></RetrieveServiceContentResponse>`,
		"Login": `<LoginResponse xmlns="urn:vim25"><returnval><key>k</key><userName>u</userName><fullName>u</fullName>` +
			`<loginTime>2026-01-01T00:00:00Z</loginTime><lastActiveTime>2026-01-01T00:00:00Z</lastActiveTime><locale>en</locale>` +
			`<messageLocale>en</messageLocale><extensionSession>false</extensionSession></returnval></LoginResponse>`,
		"Logout": `<LogoutResponse xmlns="urn:vim25"></LogoutResponse>`,
	}
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for method, answer := range answers {
			if strings.Contains(string(body), "<"+method+" ") || strings.Contains(string(body), "<"+method+">") {
				mu.Lock()
				calls[method]++
				mu.Unlock()
				if method == "Login" {
					http.SetCookie(w, &http.Cookie{Name: soap.SessionCookieName, Value: "session-1"})
				}
				_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">`+
					`<soapenv:Body>`+answer+`</soapenv:Body></soapenv:Envelope>`)
				return
			}
		}
		http.Error(w, "unexpected call", http.StatusBadRequest)
	}))
	defer server.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c := New(Config{Server: strings.TrimPrefix(server.URL, "https://"), User: "u", Password: "p", CAFile: ca})
	_, err := c.vimClient(context.Background())
	if !errors.Is(err, ErrNotImplemented) || !strings.Contains(err.Error(), "names no session manager") {
		t.Fatalf("err = %v, want one saying the service content names no session manager", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["Login"] != 1 || calls["Logout"] != 1 {
		t.Fatalf("calls = %v, want the login logged out", calls)
	}
}
