package vsphere

import (
	"context"
	"errors"
	"net/http"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Ending sessions from another process. Terraform waits for a plugin to
// exit before it goes on (go-plugin's Kill), so a logout as the provider's
// process ends is one more round trip in every command that used vCenter:
// 50 ms of a 0.45 s refresh against a vCenter 50 ms away. The process hands
// its sessions over instead (HandOff), and a process of its own logs them
// out (EndSessions) while Terraform goes on.

// SessionEnd is what logs a session out from another process: the vCenter,
// how to trust its certificate, and the session's cookie. The cookie holds
// the session: it travels over a pipe only, never in a command line, the
// environment or a log.
type SessionEnd struct {
	Server         string
	UserAgent      string
	Trust          Trust
	SessionManager types.ManagedObjectReference
	Cookie         string
}

// String names the session's vCenter, not its cookie.
func (e SessionEnd) String() string { return "vCenter session on " + e.Server }

// HandOff gives the client's session up for another process to log out
// (EndSessions); nil when there is none to end (never connected, logged
// out, or kept for the next process). A session that cannot be handed over
// is logged out here. The client forgets the session's cookie: used again,
// it logs in to a session of its own.
func (c *Client) HandOff(ctx context.Context) (*SessionEnd, error) {
	var handed *SessionEnd
	err := c.endSession(ctx, func(vc *vim25.Client, trust Trust) error {
		cookie := vc.SessionCookie()
		if cookie == nil {
			return c.logoutLocked(ctx, vc)
		}
		handed = &SessionEnd{Server: c.cfg.Server, UserAgent: c.userAgent(), Trust: trust,
			SessionManager: *vc.ServiceContent.SessionManager, Cookie: cookie.Value}
		vc.Jar.SetCookies(vc.URL(), []*http.Cookie{{Name: soap.SessionCookieName, Path: "/", MaxAge: -1}})
		c.loggedOut = true
		c.log.Debug(ctx, "Handed the vCenter session over to be logged out", map[string]any{"server": c.cfg.Server, "user": c.cfg.User})
		return nil
	})
	return handed, err
}

// HandOff hands every client's session over (Client.HandOff), all at once,
// and returns those handed over when ctx ends.
func (cs *Clients) HandOff(ctx context.Context) ([]SessionEnd, error) {
	return cs.each(ctx, func(c *Client) (*SessionEnd, error) { return c.HandOff(ctx) })
}

// EndSessions logs out the sessions another process handed over, all at
// once, each bounded by ctx. A session vCenter has already ended counts as
// logged out.
func EndSessions(ctx context.Context, ends []SessionEnd) error {
	errs := make(chan error, len(ends))
	for _, end := range ends {
		go func() { errs <- end.logout(ctx) }()
	}
	var all []error
	for range ends {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

func (e SessionEnd) logout(ctx context.Context) error {
	sc := newSOAPClient(e.Server, e.UserAgent, e.Trust)
	setSessionCookie(sc, e.Cookie)
	_, err := methods.Logout(ctx, sc, &types.Logout{This: e.SessionManager})
	if err != nil && !fault.Is(err, &types.NotAuthenticated{}) {
		return translate("logging out of vCenter "+e.Server, err)
	}
	return nil
}

// setSessionCookie makes sc's calls those of the session cookie holds.
func setSessionCookie(sc *soap.Client, cookie string) {
	sc.Jar.SetCookies(sc.URL(), []*http.Cookie{{Name: soap.SessionCookieName, Value: cookie, Path: "/"}})
}
