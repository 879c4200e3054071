package provider

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A destroy says only what will happen (issue 22, items 4 and 5): an SR-IOV
// adapter this configuration does not manage stops the destroy of its
// switch and of its card's SR-IOV at plan, naming the VM, and nothing is
// destroyed; once it is gone, the destroy (which removes the managed
// adapter first) runs without a word about switches or devices in use.
func TestAccDestroyWarnings_onlyWhatHappens(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	var other string
	for _, n := range lab.VMNames() {
		if n != vm && lab.VMHostName(n) == lab.VMHostName(vm) {
			other = n
		}
	}
	config := vmSRIOVNICConfig(lab, vm, "a", vmnic4PF, false)
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + strings.Replace(config, acctest.ProviderConfig(lab), "", 1)})
	d.run("apply", "-auto-approve")

	acctest.Must(t, lab.AddSRIOVAdapter(ctx, other, testName("pvrdma-a"), vmnic4PF))
	out, err := d.try("destroy", "-auto-approve")
	// Both refusals, each naming only the adapter this destroy leaves.
	if err == nil || !strings.Contains(out, "Switch still in use") || !strings.Contains(out, other+" (SR-IOV)") ||
		strings.Contains(out, vm+" (SR-IOV)") || strings.Contains(out, "Destroying...") ||
		!regexp.MustCompile(`(?s)Virtual functions in use.*1\s+SR-IOV\s+adapters\s+of\s+virtual\s+machines\s+`+regexp.QuoteMeta(other)).MatchString(out) {
		t.Fatalf("destroy with an unmanaged SR-IOV adapter on the switch: %v; want plan errors naming only %s, nothing destroyed:\n%s", err, other, out)
	}

	acctest.Must(t, lab.RemoveSRIOVAdapters(ctx, other))
	out = d.run("destroy", "-auto-approve")
	for _, said := range []string{"still in use", "still used", "Warning: Device", "Warning: Switch"} {
		if strings.Contains(out, said) {
			t.Errorf("destroy said %q, though it removes the adapter first:\n%s", said, out)
		}
	}
}
