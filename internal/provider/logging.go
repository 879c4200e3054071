package provider

import (
	"context"
	"os"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// tfLogger bridges the service layer's log lines into tflog. It masks the
// password in every line it writes, whatever the field or message, as a
// second guard behind the service layer's own scrubbing.
type tfLogger struct {
	secrets []string
	trace   bool
}

func newTFLogger(password string) tfLogger {
	l := tfLogger{trace: traceEnabled()}
	if password != "" {
		l.secrets = []string{password}
	}
	return l
}

func (l tfLogger) masked(ctx context.Context) context.Context {
	if len(l.secrets) == 0 {
		return ctx
	}
	ctx = tflog.MaskAllFieldValuesStrings(ctx, l.secrets...)
	return tflog.MaskMessageStrings(ctx, l.secrets...)
}

func (l tfLogger) Debug(ctx context.Context, msg string, fields map[string]any) {
	tflog.Debug(l.masked(ctx), msg, fields)
}

func (l tfLogger) Trace(ctx context.Context, msg string, fields map[string]any) {
	tflog.Trace(l.masked(ctx), msg, fields)
}

func (l tfLogger) TraceEnabled() bool { return l.trace }

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
