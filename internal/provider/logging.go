package provider

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// tfLogger bridges the service layer's log lines into tflog. It masks the
// password and every session key and cookie the client learns in every line
// it writes, whatever the field or message, as a second guard behind the
// service layer's own scrubbing.
type tfLogger struct {
	trace   bool
	mu      sync.Mutex
	secrets []string
}

func newTFLogger(password string) *tfLogger {
	l := &tfLogger{trace: traceEnabled()}
	l.Mask(password)
	return l
}

// Mask adds value to what every later line hides.
func (l *tfLogger) Mask(value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if value != "" && !slices.Contains(l.secrets, value) {
		l.secrets = append(l.secrets, value)
	}
}

func (l *tfLogger) masked(ctx context.Context) context.Context {
	l.mu.Lock()
	secrets := slices.Clone(l.secrets)
	l.mu.Unlock()
	if len(secrets) == 0 {
		return ctx
	}
	ctx = tflog.MaskAllFieldValuesStrings(ctx, secrets...)
	return tflog.MaskMessageStrings(ctx, secrets...)
}

func (l *tfLogger) Debug(ctx context.Context, msg string, fields map[string]any) {
	tflog.Debug(l.masked(ctx), msg, fields)
}

func (l *tfLogger) Trace(ctx context.Context, msg string, fields map[string]any) {
	tflog.Trace(l.masked(ctx), msg, fields)
}

func (l *tfLogger) TraceEnabled() bool { return l.trace }

// traceEnabled reads the levels Terraform hands to providers; JSON output
// means TRACE.
func traceEnabled() bool {
	for _, env := range []string{"TF_LOG_PROVIDER_VSPHEREHPC", "TF_LOG_PROVIDER", "TF_LOG"} {
		switch strings.ToUpper(os.Getenv(env)) {
		case "TRACE", "JSON":
			return true
		case "":
			continue
		default:
			return false
		}
	}
	return false
}
