package vcsimlab

import (
	"context"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// startLab starts a lab with default options, closed when the test ends.
func startLab(t testing.TB) *Lab {
	t.Helper()
	l, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// newClient logs a second client in, as the provider would.
func newClient(t testing.TB, l *Lab) *govmomi.Client {
	t.Helper()
	c, err := l.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func retrieve(t testing.TB, c *govmomi.Client, ref types.ManagedObjectReference, props []string, dst any) {
	t.Helper()
	if err := tryRetrieve(c, ref, props, dst); err != nil {
		t.Fatalf("retrieve %s %v: %v", ref, props, err)
	}
}

func tryRetrieve(c *govmomi.Client, ref types.ManagedObjectReference, props []string, dst any) error {
	return property.DefaultCollector(c.Client).RetrieveOne(context.Background(), ref, props, dst)
}

func hostRef(l *Lab, i int) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(l.HostNames()[i])}
}

func vmRef(l *Lab, name string) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "VirtualMachine", Value: l.VMID(name)}
}

func TestStartServesPinnedCredentialsOverTLS(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()

	if l.URL.Scheme != "https" || l.URL.User != nil || l.URL.Path != "/sdk" {
		t.Errorf("URL = %s, want https without user info and path /sdk", l.URL)
	}
	if l.Username != "administrator@vsphere.local" || len(l.Password) < 16 {
		t.Errorf("credentials = %q/%q, want the default user and a random password", l.Username, l.Password)
	}
	if !regexp.MustCompile(`^([0-9A-F]{2}:){19}[0-9A-F]{2}$`).MatchString(l.Thumbprint) {
		t.Errorf("Thumbprint = %q, want upper-case SHA-1 hex with colons", l.Thumbprint)
	}

	// The certificate file verifies the server.
	sc := soap.NewClient(l.URL, false)
	if err := sc.SetRootCAs(l.CertFile); err != nil {
		t.Fatal(err)
	}
	// So does the thumbprint alone.
	pinned := soap.NewClient(l.URL, false)
	pinned.SetThumbprint(l.URL.Host, l.Thumbprint)
	for name, sc := range map[string]*soap.Client{"ca": sc, "thumbprint": pinned} {
		vc, err := vim25.NewClient(ctx, sc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := session.NewManager(vc).Login(ctx, url.UserPassword(l.Username, l.Password)); err != nil {
			t.Fatalf("%s: login: %v", name, err)
		}
	}

	// A wrong password fails: the credentials are pinned.
	u := *l.URL
	u.User = url.UserPassword(l.Username, "wrong")
	if _, err := govmomi.NewClient(ctx, &u, true); !fault.Is(err, &types.InvalidLogin{}) {
		t.Errorf("login with a wrong password: err = %v, want InvalidLogin", err)
	}
	// Without the CA, TLS verification fails.
	u.User = url.UserPassword(l.Username, l.Password)
	if _, err := govmomi.NewClient(ctx, &u, false); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("login without CA: err = %v, want a certificate error", err)
	}
}

func TestStartOptions(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{Hosts: 2, VMs: 3, Username: "root", Password: "s3cret!"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := len(l.HostNames()); got != 2 {
		t.Errorf("hosts = %d, want 2", got)
	}
	want := []string{"hpc-node-0", "hpc-node-1", "hpc-node-2", "bare-node", "legacy-node", "installed-node"}
	if got := l.VMNames(); !slices.Equal(got, want) {
		t.Errorf("VMNames = %v, want %v", got, want)
	}
	if l.Username != "root" || l.Password != "s3cret!" {
		t.Errorf("credentials = %q/%q", l.Username, l.Password)
	}
	if _, err := l.NewClient(context.Background()); err != nil {
		t.Errorf("login with given credentials: %v", err)
	}
}

func TestInventory(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	c := l.Client()

	var about = c.ServiceContent.About
	if about.Version != "8.0.3" || about.ApiVersion != "8.0.3.0" {
		t.Errorf("about = %s/%s, want 8.0.3/8.0.3.0", about.Version, about.ApiVersion)
	}
	if l.DatacenterName() != "DC0" || !strings.HasPrefix(l.DatacenterID(), "datacenter-") {
		t.Errorf("datacenter = %q %q", l.DatacenterName(), l.DatacenterID())
	}
	var dc mo.Datacenter
	retrieve(t, c, types.ManagedObjectReference{Type: "Datacenter", Value: l.DatacenterID()}, []string{"name", "hostFolder"}, &dc)
	if dc.Name != l.DatacenterName() {
		t.Errorf("datacenter name = %q, want %q", dc.Name, l.DatacenterName())
	}

	hosts := l.HostNames()
	if len(hosts) != 3 || l.ClusterName() == "" {
		t.Fatalf("hosts = %v in cluster %q, want 3", hosts, l.ClusterName())
	}
	for _, name := range hosts {
		var h mo.HostSystem
		retrieve(t, c, types.ManagedObjectReference{Type: "HostSystem", Value: l.HostID(name)}, []string{"name", "parent"}, &h)
		var parent mo.ClusterComputeResource
		retrieve(t, c, *h.Parent, []string{"name"}, &parent)
		if h.Name != name || parent.Name != l.ClusterName() {
			t.Errorf("host %s: name %q in %q", name, h.Name, parent.Name)
		}
	}
	var hostFolder mo.Folder
	retrieve(t, c, dc.HostFolder, []string{"childEntity"}, &hostFolder)
	if len(hostFolder.ChildEntity) != 1 || hostFolder.ChildEntity[0].Type != "ClusterComputeResource" {
		t.Errorf("host folder holds %v, want only the cluster", hostFolder.ChildEntity)
	}

	uuids := map[string]bool{}
	for _, name := range l.VMNames() {
		var vm mo.VirtualMachine
		retrieve(t, c, vmRef(l, name), []string{"name", "config", "runtime", "guest"}, &vm)
		if vm.Name != name || vm.Config.Uuid != l.VMUUID(name) || uuids[vm.Config.Uuid] {
			t.Errorf("VM %s: name %q uuid %q (lab says %q), want distinct uuids", name, vm.Name, vm.Config.Uuid, l.VMUUID(name))
		}
		uuids[vm.Config.Uuid] = true
		// Code that walks the whole registry, as FindByUuid does, must cope
		// with the lab's own registered objects.
		found, err := object.NewSearchIndex(c.Client).FindByUuid(context.Background(), nil, vm.Config.Uuid, true, nil)
		if err != nil || found == nil || found.Reference() != vmRef(l, name) {
			t.Errorf("VM %s: FindByUuid = %v, %v", name, found, err)
		}
		if h := l.VMHostName(name); l.HostID(h) != vm.Runtime.Host.Value {
			t.Errorf("VM %s: VMHostName = %q, but it runs on %v", name, h, vm.Runtime.Host)
		}
		if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
			t.Errorf("VM %s is %s, want powered off", name, vm.Runtime.PowerState)
		}
		nics := 0
		for _, d := range vm.Config.Hardware.Device {
			if _, ok := d.(*types.VirtualVmxnet3); ok {
				nics++
			}
		}
		wantVersion, wantNICs, wantFamily := "vmx-19", 1, ""
		switch name {
		case "bare-node":
			wantNICs = 0
		case "legacy-node":
			wantVersion = "vmx-11"
		case "installed-node":
			wantFamily = "linuxGuest"
		}
		if vm.Config.Version != wantVersion || nics != wantNICs || vm.Config.Firmware != "bios" {
			t.Errorf("VM %s: %s with %d vmxnet3, firmware %s; want %s with %d, bios", name, vm.Config.Version, nics, vm.Config.Firmware, wantVersion, wantNICs)
		}
		if vm.Config.Hardware.MemoryMB != 8192 || vm.Config.Hardware.NumCPU != 4 {
			t.Errorf("VM %s: %d MB, %d vCPU", name, vm.Config.Hardware.MemoryMB, vm.Config.Hardware.NumCPU)
		}
		if vm.Guest.GuestFamily != wantFamily || (wantFamily != "") != (vm.Guest.GuestFullName != "") {
			t.Errorf("VM %s: guest family %q full name %q, want family %q", name, vm.Guest.GuestFamily, vm.Guest.GuestFullName, wantFamily)
		}
	}
}

func TestCloseIsIdempotentAndRemovesFiles(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l.Close()
	if _, err := os.Stat(l.CertFile); !os.IsNotExist(err) {
		t.Errorf("cert file after Close: %v, want it removed", err)
	}
	if _, err := govmomi.NewClient(context.Background(), l.URL, true); err == nil {
		t.Error("the server still answers after Close")
	}
}

func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		l, err := Start(context.Background(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		l.Close()
	}
}
