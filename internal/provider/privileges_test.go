package provider

// The vCenter privileges guide lists, for every vSphere method the provider
// calls, the privilege the vSphere API reference requires of it. The labs of
// the acceptance tests log each method the provider calls (their own
// administrator's calls left out); once the tests have passed, TestMain
// fails the run if one of those methods is missing from the guide, so the
// guide cannot fall behind the service layer.

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// privilegesGuide is the guide's template, which names each method in a table
// row of its own: "| `Method` | ... |".
const privilegesGuide = "../../templates/guides/vcenter-privileges.md.tmpl"

var called = struct {
	sync.Mutex
	methods map[string][]string // method -> the first tests that called it
	skip    map[*vcsimlab.Lab]bool
}{methods: map[string][]string{}, skip: map[*vcsimlab.Lab]bool{}}

// recordCalls keeps the methods lab logged when the test ends.
func recordCalls(test string, lab *vcsimlab.Lab) {
	log := lab.CallLog()
	called.Lock()
	defer called.Unlock()
	if called.skip[lab] {
		return
	}
	for _, m := range log {
		if m != "" && len(called.methods[m]) < 3 && !slices.Contains(called.methods[m], test) {
			called.methods[m] = append(called.methods[m], test)
		}
	}
}

// notProviderCalls leaves a lab's calls out of the check: another program
// (the vSphere provider) calls it too.
func notProviderCalls(lab *vcsimlab.Lab) {
	called.Lock()
	defer called.Unlock()
	called.skip[lab] = true
}

var guideMethod = regexp.MustCompile("(?m)^\\| `([A-Za-z_]+)` \\|")

// checkPrivilegesGuide returns an error naming each method the tests saw
// called that the guide does not list. VSPHEREHPC_CALLED_METHODS names a
// file the methods are written to, one per line.
func checkPrivilegesGuide() error {
	called.Lock()
	defer called.Unlock()
	var methods []string
	for m := range called.methods {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	if path := os.Getenv("VSPHEREHPC_CALLED_METHODS"); path != "" {
		if err := os.WriteFile(path, []byte(strings.Join(methods, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	if len(methods) == 0 {
		return nil
	}
	b, err := os.ReadFile(privilegesGuide)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, m := range guideMethod.FindAllStringSubmatch(string(b), -1) {
		listed[m[1]] = true
	}
	var missing []string
	for _, m := range methods {
		if !listed[m] {
			missing = append(missing, fmt.Sprintf("%s (called in %s)", m, strings.Join(called.methods[m], ", ")))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the provider called vSphere methods that %s does not list with their privilege:\n  %s",
			privilegesGuide, strings.Join(missing, "\n  "))
	}
	return nil
}
