package vcsimlab

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Lab is a running simulated vCenter.
type Lab struct {
	URL        *url.URL // https://127.0.0.1:PORT/sdk, without user info
	Username   string
	Password   string
	CertFile   string // PEM file with the lab's TLS certificate, usable as a CA bundle
	Thumbprint string // SHA-1 thumbprint of the certificate, "AB:CD:…" as vSphere shows it

	model  *simulator.Model
	server *simulator.Server
	client *govmomi.Client

	// adminKey is the session key of client: its calls are neither counted
	// nor subject to fault injection, so tests can change the lab freely.
	adminKey string

	dcName, dcID, clusterName string
	hosts                     []entry
	vms                       []vmEntry

	ext *extension // the lab's methods and the state they share; nil on a Target

	// target is what Connect was given; nil for a simulated lab.
	target *Target

	mu         sync.Mutex
	calls      map[string]int
	keepAlives int // CurrentTime calls, counted apart from calls: see KeepAlives
	delays     map[string]time.Duration
	holds      map[string]chan struct{} // see Hold
	answers    []time.Duration          // see AnswerTimes
	latency    time.Duration
	callFaults []*callFault
	taskFaults []*taskFault
	// lostConnections and callLog: see LoseConnection and CallLog.
	lostConnections []*lostConnection
	callLog         []string
	// unavailable lists simulator-only methods called on a Target.
	unavailable []string
	// hiddenConfigs are the configurations of VMs made inaccessible, by
	// VM id (see SetVMAccessible).
	hiddenConfigs map[string]*types.VirtualMachineConfigInfo
	// hiddenHosts are what disconnected hosts no longer show, by host id
	// (see SetHostConnected).
	hiddenHosts map[string]hostShown

	closeOnce sync.Once
}

type entry struct{ name, id string }

type vmEntry struct {
	entry
	uuid string
}

// createMu serializes model creation and server start: both read and write
// package-level templates of the simulator (license manager, vpx settings).
var createMu sync.Mutex

// Start builds the inventory and serves it over HTTPS on Options.Listen.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	if opts.Hosts <= 0 {
		opts.Hosts = 3
	}
	if opts.Hosts > maxHosts {
		return nil, fmt.Errorf("vcsimlab: at most %d hosts", maxHosts)
	}
	if opts.VMs <= 0 {
		opts.VMs = 2
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.Username == "" {
		opts.Username = "administrator@vsphere.local"
	}
	if opts.Password == "" {
		b := make([]byte, 12)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		opts.Password = hex.EncodeToString(b)
	}

	l := &Lab{
		Username: opts.Username,
		Password: opts.Password,
		calls:    map[string]int{},
		delays:   map[string]time.Duration{},
		holds:    map[string]chan struct{}{},
		latency:  opts.Latency,
	}

	if err := l.startServer(opts); err != nil {
		return nil, err
	}
	if err := l.build(ctx, opts); err != nil {
		l.Close()
		return nil, err
	}
	l.ResetCalls()
	return l, nil
}

func (l *Lab) startServer(opts Options) error {
	m := simulator.VPX()
	m.Host = 0 // no standalone host
	m.ClusterHost = opts.Hosts
	m.Machine = 0 // the lab creates its own VMs
	m.Portgroup = 0
	m.Autostart = false
	about := &m.ServiceContent.About
	about.Version, about.ApiVersion = "8.0.3", "8.0.3.0"
	about.FullName = "VMware vCenter Server 8.0.3 build-24322831"
	about.Build = "24322831"

	createMu.Lock()
	defer createMu.Unlock()

	if err := m.Create(); err != nil {
		return err
	}
	l.model = m
	seedVCenterSettings(m.Map())
	l.ext = newExtension(m.Map())
	l.ext.hosts.rebootTime = cmp.Or(opts.RebootTime, 300*time.Millisecond)
	if err := l.prepareHosts(opts); err != nil {
		m.Remove()
		return err
	}
	if err := l.readInventory(); err != nil {
		m.Remove()
		return err
	}
	m.Map().Put(l.ext)
	m.Map().AddHandler(l.ext)
	m.Map().AddHandler(newVMSetup(m.Map())) // new VMs' browser and swap placement: environment.go
	syncAllNetworkVMs(newContext(m.Map()))
	m.Map().Handler = l.handle

	m.Service.TLS = new(tls.Config)
	m.Service.Listen = &url.URL{Host: opts.Listen, User: url.UserPassword(l.Username, l.Password)}
	serveEndpoints(m.Service) // /rest, /api and /pbm beside /sdk: rest.go
	l.server = m.Service.NewServer()
	// Every request is counted and delayed, not only /sdk's SOAP calls. Set
	// before anyone knows the lab's address, so before its first request.
	l.server.Config.Handler = l.countRequests(l.server.Config.Handler)

	u := *l.server.URL
	u.User = nil
	l.URL = &u

	l.Thumbprint = thumbprint(l.server.Certificate().Raw)

	f, err := l.server.CertificateFile()
	if err != nil {
		l.server.Close()
		m.Remove()
		return err
	}
	l.CertFile = f
	return nil
}

// build logs the admin client in and creates the VMs.
func (l *Lab) build(ctx context.Context, opts Options) error {
	c, err := l.NewClient(ctx)
	if err != nil {
		return fmt.Errorf("vcsimlab: admin login: %w", err)
	}
	l.client = c
	us, err := c.SessionManager.UserSession(ctx)
	if err != nil || us == nil {
		return fmt.Errorf("vcsimlab: admin session: %v", err)
	}
	l.mu.Lock()
	l.adminKey = us.Key
	l.mu.Unlock()
	return l.createVMs(ctx, opts.VMs)
}

// NewClient returns a new client logged in as the lab's user over a new
// session, verifying the lab's certificate.
func (l *Lab) NewClient(ctx context.Context) (*govmomi.Client, error) {
	sc := soap.NewClient(l.URL, false)
	if err := sc.SetRootCAs(l.CertFile); err != nil {
		return nil, err
	}
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, err
	}
	c := &govmomi.Client{Client: vc, SessionManager: session.NewManager(vc)}
	if err := c.Login(ctx, url.UserPassword(l.Username, l.Password)); err != nil {
		return nil, err
	}
	return c, nil
}

// Close stops the server and removes the lab's files. It is idempotent.
func (l *Lab) Close() {
	l.closeOnce.Do(func() {
		if l.client != nil && l.target != nil {
			_ = l.client.Logout(context.Background())
		}
		if l.client != nil {
			l.client.CloseIdleConnections()
		}
		if l.ext != nil {
			close(l.ext.closing)
		}
		if l.server != nil {
			l.server.Close()
		}
		if l.model != nil {
			l.model.Remove()
		}
	})
}

// Client is the lab's own logged-in admin client, for out-of-band changes in
// tests. Its calls are not counted and no fault is injected into them.
func (l *Lab) Client() *govmomi.Client { return l.client }

// Model is an escape hatch to the simulator model.
func (l *Lab) Model() *simulator.Model { return l.model }

// DatacenterName is the name of the lab's only datacenter.
func (l *Lab) DatacenterName() string { return l.dcName }

// DatacenterID is the managed object id of the datacenter ("datacenter-2").
func (l *Lab) DatacenterID() string { return l.dcID }

// ClusterName is the name of the lab's only cluster.
func (l *Lab) ClusterName() string { return l.clusterName }

// HostNames lists the hosts of the cluster in inventory order.
func (l *Lab) HostNames() []string { return names(l.hosts) }

// HostID is the managed object id of the named host ("host-21"), or "".
func (l *Lab) HostID(name string) string { return find(l.hosts, name).id }

// VMNames lists the lab's VMs in creation order.
func (l *Lab) VMNames() []string {
	out := make([]string, len(l.vms))
	for i, vm := range l.vms {
		out[i] = vm.name
	}
	return out
}

// VMID is the managed object id of the named VM ("vm-42"), or "": a VM the
// lab made, or one a client created since (the vSphere provider's, say).
func (l *Lab) VMID(name string) string {
	id, _ := l.vmByName(name)
	return id
}

// VMUUID is the BIOS UUID (config.uuid) of the named VM, or "": what
// vsphere_virtual_machine.id exports. Like VMID, it knows VMs made since.
func (l *Lab) VMUUID(name string) string {
	_, uuid := l.vmByName(name)
	return uuid
}

// vmByName finds a VM among those the lab made, then in the inventory:
// the datacenter's VMs, when exactly one has the name.
func (l *Lab) vmByName(name string) (id, uuid string) {
	for _, vm := range l.vms {
		if vm.name == name {
			return vm.id, vm.uuid
		}
	}
	ctx := context.Background()
	v, err := view.NewManager(l.client.Client).CreateContainerView(ctx, ref("Datacenter", l.dcID), []string{"VirtualMachine"}, true)
	if err != nil {
		return "", ""
	}
	defer func() { _ = v.Destroy(ctx) }()
	var vms []mo.VirtualMachine
	if err := v.RetrieveWithFilter(ctx, []string{"VirtualMachine"}, []string{"name", "config.uuid"}, &vms, property.Match{"name": name}); err != nil ||
		len(vms) != 1 {
		return "", ""
	}
	if vms[0].Config == nil {
		return vms[0].Self.Value, ""
	}
	return vms[0].Self.Value, vms[0].Config.Uuid
}

// VMHostName is the name of the host the named VM is registered on, or "".
func (l *Lab) VMHostName(name string) string {
	var vm mo.VirtualMachine
	err := l.client.RetrieveOne(context.Background(), ref("VirtualMachine", l.VMID(name)), []string{"runtime.host"}, &vm)
	if err != nil || vm.Runtime.Host == nil {
		return ""
	}
	for _, h := range l.hosts {
		if h.id == vm.Runtime.Host.Value {
			return h.name
		}
	}
	return ""
}
