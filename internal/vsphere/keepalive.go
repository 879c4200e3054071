package vsphere

import (
	"context"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
)

// keepAlive keeps a logged-in session from expiring while its client sits
// idle, and only then. vCenter ends a session that has made no call for its
// idle timeout (30 minutes by default), so a session in use needs no
// keep-alive: one (CurrentTime, the cheapest call) is sent once no call has
// been in flight for idle. govmomi's keepalive handler sends one every idle
// period whatever the client does, so the same work made more calls on a
// slow machine than on a fast one.
//
// It runs from a login until Logout, or until a keep-alive fails (the
// session is gone; the next call logs in again, which starts it again).
type keepAlive struct {
	next    soap.RoundTripper
	idle    time.Duration
	timeout time.Duration                 // bounds a keep-alive call
	checked func(at time.Time, sent bool) // test hook: told of each look whether to send, when it looked; nil otherwise

	mu       sync.Mutex
	timer    *time.Timer // nil while no session is logged in
	inFlight int
	last     time.Time     // when the last call started or ended
	sending  chan struct{} // closed when the keep-alive being sent has returned; nil when none is
}

func (k *keepAlive) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	if _, ok := req.(*methods.LogoutBody); ok {
		k.stop()
	}
	k.mu.Lock()
	k.inFlight++
	k.last = time.Now()
	k.mu.Unlock()
	err := k.next.RoundTrip(ctx, req, res)
	k.mu.Lock()
	k.inFlight--
	k.last = time.Now()
	k.mu.Unlock()
	if err == nil {
		switch req.(type) {
		case *methods.LoginBody, *methods.LoginByTokenBody, *methods.LoginExtensionByCertificateBody:
			k.start()
		}
	}
	return err
}

func (k *keepAlive) start() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer == nil {
		k.timer = time.AfterFunc(k.idle, k.check)
	}
}

// stop ends the keep-alive, waiting for one being sent.
func (k *keepAlive) stop() {
	k.mu.Lock()
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
	sending := k.sending
	k.mu.Unlock()
	if sending != nil {
		<-sending
	}
}

// check sends a keep-alive when the session has been idle for k.idle, and
// looks again when it will have been.
func (k *keepAlive) check() {
	k.mu.Lock()
	if k.timer == nil {
		k.mu.Unlock()
		return
	}
	now := time.Now()
	wait := k.idle - now.Sub(k.last)
	if k.inFlight > 0 {
		wait = k.idle
	}
	if wait > 0 {
		k.timer.Reset(wait)
		k.mu.Unlock()
		k.tell(now, false)
		return
	}
	sent := make(chan struct{})
	k.sending = sent
	k.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	_, err := methods.GetCurrentTime(ctx, k) // through k: it is a call too
	cancel()
	k.mu.Lock()
	switch {
	case k.timer == nil: // stopped while sending
	case err != nil:
		k.timer = nil
	default:
		k.timer.Reset(k.idle)
	}
	k.sending = nil
	k.mu.Unlock()
	close(sent)
	k.tell(now, true)
}

func (k *keepAlive) tell(at time.Time, sent bool) {
	if k.checked != nil {
		k.checked(at, sent)
	}
}
