package vsphere

import (
	"errors"
	"strings"
	"testing"
)

// A VM id of another kind is said for what it is, with what a VM's id looks
// like; a VM's ids pass.
func TestMalformedVMIDSaysWhatTheIDIs(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"vm-42":                                "",
		"4223B7A1-5B2C-8D3E-1F40-9C1E2A3B4C5D": "",
		"host-12":                              `"host-12" is a host's managed object id, not a virtual machine's: ` + vmIDForms,
		"datacenter-3":                         `"datacenter-3" is a datacenter's managed object id, not a virtual machine's`,
		"domain-c7":                            `"domain-c7" is a cluster's managed object id, not a virtual machine's`,
		"dvportgroup-17":                       `"dvportgroup-17" is a distributed port group's managed object id, not a virtual machine's`,
		"gpu-node-1": `"gpu-node-1" is neither a virtual machine's BIOS UUID (8-4-4-4-12 hex digits, such as ` +
			`4223b7a1-5b2c-8d3e-1f40-9c1e2a3b4c5d) nor its managed object id (such as vm-42): it looks like a name`,
		"4223b7a1-5b2c-8d3e": `"4223b7a1-5b2c-8d3e" is neither a virtual machine's BIOS UUID (8-4-4-4-12 hex digits, such as ` +
			`4223b7a1-5b2c-8d3e-1f40-9c1e2a3b4c5d) nor its managed object id (such as vm-42)`,
	} {
		err := malformedVMID("reading virtual machine "+id, id)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want none", id, err)
		case want != "" && (!errors.Is(err, ErrInvalidArg) || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an invalid argument saying %q", id, err, want)
		case strings.HasPrefix(id, "4223b7a1") && strings.Contains(err.Error(), "name"):
			t.Errorf("%s: %v; a UUID cut short is no name", id, err)
		}
	}
}
