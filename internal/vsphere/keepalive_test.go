package vsphere

import (
	"context"
	"testing"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// keepAliveCheck is one look of a keep-alive whether to send: when, and
// whether it sent.
type keepAliveCheck struct {
	at   time.Time
	sent bool
}

// keepAliveClient is a lab client whose keep-alive looks every millisecond
// whether to send, and tells each look on the returned channel.
func keepAliveClient(t *testing.T, lab *vcsimlab.Lab) (*Client, <-chan keepAliveCheck) {
	t.Helper()
	c := labClient(lab, func(cfg *Config) { cfg.KeepAliveIdle = time.Millisecond })
	checks := make(chan keepAliveCheck, 1000)
	c.keepAliveChecked = func(at time.Time, sent bool) {
		select {
		case checks <- keepAliveCheck{at, sent}:
		default: // nobody is counting any more
		}
	}
	t.Cleanup(func() { _ = c.Logout(context.Background()) })
	return c, checks
}

// A client busy with a call sends no keep-alive, however long the call
// takes: vCenter's session idle timeout restarts at every call, so a
// session in use needs none, and a slow command makes no more calls than a
// fast one. The keep-alive looks three times while a read is held in the
// lab, and sends nothing.
func TestKeepAliveQuietWhileBusy(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c, checks := keepAliveClient(t, lab)
	release := lab.Hold("RetrievePropertiesEx")
	defer release()
	read := make(chan error, 1)
	go func() {
		_, err := c.VM(ctx, lab.VMID(lab.VMNames()[0]))
		read <- err
	}()
	for lab.Calls()["RetrievePropertiesEx"] == 0 { // the read is in flight, held
		select {
		case err := <-read:
			t.Fatalf("the read ended before it was held: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	// Looks from before are skipped; a look sends, if it does, before the
	// next begins, so what the lab counts from the first look after on is
	// what those looks sent.
	held, before, looks := time.Now(), -1, 0
	for looks < 4 {
		c := <-checks
		if c.at.Before(held) {
			continue
		}
		if before < 0 {
			before = lab.KeepAlives()
		}
		looks++
		if c.sent {
			t.Errorf("the keep-alive sent while a call was in flight")
		}
	}
	if n := lab.KeepAlives() - before; n != 0 {
		t.Errorf("%d keep-alives while a call was in flight, want none", n)
	}
	release()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
}

// An idle client keeps its session alive: once no call has been in flight
// for the idle time, the keep-alive sends one.
func TestKeepAliveWhenIdle(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c, checks := keepAliveClient(t, lab)
	if _, err := c.VM(ctx, lab.VMID(lab.VMNames()[0])); err != nil {
		t.Fatal(err)
	}
	for c := range checks {
		if c.sent {
			break
		}
	}
	if n := lab.KeepAlives(); n == 0 {
		t.Fatal("the keep-alive said it sent, and the lab saw none")
	}
}
