package vcsimlab

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/vmware/govmomi/simulator"

	// vCenter's other endpoints, as govmomi's simulator serves them: the
	// vSphere Automation API (/rest and /api: sessions, tagging, content
	// libraries) and the storage policy service (/pbm, SOAP). Each registers
	// with simulator.RegisterEndpoint; serveEndpoints turns them on.
	_ "github.com/vmware/govmomi/pbm/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
)

// The endpoints besides /sdk that clients of vCenter expect, HashiCorp's
// vSphere provider among them: it logs in to the vSphere Automation API
// (for tags, content libraries) and reads storage policies from the
// storage policy service.

// restSessionPath is the vSphere Automation API's session resource under
// /rest, which govmomi's vAPI simulator serves and govmomi's rest.Client
// (so the vSphere provider) logs in to: POST with basic authentication
// creates a session, ?~action=get reads it, DELETE ends it (vSphere
// Automation API, "Create Session", POST /rest/com/vmware/cis/session).
const restSessionPath = "/rest/com/vmware/cis/session"

// serveEndpoints adds the vAPI and PBM simulators to the lab's server, and
// /api/session, before s.NewServer. The vAPI simulator accepts only the
// user and password of s.Listen, the lab's, as vCenter accepts only its
// users.
func serveEndpoints(s *simulator.Service) {
	s.RegisterEndpoints = true
	if s.ServeMux == nil {
		s.ServeMux = http.NewServeMux()
	}
	s.ServeMux.Handle("/api/session", apiSession{s.ServeMux})
}

// apiSession serves /api/session, the session resource of the vSphere
// Automation API since vSphere 7.0 U2 (vSphere Automation API, "Cis
// Session": POST /api/session creates a session with basic authentication
// and answers 201 with the session token as a JSON string; GET returns the
// session's user, created_time and last_accessed_time; DELETE ends it,
// 204; the token goes in the vmware-api-session-id header). The vAPI
// simulator serves only the /rest form, so apiSession forwards to it: one
// set of sessions, as on vCenter, where a token from either works on both.
type apiSession struct {
	mux *http.ServeMux // the server's, where the vAPI simulator serves /rest
}

func (a apiSession) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fwd := r.Clone(r.Context())
	fwd.RequestURI = ""
	fwd.URL.Path = restSessionPath
	fwd.URL.RawQuery = ""
	status := http.StatusOK
	switch r.Method {
	case http.MethodPost:
		// The session token in the body, not in a cookie.
		fwd.Header.Set("vmware-use-header-authn", "true")
		status = http.StatusCreated
	case http.MethodGet:
		fwd.Method = http.MethodPost
		fwd.URL.RawQuery = url.Values{"~action": {"get"}}.Encode()
	case http.MethodDelete:
		status = http.StatusNoContent
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}

	var res recorder
	a.mux.ServeHTTP(&res, fwd)
	if res.status != 0 && res.status != http.StatusOK {
		// vCenter's error body: {"error_type": "UNAUTHENTICATED", …}.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.status)
		if res.status == http.StatusUnauthorized {
			_, _ = w.Write([]byte(`{"error_type":"UNAUTHENTICATED","messages":[]}`))
		}
		return
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	// The /rest form wraps its result in {"value": …}; /api does not.
	var body struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(res.body.Bytes(), &body); err != nil || len(body.Value) == 0 {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body.Value)
}

// recorder keeps the response of a forwarded request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
