package vcsimlab

import (
	"bytes"
	"io"
	"net/http"
	"slices"

	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/xml"
)

// A call's connection lost: vCenter unreachable for one call, as a network
// that drops a connection, a load balancer or a vCenter restart leaves it.
// Either the call never reaches vCenter, or vCenter runs it and its answer
// never reaches the client (for a task method, the task then runs with no
// client knowing its reference). The client sees the same thing both ways:
// a connection closed with no answer. Nothing here is vCenter's behaviour;
// it is what any HTTP client of vCenter can meet, and what the fault tests
// inject to fail each call of an operation in turn (the calls come from
// CallLog).

type lostConnection struct {
	method     string
	occurrence int // counted down: the call it reaches 0 at is lost
	answered   bool
}

// LoseConnection closes, without an answer, the connection of the
// occurrence-th SOAP call of method from now (1 for the next one), from any
// session but the lab's own: before vCenter runs the call (answered false)
// or after (answered true: what the call does is done). disarm takes the
// fault back, if it has not hit yet, and reports whether it hit.
func (l *Lab) LoseConnection(method string, occurrence int, answered bool) (disarm func() (lost bool)) {
	if l.simulatorOnly("LoseConnection") || occurrence <= 0 {
		return func() bool { return false }
	}
	c := &lostConnection{method: method, occurrence: occurrence, answered: answered}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lostConnections = append(l.lostConnections, c)
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if i := slices.Index(l.lostConnections, c); i >= 0 {
			l.lostConnections = slices.Delete(l.lostConnections, i, i+1)
			return false
		}
		return true
	}
}

// CallLog returns the SOAP methods called since Start or ResetCalls, in the
// order they arrived, from every session but the lab's own (lost ones too).
func (l *Lab) CallLog() []string {
	if l.simulatorOnly("CallLog") {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.callLog)
}

// sdkCall logs a SOAP call to /sdk and reports whether its connection is to
// be lost, and whether after vCenter ran it. The body is read and put back.
func (l *Lab) sdkCall(r *http.Request) (lose, answered bool) {
	cookie, _ := r.Cookie(soap.SessionCookieName)
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false, false
	}
	method := soapMethod(body)
	l.mu.Lock()
	defer l.mu.Unlock()
	if cookie != nil && cookie.Value == l.adminKey {
		return false, false
	}
	l.callLog = append(l.callLog, method)
	for i, c := range l.lostConnections {
		if c.method != method {
			continue
		}
		c.occurrence--
		if c.occurrence == 0 {
			l.lostConnections = slices.Delete(l.lostConnections, i, i+1)
			return true, c.answered
		}
		break
	}
	return false, false
}

// soapMethod is the name of the method a SOAP request calls: the first
// element in its Body.
func soapMethod(body []byte) string {
	d := xml.NewDecoder(bytes.NewReader(body))
	inBody := false
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if start, ok := tok.(xml.StartElement); ok {
			if inBody {
				return start.Name.Local
			}
			inBody = start.Name.Local == "Body"
		}
	}
}

// loseConnection answers nothing and closes the connection, after running
// the call when answered.
func loseConnection(w http.ResponseWriter, r *http.Request, next http.Handler, answered bool) {
	if answered {
		next.ServeHTTP(&discardedAnswer{header: http.Header{}}, r)
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http closes the connection without an answer
}

// discardedAnswer is the answer nobody receives.
type discardedAnswer struct{ header http.Header }

func (d *discardedAnswer) Header() http.Header         { return d.header }
func (d *discardedAnswer) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardedAnswer) WriteHeader(int)             {}
