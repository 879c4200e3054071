package provider

// The acceptance suite against an external vCenter (make
// testacc-external). With VSPHERE_TEST_EXTERNAL=1, every test's lab is the
// vCenter the environment names instead of a simulator of its own; tests
// run one at a time, create what they create under a name prefix unique to
// the run, and the run fails when the vCenter's footprint (see
// vcsimlab.Lab.Footprint) differs after it from before. Tests that need what
// only the simulator can do say so with simulatedOnly and skip.

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// externalEnv names the variables an external run reads, with what each
// holds; README.md ("Testing against a vCenter") documents them.
var externalEnv = []struct{ name, what string }{
	{"VSPHERE_SERVER", "vCenter's host name or address"},
	{"VSPHERE_USER", "a user allowed to change what the variables below name"},
	{"VSPHERE_PASSWORD", "its password"},
	{"VSPHERE_CA_FILE", "a PEM file of the CA that signed vCenter's certificate (or VSPHERE_ALLOW_UNVERIFIED_SSL=true)"},
	{"VSPHERE_TEST_DATACENTER", "the datacenter"},
	{"VSPHERE_TEST_CLUSTER", "the cluster of the hosts"},
	{"VSPHERE_TEST_HOSTS", "comma-separated host names (3 for every test to run)"},
	{"VSPHERE_TEST_VMS", "comma-separated names of powered-off VMs, hardware version 14 to 19, on those hosts (2 for every test to run)"},
	{"VSPHERE_TEST_RDMA_NICS", "two comma-separated vmnics with RDMA that no switch uses, the same on every host"},
	{"VSPHERE_TEST_VMKNIC", "the vmknic each host uses for PVRDMA"},
	{"VSPHERE_TEST_GPUS", "comma-separated PCI ids of two GPUs active for passthrough on every host"},
}

// external is the target of an external run, read once; nil in a normal
// run.
var external = sync.OnceValues(func() (*vcsimlab.Target, error) {
	if os.Getenv("VSPHERE_TEST_EXTERNAL") == "" {
		return nil, nil
	}
	var missing []string
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" && name != "VSPHERE_CA_FILE" {
			missing = append(missing, name)
		}
		return v
	}
	list := func(name string) []string {
		var out []string
		for _, s := range strings.Split(get(name), ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	insecure, _ := strconv.ParseBool(os.Getenv("VSPHERE_ALLOW_UNVERIFIED_SSL"))
	t := &vcsimlab.Target{
		Server: get("VSPHERE_SERVER"), Username: get("VSPHERE_USER"), Password: get("VSPHERE_PASSWORD"),
		CAFile: get("VSPHERE_CA_FILE"), Insecure: insecure,
		Datacenter: get("VSPHERE_TEST_DATACENTER"), Cluster: get("VSPHERE_TEST_CLUSTER"),
		Hosts: list("VSPHERE_TEST_HOSTS"), VMs: list("VSPHERE_TEST_VMS"),
		RDMANICs: list("VSPHERE_TEST_RDMA_NICS"), Vmknic: get("VSPHERE_TEST_VMKNIC"), GPUs: list("VSPHERE_TEST_GPUS"),
	}
	if t.CAFile == "" && !t.Insecure {
		missing = append(missing, "VSPHERE_CA_FILE (or VSPHERE_ALLOW_UNVERIFIED_SSL=true)")
	}
	if len(missing) > 0 {
		var help strings.Builder
		for _, v := range externalEnv {
			fmt.Fprintf(&help, "\n  %-28s %s", v.name, v.what)
		}
		return nil, fmt.Errorf("VSPHERE_TEST_EXTERNAL is set, but not %s. An external run reads:%s", strings.Join(missing, ", "), help.String())
	}
	if len(t.RDMANICs) < 2 || len(t.GPUs) < 2 {
		return nil, fmt.Errorf("VSPHERE_TEST_RDMA_NICS and VSPHERE_TEST_GPUS each name two")
	}
	// Tests set the provider's arguments themselves; the provider's
	// environment variables would change what tests of the environment see.
	for _, name := range []string{"VSPHERE_SERVER", "VSPHERE_USER", "VSPHERE_PASSWORD", "VSPHERE_CA_FILE", "VSPHERE_ALLOW_UNVERIFIED_SSL"} {
		_ = os.Unsetenv(name)
	}
	return t, nil
})

// runPrefix starts the name of everything an external run creates.
var runPrefix = sync.OnceValue(func() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "tfacc-" + hex.EncodeToString(b) + "-"
})

// testName is the name a test gives an object it creates: as written in a
// simulated lab, which is the test's alone, and under the run's prefix on an
// external vCenter.
func testName(name string) string {
	if t, _ := external(); t == nil {
		return name
	}
	return runPrefix() + name
}

// connectExternal is startLab on an external run: the target, limited to
// the hosts and VMs opts asks for (the simulator's defaults when zero), or
// a skip when it has fewer.
func connectExternal(t *testing.T, target vcsimlab.Target, opts vcsimlab.Options) *vcsimlab.Lab {
	t.Helper()
	hosts, vms := cmp.Or(opts.Hosts, 3), cmp.Or(opts.VMs, 2)
	switch {
	case opts.HostsNeedReboot:
		simulatedOnlyRun(t, "it needs hosts that apply passthrough changes only when rebooted, and reboots them")
	case len(opts.HostVersions) > 0:
		simulatedOnlyRun(t, "it needs hosts of older ESXi versions")
	case opts.NewerGPUHost:
		simulatedOnlyRun(t, "it needs a host whose GPUs the others do not have")
	case len(opts.DGXHosts) > 0:
		simulatedOnlyRun(t, "it needs a host with the PCIe tree of a DGX H100")
	case len(target.Hosts) < hosts:
		t.Skipf("needs %d hosts; VSPHERE_TEST_HOSTS names %d", hosts, len(target.Hosts))
	case len(target.VMs) < vms:
		t.Skipf("needs %d VMs; VSPHERE_TEST_VMS names %d", vms, len(target.VMs))
	}
	target.Hosts, target.VMs = target.Hosts[:hosts], target.VMs[:vms]
	lab, err := vcsimlab.Connect(context.Background(), target)
	if err != nil {
		t.Fatalf("connecting to the external vCenter: %v", err)
	}
	t.Cleanup(func() {
		if used := lab.Unavailable(); len(used) > 0 {
			t.Errorf("the test uses %s, which only the simulated lab has: it must call simulatedOnly", strings.Join(slices.Compact(used), ", "))
		}
		lab.Close()
	})
	restoreVMs(t, lab)
	return lab
}

// simulatedOnly skips the test on an external vCenter, saying why it needs
// the simulator.
func simulatedOnly(t *testing.T, lab *vcsimlab.Lab, why string) {
	t.Helper()
	if !lab.Simulated() {
		simulatedOnlyRun(t, why)
	}
}

func simulatedOnlyRun(t *testing.T, why string) {
	t.Helper()
	t.Skip("needs the simulated lab: " + why)
}

// runExternal runs the tests of an external run, and fails it when the
// vCenter's footprint is not the same afterwards; in a normal run it just
// runs them.
func runExternal(m *testing.M) int {
	target, err := external()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if target == nil {
		return m.Run()
	}
	fmt.Fprintf(os.Stderr, "external run against %s, creating under the prefix %s\n", target.Server, runPrefix())
	footprint := func() ([]string, error) {
		lab, err := vcsimlab.Connect(context.Background(), *target)
		if err != nil {
			return nil, err
		}
		defer lab.Close()
		return lab.Footprint(context.Background())
	}
	before, err := footprint()
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading the vCenter before the run: %v\n", err)
		return 1
	}
	code := m.Run()
	after, err := footprint()
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading the vCenter after the run: %v\n", err)
		return 1
	}
	if left, changed := footprintDiff(before, after); len(left)+len(changed) > 0 {
		fmt.Fprintf(
			os.Stderr,
			"the run left the vCenter changed:\n  now:    %s\n  before: %s\n",
			strings.Join(left, "\n          "),
			strings.Join(changed, "\n          "),
		)
		return 1
	}
	fmt.Fprintf(os.Stderr, "the vCenter is as before the run (%d facts compared)\n", len(after))
	return code
}

// footprintDiff lists the facts only after has, and those only before has.
func footprintDiff(before, after []string) (added, removed []string) {
	for _, f := range after {
		if !slices.Contains(before, f) {
			added = append(added, f)
		}
	}
	for _, f := range before {
		if !slices.Contains(after, f) {
			removed = append(removed, f)
		}
	}
	return added, removed
}

// restoreVMs puts back, after a test on an external target, what tests
// change on its VMs and the provider leaves by design after destroy (EFI
// firmware, all memory reserved), or tests set by hand (passthrough
// extraConfig keys, power): the run must leave vCenter as it found it. A
// simulated lab is the test's own, and thrown away.
func restoreVMs(t *testing.T, lab *vcsimlab.Lab) {
	t.Helper()
	ctx := context.Background()
	type was struct {
		vm       *vsphere.VM
		settings vcsimlab.VMSettings
	}
	// A client per reading, as per Terraform command: one client's refresh
	// reads may be answered from what it first read (vsphere's prefetch.go).
	read := func(service *vsphere.Client, name string) (was, error) {
		v, err := service.VM(ctx, lab.VMUUID(name))
		if err != nil {
			return was{}, err
		}
		settings, err := lab.VMSettings(ctx, name)
		return was{v, settings}, err
	}
	before := map[string]was{}
	service := labClient(lab)
	for _, name := range lab.VMNames() {
		b, err := read(service, name)
		if err != nil {
			t.Fatalf("reading %s before the test: %v", name, err)
		}
		before[name] = b
	}
	_ = service.Logout(ctx)
	t.Cleanup(func() {
		service := labClient(lab)
		defer func() { _ = service.Logout(ctx) }()
		for name, b := range before {
			now, err := read(service, name)
			if err != nil {
				t.Errorf("reading %s after the test: %v", name, err)
				continue
			}
			restore := func(what string, err error) {
				if err != nil {
					t.Errorf("restoring the %s of %s: %v", what, name, err)
				}
			}
			if now.vm.PowerState != b.vm.PowerState && b.vm.PowerState == vsphere.PoweredOff {
				restore("power state", lab.PowerOffVM(ctx, name))
			}
			// The passthrough keys, as the run's footprint compares them;
			// an empty value removes a key.
			keys := slices.Concat(slices.Collect(maps.Keys(now.settings.ExtraConfig)), slices.Collect(maps.Keys(b.settings.ExtraConfig)))
			for _, key := range slices.Compact(slices.Sorted(slices.Values(keys))) {
				if strings.HasPrefix(strings.ToLower(key), "pcipassthru") && now.settings.ExtraConfig[key] != b.settings.ExtraConfig[key] {
					restore(key, lab.SetVMExtraConfig(ctx, name, key, b.settings.ExtraConfig[key]))
				}
			}
			if now.vm.Firmware != b.vm.Firmware {
				restore("firmware", lab.SetVMFirmware(ctx, name, b.vm.Firmware))
			}
			if now.vm.MemoryLockedToMax != b.vm.MemoryLockedToMax {
				restore("memory reservation", lab.SetVMMemoryReservationLocked(ctx, name, b.vm.MemoryLockedToMax))
			}
		}
	})
}
