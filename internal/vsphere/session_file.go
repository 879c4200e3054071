package vsphere

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Kept sessions (Config.SessionDir; off unless the configuration asks). One
// Terraform command starts the provider several times (plan, apply), and
// each process would log in (with the service content read beside it) and
// out: two of a refresh's three round trips to a remote vCenter. With a
// directory given, a session's cookie and vCenter's service content are kept
// in a file of their own per server and user, readable by the owner alone;
// the next process starts from them with no call, and none logs out: vCenter
// ends a session nobody uses at its idle timeout (30 minutes by default). A
// kept session vCenter has ended is found at the first call
// (NotAuthenticated): the client logs in, retries, and keeps the new one.
// govc's session cache and the vSphere provider's kept sessions work so.
// Not govmomi's session/cache itself, which govc uses: it checks a kept
// session with a call before each use (soapSessionValid reads the
// UserSession), the very round trip a kept session is to save, and it
// trusts whatever file it finds, where readOwnerOnly checks the file and its
// directory belong to the user alone.

type keptSession struct {
	Cookie         string               `json:"cookie"`
	ServiceContent types.ServiceContent `json:"service_content"`
}

// sessionFile names the file of the client's server and user, by a hash:
// the directory does not list who logs in where.
func (c *Client) sessionFile() string {
	sum := sha256.Sum256([]byte(c.cfg.Server + "\x00" + c.cfg.User))
	return filepath.Join(c.cfg.SessionDir, hex.EncodeToString(sum[:])+".json")
}

// keptSession is the session kept for the client's server and user, or nil
// when there is none or its file or directory is not safe to trust. The
// file is checked as opened, not by its name, so that it cannot be swapped
// between the check and the read.
func (c *Client) keptSession(ctx context.Context) *keptSession {
	name := c.sessionFile()
	b, problem := readOwnerOnly(c.cfg.SessionDir, name)
	if problem != nil {
		if !errors.Is(problem, os.ErrNotExist) {
			c.log.Debug(ctx, "Not using the kept vCenter session", map[string]any{"file": name, "reason": problem.Error()})
		}
		return nil
	}
	var kept keptSession
	if json.Unmarshal(b, &kept) != nil || kept.Cookie == "" || kept.ServiceContent.SessionManager == nil {
		return nil
	}
	c.log.Mask(kept.Cookie)
	return &kept
}

var (
	errNotOwnerOnly = errors.New("others than its owner may read or write it")
	errNotOwned     = errors.New("it belongs to another user")
	// ErrSessionDirWritable: a session directory others can write to, where
	// no session is kept or resumed.
	ErrSessionDirWritable = errors.New("others than its owner may write to it")
	// ErrSessionDirNotOwned: a session directory of another user.
	ErrSessionDirNotOwned = errors.New("it belongs to another user")
	// ErrSessionDirParentUnsafe: a directory above the session directory
	// that another user owns, or that others can write to without the
	// sticky bit, so they could rename the session directory and put
	// their own in its place.
	ErrSessionDirParentUnsafe = errors.New("a directory above it belongs to another user, or others may write to it")
	// ErrSessionDirNotADirectory: a session path that names a file.
	ErrSessionDirNotADirectory = errors.New("it is not a directory")
	// ErrSessionsUnchecked: a system without Unix owners and permissions
	// (Windows), where the provider cannot tell who may read a file, and so
	// keeps no session.
	ErrSessionsUnchecked = errors.New("this system has no Unix file owners and permissions to check who may read the session file")
	errNotRegularFile    = errors.New("it is not a regular file")
)

// UnsafeSessionDir says why kept sessions cannot be kept in dir: a system
// whose permissions cannot be checked, not a directory, one others can
// write to or one of another user, or a directory above it that others
// control; os.ErrNotExist when there is none yet (the client creates it,
// owner-only).
func UnsafeSessionDir(dir string) error {
	if !ownerOnlyCheckable {
		return ErrSessionsUnchecked
	}
	d, err := os.Stat(dir)
	switch {
	case err != nil:
		return err
	case !d.IsDir():
		return ErrSessionDirNotADirectory
	case d.Mode().Perm()&0o022 != 0:
		return ErrSessionDirWritable
	case !ownedByMe(d):
		return ErrSessionDirNotOwned
	}
	return unsafeParent(dir)
}

// unsafeParent checks the directories above dir as ssh checks the path to
// its keys (OpenSSH's safe_path): each must belong to root or the user and
// be writable by its owner alone. A sticky directory of root's or the
// user's, such as /tmp, is safe too: others cannot rename what is in it.
func unsafeParent(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		owner := ownedByMe(fi) || ownedByRoot(fi)
		if !owner || (fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0) {
			return fmt.Errorf("%w: %s", ErrSessionDirParentUnsafe, p)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// readOwnerOnly reads a kept session file unless it (or its directory) must
// not be trusted, as ssh does for its keys: a file others can read gives
// the session away, and one others can write or replace, or a symbolic
// link, could make the provider act as somebody else. os.ErrNotExist when
// there is no file.
func readOwnerOnly(dir, name string) ([]byte, error) {
	if err := UnsafeSessionDir(dir); err != nil {
		return nil, err
	}
	f, err := openNoFollow(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, errNotRegularFile
	case fi.Mode().Perm()&0o077 != 0:
		return nil, errNotOwnerOnly
	case !ownedByMe(fi):
		return nil, errNotOwned
	}
	return io.ReadAll(io.LimitReader(f, maxSessionFile))
}

// maxSessionFile bounds what is read of a session file: a service content
// and a cookie take a few KB.
const maxSessionFile = 1 << 20

// resume is a client of the kept session: no call made.
func resume(sc *soap.Client, rt soap.RoundTripper, kept *keptSession) *vim25.Client {
	setSessionCookie(sc, kept.Cookie)
	return &vim25.Client{Client: sc, RoundTripper: rt, ServiceContent: kept.ServiceContent}
}

// keepSession writes the client's session to its file, owner-only, creating
// the directory owner-only; a session that cannot be kept is logged, not an
// error: Logout ends it, and the next process logs in.
func (c *Client) keepSession(ctx context.Context, vc *vim25.Client) {
	if c.cfg.SessionDir == "" {
		return
	}
	cookie := vc.SessionCookie()
	if cookie == nil { // nothing to keep: Logout ends the session
		c.sessionKept.Store(false)
		return
	}
	err := writeOwnerOnly(c.cfg.SessionDir, c.sessionFile(), keptSession{Cookie: cookie.Value, ServiceContent: vc.ServiceContent})
	c.sessionKept.Store(err == nil)
	if err != nil {
		c.log.Debug(ctx, "Could not keep the vCenter session", map[string]any{"file": c.sessionFile(), "error": err.Error()})
	}
}

func writeOwnerOnly(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if problem := UnsafeSessionDir(dir); problem != nil {
		return problem
	}
	// Written aside and renamed: a process reading it meanwhile sees the old
	// session or the new one, never half of one, and the rename replaces
	// whatever was at name (a file too open, a symbolic link) rather than
	// writing through it. CreateTemp makes it 0600.
	f, err := os.CreateTemp(dir, ".session-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), name)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	removeAbandoned(dir)
	return werr
}

// abandonedAfter is how old a temporary session file must be to count as
// left by a process that died between writing and renaming it; a younger
// one may be another process's write in progress.
const abandonedAfter = time.Hour

// removeAbandoned removes the temporary session files of dead processes:
// each holds a session's cookie.
func removeAbandoned(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, ".session-*"))
	for _, name := range names {
		if fi, err := os.Lstat(name); err == nil && time.Since(fi.ModTime()) > abandonedAfter {
			_ = os.Remove(name)
		}
	}
}
