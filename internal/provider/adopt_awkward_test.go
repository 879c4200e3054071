package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// Awkward names, as administrators type them: vCenter stores '/', '%' and
// '\' escaped.
const (
	awkwardSwitch    = `ü/x 100%\y`
	awkwardPortGroup = `pvrdma/ü 5%`
)

// awkwardVMs are the VMs awkwardLab adds, by what is awkward about them.
const (
	biosGuestVM   = "installed-node" // the lab's VM with a guest OS installed, BIOS firmware; given a GPU
	pfOnlyVM      = "pf-only"        // a whole ConnectX-7 PF passed through, no GPU, no MMIO window
	vfWindowVM    = "vf-window"      // an InfiniBand VF passed through, no GPU, an MMIO window of 32 GB
	labelledVM    = "labelled-gpu"   // a Dynamic DirectPath GPU with a hardware label
	dynamicPairVM = "dynamic-pair"   // two Dynamic DirectPath GPUs of one model
	inaccessVM    = "lost-files"     // a PVRDMA adapter, its files unreachable (inaccessible)
)

// awkwardLab is the hand-built lab (BuildByHand) on hosts that apply
// passthrough and SR-IOV changes only at their next reboot, with every
// object in the states a hand-built lab puts it in beside: a switch and a
// port group named with '/', '%' and '\'; the hand-built SR-IOV (4 VFs on
// the first host's vmnic4) and another function's SR-IOV and a GPU's
// passthrough waiting for the reboot; and the VMs of awkwardVMs.
func awkwardLab(t *testing.T) *vcsimlab.Lab {
	t.Helper()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "builds the lab by hand")
	ctx := context.Background()
	must(t, lab.BuildByHand(ctx))
	hosts := lab.HostNames()
	h0, h1, h2 := hosts[0], hosts[1], hosts[2]
	svc := labService(lab)
	// The first host's ConnectX-7: SR-IOV on its first PF, active after a
	// reboot (its VF 0 passed through by hand), then a change of the
	// count waiting for the next one.
	const ib, vf0 = "0000:86:00.0", "0000:86:00.1"
	must(t, lab.SetHostSRIOV(ctx, h2, ib, 2))
	must(t, svc.SetHostPassthrough(ctx, lab.HostID(h2), map[string]bool{"0000:87:00.0": true}))
	must(t, lab.RebootHost(ctx, h2))
	must(t, svc.SetHostPassthrough(ctx, lab.HostID(h2), map[string]bool{vf0: true}))
	must(t, lab.RebootHost(ctx, h2))
	must(t, lab.SetHostSRIOV(ctx, h2, ib, 4))                        // waits for the next reboot
	must(t, lab.SetHostSRIOV(ctx, h0, vcsimlab.HandBuiltSRIOVPF, 6)) // so does the hand-built one's new count
	// The A100 of the second host enabled, waiting for its reboot.
	must(t, svc.SetHostPassthrough(ctx, lab.HostID(h1), map[string]bool{"0000:af:00.0": true}))

	must(t, lab.CreateSwitchByHand(ctx, awkwardSwitch, h0, "vmnic5"))
	must(t, lab.AddPortGroup(ctx, awkwardSwitch, awkwardPortGroup, 8))

	for name, host := range map[string]string{pfOnlyVM: h2, vfWindowVM: h2, labelledVM: h2, dynamicPairVM: h0, inaccessVM: h1} {
		must(t, lab.CreateVM(ctx, name, host, 19))
	}
	must(t, lab.AttachGPU(ctx, biosGuestVM, lab.GPUs()[0]))
	must(t, lab.AttachGPU(ctx, pfOnlyVM, "0000:87:00.0"))
	must(t, lab.AttachGPU(ctx, vfWindowVM, vf0))
	must(t, lab.SetVMFirmware(ctx, vfWindowVM, "efi"))
	must(t, lab.SetVMExtraConfig(ctx, vfWindowVM, "pciPassthru.use64bitMMIO", "TRUE"))
	must(t, lab.SetVMExtraConfig(ctx, vfWindowVM, "pciPassthru.64bitMMIOSizeGB", "32"))
	must(t, lab.AttachDynamicGPU(ctx, labelledVM, 0x10de, 0x2330))
	must(t, lab.NarrowDynamicGPUs(ctx, labelledVM, "team-b", 0, 0))
	for range 2 {
		must(t, lab.AttachDynamicGPU(ctx, dynamicPairVM, 0x10de, 0x2330))
	}
	uuid, key, err := lab.PortGroupBacking(ctx, vcsimlab.HandBuiltSwitch, vcsimlab.HandBuiltPortGroup)
	must(t, err)
	must(t, lab.AddPVRDMAAdapter(ctx, inaccessVM, uuid, key))
	must(t, lab.SetVMAccessible(ctx, inaccessVM, false))
	return lab
}

// queried is what terraform query -json found: each result's list block,
// display name and identity, and the warnings on each result, by display
// name.
type queried struct {
	results  []queryResult
	warnings map[string][]string
}

type queryResult struct {
	address, display string
	identity         map[string]any
}

func queryAll(t *testing.T, d *tfDir) queried {
	t.Helper()
	out := queried{warnings: map[string][]string{}}
	sc := bufio.NewScanner(strings.NewReader(d.run("query", "-json")))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m struct {
			Type  string `json:"type"`
			Found struct {
				Address     string         `json:"address"`
				DisplayName string         `json:"display_name"`
				Identity    map[string]any `json:"identity"`
			} `json:"list_resource_found"`
			Diagnostic struct {
				Severity string `json:"severity"`
				Summary  string `json:"summary"`
				Detail   string `json:"detail"`
			} `json:"diagnostic"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Type == "list_resource_found":
			out.results = append(out.results, queryResult{address: m.Found.Address, display: m.Found.DisplayName, identity: m.Found.Identity})
		case m.Type == "diagnostic" && m.Diagnostic.Severity == "warning":
			out.warnings[m.Diagnostic.Summary] = append(out.warnings[m.Diagnostic.Summary], m.Diagnostic.Detail)
		}
	}
	return out
}

// The configuration terraform query generates for an awkward hand-built
// lab passes the provider's own validation, and its plan imports every
// result; every other change is one the query announced, with its reason,
// on that result.
func TestAccAdopt_awkwardLab(t *testing.T) {
	t.Parallel()
	lab := awkwardLab(t)
	d := newTFDir(t, lab, adoptExample(t))
	d.env = append(d.env, "TF_VAR_datacenter="+lab.DatacenterName())
	q := queryAll(t, d)
	for _, r := range q.results {
		t.Logf("found %s %q %v", r.address, r.display, r.identity)
	}
	for k, v := range q.warnings {
		t.Logf("warning %q: %q", k, v)
	}
	d.run("query", "-generate-config-out=adopted.tf")
	t.Log(d.read("adopted.tf"))
	if out, err := d.try("validate"); err != nil {
		t.Fatalf("terraform validate of the generated configuration: %v\n%s", err, out)
	}
	out, err := d.try("plan", "-out=tfplan")
	t.Log(out)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var p struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions   []string        `json:"actions"`
				Importing json.RawMessage `json:"importing"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	must(t, json.Unmarshal([]byte(d.run("show", "-json", "tfplan")), &p))
	var changed []string
	for _, rc := range p.ResourceChanges {
		t.Logf("%s %v %s", rc.Address, rc.Change.Actions, rc.Change.Importing)
		if !slices.Equal(rc.Change.Actions, []string{"no-op"}) {
			changed = append(changed, rc.Address+" "+strings.Join(rc.Change.Actions, ","))
		}
	}
	sort.Strings(changed)
	t.Log(fmt.Sprint(changed))
}
