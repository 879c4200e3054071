package vcsimlab

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi"
	govmomifind "github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
)

// A Lab over an external vCenter: the acceptance suite's path to a real
// system. Connect names existing objects, the tests create everything else
// and remove what they create; nothing is simulated, so what only the
// simulator can do (inject faults and delays, count calls, model the
// physical network, reboot or remove hosts, create or destroy VMs) is
// unavailable and the tests that need it skip (Simulated reports which kind
// a Lab is).

// Target names what an external vCenter lends the tests. The hosts and VMs
// are changed and restored: switches join the hosts' RDMA NICs, the hosts'
// PVRDMA settings and passthrough are set and reset, the VMs (powered off)
// get adapters, GPUs and settings and lose them again.
type Target struct {
	Server   string // host[:port] of vCenter
	Username string
	Password string
	CAFile   string // PEM CA bundle; empty with Insecure
	Insecure bool   // do not verify the certificate

	Datacenter string   // name of the datacenter
	Cluster    string   // name of the cluster holding Hosts
	Hosts      []string // at least one, all in Cluster
	VMs        []string // powered-off VMs on Hosts, hardware version 14 to 19
	RDMANICs   []string // free RDMA-capable vmnics, the same names on every host
	Vmknic     string   // the vmknic each host uses for PVRDMA
	GPUs       []string // PCI ids of GPUs active for passthrough on every host
}

// Connect logs in to an external vCenter and resolves what t names.
func Connect(ctx context.Context, t Target) (*Lab, error) {
	if t.Server == "" || t.Username == "" || t.Datacenter == "" || t.Cluster == "" || len(t.Hosts) == 0 || len(t.VMs) == 0 {
		return nil, errors.New("vcsimlab: an external target needs a server, a user, a datacenter, a cluster, hosts and VMs")
	}
	if t.CAFile == "" && !t.Insecure {
		return nil, errors.New("vcsimlab: an external target needs a CA file, or Insecure")
	}
	l := &Lab{
		URL:      &url.URL{Scheme: "https", Host: t.Server, Path: "/sdk"},
		Username: t.Username,
		Password: t.Password,
		CertFile: t.CAFile,
		target:   &t,
		calls:    map[string]int{},
		delays:   map[string]time.Duration{},
	}
	sc := soap.NewClient(l.URL, t.Insecure)
	if t.CAFile != "" {
		if err := sc.SetRootCAs(t.CAFile); err != nil {
			return nil, err
		}
	}
	thumb, err := serverThumbprint(ctx, t)
	if err != nil {
		return nil, err
	}
	l.Thumbprint = thumb
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("vcsimlab: %s: %w", t.Server, err)
	}
	c := &govmomi.Client{Client: vc, SessionManager: session.NewManager(vc)}
	if err := c.Login(ctx, url.UserPassword(t.Username, t.Password)); err != nil {
		return nil, fmt.Errorf("vcsimlab: logging in to %s: %w", t.Server, err)
	}
	l.client = c
	if err := l.resolveInventory(ctx, t); err != nil {
		_ = c.Logout(context.WithoutCancel(ctx))
		return nil, err
	}
	return l, nil
}

// resolveInventory finds what the target names: the datacenter, the
// cluster, its hosts and the VMs.
func (l *Lab) resolveInventory(ctx context.Context, t Target) error {
	finder := govmomifind.NewFinder(l.client.Client, false)
	dc, err := finder.Datacenter(ctx, t.Datacenter)
	if err != nil {
		return fmt.Errorf("vcsimlab: datacenter %q: %w", t.Datacenter, err)
	}
	finder.SetDatacenter(dc)
	l.dcName, l.dcID = t.Datacenter, dc.Reference().Value
	cluster, err := finder.ClusterComputeResource(ctx, t.Cluster)
	if err != nil {
		return fmt.Errorf("vcsimlab: cluster %q: %w", t.Cluster, err)
	}
	l.clusterName = t.Cluster
	var cr mo.ClusterComputeResource
	if err := cluster.Properties(ctx, cluster.Reference(), []string{"host"}, &cr); err != nil {
		return err
	}
	for _, name := range t.Hosts {
		h, err := finder.HostSystem(ctx, cluster.InventoryPath+"/"+name)
		if err != nil {
			return fmt.Errorf("vcsimlab: host %q in cluster %q: %w", name, t.Cluster, err)
		}
		if !slices.Contains(cr.Host, h.Reference()) {
			return fmt.Errorf("vcsimlab: host %q is not in cluster %q", name, t.Cluster)
		}
		l.hosts = append(l.hosts, entry{name: name, id: h.Reference().Value})
	}
	for _, name := range t.VMs {
		vm, err := finder.VirtualMachine(ctx, name)
		if err != nil {
			return fmt.Errorf("vcsimlab: VM %q: %w", name, err)
		}
		var v mo.VirtualMachine
		if err := vm.Properties(ctx, vm.Reference(), []string{"config.uuid"}, &v); err != nil {
			return err
		}
		if v.Config == nil {
			return fmt.Errorf("vcsimlab: VM %q has no configuration", name)
		}
		l.vms = append(l.vms, vmEntry{entry: entry{name: name, id: vm.Reference().Value}, uuid: v.Config.Uuid})
	}
	return nil
}

// serverThumbprint is the SHA-1 thumbprint of the certificate the server
// presents, as vSphere shows it (the tests pin it with the provider's
// thumbprint argument), verified against the target's CA file when it has
// one.
func serverThumbprint(ctx context.Context, t Target) (string, error) {
	addr := t.Server
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "443")
	}
	host, _, _ := net.SplitHostPort(addr)
	config := &tls.Config{ServerName: host, InsecureSkipVerify: t.Insecure} //nolint:gosec // the target says not to verify
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return "", err
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			return "", fmt.Errorf("vcsimlab: %s holds no PEM certificate", t.CAFile)
		}
	}
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 30 * time.Second}, Config: config}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("vcsimlab: reading the certificate of %s: %w", t.Server, err)
	}
	defer conn.Close()
	tc, ok := conn.(*tls.Conn)
	if !ok || len(tc.ConnectionState().PeerCertificates) == 0 {
		return "", fmt.Errorf("vcsimlab: %s presented no certificate", t.Server)
	}
	return thumbprint(tc.ConnectionState().PeerCertificates[0].Raw), nil
}

// thumbprint formats the SHA-1 of a DER certificate as "AB:CD:…".
func thumbprint(der []byte) string {
	sum := sha1.Sum(der)
	hexSum := strings.ToUpper(hex.EncodeToString(sum[:]))
	pairs := make([]string, 0, len(sum))
	for i := 0; i < len(hexSum); i += 2 {
		pairs = append(pairs, hexSum[i:i+2])
	}
	return strings.Join(pairs, ":")
}

// Simulated reports whether the lab is the simulator (Start) rather than an
// external vCenter (Connect).
func (l *Lab) Simulated() bool { return l.target == nil }

// The hardware the tests use, by role, so that a test names what an
// external target lends it. In the simulator these are the hosts' first two
// ConnectX ports, vmk1 and the two H100s (the package doc).

// RDMANICs are the free RDMA-capable vmnics of every host.
func (l *Lab) RDMANICs() []string {
	if l.target != nil {
		return slices.Clone(l.target.RDMANICs)
	}
	out := make([]string, len(rdmaNICs))
	for i, n := range rdmaNICs {
		out[i] = n.pnic
	}
	return out
}

// Vmknic is the vmknic each host uses for PVRDMA.
func (l *Lab) Vmknic() string {
	if l.target != nil {
		return l.target.Vmknic
	}
	return "vmk1" // the vmknic hardware.go gives every host on vSwitch1
}

// GPUs are the PCI ids of the GPUs active for passthrough on every host
// (every host but the last with Options.NewerGPUHost).
func (l *Lab) GPUs() []string {
	if l.target != nil {
		return slices.Clone(l.target.GPUs)
	}
	var out []string
	for _, g := range gpus {
		if g.enabled {
			out = append(out, g.id)
		}
	}
	return out
}

// ErrNotSimulated is what a method only the simulator has returns on an
// external target.
var ErrNotSimulated = errors.New("vcsimlab: only the simulated lab can do this")

// simulatorOnly reports whether the lab is external, and then records that
// method was called: a test that needs the simulator must skip on an
// external target (Unavailable tells its harness it did not).
func (l *Lab) simulatorOnly(method string) bool {
	if l.target == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unavailable = append(l.unavailable, method)
	return true
}

// Unavailable lists the simulator-only methods called on an external
// target, in call order.
func (l *Lab) Unavailable() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.unavailable)
}
