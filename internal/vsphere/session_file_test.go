//go:build !windows

// Kept sessions are for Unix systems only: session_file_windows.go keeps none.
package vsphere

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// keptClient is a client of lab that keeps its session in dir, logging to
// log.
func keptClient(lab *vcsimlab.Lab, dir string, log *recordingLogger) *Client {
	return labClient(lab, func(cfg *Config) { cfg.SessionDir, cfg.Logger = dir, log })
}

// assertResumed checks that the next process resumes the session kept in
// dir: it makes no Login.
func assertResumed(t *testing.T, lab *vcsimlab.Lab, dir string) {
	t.Helper()
	lab.ResetCalls()
	if _, err := keptClient(lab, dir, &recordingLogger{}).DatacenterByName(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if calls := lab.Calls(); calls["Login"] != 0 {
		t.Fatalf("calls = %v, want the kept session resumed", calls)
	}
}

// labWithKeptSession starts a lab and keeps a client's session of it in a
// new directory, which it returns.
func labWithKeptSession(t *testing.T) (*vcsimlab.Lab, string) {
	t.Helper()
	lab := acctest.StartLab(t, vcsimlab.Options{})
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
	lab := acctest.StartLab(t, vcsimlab.Options{})
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
	assertResumed(t, lab, dir)
}

// TestUnsafeKeptSessionIsNotUsed: a session file others can read, a
// symbolic link, a file of another user, or a directory others can write
// to or of another user, is not trusted: the client logs in. A file is then
// replaced by an owner-only one holding the new session; in a directory
// that cannot be trusted nothing is kept, and Logout ends the session.
func TestUnsafeKeptSessionIsNotUsed(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	const nobody = 65534
	for name, tc := range map[string]struct {
		spoil    func(dir, file string) error
		kept     bool
		rootOnly bool // chown needs root
	}{
		"file readable by others":         {spoil: func(_, file string) error { return os.Chmod(file, 0o644) }, kept: true},
		"directory writable by others":    {spoil: func(dir, _ string) error { return os.Chmod(dir, 0o777) }},
		"directory writable by its group": {spoil: func(dir, _ string) error { return os.Chmod(dir, 0o770) }},
		"file a symbolic link": {spoil: func(dir, file string) error {
			target := filepath.Join(dir, "elsewhere")
			if err := os.Rename(file, target); err != nil {
				return err
			}
			return os.Symlink(target, file)
		}, kept: true},
		"file a named pipe": {spoil: func(_, file string) error {
			if err := os.Remove(file); err != nil {
				return err
			}
			return syscall.Mkfifo(file, 0o600)
		}, kept: true},
		"file of another user":      {spoil: func(_, file string) error { return os.Chown(file, nobody, nobody) }, kept: true, rootOnly: true},
		"directory of another user": {spoil: func(dir, _ string) error { return os.Chown(dir, nobody, nobody) }, rootOnly: true},
		"parent writable by others": {spoil: func(dir, _ string) error { return os.Chmod(filepath.Dir(dir), 0o777) }},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.rootOnly && os.Geteuid() != 0 {
				if os.Getenv("CI") != "" { // never counted as tested when it was not
					t.Fatal("giving a file to another user needs root")
				}
				t.Skip("giving a file to another user needs root")
			}
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
			if !tc.kept {
				return
			}
			fi, err := os.Lstat(next.sessionFile())
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || !ownedByMe(fi) {
				t.Fatalf("the kept session's file is %v (%v), want a regular file of mode 0600 of this user", fi.Mode(), err)
			}
			if _, err := readOwnerOnly(dir, next.sessionFile()); err != nil {
				t.Fatalf("the new session's file is not trusted: %v", err)
			}
		})
	}
}

// The directories above the session directory are checked as ssh checks
// the path to its keys: writable by their owner alone, or sticky (as /tmp
// is), and of root or the user.
func TestUnsafeSessionDirParents(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "parent")
	dir := filepath.Join(parent, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := UnsafeSessionDir(dir); err != nil {
		t.Fatalf("a safe path: %v", err)
	}
	for _, tc := range []struct {
		mode fs.FileMode
		safe bool
	}{{0o777, false}, {0o775, false}, {0o777 | fs.ModeSticky, true}} {
		if err := os.Chmod(parent, tc.mode); err != nil {
			t.Fatal(err)
		}
		err := UnsafeSessionDir(dir)
		if tc.safe != (err == nil) || (!tc.safe && !errors.Is(err, ErrSessionDirParentUnsafe)) {
			t.Errorf("parent of mode %v: %v, want safe %v", tc.mode, err, tc.safe)
		}
		if !tc.safe && !strings.Contains(fmt.Sprint(err), parent) {
			t.Errorf("parent of mode %v: %v does not name %s", tc.mode, err, parent)
		}
	}
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" { // never counted as tested when it was not
			t.Fatal("giving a directory to another user needs root")
		}
		t.Skip("giving a directory to another user needs root")
	}
	if err := os.Chown(parent, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := UnsafeSessionDir(dir); !errors.Is(err, ErrSessionDirParentUnsafe) {
		t.Errorf("a parent of another user: %v, want ErrSessionDirParentUnsafe", err)
	}
}

// TestOwnedByMe: a file of another user is not one's own.
func TestOwnedByMe(t *testing.T) {
	fi, err := os.Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !ownedByMe(fi) {
		t.Fatal("a directory this test made is not its own")
	}
	if ownedByMe(otherOwner{fi}) {
		t.Fatal("a directory of another user passes for one's own")
	}
}

// otherOwner is a FileInfo of the same file owned by the next user id.
type otherOwner struct{ fs.FileInfo }

func (o otherOwner) Sys() any {
	st := *o.FileInfo.Sys().(*syscall.Stat_t)
	st.Uid++
	return &st
}

// TestLogoutDuringAConnectionLeavesTheKeptSession: Logout asked while the
// connection is in flight waits for it, and leaves the session it kept to
// the next process, as it leaves a kept session once connected.
func TestLogoutDuringAConnectionLeavesTheKeptSession(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	dir := t.TempDir()
	c := keptClient(lab, dir, &recordingLogger{})
	lab.Delay("RetrieveServiceContent", time.Second)
	connected := make(chan error, 1)
	go func() {
		_, err := c.DatacenterByName(ctx, "")
		connected <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); lab.Calls()["Login"] == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no Login in 30 s")
		}
	}
	if err := c.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	lab.Delay("RetrieveServiceContent", 0)
	if calls := lab.Calls(); calls["Logout"] != 0 {
		t.Fatalf("calls = %v, want the kept session left alone", calls)
	}
	assertResumed(t, lab, dir)
}

// TestNoCookieNoKeptSession: a login that brings no cookie keeps nothing,
// and the client no longer counts its session as kept, so Logout ends it.
func TestNoCookieNoKeptSession(t *testing.T) {
	lab := acctest.StartLab(t, vcsimlab.Options{})
	c := keptClient(lab, t.TempDir(), &recordingLogger{})
	c.sessionKept.Store(true)
	c.keepSession(context.Background(), &vim25.Client{Client: soap.NewClient(lab.URL, false)})
	if c.sessionKept.Load() {
		t.Fatal("a session without a cookie counts as kept")
	}
}

// TestAbandonedTemporaryFilesRemoved: keeping a session removes the
// temporary files of processes that died before renaming theirs (each holds
// a cookie), and leaves a recent one, which may be a write in progress.
func TestAbandonedTemporaryFilesRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	abandoned, recent := filepath.Join(dir, ".session-123"), filepath.Join(dir, ".session-456")
	for _, name := range []string{abandoned, recent} {
		if err := os.WriteFile(name, []byte(`{"cookie":"old"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * abandonedAfter)
	if err := os.Chtimes(abandoned, old, old); err != nil {
		t.Fatal(err)
	}
	if err := writeOwnerOnly(dir, filepath.Join(dir, "kept.json"), keptSession{Cookie: "new"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abandoned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the abandoned file is still there (%v)", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("the recent file is gone: %v", err)
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
