// Command vcsimlab runs the simulated vSphere lab of internal/vcsimlab on
// 127.0.0.1 until it gets SIGINT or SIGTERM, for the demo and for poking at
// the lab with govc.
//
// Once the lab is ready it prints shell export lines (VSPHERE_SERVER,
// VSPHERE_USER, VSPHERE_PASSWORD, VSPHERE_CA_FILE, the lab's inventory names
// and GOVC_* equivalents) to stdout and, with -env-file, writes them to that
// file atomically, so a script can wait for the file to appear and source
// it. The file is removed on exit. Logs go to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report := make(chan os.Signal, 1)
	signal.Notify(report, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP)
	if err := run(ctx, os.Args[1:], report, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// run serves a lab until ctx ends. SIGUSR1 on report prints the SOAP calls
// clients made since the previous one, so a script can count what one
// terraform command costs. SIGUSR2 makes the out-of-band changes of the
// demo's drift story (see drift). SIGHUP reboots every host, as an
// administrator does to apply pending passthrough and SR-IOV changes.
func run(ctx context.Context, args []string, report <-chan os.Signal, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vcsimlab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8989", "address to serve the vSphere API on")
	hosts := fs.Int("hosts", 4, "hosts in the cluster")
	vms := fs.Int("vms", 3, `"modern" VMs (hpc-node-N)`)
	username := fs.String("username", "administrator@vsphere.local", "user name")
	password := fs.String("password", "", "password (default: random)")
	envFile := fs.String("env-file", "", "write the export lines to this file once the lab is ready")
	driftSwitch := fs.String("drift-switch", "pvrdma-dvs", "the distributed switch whose MTU SIGUSR2 lowers to 1500")
	needReboot := fs.Bool("hosts-need-reboot", false, "hosts apply passthrough and SR-IOV changes only when rebooted (SIGHUP)")
	latency := fs.Duration("latency", 0, "added to every call, as a real vCenter's round trip (e.g. 20ms)")
	var dgxHosts hostIndexes
	fs.Var(&dgxHosts, "dgx-hosts", "hosts, by index from 0 and comma-separated, built as an NVIDIA DGX H100: eight H100s, each under one PCIe switch "+
		"with its ConnectX-7 card, on two NUMA nodes")
	rebootTime := fs.Duration("reboot-time", 0, "how long a host rebooted through the API (RebootHost_Task) is away (default 300ms)")
	handBuilt := fs.Bool(
		"hand-built",
		false,
		"start with the lab an administrator built by hand (switches, host settings, SR-IOV, VMs with PVRDMA adapters and GPUs), "+
			"for adopting it with terraform query",
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := log.New(stderr, "vcsimlab: ", log.LstdFlags)

	lab, err := vcsimlab.Start(ctx, vcsimlab.Options{
		Hosts:    *hosts,
		VMs:      *vms,
		Listen:   *listen,
		Username: *username,
		Password: *password,

		HostsNeedReboot: *needReboot,
		DGXHosts:        dgxHosts,
		Latency:         *latency,
		RebootTime:      *rebootTime,
	})
	if err != nil {
		return err
	}
	defer lab.Close()
	if *handBuilt {
		if err := lab.BuildByHand(ctx); err != nil {
			return err
		}
	}

	env := exports(lab)
	if *envFile != "" {
		if err := writeAtomic(*envFile, env); err != nil {
			return err
		}
		defer os.Remove(*envFile)
	}
	if _, err := io.WriteString(stdout, env); err != nil {
		return err
	}
	logger.Printf(
		"serving %s; SIGUSR1 prints the SOAP calls made since the last SIGUSR1, SIGUSR2 drifts the lab, SIGHUP reboots the hosts; "+
			"stop with SIGINT or SIGTERM",
		lab.URL,
	)
	for {
		select {
		case <-ctx.Done():
			logger.Print("stopping")
			return nil
		case sig := <-report:
			switch sig {
			case syscall.SIGUSR2:
				logger.Print(drift(ctx, lab, *driftSwitch))
				continue
			case syscall.SIGHUP:
				logger.Print(reboot(ctx, lab))
				continue
			}
			logger.Print(callReport(lab.Calls(), lab.AnswerTimes()))
			lab.ResetCalls()
		}
	}
}

// drift changes what an administrator might change in the vSphere Client
// behind Terraform's back: the switch's MTU down to 1500, and the pvrdma
// firewall ruleset of the first host disabled.
func drift(ctx context.Context, lab *vcsimlab.Lab, switchName string) string {
	host := lab.HostNames()[0]
	if err := lab.SetSwitchMTU(ctx, switchName, 1500); err != nil {
		return fmt.Sprintf("drift failed: switch %s: %v", switchName, err)
	}
	if err := lab.SetRuleset(ctx, host, "pvrdma", false); err != nil {
		return fmt.Sprintf("drift failed: host %s: %v", host, err)
	}
	return fmt.Sprintf("drift: switch %s MTU set to 1500; host %s pvrdma firewall ruleset disabled", switchName, host)
}

// reboot reboots every host of the lab, which applies the passthrough and
// SR-IOV changes waiting for it.
func reboot(ctx context.Context, lab *vcsimlab.Lab) string {
	for _, h := range lab.HostNames() {
		if err := lab.RebootHost(ctx, h); err != nil {
			return fmt.Sprintf("reboot failed: host %s: %v", h, err)
		}
	}
	return "reboot: hosts " + strings.Join(lab.HostNames(), ", ") + " rebooted"
}

// callReport is "N SOAP calls: Login=1 RetrievePropertiesEx=12 ...;
// longest answers: 152 ms, 55 ms, 53 ms, 51 ms": the calls by method, and
// the four longest answer times (longest first), to tell the round trips of
// a command that makes a few calls from its own time.
func callReport(calls map[string]int, answers []time.Duration) string {
	methods := make([]string, 0, len(calls))
	total := 0
	for m, n := range calls {
		methods = append(methods, fmt.Sprintf("%s=%d", m, n))
		total += n
	}
	sort.Strings(methods)
	report := fmt.Sprintf("%d SOAP calls: %s", total, strings.Join(methods, " "))
	if len(answers) > 0 {
		longest := make([]string, 0, 4)
		for _, d := range answers[:min(4, len(answers))] {
			longest = append(longest, fmt.Sprintf("%d ms", d.Milliseconds()))
		}
		report += "; longest answers: " + strings.Join(longest, ", ")
	}
	return report
}

// exports are shell export lines for the vSphere provider, this provider's
// lab-specific tests, its acceptance suite's external runs and govc.
func exports(lab *vcsimlab.Lab) string {
	var nodes []string // the "modern" VMs, the ones an external run may use
	for _, vm := range lab.VMNames() {
		if strings.HasPrefix(vm, "hpc-node-") {
			nodes = append(nodes, vm)
		}
	}
	vars := [][2]string{
		{"VSPHERE_SERVER", lab.URL.Host},
		{"VSPHERE_USER", lab.Username},
		{"VSPHERE_PASSWORD", lab.Password},
		{"VSPHERE_CA_FILE", lab.CertFile},
		{"VSPHERE_LAB_DATACENTER", lab.DatacenterName()},
		{"VSPHERE_LAB_CLUSTER", lab.ClusterName()},
		{"VSPHERE_LAB_HOSTS", strings.Join(lab.HostNames(), ",")},
		// make testacc-external runs against the lab as against a vCenter
		// that lends it these.
		{"VSPHERE_TEST_DATACENTER", lab.DatacenterName()},
		{"VSPHERE_TEST_CLUSTER", lab.ClusterName()},
		{"VSPHERE_TEST_HOSTS", strings.Join(lab.HostNames(), ",")},
		{"VSPHERE_TEST_VMS", strings.Join(nodes, ",")},
		{"VSPHERE_TEST_RDMA_NICS", strings.Join(lab.RDMANICs(), ",")},
		{"VSPHERE_TEST_VMKNIC", lab.Vmknic()},
		{"VSPHERE_TEST_GPUS", strings.Join(lab.GPUs(), ",")},
		{"GOVC_URL", lab.URL.String()},
		{"GOVC_USERNAME", lab.Username},
		{"GOVC_PASSWORD", lab.Password},
		{"GOVC_TLS_CA_CERTS", lab.CertFile},
	}
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", v[0], quote(v[1]))
	}
	return b.String()
}

// quote makes s a single shell word.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeAtomic writes the file under a temporary name and renames it, so a
// reader never sees it half written. It holds a password: mode 0600.
func writeAtomic(path, content string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".vcsimlab-env-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// hostIndexes is a flag of host indexes, "2" or "0,2".
type hostIndexes []int

func (h *hostIndexes) String() string {
	parts := make([]string, 0, len(*h))
	for _, i := range *h {
		parts = append(parts, strconv.Itoa(i))
	}
	return strings.Join(parts, ",")
}

func (h *hostIndexes) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return fmt.Errorf("%q is not a host index", part)
		}
		*h = append(*h, i)
	}
	return nil
}
