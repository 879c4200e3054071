package acctest

import (
	"testing"
	"time"
)

// WaitFor waits until ok says so, failing the test with its last word after
// a minute: a bound for a broken run, not a timing the verdict rests on.
func WaitFor(t testing.TB, what string, ok func() (done bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		done, state := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still %s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
