package main

import (
	"strings"
	"testing"
)

// A run's events as `go test -json` writes them: one package passes with a
// skipped test, another has a failed test.
const events = `{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestOK"}
{"Action":"output","Package":"a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"a","Test":"TestOK"}
{"Action":"run","Package":"a","Test":"TestAccOld"}
{"Action":"output","Package":"a","Test":"TestAccOld","Output":"    x_test.go:9: terraform 1.5.7 has no list resources\n"}
{"Action":"output","Package":"a","Test":"TestAccOld","Output":"--- SKIP: TestAccOld (0.00s)\n"}
{"Action":"skip","Package":"a","Test":"TestAccOld"}
{"Action":"output","Package":"a","Output":"PASS\n"}
{"Action":"output","Package":"a","Output":"ok  \ta\t0.01s\n"}
{"Action":"pass","Package":"a"}
{"Action":"run","Package":"b","Test":"TestBroken"}
{"Action":"output","Package":"b","Test":"TestBroken","Output":"    b_test.go:3: want 2, got 3\n"}
{"Action":"output","Package":"b","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}
{"Action":"fail","Package":"b","Test":"TestBroken"}
{"Action":"output","Package":"b","Output":"FAIL\n"}
{"Action":"output","Package":"b","Output":"FAIL\tb\t0.01s\n"}
{"Action":"fail","Package":"b"}
`

func TestVerdictFailsOnSkipsAndFailures(t *testing.T) {
	var out strings.Builder
	if status := verdict(strings.NewReader(events), &out); status != 1 {
		t.Errorf("status %d, want 1", status)
	}
	got := out.String()
	for _, want := range []string{
		"ok  \ta\t0.01s\n",
		"terraform 1.5.7 has no list resources",
		"1 tests skipped, and a skip here counts as a failure:\n  a TestAccOld\n",
		"want 2, got 3",
		"FAIL\tb\t0.01s\n",
		"1 tests failed:\n  b TestBroken\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "--- PASS: TestOK") {
		t.Errorf("a passed test's output is shown:\n%s", got)
	}
}

func TestVerdictPassesWhenAllRan(t *testing.T) {
	var passing []string
	for _, line := range strings.Split(events, "\n") {
		if strings.Contains(line, `"a"`) && !strings.Contains(line, "TestAccOld") {
			passing = append(passing, line)
		}
	}
	var out strings.Builder
	if status := verdict(strings.NewReader(strings.Join(passing, "\n")), &out); status != 0 {
		t.Errorf("status %d, want 0:\n%s", status, out.String())
	}
}

func TestVerdictShowsWhatIsNotJSON(t *testing.T) {
	var out strings.Builder
	status := verdict(strings.NewReader("# example.com/b\nb.go:3:1: syntax error\n"+`{"Action":"fail","Package":"b"}`+"\n"), &out)
	if status != 1 || !strings.Contains(out.String(), "b.go:3:1: syntax error") {
		t.Errorf("status %d, output %q: want 1 and the compiler's message", status, out.String())
	}
}
