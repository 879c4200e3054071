package vsphere

import "testing"

// Names are read as vCenter stores them ('%', '/' and '\' escaped, in
// either case of hex) and compared and shown unescaped; an escaped-looking
// name ("a%2fb", stored "a%252fb") stays as given.
func TestEscapedNames(t *testing.T) {
	t.Parallel()
	for stored, shown := range map[string]string{
		"gpu%2fnode1": "gpu/node1",
		"GPU%2Fnode":  "GPU/node",
		"dc%5ceast":   `dc\east`,
		"dc%5Ceast":   `dc\east`,
		"100%25":      "100%",
		"a%252fb":     "a%2fb",
		"plain-name ": "plain-name ",
	} {
		if got := EntityName(stored); got != shown {
			t.Errorf("EntityName(%q) = %q, want %q", stored, got, shown)
		}
	}
}
