package vcsimlab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/pbm"
	pbmtypes "github.com/vmware/govmomi/pbm/types"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
)

// labHTTP is an HTTP client that trusts the lab's certificate.
func labHTTP(t *testing.T, l *Lab) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(l.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in the lab's CA file")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// callAPISession sends method to the lab's /api/session with the user and
// password (if user is set) or the session id, and returns the status and
// body.
func callAPISession(t *testing.T, l *Lab, method, user, password, id string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "https://"+l.URL.Host+"/api/session", nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	if id != "" {
		req.Header.Set("vmware-api-session-id", id)
	}
	res, err := labHTTP(t, l).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

func TestRESTSessionLogsInWithTheLabsCredentials(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l)

	// The legacy endpoint, POST /rest/com/vmware/cis/session, as govmomi's
	// REST client (and so the vSphere provider) logs in.
	bad := rest.NewClient(c.Client)
	if err := bad.Login(ctx, url.UserPassword(l.Username, "not-"+l.Password)); err == nil {
		t.Error("REST login with a wrong password: no error")
	}
	rc := rest.NewClient(c.Client)
	if err := rc.Login(ctx, url.UserPassword(l.Username, l.Password)); err != nil {
		t.Fatalf("REST login with the lab's credentials: %v", err)
	}
	s, err := rc.Session(ctx)
	if err != nil || s == nil || s.User != l.Username {
		t.Fatalf("REST session: %+v, %v; want the lab's user", s, err)
	}
	// The session reaches the other endpoints: tagging, as the vSphere provider uses it.
	if _, err := tags.NewManager(rc).GetCategories(ctx); err != nil {
		t.Errorf("tag categories with the REST session: %v", err)
	}
	if err := rc.Logout(ctx); err != nil {
		t.Errorf("REST logout: %v", err)
	}
	if s, err := rc.Session(ctx); err == nil && s != nil {
		t.Errorf("session after logout: %+v", s)
	}

	// The current endpoint, /api/session.
	if code, _ := callAPISession(t, l, http.MethodPost, l.Username, "not-"+l.Password, ""); code != http.StatusUnauthorized {
		t.Errorf("POST /api/session with a wrong password: %d, want 401", code)
	}
	code, body := callAPISession(t, l, http.MethodPost, l.Username, l.Password, "")
	var id string
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &id) != nil || id == "" {
		t.Fatalf("POST /api/session: %d %q, want 201 and the session id as a JSON string", code, body)
	}
	code, body = callAPISession(t, l, http.MethodGet, "", "", id)
	var info struct {
		User    string `json:"user"`
		Created string `json:"created_time"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &info) != nil || info.User != l.Username || info.Created == "" {
		t.Errorf("GET /api/session: %d %q, want the session's user", code, body)
	}
	// One session store: the id works on the /rest endpoints.
	byID := rest.NewClient(c.Client)
	byID.SessionID(id)
	if s, err := byID.Session(ctx); err != nil || s == nil || s.User != l.Username {
		t.Errorf("/api session id on /rest: %+v, %v", s, err)
	}
	if code, _ := callAPISession(t, l, http.MethodDelete, "", "", id); code != http.StatusNoContent {
		t.Errorf("DELETE /api/session: %d, want 204", code)
	}
	if code, _ := callAPISession(t, l, http.MethodGet, "", "", id); code != http.StatusUnauthorized {
		t.Errorf("GET /api/session after DELETE: %d, want 401", code)
	}
	if code, _ := callAPISession(t, l, http.MethodGet, "", "", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/session without a session: %d, want 401", code)
	}
}

func TestStoragePolicyServiceListsProfiles(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l)
	pc, err := pbm.NewClient(ctx, c.Client)
	if err != nil {
		t.Fatalf("pbm client: %v", err)
	}
	ids, err := pc.QueryProfile(ctx, pbmtypes.PbmProfileResourceType{ResourceType: string(pbmtypes.PbmProfileResourceTypeEnumSTORAGE)}, "")
	if err != nil || len(ids) == 0 {
		t.Fatalf("PbmQueryProfile: %v, %v", ids, err)
	}
	profiles, err := pc.RetrieveContent(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range profiles {
		names = append(names, p.GetPbmProfile().Name)
	}
	if !slices.Contains(names, "vSAN Default Storage Policy") {
		t.Errorf("profiles %v, want vCenter's default policies", names)
	}

	// Without a vCenter session the service refuses.
	sc := soap.NewClient(l.URL, false)
	if err := sc.SetRootCAs(l.CertFile); err != nil {
		t.Fatal(err)
	}
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	anon, err := pbm.NewClient(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.QueryProfile(ctx, pbmtypes.PbmProfileResourceType{ResourceType: "STORAGE"}, ""); err == nil ||
		!strings.Contains(err.Error(), "NotAuthenticated") {
		t.Errorf("PbmQueryProfile without a session: %v, want NotAuthenticated", err)
	}
}

// Every request is counted, not only /sdk's SOAP calls: a REST login, a
// tagging read and the storage policy service's SOAP calls show by
// "METHOD /path", so a client that uses them is measured as it costs.
func TestEveryEndpointCounted(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	c := newClient(t, l)
	l.ResetCalls()
	rc := rest.NewClient(c.Client)
	if err := rc.Login(ctx, url.UserPassword(l.Username, l.Password)); err != nil {
		t.Fatal(err)
	}
	if _, err := tags.NewManager(rc).GetCategories(ctx); err != nil {
		t.Fatal(err)
	}
	pc, err := pbm.NewClient(ctx, c.Client)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.QueryProfile(
		ctx,
		pbmtypes.PbmProfileResourceType{ResourceType: string(pbmtypes.PbmProfileResourceTypeEnumSTORAGE)},
		"",
	); err != nil {
		t.Fatal(err)
	}
	calls := l.Calls()
	for _, key := range []string{"POST /rest/com/vmware/cis/session", "GET /rest/com/vmware/cis/tagging/category", "POST /pbm"} {
		if calls[key] < 1 {
			t.Errorf("%q not counted: %v", key, calls)
		}
	}
	if calls["/sdk"] != 0 || calls["POST /sdk"] != 0 {
		t.Errorf("/sdk counted by path as well as by method: %v", calls)
	}
}
