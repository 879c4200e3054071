package vsphere

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
)

// Logger receives the service layer's log lines. The provider bridges it to
// tflog; this package stays free of Terraform imports.
type Logger interface {
	Debug(ctx context.Context, msg string, fields map[string]any)
	Trace(ctx context.Context, msg string, fields map[string]any)
	// TraceEnabled says whether Trace lines are kept, so SOAP bodies are only
	// captured when someone will read them.
	TraceEnabled() bool
}

type discardLogger struct{}

func (discardLogger) Debug(context.Context, string, map[string]any) {}
func (discardLogger) Trace(context.Context, string, map[string]any) {}
func (discardLogger) TraceEnabled() bool                            { return false }

// secretElements are the SOAP elements whose text must never be logged:
// Login's password and the session identifiers that would let a reader take
// over the session.
var secretElements = regexp.MustCompile(`(?s)<(password|sessionId|sessionKey|token|cookie)>.*?</(?:password|sessionId|sessionKey|token|cookie)>`)

// scrub hides secret element values in a SOAP body.
func scrub(body []byte) []byte {
	return secretElements.ReplaceAll(body, []byte(`<$1>********</$1>`))
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
