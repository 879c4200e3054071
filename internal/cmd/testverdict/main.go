// Command testverdict reads `go test -json` on stdin and prints what a plain
// `go test` would (each package's verdict, the output of a test that failed)
// plus the output of every test that skipped, and exits non-zero when any test
// failed or skipped, or a package did not build. `make test NEWEST=1` runs
// the whole acceptance suite with the newest Terraform through it: a test that
// skips there (a feature missing, a version check gone wrong) is a test that
// did not run, and CI must not count it as passing.
//
// Usage:
//
//	go test -json ./... | testverdict
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	os.Exit(verdict(os.Stdin, os.Stdout))
}

// verdict copies the verdicts and the failed and skipped tests' output from in
// to out, and returns the exit status: 1 if a test failed or skipped or a
// package failed, else 0.
func verdict(in io.Reader, out io.Writer) int {
	outputs := map[string]*strings.Builder{} // by package and test
	var failed, skipped []string
	packageFailed := false
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		var e event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			// Not test2json: a build failure's compiler output, say. Shown as it came.
			fmt.Fprintln(out, scanner.Text())
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			if outputs[key] == nil {
				outputs[key] = &strings.Builder{}
			}
			outputs[key].WriteString(e.Output)
		case "fail", "skip":
			if e.Test == "" {
				// A package's own verdict: "FAIL" (or "ok  \t... [no test files]") is in its output.
				packageFailed = packageFailed || e.Action == "fail"
				fmt.Fprint(out, packageSummary(outputs[key]))
				continue
			}
			fmt.Fprint(out, text(outputs[key]))
			if e.Action == "fail" {
				failed = append(failed, key)
			} else {
				skipped = append(skipped, key)
			}
		case "pass":
			if e.Test == "" {
				fmt.Fprint(out, packageSummary(outputs[key]))
			}
		}
		if e.Action != "output" && e.Action != "run" && e.Action != "pause" && e.Action != "cont" && e.Test != "" {
			delete(outputs, key)
		}
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintf(out, "reading go test -json: %v\n", err)
		return 1
	}
	status := 0
	if len(skipped) > 0 {
		sort.Strings(skipped)
		fmt.Fprintf(out, "\n%d tests skipped, and a skip here counts as a failure:\n  %s\n", len(skipped), strings.Join(skipped, "\n  "))
		status = 1
	}
	if len(failed) > 0 || packageFailed {
		sort.Strings(failed)
		fmt.Fprintf(out, "\n%d tests failed:\n  %s\n", len(failed), strings.Join(failed, "\n  "))
		status = 1
	}
	return status
}

func text(b *strings.Builder) string {
	if b == nil {
		return ""
	}
	return b.String()
}

// packageSummary is the last lines of a package's own output, its verdict
// ("ok  \tpkg\t12.3s", or "FAIL" and "FAIL\tpkg\t...") and whatever it printed
// outside a test (a panic, a TestMain's message).
func packageSummary(b *strings.Builder) string {
	s := text(b)
	var keep []string
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" && line != "PASS\n" {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}
