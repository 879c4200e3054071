package vsphere

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// keptClient is a client of lab that keeps its session in dir, logging to
// log.
func keptClient(lab *vcsimlab.Lab, dir string, log *recordingLogger) *Client {
	return labClient(lab, func(cfg *Config) { cfg.SessionDir, cfg.Logger = dir, log })
}

// labWithKeptSession starts a lab and keeps a client's session of it in a
// new directory, which it returns.
func labWithKeptSession(t *testing.T) (*vcsimlab.Lab, string) {
	t.Helper()
	lab := startLab(t, vcsimlab.Options{})
	dir := t.TempDir()
	if _, err := keptClient(lab, dir, &recordingLogger{}).DatacenterByName(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	return lab, dir
}

// TestKeptSessionIsResumed: with a session directory, the session outlives
// its process (no Logout), is kept in a file only its owner can read, and
// the next process starts from it with no call: no service content, no
// login. The cookie it reads is masked in the logs.
func TestKeptSessionIsResumed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sessions") // created by the client
	first := keptClient(lab, dir, &recordingLogger{})
	if _, err := first.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := first.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); calls["Login"] != 1 || calls["Logout"] != 0 {
		t.Fatalf("calls = %v, want one Login and no Logout", calls)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, first.sessionFile(): 0o600} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v (%v), want mode %v", name, fi, err, want)
		}
	}
	var kept keptSession
	b, err := os.ReadFile(first.sessionFile())
	if err != nil || json.Unmarshal(b, &kept) != nil || kept.Cookie == "" {
		t.Fatalf("kept session %s: %v", b, err)
	}

	lab.ResetCalls()
	log := &recordingLogger{}
	next := keptClient(lab, dir, log)
	if _, err := next.DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); calls["Login"] != 0 || calls["RetrieveServiceContent"] != 0 || calls["RetrievePropertiesEx"] != 1 {
		t.Fatalf("the next process made %v, want the look-up alone", calls)
	}
	if keys, err := lab.Sessions(ctx); err != nil || len(keys) != 1 {
		t.Fatalf("sessions = %v (%v), want the one kept session", keys, err)
	}
	if !slices.Contains(log.masked, kept.Cookie) {
		t.Fatalf("masked %v, want the kept cookie", log.masked)
	}
}

// TestEndedKeptSessionIsReplaced: a kept session vCenter has ended is found
// at the first call, which logs in, is retried, and keeps the new session
// for the process after.
func TestEndedKeptSessionIsReplaced(t *testing.T) {
	t.Parallel()
	lab, dir := labWithKeptSession(t)
	ctx := context.Background()
	if err := lab.TerminateSessions(ctx); err != nil { // the idle timeout, or a restart
		t.Fatal(err)
	}
	lab.ResetCalls()
	if _, err := keptClient(lab, dir, &recordingLogger{}).DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); calls["Login"] != 1 || calls["RetrievePropertiesEx"] != 2 {
		t.Fatalf("calls = %v, want the look-up, a Login and the look-up again", calls)
	}
	lab.ResetCalls()
	if _, err := keptClient(lab, dir, &recordingLogger{}).DatacenterByName(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); calls["Login"] != 0 {
		t.Fatalf("calls = %v, want the new session resumed", calls)
	}
}

// TestUnsafeKeptSessionIsNotUsed: a session file others can read, or in a
// directory others can write to, is not trusted: the client logs in.
func TestUnsafeKeptSessionIsNotUsed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	// kept: whether the new session is kept in place of the spoiled one (a
	// file is replaced by an owner-only one); when it is not, Logout ends it.
	for name, tc := range map[string]struct {
		spoil func(dir, file string) error
		kept  bool
	}{
		"file readable by others":      {func(_, file string) error { return os.Chmod(file, 0o644) }, true},
		"directory writable by others": {func(dir, _ string) error { return os.Chmod(dir, 0o777) }, false},
		"file a symbolic link": {func(dir, file string) error {
			target := filepath.Join(dir, "elsewhere")
			if err := os.Rename(file, target); err != nil {
				return err
			}
			return os.Symlink(target, file)
		}, false},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c := keptClient(lab, dir, &recordingLogger{})
			if _, err := c.DatacenterByName(ctx, ""); err != nil {
				t.Fatal(err)
			}
			if err := tc.spoil(dir, c.sessionFile()); err != nil {
				t.Fatal(err)
			}
			before := lab.Calls()
			next := keptClient(lab, dir, &recordingLogger{})
			if _, err := next.DatacenterByName(ctx, ""); err != nil {
				t.Fatal(err)
			}
			if err := next.Logout(ctx); err != nil {
				t.Fatal(err)
			}
			after := lab.Calls()
			if after["Login"] != before["Login"]+1 {
				t.Fatalf("logins %d → %d, want a new login", before["Login"], after["Login"])
			}
			if loggedOut := after["Logout"] - before["Logout"]; loggedOut != map[bool]int{true: 0, false: 1}[tc.kept] {
				t.Fatalf("%d Logout calls; the session kept: %v (a session not kept must be ended)", loggedOut, tc.kept)
			}
		})
	}
}

// TestResumedSessionChecksTheCertificate: a resumed session's first call is
// the connection's first, and an untrusted certificate is reported as
// connecting reports it, never the session sent.
func TestResumedSessionChecksTheCertificate(t *testing.T) {
	t.Parallel()
	lab, dir := labWithKeptSession(t)
	ctx := context.Background()
	untrusting := labClient(lab, func(cfg *Config) { cfg.SessionDir, cfg.CAFile = dir, "" })
	_, err := untrusting.DatacenterByName(ctx, "")
	if !errors.Is(err, ErrUntrustedCert) || !strings.Contains(err.Error(), lab.Thumbprint) {
		t.Fatalf("error = %v, want ErrUntrustedCert naming the thumbprint %s", err, lab.Thumbprint)
	}
}

// TestRejectedLoginAfterAKeptSessionIsNotRetried: a kept session that has
// ended, and a password vCenter now refuses: the calls that find the session
// gone try one login between them, never another (a bad password retried
// can lock the account).
func TestRejectedLoginAfterAKeptSessionIsNotRetried(t *testing.T) {
	t.Parallel()
	lab, dir := labWithKeptSession(t)
	ctx := context.Background()
	if err := lab.TerminateSessions(ctx); err != nil {
		t.Fatal(err)
	}
	lab.ResetCalls()
	c := labClient(lab, func(cfg *Config) { cfg.SessionDir, cfg.Password = dir, "changed-"+lab.Password })
	errs := make(chan error, 6)
	for range cap(errs) {
		go func() {
			_, err := c.DatacenterByName(ctx, "")
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; !errors.Is(err, ErrLogin) {
			t.Fatalf("error = %v, want ErrLogin", err)
		}
	}
	if _, err := c.DatacenterByName(ctx, ""); !errors.Is(err, ErrLogin) {
		t.Fatalf("a later call: %v, want ErrLogin", err)
	}
	if n := lab.Calls()["Login"]; n != 1 {
		t.Fatalf("logins = %d, want 1", n)
	}
}
