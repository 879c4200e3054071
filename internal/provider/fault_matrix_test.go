package provider

// Faults at every call (issue 37): each resource's create, update and
// delete runs once cleanly, with the lab logging the calls it makes to
// vCenter; then, for each of those calls in turn, the operation runs again
// with that one call's connection lost, before vCenter runs it or (for a
// call that changes something) after, its answer lost. After each, the
// resource must be where vCenter is: the next plain apply converges to an
// empty plan (an object made but not recorded would be made twice, or
// refused as taken), and destroy leaves the lab as it found it (a lost
// record of what destroy restores would show). The test logs the matrix,
// operation × call × fault, with what the faulted apply said.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// faultSubject is a resource taken through its life under faults: created
// with config[0], updated to config[1], destroyed. base is applied first and
// never faulted (the switches an adapter needs). What the resource leaves
// by design when destroyed (an adapter's memory reservation, a GPU VM's
// EFI) is set by hand first, so that destroy is seen to leave the lab as
// it found it.
type faultSubject struct {
	address string
	base    string
	config  [2]string
	// login: the create's faults start at its first call, the login's
	// included (one subject stands for every operation's login).
	login bool
}

// faultedCall is one call of an operation's clean run: the occurrence-th
// call of method.
type faultedCall struct {
	method     string
	occurrence int
}

func (c faultedCall) String() string { return fmt.Sprintf("%s #%d", c.method, c.occurrence) }

// faultCalls are the calls of an operation's log that a fault is tried at:
// the first call after the session's login (a fault before anything
// changes, standing for the reads that plan the apply again: their loss
// fails the apply with nothing done), then every call from the first that
// changes something on. With login, the login's calls too (the same in
// every operation: one subject stands for all). Never the session's upkeep
// (the keep-alive's CurrentTime, the logout the plugin hands over at its
// exit).
func faultCalls(log []string, login bool) []faultedCall {
	seen := map[string]int{}
	var out []faultedCall
	loggedIn, first, changed := false, false, false
	for _, m := range log {
		if m == "CurrentTime" || m == "Logout" || m == "" {
			continue
		}
		seen[m]++
		var try bool
		switch {
		case !loggedIn:
			try = login
		case !first:
			try, first = true, true
		default:
			changed = changed || changes(m)
			try = changed
		}
		if try {
			out = append(out, faultedCall{m, seen[m]})
		}
		loggedIn = loggedIn || m == "Login"
	}
	return out
}

// changes reports whether a call of method changes something in vCenter: a
// lost answer of such a call leaves the change made, unknown to the client.
func changes(method string) bool {
	for _, read := range []string{"Retrieve", "ContinueRetrieve", "Query", "Find", "Fetch", "WaitFor", "CheckForUpdates",
		"CreateFilter", "DestroyPropertyFilter", "CreatePropertyCollector", "DestroyPropertyCollector", "CancelWaitForUpdates",
		"CurrentTime", "RefreshFirewall", "CreateContainerView", "DestroyView", "SessionIsActive"} {
		if strings.HasPrefix(method, read) {
			return false
		}
	}
	return true
}

// faultRow is one case of the matrix.
type faultRow struct {
	op       string
	call     faultedCall
	answered bool
	lost     bool   // the fault hit: the call came in this run
	said     string // what the faulted apply said: "ok", or its first error
	problem  string // what went wrong after, "" when nothing did
}

// faultRun drives one subject through Terraform in its own working
// directory.
type faultRun struct {
	t        *testing.T
	lab      *vcsimlab.Lab
	d        *tfDir
	subject  faultSubject
	original []string
}

// files is the working directory's configuration: base and the subject as
// config i (-1: none).
func (r *faultRun) use(i int) {
	main := acctest.RequiredProviders + r.subject.base
	if i >= 0 {
		main += r.subject.config[i]
	}
	r.d.write(map[string]string{"main.tf": main})
}

// faulted plans with planArgs, then applies that plan with the fault armed,
// and returns what the apply said and whether the fault hit.
func (r *faultRun) faulted(c *faultedCall, answered bool, planArgs ...string) (said string, lost bool, log []string) {
	r.t.Helper()
	r.d.run(append([]string{"plan", "-out=tfplan"}, planArgs...)...)
	r.lab.ResetCalls()
	disarm := func() bool { return false }
	if c != nil {
		disarm = r.lab.LoseConnection(c.method, c.occurrence, answered)
	}
	out, err := r.d.try("apply", "tfplan")
	lost = disarm()
	log = r.lab.CallLog()
	said = "ok"
	if err != nil {
		said = firstError(out)
	}
	return said, lost, log
}

// firstError is the first error diagnostic of Terraform's output, on one
// line.
func firstError(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "Error: ") {
			var b []string
			for _, more := range lines[i:min(i+6, len(lines))] {
				if more = strings.TrimSpace(more); more != "" {
					b = append(b, more)
				}
			}
			return strings.Join(b, " ")
		}
	}
	return strings.Join(strings.Fields(out), " ")
}

// converges applies config i and checks that a plan after it is empty.
func (r *faultRun) converges(i int) string {
	r.use(i)
	if out, err := r.d.try("apply", "-auto-approve"); err != nil {
		return "the next apply failed: " + firstError(out)
	}
	if out, err := r.d.try("plan", "-detailed-exitcode"); err != nil {
		return "the plan after the next apply is not empty: " + strings.Join(strings.Fields(out), " ")
	}
	return ""
}

// restored destroys the subject and checks the lab is as it was.
func (r *faultRun) restored() string {
	if out, err := r.d.try("destroy", "-auto-approve", "-target="+r.subject.address); err != nil {
		return "destroy failed: " + firstError(out)
	}
	return r.sameLab()
}

// sameLab compares the lab with how the run found it.
func (r *faultRun) sameLab() string {
	now, err := r.lab.Footprint(context.Background())
	if err != nil {
		return "reading the lab: " + err.Error()
	}
	var lost, left []string
	for _, f := range r.original {
		if !slices.Contains(now, f) {
			lost = append(lost, f)
		}
	}
	for _, f := range now {
		if !slices.Contains(r.original, f) {
			left = append(left, f)
		}
	}
	if len(lost)+len(left) == 0 {
		return ""
	}
	return fmt.Sprintf("the lab is not as it was: lost %q, left %q", lost, left)
}

// newFaultRun starts a lab, prepares it and its subject, and applies the
// subject's base.
func newFaultRun(t *testing.T, opts vcsimlab.Options, prepare func(*vcsimlab.Lab) faultSubject) *faultRun {
	t.Helper()
	lab := startLab(t, opts)
	simulatedOnly(t, lab, "loses connections to the lab")
	r := &faultRun{t: t, lab: lab, subject: prepare(lab), d: newTFDir(t, lab, nil)}
	r.use(-1)
	if r.subject.base != "" {
		r.d.run("apply", "-auto-approve")
	}
	original, err := lab.Footprint(context.Background())
	acctest.Must(t, err)
	r.original = original
	return r
}

// runFaultMatrix takes a subject through its clean life, then through each
// operation with each of its calls lost in turn. A case that leaves the lab
// changed is reported, and the cases after it run on a new lab.
func runFaultMatrix(t *testing.T, opts vcsimlab.Options, prepare func(*vcsimlab.Lab) faultSubject) {
	t.Helper()
	if os.Getenv("VSPHEREHPC_TEST_FAULTS") == "" {
		t.Skip("the fault matrix runs in make test-faults (VSPHEREHPC_TEST_FAULTS=1): each subject takes minutes, too long for make test")
	}
	r := newFaultRun(t, opts, prepare)
	address := r.subject.address

	// The clean life, whose logs give the calls to fault.
	r.use(0)
	said, _, createLog := r.faulted(nil, false)
	r.use(1)
	said2, _, updateLog := r.faulted(nil, false)
	said3, _, deleteLog := r.faulted(nil, false, "-destroy", "-target="+address)
	if said+said2+said3 != "okokok" {
		t.Fatalf("the clean life of %s: create %s, update %s, destroy %s", address, said, said2, said3)
	}
	if problem := r.sameLab(); problem != "" {
		t.Fatalf("the clean life of %s: %s", address, problem)
	}

	var rows []faultRow
	run := func(op string, log []string, login bool, before func() string, faulted func(*faultedCall, bool) (string, bool), after func() string) {
		for _, c := range faultCalls(log, login) {
			for _, answered := range []bool{false, true} {
				if answered && !changes(c.method) {
					continue
				}
				row := faultRow{op: op, call: c, answered: answered}
				if row.problem = before(); row.problem != "" {
					row.problem = "before the " + op + ": " + row.problem
				} else {
					row.said, row.lost = faulted(&row.call, answered)
					row.problem = after()
				}
				rows = append(rows, row)
				if row.problem != "" {
					t.Errorf("%s of %s with %s lost (answered: %t): the apply said %q; then %s", op, address, c, answered, row.said, row.problem)
					r = newFaultRun(t, opts, prepare)
				}
			}
		}
	}
	faultedApply := func(planArgs ...string) func(*faultedCall, bool) (string, bool) {
		return func(c *faultedCall, answered bool) (string, bool) {
			said, lost, _ := r.faulted(c, answered, planArgs...)
			return said, lost
		}
	}
	run("create", createLog, r.subject.login, func() string { r.use(0); return "" }, faultedApply(), func() string {
		if problem := r.converges(0); problem != "" {
			return problem
		}
		return r.restored()
	})
	run("update", updateLog, false, func() string {
		problem := r.converges(0)
		r.use(1)
		return problem
	}, faultedApply(), func() string {
		if problem := r.converges(1); problem != "" {
			return problem
		}
		return r.restored()
	})
	run(
		"destroy",
		deleteLog,
		false,
		func() string { return r.converges(1) },
		faultedApply("-destroy", "-target="+address),
		func() string { return r.restored() },
	)
	reportFaultMatrix(t, address, rows)
}

// reportFaultMatrix logs the rows, and appends them to the file
// VSPHEREHPC_FAULT_MATRIX names, if any.
func reportFaultMatrix(t *testing.T, address string, rows []faultRow) {
	var b strings.Builder
	for _, row := range rows {
		fault := "lost on its way"
		if row.answered {
			fault = "answer lost"
		}
		if !row.lost {
			fault += " (not reached)"
		}
		verdict := "converged, restored"
		if row.problem != "" {
			verdict = "FAILED: " + row.problem
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", address, row.op, row.call, fault, row.said, verdict)
	}
	t.Logf("fault matrix of %s:\n%s", address, b.String())
	if path := os.Getenv("VSPHEREHPC_FAULT_MATRIX"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		acctest.Must(t, err)
		defer func() { acctest.Must(t, f.Close()) }()
		_, err = f.WriteString(b.String())
		acctest.Must(t, err)
	}
}

func TestAccFaults_vmPVRDMANIC(t *testing.T) {
	t.Parallel()
	runFaultMatrix(t, vcsimlab.Options{}, func(lab *vcsimlab.Lab) faultSubject {
		vm := lab.VMNames()[0]
		acctest.Must(t, lab.SetVMMemoryReservationLocked(context.Background(), vm, true))
		uuid := lab.VMUUID(vm)
		return faultSubject{
			address: nicAddr,
			base:    strings.TrimPrefix(rdmaDVSTwoSwitchesConfig(lab), acctest.ProviderConfig(lab)),
			config: [2]string{
				nicOn(uuid, "vspherehpc_rdma_dvs.a.port_group_id", ""),
				nicOn(uuid, "vspherehpc_rdma_dvs.b.port_group_id", "  device_protocol = \"rocev1\"\n"),
			},
		}
	})
}

// without drops the provider block of a test configuration: the fault runs
// name the lab through the environment, as a user's CI does.
func without(config string, lab *vcsimlab.Lab) string {
	return strings.Replace(config, acctest.ProviderConfig(lab), "", 1)
}

func TestAccFaults_rdmaDVS(t *testing.T) {
	t.Parallel()
	runFaultMatrix(t, vcsimlab.Options{}, func(lab *vcsimlab.Lab) faultSubject {
		hosts := lab.HostNames()
		nic := lab.RDMANICs()[0]
		return faultSubject{
			address: dvsAddr,
			config: [2]string{
				without(rdmaDVSConfig(lab, "rdma", map[string]string{hosts[0]: nic}, ""), lab),
				without(rdmaDVSConfig(lab, "rdma", map[string]string{hosts[0]: nic, hosts[1]: nic}, "  mtu = 4000\n"), lab),
			},
		}
	})
}

func TestAccFaults_hostPVRDMASettings(t *testing.T) {
	t.Parallel()
	runFaultMatrix(t, vcsimlab.Options{}, func(lab *vcsimlab.Lab) faultSubject {
		host := lab.HostNames()[0]
		return faultSubject{
			address: hostSettings,
			login:   true,
			config: [2]string{
				without(hostPVRDMASettingsConfig(lab, host, ""), lab),
				without(hostPVRDMASettingsConfig(lab, host, `  firewall_allowed_ips = ["192.0.2.0/24"]`), lab),
			},
		}
	})
}

func TestAccFaults_vmSRIOVNIC(t *testing.T) {
	t.Parallel()
	runFaultMatrix(t, vcsimlab.Options{}, func(lab *vcsimlab.Lab) faultSubject {
		vm := lab.VMNames()[0]
		acctest.Must(t, lab.SetVMMemoryReservationLocked(context.Background(), vm, true))
		base := without(hostSRIOVVmnic4Config(lab, vm), lab)
		nic := func(pf string) string {
			return strings.TrimPrefix(without(vmSRIOVNICConfig(lab, vm, "a", pf, false), lab), base)
		}
		return faultSubject{address: sriovNICAddr, base: base, config: [2]string{nic("automatic"), nic(vmnic4PF)}}
	})
}

func TestAccFaults_vmGPUMMIO(t *testing.T) {
	t.Parallel()
	runFaultMatrix(t, vcsimlab.Options{}, func(lab *vcsimlab.Lab) faultSubject {
		ctx := context.Background()
		vm := lab.VMNames()[0]
		// What destroy leaves by design: EFI, the memory reservation.
		acctest.Must(t, lab.SetVMFirmware(ctx, vm, "efi"))
		acctest.Must(t, lab.SetVMMemoryReservationLocked(ctx, vm, true))
		uuid := lab.VMUUID(vm)
		return faultSubject{
			address: gpuAddr,
			config: [2]string{
				without(vmGPUMMIOConfig(lab, uuid, gpuBlock(lab.GPUs()[0])), lab),
				without(vmGPUMMIOConfig(lab, uuid, twoGPUs(lab)+"  peer_to_peer = true\n  numa_node_affinity = [0]\n"), lab),
			},
		}
	})
}

// The host device resources run twice: on hosts that apply a change at
// once, and on hosts that apply it at their next reboot, which the apply
// does (reboot_allowed): maintenance mode, the reboot, the wait, leaving
// maintenance mode, each call lost in turn.
func onBothKindsOfHost(t *testing.T, subject func(lab *vcsimlab.Lab, reboot bool) faultSubject) {
	t.Helper()
	for _, reboot := range []bool{false, true} {
		t.Run(fmt.Sprintf("reboot=%t", reboot), func(t *testing.T) {
			t.Parallel()
			runFaultMatrix(t, vcsimlab.Options{HostsNeedReboot: reboot}, func(lab *vcsimlab.Lab) faultSubject { return subject(lab, reboot) })
		})
	}
}

func TestAccFaults_hostPCIPassthrough(t *testing.T) {
	t.Parallel()
	onBothKindsOfHost(t, func(lab *vcsimlab.Lab, reboot bool) faultSubject {
		host := lab.HostNames()[0]
		extra := ""
		if reboot {
			extra = "  reboot_allowed = true\n"
		}
		return faultSubject{
			address: passthroughAddr,
			config: [2]string{
				without(hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n%s", a100, extra)), lab),
				without(hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q, %q]\n  hardware_label = \"pool\"\n%s", a100, "0000:87:00.0",
					extra)), lab),
			},
		}
	})
}

func TestAccFaults_hostSRIOV(t *testing.T) {
	t.Parallel()
	onBothKindsOfHost(t, func(lab *vcsimlab.Lab, reboot bool) faultSubject {
		host := lab.HostNames()[0]
		config := func(vfs int) string {
			c := without(hostSRIOVConfig(lab, host, ibPF, vfs), lab)
			if reboot {
				c = strings.Replace(c, "num_virtual_functions", "reboot_allowed        = true\n  num_virtual_functions", 1)
			}
			return c
		}
		return faultSubject{address: "vspherehpc_host_sriov.s", config: [2]string{config(4), config(8)}}
	})
}

func TestAccFaults_hostGraphics(t *testing.T) {
	t.Parallel()
	runFaultMatrix(t, vcsimlab.Options{}, func(lab *vcsimlab.Lab) faultSubject {
		host := lab.HostNames()[0]
		return faultSubject{address: graphicsAddr, config: [2]string{
			without(hostGraphicsConfig(lab, host, "  reboot_allowed = true\n"), lab),
			without(hostGraphicsConfig(lab, host, fmt.Sprintf("  reboot_allowed = true\n  gpu_graphics_types = { %q = \"shared\" }\n", a100)), lab),
		}}
	})
}
