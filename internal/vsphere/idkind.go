package vsphere

import "regexp"

// idKinds are the managed object ids vCenter gives the objects a
// configuration names, by the prefix of each kind (vcsim gives the same),
// so that an id given where another kind was expected is said for what it
// is.
var idKinds = []struct {
	pattern *regexp.Regexp
	kind    string
}{
	{regexp.MustCompile(`^vm-\d+$`), "a virtual machine's managed object id"},
	{regexp.MustCompile(`^host-\d+$`), "a host's managed object id"},
	{regexp.MustCompile(`^datacenter-\d+$`), "a datacenter's managed object id"},
	{regexp.MustCompile(`^domain-c\d+$`), "a cluster's managed object id"},
	{regexp.MustCompile(`^domain-s\d+$`), "a standalone host's compute resource id"},
	{regexp.MustCompile(`^resgroup-\d+$`), "a resource pool's managed object id"},
	{regexp.MustCompile(`^group-[a-z]\d+$`), "a folder's managed object id"},
	{regexp.MustCompile(`^dvs-\d+$`), "a distributed switch's managed object id"},
	{regexp.MustCompile(`^dvportgroup-\d+$`), "a distributed port group's managed object id"},
	{regexp.MustCompile(`^network-\d+$`), "a network's managed object id"},
	{regexp.MustCompile(`^datastore-\d+$`), "a datastore's managed object id"},
	{vmUUIDPattern, "a UUID"},
}

// notHex finds what no id of hex digits and dashes (a UUID, cut short or
// mistyped) has.
var notHex = regexp.MustCompile(`[^0-9a-fA-F-]`)

// idKind says what kind of id id looks like: one of idKinds, "a name" for
// anything else with a letter no UUID has, or "" (a mistyped UUID).
func idKind(id string) string {
	for _, k := range idKinds {
		if k.pattern.MatchString(id) {
			return k.kind
		}
	}
	if notHex.MatchString(id) {
		return "a name"
	}
	return ""
}
