package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// Awkward names, as administrators type them: vCenter stores '/', '%' and
// '\' escaped.
const (
	awkwardSwitch    = `ü/x 100%\y`
	awkwardPortGroup = `pvrdma/ü 5%`
)

// The VMs awkwardLab sets up beside the hand-built lab's, by what is
// awkward about them.
const (
	biosGuestVM   = "installed-node" // the lab's VM with a guest OS installed, on BIOS; given a GPU
	pfOnlyVM      = "pf-only"        // a whole ConnectX-7 PF passed through, no GPU, no MMIO window
	vfWindowVM    = "vf-window"      // an InfiniBand VF passed through, no GPU, a 32 GB window, memory not reserved
	labelledVM    = "labelled-gpu"   // a Dynamic DirectPath GPU of a pool: a hardware label one H100 of its host carries
	dynamicPairVM = "dynamic-pair"   // two Dynamic DirectPath GPUs of one model
	lostVM        = "lost-files"     // a PVRDMA adapter, its files unreachable (inaccessible)
	keysOnlyVM    = "keys-only"      // pciPassthru.use64bitMMIO and nothing else: no device, no window
)

// The InfiniBand card awkwardLab uses on the third host: SR-IOV on its
// first PF with VF 0 passed through, its second PF passed through whole.
const (
	awkwardIBPF, awkwardVF0, awkwardWholePF = "0000:86:00.0", "0000:86:00.1", "0000:87:00.0"
	awkwardA100                             = "0000:af:00.0"
)

// awkwardLab is the hand-built lab (BuildByHand) with every object in the
// states a hand-built lab puts it in beside: a switch and a port group named
// with '/', '%' and '\'; SR-IOV counts (the hand-built one's, and the
// InfiniBand card's) and a GPU's passthrough waiting for the host's next
// reboot, on hosts that need one (needReboot) or deferred on hosts that
// apply them at once; and the VMs above, on BIOS without the MMIO keys or
// the memory reservation but where said.
func awkwardLab(t *testing.T, needReboot bool) *vcsimlab.Lab {
	t.Helper()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: needReboot})
	simulatedOnly(t, lab, "builds the lab by hand")
	ctx := context.Background()
	acctest.Must(t, lab.BuildByHand(ctx))
	hosts := lab.HostNames()
	h0, h1, h2 := hosts[0], hosts[1], hosts[2]
	svc := labClient(lab)
	acctest.Must(t, lab.SetHostSRIOV(ctx, h2, awkwardIBPF, 2))
	acctest.Must(t, svc.SetHostPassthrough(ctx, lab.HostID(h2), map[string]bool{awkwardWholePF: true}, nil))
	acctest.Must(t, lab.RebootHost(ctx, h2))
	acctest.Must(t, svc.SetHostPassthrough(ctx, lab.HostID(h2), map[string]bool{awkwardVF0: true}, nil))
	acctest.Must(t, lab.RebootHost(ctx, h2))
	// Waiting for the next reboot.
	if needReboot {
		acctest.Must(t, lab.SetHostSRIOV(ctx, h2, awkwardIBPF, 4))
		acctest.Must(t, lab.SetHostSRIOV(ctx, h0, vcsimlab.HandBuiltSRIOVPF, 6))
		acctest.Must(t, svc.SetHostPassthrough(ctx, lab.HostID(h1), map[string]bool{awkwardA100: true}, nil))
	} else {
		acctest.Must(t, lab.SetHostSRIOVAtNextReboot(ctx, h2, awkwardIBPF, 4))
		acctest.Must(t, lab.SetHostSRIOVAtNextReboot(ctx, h0, vcsimlab.HandBuiltSRIOVPF, 6))
		acctest.Must(t, lab.SetHostPassthroughAtNextReboot(ctx, h1, awkwardA100, true))
	}

	acctest.Must(t, lab.CreateSwitchByHand(ctx, awkwardSwitch, h0, "vmnic5"))
	acctest.Must(t, lab.AddPortGroup(ctx, awkwardSwitch, awkwardPortGroup, 8))

	for name, host := range map[string]string{pfOnlyVM: h2, vfWindowVM: h2, labelledVM: h2, dynamicPairVM: h0, lostVM: h1, keysOnlyVM: h1} {
		acctest.Must(t, lab.CreateVM(ctx, name, host, 19))
	}
	acctest.Must(t, lab.AttachGPU(ctx, biosGuestVM, lab.GPUs()[0]))
	acctest.Must(t, lab.AttachGPU(ctx, pfOnlyVM, awkwardWholePF))
	acctest.Must(t, lab.AttachGPU(ctx, vfWindowVM, awkwardVF0))
	acctest.Must(t, lab.SetVMFirmware(ctx, vfWindowVM, "efi"))
	acctest.Must(t, lab.SetVMExtraConfig(ctx, vfWindowVM, "pciPassthru.use64bitMMIO", "TRUE"))
	acctest.Must(t, lab.SetVMExtraConfig(ctx, vfWindowVM, "pciPassthru.64bitMMIOSizeGB", "32"))
	acctest.Must(t, lab.SetVMExtraConfig(ctx, keysOnlyVM, "pciPassthru.use64bitMMIO", "TRUE"))
	acctest.Must(t, lab.SetHardwareLabel(ctx, h2, lab.GPUs()[1], "team-b"))
	// Every device with passthrough on of the first host in one pool: its
	// passthrough is adopted with the label.
	for _, gpu := range lab.GPUs()[:2] {
		acctest.Must(t, lab.SetHardwareLabel(ctx, h0, gpu, "inference"))
	}
	acctest.Must(t, lab.AttachDynamicGPU(ctx, labelledVM, 0x10de, 0x2330))
	acctest.Must(t, lab.NarrowDynamicGPUs(ctx, labelledVM, "team-b", 0, 0))
	for range 2 {
		acctest.Must(t, lab.AttachDynamicGPU(ctx, dynamicPairVM, 0x10de, 0x2330))
	}
	uuid, key, err := lab.PortGroupBacking(ctx, vcsimlab.HandBuiltSwitch, vcsimlab.HandBuiltPortGroup)
	acctest.Must(t, err)
	acctest.Must(t, lab.AddPVRDMAAdapter(ctx, lostVM, uuid, key))
	acctest.Must(t, lab.SetVMAccessible(ctx, lostVM, false))
	return lab
}

// queried is what terraform query -json found: each result's list block,
// display name and identity, and the warnings, by summary (a result's
// display name).
type queried struct {
	results  []queryResult
	warnings map[string][]string
}

type queryResult struct {
	address, display string
	identity         string // JSON, keys sorted
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
			id, err := json.Marshal(m.Found.Identity)
			acctest.Must(t, err)
			out.results = append(out.results, queryResult{address: m.Found.Address, display: m.Found.DisplayName, identity: string(id)})
		case m.Type == "diagnostic" && m.Diagnostic.Severity == "warning":
			out.warnings[m.Diagnostic.Summary] = append(out.warnings[m.Diagnostic.Summary], m.Diagnostic.Detail)
		}
	}
	return out
}

// byIdentity is the result imported by an identity, as a plan's JSON
// gives it.
func (q queried) byIdentity(t *testing.T, identity map[string]any) (queryResult, bool) {
	t.Helper()
	id, err := json.Marshal(identity)
	acctest.Must(t, err)
	for _, r := range q.results {
		if r.identity == string(id) {
			return r, true
		}
	}
	return queryResult{}, false
}

// The configuration terraform query generates for an awkward hand-built
// lab passes the provider's own validation (terraform validate), and its
// plan imports every result: each result it also changes is one the query
// warned of, saying why, and it changes only what the warning says. The
// apply converges: the next plan is empty. Inaccessible VMs are left out of
// the VM lists with a warning naming them. Once on hosts that need a reboot
// for passthrough and SR-IOV changes, once on hosts that apply them at once
// (where the waiting changes were deferred).
func TestAccAdopt_awkwardLab(t *testing.T) {
	t.Parallel()
	for _, needReboot := range []bool{false, true} {
		t.Run(map[bool]string{false: "hostsApplyAtOnce", true: "hostsNeedReboot"}[needReboot], func(t *testing.T) {
			t.Parallel()
			adoptAwkwardLab(t, needReboot)
		})
	}
}

func adoptAwkwardLab(t *testing.T, needReboot bool) {
	lab := awkwardLab(t, needReboot)
	hosts := lab.HostNames()
	d := newTFDir(t, lab, adoptExample(t))
	d.env = append(d.env, "TF_VAR_datacenter="+lab.DatacenterName())
	q := queryAll(t, d)
	for summary, details := range q.warnings {
		for _, w := range details {
			if strings.Contains(w, "of unset") {
				t.Errorf("warning %q: %q", summary, w)
			}
		}
	}

	// The inaccessible VM is named in each VM list, not silently missing.
	lost := q.warnings["Virtual machine "+lostVM+" left out"]
	for _, what := range []string{"The GPU setup of", "The PVRDMA adapters of", "The SR-IOV adapters of"} {
		if !slices.ContainsFunc(lost, func(w string) bool {
			return strings.HasPrefix(w, what+" virtual machine "+lostVM+" ") && strings.Contains(w, "connection state: inaccessible)") &&
				strings.Contains(w, "make it accessible in vCenter")
		}) {
			t.Errorf("no warning %q... about %s; warnings: %q", what, lostVM, lost)
		}
	}
	if !slices.ContainsFunc(q.results, func(r queryResult) bool { return r.display == awkwardSwitch }) {
		t.Errorf("no switch listed as %q: %+v", awkwardSwitch, q.results)
	}

	d.run("query", "-generate-config-out=adopted.tf")
	generated := d.read("adopted.tf")
	for _, name := range []string{awkwardSwitch, awkwardPortGroup} {
		if !regexp.MustCompile(`\bname\s+=\s+` + regexp.QuoteMeta(fmt.Sprintf("%q", name)) + `\n`).MatchString(generated) {
			t.Errorf("the generated configuration does not name %q as it is named:\n%s", name, generated)
		}
	}
	for _, pool := range []string{`hardware_label\s+=\s+"inference"\n`, `label\s+=\s+"team-b"\n`} {
		if !regexp.MustCompile(pool).MatchString(generated) {
			t.Errorf("the generated configuration does not adopt the pool %s:\n%s", pool, generated)
		}
	}
	if out, err := d.try("validate"); err != nil {
		t.Fatalf("terraform validate of the generated configuration: %v\n%s\n%s", err, out, generated)
	}
	if out, err := d.try("plan", "-out=tfplan"); err != nil {
		t.Fatalf("the plan of the generated configuration: %v\n%s\n%s", err, out, generated)
	}
	var p struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions      []string                   `json:"actions"`
				Before       map[string]any             `json:"before"`
				After        map[string]any             `json:"after"`
				AfterUnknown map[string]json.RawMessage `json:"after_unknown"`
				Importing    struct {
					Identity map[string]any `json:"identity"`
				} `json:"importing"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	acctest.Must(t, json.Unmarshal([]byte(d.run("show", "-json", "tfplan")), &p))
	// What each changed result's plan changes, by display name.
	changed := map[string][]string{}
	for _, rc := range p.ResourceChanges {
		r, ok := q.byIdentity(t, rc.Change.Importing.Identity)
		switch {
		case !ok:
			t.Errorf("%s is not an import of a query result: %v", rc.Address, rc.Change.Importing.Identity)
			continue
		case slices.Equal(rc.Change.Actions, []string{"no-op"}):
			continue
		case !slices.Equal(rc.Change.Actions, []string{"update"}):
			t.Errorf("%s (%s) plans %v", rc.Address, r.display, rc.Change.Actions)
			continue
		}
		var attrs []string
		for k := range rc.Change.Before {
			if !reflect.DeepEqual(rc.Change.Before[k], rc.Change.After[k]) || string(rc.Change.AfterUnknown[k]) == "true" {
				attrs = append(attrs, k)
			}
		}
		sort.Strings(attrs)
		changed[r.display] = attrs
		if len(q.warnings[r.display]) == 0 {
			t.Errorf("%s (%s) plans a change of %v that the query did not announce", rc.Address, r.display, attrs)
		}
	}

	// Each change, what it changes, and the reason the query gave.
	vmSetup := []string{"firmware", "memory_reservation_locked_to_max", "mmio_size_gb", "use_64bit_mmio"}
	type want struct {
		attrs  []string
		reason string
	}
	wants := map[string]want{
		vcsimlab.HandBuiltTeamedSwitch: {[]string{"host", "port_group", "port_group_id", "port_group_key"}, "PVRDMA supports no NIC teaming"},
		"hpc-node-1:": {
			[]string{"mmio_size_gb"},
			fmt.Sprintf("has an MMIO window of %d GB for 80 GB of GPU memory: too small to boot", vcsimlab.HandBuiltSmallWindow),
		},
		biosGuestVM + ":": {append([]string{"allow_firmware_change"}, vmSetup...), "has BIOS firmware and a guest OS (Ubuntu Linux (64-bit)). GPU " +
			"passthrough needs EFI, so the generated configuration sets allow_firmware_change = true and its plan switches the VM to EFI: a " +
			"guest installed under BIOS does not boot after that. Unless this guest boots under EFI, set allow_firmware_change = false"},
		pfOnlyVM + ":": {vmSetup, "has passthrough devices but no GPU, and no MMIO window (pciPassthru.64bitMMIOSizeGB is not set). " +
			"vspherehpc_vm_gpu_mmio sets a window on every VM it manages, and with no GPU to size it from it takes mmio_size_gb: the " +
			"generated configuration gives 64 GB"},
		vfWindowVM + ":": {[]string{"memory_reservation_locked_to_max"}, "the plan of the generated configuration reserves all its guest memory"},
		keysOnlyVM + ":": {[]string{"firmware", "memory_reservation_locked_to_max", "mmio_size_gb"}, "has no passthrough device, and no MMIO " +
			"window (pciPassthru.64bitMMIOSizeGB is not set)"},
		// The pool is adopted (label = "team-b"): the GPU stays.
		labelledVM + ":":    {vmSetup, "no MMIO window (pciPassthru.64bitMMIOSizeGB is not set) for 80 GB of GPU memory"},
		dynamicPairVM + ":": {vmSetup, "no MMIO window (pciPassthru.64bitMMIOSizeGB is not set) for 160 GB of GPU memory"},
	}
	if !needReboot {
		sriov := []string{"active_virtual_functions", "reboot_required", "virtual_function_ids"}
		wants[hosts[0]+" "+vcsimlab.HandBuiltSRIOVPF] = want{sriov, "applies it now (active_virtual_functions 4 -> 6)"}
		wants[hosts[2]+" "+awkwardIBPF] = want{sriov, "applies it now (active_virtual_functions 2 -> 4)"}
	}
	for prefix, w := range wants {
		var display string
		for got := range changed {
			if strings.HasPrefix(got, prefix) {
				display = got
			}
		}
		if display == "" {
			t.Errorf("no change of %s planned; the changes: %v", prefix, changed)
			continue
		}
		slices.Sort(w.attrs)
		if !slices.Equal(changed[display], w.attrs) {
			t.Errorf("the plan changes %v of %s, want %v", changed[display], display, w.attrs)
		}
		if !slices.ContainsFunc(q.warnings[display], func(s string) bool { return acctest.Wording(w.reason).MatchString(s) }) {
			t.Errorf("the query's warnings on %s do not say %q: %q", display, w.reason, q.warnings[display])
		}
		delete(changed, display)
	}
	if len(changed) > 0 {
		t.Errorf("unexpected changes: %v", changed)
	}
	if t.Failed() {
		t.Fatalf("the generated configuration:\n%s", generated)
	}

	d.run("apply", "-auto-approve", "tfplan")
	if again := d.plan(); len(again) != 0 {
		t.Errorf("plan after adopting: %+v, want no changes", again)
	}
}
