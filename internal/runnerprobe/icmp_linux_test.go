package runnerprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mtu"
)

// The probe runs in a child process inside a network namespace: a client,
// a router and a target namespace, joined by veth pairs, with a smaller MTU
// on the router's far side. No packet leaves the namespaces.
//
//	client 10.200.1.2 (a0, 9000) -- r0 (9000) router r1 (7466) -- b0 (7466) 10.200.2.2 target

const helperEnv = "VSPHEREHPC_ICMP_HELPER_TARGET"

type helperResult struct {
	MTU    int
	Probes int
	Err    string
}

// TestICMPHelper is the child: it measures the path to the target named in
// its environment through PathMTUs, the package's entry point, and prints
// the result. It does nothing in a normal run.
func TestICMPHelper(t *testing.T) {
	target := os.Getenv(helperEnv)
	if target == "" {
		return
	}
	var out helperResult
	found, err := PathMTUs(context.Background(), []string{target},
		Options{Options: mtu.Options{Min: 1280, Max: 9000}, Timeout: 200 * time.Millisecond, Concurrency: 1})
	if err != nil {
		out.Err = err.Error()
	} else {
		out.MTU, out.Probes = found[0].MTU, found[0].Probes
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

type netnsLab struct {
	t      *testing.T
	prefix string
}

func (n netnsLab) run(args ...string) {
	n.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (n netnsLab) ns(name string) string { return n.prefix + name }

func (n netnsLab) in(ns string, args ...string) {
	n.t.Helper()
	n.run(append([]string{"ip", "netns", "exec", n.ns(ns)}, args...)...)
}

// sysctl sets a per-namespace kernel setting (no sysctl binary needed:
// it lives in /usr/sbin, which a CI PATH may lack).
func (n netnsLab) sysctl(ns, key, value string) {
	n.t.Helper()
	n.in(ns, "sh", "-c", fmt.Sprintf("echo %q > /proc/sys/%s", value, key))
}

// newNetnsLab builds the three namespaces. Where they cannot be made (not
// root, no ip command) it skips on a developer's machine but fails in CI
// (CI set), so the prober is never counted as tested when it was not.
func newNetnsLab(t *testing.T, farMTU int) netnsLab {
	cannot := t.Skipf
	if os.Getenv("CI") != "" {
		cannot = t.Fatalf
	}
	if os.Geteuid() != 0 {
		cannot("network namespaces need root")
	}
	for _, tool := range []string{"ip", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			cannot("the namespace test needs %s (iproute2, util-linux): %v", tool, err)
		}
	}
	n := netnsLab{t: t, prefix: fmt.Sprintf("vhpc%d-", os.Getpid()%100000)}
	for _, ns := range []string{"c", "r", "b"} {
		n.run("ip", "netns", "add", n.ns(ns))
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.ns(ns)).Run() })
	}
	n.run(
		"ip",
		"link",
		"add",
		n.ns("a0"),
		"netns",
		n.ns("c"),
		"mtu",
		"9000",
		"type",
		"veth",
		"peer",
		"name",
		n.ns("r0"),
		"netns",
		n.ns("r"),
		"mtu",
		"9000",
	)
	n.run(
		"ip",
		"link",
		"add",
		n.ns("r1"),
		"netns",
		n.ns("r"),
		"mtu",
		fmt.Sprint(farMTU),
		"type",
		"veth",
		"peer",
		"name",
		n.ns("b0"),
		"netns",
		n.ns("b"),
		"mtu",
		fmt.Sprint(farMTU),
	)
	n.in("c", "ip", "addr", "add", "10.200.1.2/24", "dev", n.ns("a0"))
	n.in("r", "ip", "addr", "add", "10.200.1.1/24", "dev", n.ns("r0"))
	n.in("r", "ip", "addr", "add", "10.200.2.1/24", "dev", n.ns("r1"))
	n.in("b", "ip", "addr", "add", "10.200.2.2/24", "dev", n.ns("b0"))
	for ns, links := range map[string][]string{"c": {"a0", "lo"}, "r": {"r0", "r1", "lo"}, "b": {"b0", "lo"}} {
		for _, l := range links {
			if l != "lo" {
				l = n.ns(l)
			}
			n.in(ns, "ip", "link", "set", l, "up")
		}
	}
	n.in("c", "ip", "route", "add", "default", "via", "10.200.1.1")
	n.in("b", "ip", "route", "add", "default", "via", "10.200.2.1")
	n.sysctl("r", "net/ipv4/ip_forward", "1")
	return n
}

// probe runs the helper in the client namespace, as uid/gid 65534 when
// unprivileged, and returns what it found.
func (n netnsLab) probe(target string, unprivileged bool) helperResult {
	n.t.Helper()
	exe := n.executable()
	args := []string{"ip", "netns", "exec", n.ns("c")}
	if unprivileged {
		args = append(args, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all")
	}
	cmd := exec.Command(args[0], append(args[1:], exe, "-test.run=^TestICMPHelper$", "-test.count=1")...)
	cmd.Env = append(os.Environ(), helperEnv+"="+target)
	out, err := cmd.Output()
	if err != nil {
		n.t.Fatalf("helper: %v\n%s", err, out)
	}
	var r helperResult
	line := strings.SplitN(string(out), "\n", 2)[0]
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		n.t.Fatalf("helper output %q: %v", out, err)
	}
	return r
}

// executable is a copy of the test binary that any user may run.
func (n netnsLab) executable() string {
	n.t.Helper()
	dir, err := os.MkdirTemp("", "vhpc-icmp")
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		n.t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		n.t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		n.t.Fatal(err)
	}
	defer src.Close()
	exe := filepath.Join(dir, "runnerprobe.test")
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		n.t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		n.t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		n.t.Fatal(err)
	}
	return exe
}

func TestICMPProbeThroughNamespaces(t *testing.T) {
	n := newNetnsLab(t, 7466)

	// Root, with the default ping_group_range "1 0": a raw socket.
	if r := n.probe("10.200.2.2", false); r.Err != "" || r.MTU != 7466 || r.Probes > 16 {
		t.Fatalf("through a 7466 router as root: %+v, want MTU 7466 in at most 16 probes", r)
	}
	// The router itself is on the 9000 side.
	if r := n.probe("10.200.1.1", false); r.Err != "" || r.MTU != 9000 || r.Probes != 1 {
		t.Fatalf("to the router: %+v, want 9000 in one probe", r)
	}

	// Unprivileged and outside ping_group_range: the error says what to grant.
	r := n.probe("10.200.2.2", true)
	for _, want := range []string{"no permission to send ICMP echo requests", "gid 65534", `ping_group_range (now "1 0")`,
		"CAP_NET_RAW", `sysctl -w net.ipv4.ping_group_range="65534 65534"`, "setcap cap_net_raw+ep"} {
		if !strings.Contains(r.Err, want) {
			t.Fatalf("unprivileged without permission: %q, want it to contain %q", r.Err, want)
		}
	}

	// Unprivileged inside ping_group_range: an ICMP datagram socket.
	n.sysctl("c", "net/ipv4/ping_group_range", "0 2147483647")
	if r := n.probe("10.200.2.2", true); r.Err != "" || r.MTU != 7466 {
		t.Fatalf("unprivileged in ping_group_range: %+v, want MTU 7466", r)
	}

	// Nothing answers at 10.200.2.9: unreachable, not a small MTU.
	if r := n.probe("10.200.2.9", false); !strings.Contains(r.Err, mtu.ErrUnreachable.Error()) {
		t.Fatalf("to a silent address: %+v, want %v", r, mtu.ErrUnreachable)
	}
}

func TestICMPProberRefusesIPv6(t *testing.T) {
	if _, err := newICMPProber(net.ParseIP("::1"), time.Second); err == nil || errors.Is(err, ErrNoPermission) {
		t.Fatalf("IPv6 target: %v, want a refusal", err)
	}
}
