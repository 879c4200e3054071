package vcsimlab

import "strings"

// vCenter stores an entity's name with '/' escaped as %2f, '\' as %5c, and
// '%' as %25 unless it starts an escape sequence (vSphere API reference,
// ManagedEntity.name: "Any / (slash), \ (backslash), character used in this
// name element is escaped. Similarly, any % (percent) character used in this
// name element is escaped, unless it is used to start an escape sequence. A
// slash is escaped as %2F or %2f. A backslash is escaped as %5C or %5c, and a
// percent is escaped as %25"). vcsim does so for folders and VMs only; the
// lab does it for the names of distributed switches and port groups, as they
// are created and reconfigured.

// escapeEntityName is name as vCenter stores it. An escape sequence is a
// '%' and two hex digits, as in the reference's examples.
func escapeEntityName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '/':
			b.WriteString("%2f")
		case c == '\\':
			b.WriteString("%5c")
		case c == '%' && !startsEscape(name[i+1:]):
			b.WriteString("%25")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// startsEscape reports whether what follows a '%' makes it an escape
// sequence: two hex digits.
func startsEscape(rest string) bool {
	return len(rest) >= 2 && isHex(rest[0]) && isHex(rest[1])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
