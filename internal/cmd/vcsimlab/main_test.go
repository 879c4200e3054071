package main

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/pbm"
	pbmtypes "github.com/vmware/govmomi/pbm/types"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// syncBuffer is a bytes.Buffer safe to write and read from two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startedLab runs the command with args (and -listen 127.0.0.1:0 and an
// env file) until stop, and returns what its env file says once written;
// stop ends run's context, as SIGTERM does, and returns run's error.
type startedLab struct {
	env            map[string]string
	envFile        string
	stdout, stderr syncBuffer
	stop           func() error
}

func startLab(t *testing.T, report <-chan os.Signal, args ...string) *startedLab {
	t.Helper()
	l := &startedLab{envFile: filepath.Join(t.TempDir(), "lab.env"), env: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-listen", "127.0.0.1:0", "-env-file", l.envFile}, args...), report, &l.stdout, &l.stderr)
	}()
	l.stop = func() error {
		cancel()
		return <-done
	}
	var content []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if content, err = os.ReadFile(l.envFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no env file: %v; stderr: %s", l.stop(), l.stderr.String())
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(content)), "\n") {
		kv := strings.SplitN(strings.TrimPrefix(line, "export "), "=", 2)
		if len(kv) != 2 || !strings.HasPrefix(kv[1], "'") {
			t.Fatalf("bad line %q", line)
		}
		l.env[kv[0]] = strings.ReplaceAll(strings.Trim(kv[1], "'"), `'\''`, "'")
	}
	return l
}

// login logs in with the exported values, verifying TLS with the CA file.
func (l *startedLab) login(t *testing.T) *vim25.Client {
	t.Helper()
	u := &url.URL{Scheme: "https", Host: l.env["VSPHERE_SERVER"], Path: "/sdk"}
	sc := soap.NewClient(u, false)
	if err := sc.SetRootCAs(l.env["VSPHERE_CA_FILE"]); err != nil {
		t.Fatal(err)
	}
	vc, err := vim25.NewClient(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.NewManager(vc).Login(context.Background(), url.UserPassword(l.env["VSPHERE_USER"], l.env["VSPHERE_PASSWORD"])); err != nil {
		t.Fatalf("login with the exported credentials: %v", err)
	}
	return vc
}

func TestRunWritesEnvFileAndServes(t *testing.T) {
	ctx := context.Background()
	report := make(chan os.Signal, 1)
	l := startLab(t, report, "-hosts", "2", "-password", "it's secret", "-hosts-need-reboot")
	env, envFile, stdout, stderr := l.env, l.envFile, &l.stdout, &l.stderr
	if env["VSPHERE_LAB_HOSTS"] != "DC0_C0_H0,DC0_C0_H1" || env["VSPHERE_LAB_DATACENTER"] != "DC0" || env["VSPHERE_PASSWORD"] != "it's secret" {
		t.Errorf("env = %v", env)
	}
	for name, want := range map[string]string{
		"VSPHERE_TEST_DATACENTER": "DC0", "VSPHERE_TEST_CLUSTER": "DC0_C0", "VSPHERE_TEST_HOSTS": "DC0_C0_H0,DC0_C0_H1",
		"VSPHERE_TEST_VMS": "hpc-node-0,hpc-node-1,hpc-node-2", "VSPHERE_TEST_RDMA_NICS": "vmnic4,vmnic5",
		"VSPHERE_TEST_VMKNIC": "vmk1", "VSPHERE_TEST_GPUS": "0000:3b:00.0,0000:5e:00.0",
	} {
		if env[name] != want {
			t.Errorf("%s = %q, want %q", name, env[name], want)
		}
	}
	if info, err := os.Stat(envFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("env file mode: %v %v, want 0600", info, err)
	}
	if !strings.Contains(stdout.String(), "export VSPHERE_SERVER=") {
		t.Errorf("stdout = %q, want the export lines", stdout.String())
	}

	// The exported values log in, verifying TLS with the CA file.
	vc := l.login(t)

	// A report counts the calls since the previous one: the client's set-up and login.
	report <- syscall.SIGUSR1
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "SOAP calls: "); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no call report; stderr: %s", stderr.String())
		}
	}
	if !regexp.MustCompile(`2 SOAP calls: Login=1 RetrieveServiceContent=1; longest answers: \d+ ms, \d+ ms`).MatchString(stderr.String()) {
		t.Errorf("call report: %s, want the login and service content, and their answer times", stderr.String())
	}

	// The vSphere provider's other endpoints take the same credentials: the
	// vSphere Automation API's session and the storage policy service.
	if err := rest.NewClient(vc).Login(ctx, url.UserPassword(env["VSPHERE_USER"], env["VSPHERE_PASSWORD"])); err != nil {
		t.Errorf("REST login with the exported credentials: %v", err)
	}
	if pc, err := pbm.NewClient(ctx, vc); err != nil {
		t.Errorf("storage policy service: %v", err)
	} else if ids, err := pc.QueryProfile(ctx, pbmtypes.PbmProfileResourceType{ResourceType: "STORAGE"}, ""); err != nil || len(ids) == 0 {
		t.Errorf("storage policies: %v, %v", ids, err)
	}

	// -hosts-need-reboot: hosts say they apply passthrough changes only at a reboot.
	hosts, err := find.NewFinder(vc, false).HostSystemList(ctx, "/DC0/host/*/*")
	if err != nil || len(hosts) != 2 {
		t.Fatalf("hosts: %v, %v", hosts, err)
	}
	var h mo.HostSystem
	if err := hosts[0].Properties(ctx, hosts[0].Reference(), []string{"capability.deviceRebindWithoutRebootSupported"}, &h); err != nil {
		t.Fatal(err)
	}
	if c := h.Capability; c == nil || c.DeviceRebindWithoutRebootSupported == nil || *c.DeviceRebindWithoutRebootSupported {
		t.Errorf("with -hosts-need-reboot, deviceRebindWithoutRebootSupported = %+v, want false", c)
	}

	report <- syscall.SIGHUP
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(
		stderr.String(),
		"reboot: hosts DC0_C0_H0, DC0_C0_H1 rebooted",
	); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no reboot report; stderr: %s", stderr.String())
		}
	}

	// Drift needs the demo's switch; without it the log says what is missing.
	report <- syscall.SIGUSR2
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(
		stderr.String(),
		"drift failed: switch pvrdma-dvs:",
	); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no drift report; stderr: %s", stderr.String())
		}
	}

	if err := l.stop(); err != nil {
		t.Errorf("run: %v", err)
	}
	if _, err := os.Stat(envFile); !os.IsNotExist(err) {
		t.Errorf("env file after exit: %v, want it removed", err)
	}
}

// The lab stops when asked (SIGTERM ends run's context) although a client
// is blocked in WaitForUpdatesEx, which returns RequestCanceled.
func TestRunStopsWithAWaitBlocked(t *testing.T) {
	l := startLab(t, nil, "-hosts", "1", "-vms", "1")
	vc := l.login(t)

	// A wait for a change that never comes: the root folder's name.
	pc := property.DefaultCollector(vc)
	filter := &property.WaitFilter{}
	filter.Add(vc.ServiceContent.RootFolder, "Folder", []string{"name"})
	waited := make(chan error, 1)
	go func() {
		waited <- property.WaitForUpdatesEx(context.Background(), pc, filter, func([]types.ObjectUpdate) bool { return false })
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// The wait is under way once the collector has its filter.
		var c mo.PropertyCollector
		if err := pc.RetrieveOne(context.Background(), pc.Reference(), []string{"filter"}, &c); err == nil && len(c.Filter) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wait made no filter")
		}
	}

	if err := l.stop(); err != nil {
		t.Errorf("run: %v", err)
	}
	if err := <-waited; err == nil {
		t.Error("the blocked wait ended without an error when the lab stopped")
	}
}
