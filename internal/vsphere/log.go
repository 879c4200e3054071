package vsphere

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Logger receives the service layer's log lines. The provider bridges it to
// tflog; this package stays free of Terraform imports.
type Logger interface {
	Debug(ctx context.Context, msg string, fields map[string]any)
	Trace(ctx context.Context, msg string, fields map[string]any)
	// TraceEnabled says whether Trace lines are kept, so SOAP bodies are only
	// captured when someone will read them.
	TraceEnabled() bool
	// Mask hides value wherever it would appear in a later line. The client
	// hands it each session key and cookie it learns: a second guard behind
	// scrub, for lines that are not SOAP bodies.
	Mask(value string)
}

type discardLogger struct{}

func (discardLogger) Debug(context.Context, string, map[string]any) {}
func (discardLogger) Trace(context.Context, string, map[string]any) {}
func (discardLogger) TraceEnabled() bool                            { return false }
func (discardLogger) Mask(string)                                   {}

// What a SOAP body must never show: the text of every element that lets its
// reader log in or act as the session. Names are the vSphere Web Services
// API's (govmomi's vim25/types and soap.Header are generated from its WSDL).
//
// secretElements are secret under whatever parent: credentials (Login's
// password and its kin), session ids (TerminateSession's and the session
// events' sessionId, SessionIsActive's sessionID, HostServiceTicket), tickets
// (CloneSession's cloneTicket, VirtualMachineTicket, VirtualMachineMksTicket,
// TicketedSessionAuthentication), tokens (SAMLTokenAuthentication,
// LoginBySSPI's base64Token, SSPIAuthentication) and the SOAP header's
// vcSessionCookie and WS-Security header (LoginByToken's SAML token).
var secretElements = map[string]bool{
	"password": true, "oldPassword": true, "newPassword": true, "vimAccountPassword": true,
	"chapSecret": true, "mutualChapSecret": true, "privateKey": true,
	"sessionId": true, "sessionID": true, "cloneTicket": true, "ticket": true,
	"token": true, "base64Token": true, "sspiToken": true, "verificationToken": true, "trustVerificationToken": true,
	"vcSessionCookie": true, "Security": true,
}

// secretFields are secret fields of data objects whose names are too common
// to hide everywhere: UserSession.key is the session id (the session cookie on
// the lab), where "key" elsewhere is a device key or an option's name.
var secretFields = map[string]string{
	"UserSession":                        "key",
	"SessionManagerGenericServiceTicket": "id",
	"CustomizationPassword":              "value",
}

// secretValue marks a returnval that is itself the secret.
const secretValue = "\x00secret"

// returnTypes are the types of the returnval of the responses that carry a
// secret, which vSphere sends without an xsi:type: UserSession for every
// method that starts a session (the API reference's "Returned by" list of
// UserSession), and the tickets of AcquireGenericServiceTicket and
// AcquireCloneTicket.
var returnTypes = map[string]string{
	"LoginResponse":                       "UserSession",
	"LoginByTokenResponse":                "UserSession",
	"LoginBySSPIResponse":                 "UserSession",
	"LoginExtensionByCertificateResponse": "UserSession",
	"LoginExtensionBySubjectNameResponse": "UserSession",
	"ImpersonateUserResponse":             "UserSession",
	"CloneSessionResponse":                "UserSession",
	"AcquireGenericServiceTicketResponse": "SessionManagerGenericServiceTicket",
	"AcquireCloneTicketResponse":          secretValue,
}

const (
	xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"
	maskText     = "********"
)

// element is an open element of a body being scrubbed.
type element struct {
	name   string
	typ    string // its data object type, where known
	secret bool
}

// scrub hides the text of secret elements in a SOAP body, keeping the rest
// byte for byte. It reads the XML rather than matching names, so that a
// session key in a UserSession is hidden wherever vSphere sends one (a
// login's answer, SessionManager's currentSession and sessionList) while
// the many other "key" elements stay readable. A body that is not
// well-formed XML is withheld: what it holds cannot be told.
func scrub(body []byte) []byte {
	dec := xml.NewDecoder(bytes.NewReader(body))
	var (
		open  []element
		spans [][2]int64 // the contents to mask
		from  int64      // where the outermost open secret's content starts
	)
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return []byte("(body withheld: not well-formed XML, " + strconv.Itoa(len(body)) + " bytes)")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			var parent element
			if len(open) > 0 {
				parent = open[len(open)-1]
			}
			e := element{name: t.Name.Local, typ: elementType(t, parent)}
			e.secret = parent.secret || secretElements[e.name] || e.typ == secretValue ||
				(parent.typ != "" && secretFields[parent.typ] == e.name)
			if e.secret && !parent.secret {
				from = dec.InputOffset()
			}
			open = append(open, e)
		case xml.EndElement:
			if len(open) == 0 { // the decoder refuses unmatched ends; never index an empty stack
				continue
			}
			e := open[len(open)-1]
			open = open[:len(open)-1]
			outermost := len(open) == 0 || !open[len(open)-1].secret
			if e.secret && outermost && before > from {
				spans = append(spans, [2]int64{from, before})
			}
		}
	}
	if len(spans) == 0 {
		return body
	}
	var out bytes.Buffer
	var last int64
	for _, s := range spans {
		out.Write(body[last:s[0]])
		out.WriteString(maskText)
		last = s[1]
	}
	out.Write(body[last:])
	return out.Bytes()
}

// elementType is the data object type of an element: its xsi:type, the item
// type of an ArrayOf… parent, or the known type of a response's returnval.
func elementType(t xml.StartElement, parent element) string {
	for _, a := range t.Attr {
		if a.Name.Space == xsiNamespace && a.Name.Local == "type" {
			_, typ, found := strings.Cut(a.Value, ":")
			if !found {
				typ = a.Value
			}
			return typ
		}
	}
	if strings.HasPrefix(parent.typ, "ArrayOf") {
		return t.Name.Local
	}
	if t.Name.Local == "returnval" {
		return returnTypes[parent.name]
	}
	return ""
}

// bodyTracer is an http.RoundTripper that logs scrubbed SOAP request and
// response bodies at TRACE. The request context carries the Terraform logger,
// so lines land in the Terraform operation that made the call.
type bodyTracer struct {
	next http.RoundTripper
	log  Logger
}

func (t *bodyTracer) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.log.TraceEnabled() {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		t.log.Trace(ctx, "vSphere SOAP request", map[string]any{"body": string(scrub(body))})
	}
	res, err := t.next.RoundTrip(req)
	if err != nil || res.Body == nil {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	t.log.Trace(ctx, "vSphere SOAP response", map[string]any{"status": res.StatusCode, "body": string(scrub(body))})
	return res, nil
}
