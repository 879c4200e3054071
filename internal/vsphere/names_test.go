package vsphere

import "testing"

// Names are compared as vCenter stores them ('%' escaped first, so an
// escaped-looking name is not taken for an escape) and shown unescaped.
func TestEscapedNames(t *testing.T) {
	t.Parallel()
	for given, stored := range map[string]string{
		"gpu/node1":   "gpu%2fnode1",
		`dc\east`:     "dc%5ceast",
		"100%":        "100%25",
		"a%2fb":       "a%252fb",
		"plain-name ": "plain-name ",
	} {
		if got := escapeName(given); got != stored {
			t.Errorf("escapeName(%q) = %q, want %q", given, got, stored)
		}
		if got := EntityName(stored); got != given {
			t.Errorf("EntityName(%q) = %q, want %q", stored, got, given)
		}
	}
	if got := EntityName("GPU%2Fnode"); got != "GPU/node" {
		t.Errorf("EntityName of upper-case hex = %q", got)
	}
}
