package provider

// Tests of the example modules in examples/modules (pvrdma-cluster,
// gpu-node), applied with real Terraform against the lab. No source file of
// this package pairs with them: the file is named after the directory it
// tests, and lives here because the modules need the in-process provider and
// the lab helpers of this package.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// pvrdmaRoot calls the pvrdma-cluster module (copied to modules/) with the
// test's variables, as a user's root module would.
const pvrdmaRoot = `
variable "datacenter_id" {
  type = string
}

variable "host_names" {
  type    = list(string)
  default = []
}

variable "cluster_name" {
  type    = string
  default = null
}

variable "vmknic" {
  type    = string
  default = "vmk1"
}

module "pvrdma" {
  source = "./modules/pvrdma-cluster"

  datacenter_id = var.datacenter_id
  host_names    = var.host_names
  cluster_name  = var.cluster_name
  vmknic        = var.vmknic
}

output "measured_mtu" {
  value = module.pvrdma.measured_mtu
}

output "uplinks" {
  value = module.pvrdma.uplinks
}

output "switch_id" {
  value = module.pvrdma.switch_id
}
`

// hostsVar is a -var argument listing host names.
func hostsVar(names ...string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return "-var=host_names=[" + strings.Join(quoted, ",") + "]"
}

// pvrdmaModuleDir is a working directory with the pvrdma-cluster module and
// a root module that calls it, initialised.
func pvrdmaModuleDir(t *testing.T, lab *vcsimlab.Lab) (*tfDir, string) {
	d := newTFDir(t, lab, map[string]string{"main.tf": pvrdmaRoot})
	d.copyModule("pvrdma-cluster")
	d.run("get") // the modules; init would ask the registry for the overridden provider
	return d, "-var=datacenter_id=" + lab.DatacenterID()
}

// switchHosts is the hosts of the switch the module built, by name, read
// from vCenter.
func switchHosts(t *testing.T, lab *vcsimlab.Lab, d *tfDir) []string {
	t.Helper()
	var uuid string
	d.output("switch_id", &uuid)
	s, err := labClient(lab).DVS(context.Background(), vsphere.DVSID{UUID: uuid}, "")
	acctest.Must(t, err)
	var names []string
	for _, h := range s.Hosts {
		for _, n := range lab.HostNames() {
			if lab.HostID(n) == h.HostID {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// pvrdmaSettingsOf is the host's PVRDMA settings, read from vCenter.
func pvrdmaSettingsOf(t *testing.T, lab *vcsimlab.Lab, host string) vsphere.PVRDMASettings {
	t.Helper()
	h, err := labClient(lab).HostPVRDMA(context.Background(), lab.HostID(host))
	acctest.Must(t, err)
	return h.Settings
}

// expectFailure runs a plan that must fail with an error matching want.
func expectFailure(t *testing.T, d *tfDir, want *regexp.Regexp, args ...string) {
	t.Helper()
	out, err := d.try(append([]string{"plan", "-input=false"}, args...)...)
	if err == nil || !want.MatchString(out) {
		t.Fatalf("plan %v: %v, want an error matching %s:\n%s", args, err, want, out)
	}
}

// expectChanges fails unless the plan's one create or delete is the given
// one, and everything else is an update in place.
func expectChanges(t *testing.T, changes []plannedChange, address, action string) {
	t.Helper()
	for _, c := range changes {
		if c.Address == address && slices.Equal(c.Actions, []string{action}) {
			continue
		}
		if !slices.Equal(c.Actions, []string{"update"}) {
			t.Fatalf("plan %v: %s %v; want only %s %s and updates in place", changes, c.Address, c.Actions, action, address)
		}
	}
	if !slices.ContainsFunc(changes, func(c plannedChange) bool { return c.Address == address }) {
		t.Fatalf("plan %v: no %s of %s", changes, action, address)
	}
}

// expectNoChanges plans and fails when anything would change.
func expectNoChanges(t *testing.T, d *tfDir, args ...string) {
	t.Helper()
	if changes := d.plan(args...); len(changes) > 0 {
		t.Fatalf("plan %v: %v, want no changes", args, changes)
	}
}

// The module, applied with the Terraform CLI (terraform-plugin-testing's
// state shim reads no for_each instances): uplinks picked, the fabric's MTU
// measured, re-planned empty (also as "all hosts of the cluster"), its
// refusals, and a clean destroy that restores the hosts.
func TestAccModulePVRDMACluster(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 4})
	simulatedOnly(t, lab, "the module measures the lab's simulated fabric, whose MTUs the test changes")
	lab.SetLostProbeDelay(time.Millisecond)
	hosts := lab.HostNames()
	before := pvrdmaSettingsOf(t, lab, hosts[3])
	d, dc := pvrdmaModuleDir(t, lab)
	all := hostsVar(hosts...)

	// The uplinks are picked from the hosts' NICs: vmnic4, the first free 100
	// GbE RDMA NIC; the fabric carries 9000 everywhere.
	d.run("apply", "-auto-approve", "-input=false", dc, all)
	var mtu int
	d.output("measured_mtu", &mtu)
	var uplinks map[string]string
	d.output("uplinks", &uplinks)
	if mtu != 9000 || len(uplinks) != 4 || uplinks[hosts[0]] != "vmnic4" || uplinks[hosts[3]] != "vmnic4" {
		t.Fatalf("measured_mtu %d, uplinks %v; want 9000 and vmnic4 on each of 4 hosts", mtu, uplinks)
	}
	if got := switchHosts(t, lab, d); !slices.Equal(got, slices.Sorted(slices.Values(hosts))) {
		t.Fatalf("switch hosts %v, want %v", got, hosts)
	}
	if s := pvrdmaSettingsOf(t, lab, hosts[3]); s.Vmknic != "vmk1" || !s.FirewallEnabled || len(s.AllowedIPs) != 4 {
		t.Fatalf("settings of %s: %+v, want vmk1 and the firewall open to the 4 vmknics", hosts[3], s)
	}

	// Re-planned empty: the NICs the switch now claims stay picked; the same
	// four hosts as "all hosts of the cluster" change nothing either.
	expectNoChanges(t, d, dc, all)
	expectNoChanges(t, d, dc, "-var=cluster_name="+lab.ClusterName())

	expectFailure(
		t,
		d,
		regexp.MustCompile(`Give either host_names or cluster_name, not both and not neither`),
		dc,
		all,
		"-var=cluster_name="+lab.ClusterName(),
	)
	expectFailure(t, d, regexp.MustCompile(`Give either host_names or cluster_name, not both and not neither`), dc)
	expectFailure(
		t,
		d,
		regexp.MustCompile(`PVRDMA connects VMs across hosts, and the switch would have 1: list two or\s+more hosts in host_names`),
		dc,
		hostsVar(hosts[0]),
	)
	expectFailure(t, d, acctest.Wording("cluster_name is empty: name the cluster, or leave it null and list host_names."), dc, "-var=cluster_name= ")
	expectFailure(t, d, regexp.MustCompile(`host_names lists `+regexp.QuoteMeta(hosts[0])+` more than once`), dc, hostsVar(hosts[0], hosts[0]))
	// vmk0 is at 1500 on every host: the hosts, not the fabric, fall short.
	expectFailure(
		t,
		d,
		acctest.Wording("The fabric carries 1500-byte packets, not the switch MTU 9000. The hosts allow less themselves: vmk0 MTU "),
		dc,
		all,
		"-var=vmknic=vmk0",
	)
	// A 1500 link between two hosts stops the plan, naming the paths.
	lab.SetLinkMTU(hosts[1], hosts[2], 1500)
	expectFailure(t, d, regexp.MustCompile(`(?s)The fabric carries 1500-byte packets, not the switch MTU 9000.*`+
		regexp.QuoteMeta(hosts[1]+" -> "+hosts[2])+`\s+1500.*`+regexp.QuoteMeta(hosts[2]+" -> "+hosts[1])+`\s+1500`), dc, all)
	lab.SetLinkMTU(hosts[1], hosts[2], 9000)
	expectNoChanges(t, d, dc, all)

	d.run("destroy", "-auto-approve", "-input=false", dc, all)
	if s := pvrdmaSettingsOf(t, lab, hosts[3]); s.Vmknic != before.Vmknic || s.FirewallEnabled != before.FirewallEnabled {
		t.Fatalf("after destroy %s has %+v, want what it had: %+v", hosts[3], s, before)
	}
}

// Hosts keyed by name: a host inserted in the middle of the list plans one
// add and replaces nothing; a host removed from the middle restores that host
// only.
func TestAccModulePVRDMACluster_keyedByName(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 4})
	simulatedOnly(t, lab, "the module measures the lab's simulated fabric")
	lab.SetLostProbeDelay(time.Millisecond)
	h := lab.HostNames()
	before := pvrdmaSettingsOf(t, lab, h[1])
	d, dc := pvrdmaModuleDir(t, lab)
	settings := func(host string) string {
		return `module.pvrdma.vspherehpc_host_pvrdma_settings.this["` + host + `"]`
	}

	d.run("apply", "-auto-approve", "-input=false", dc, hostsVar(h[0], h[1], h[3]))
	if s := pvrdmaSettingsOf(t, lab, h[2]); s.Vmknic == "vmk1" {
		t.Fatalf("%s has settings before it joined: %+v", h[2], s)
	}

	// One add; the switch gains the host, and every other host's firewall
	// its vmknic address: updates in place, nothing replaced.
	expectChanges(t, d.plan(dc, hostsVar(h[0], h[1], h[2], h[3])), settings(h[2]), "create")
	d.run("apply", "-auto-approve", "-input=false", "tfplan")
	if got := switchHosts(t, lab, d); len(got) != 4 || pvrdmaSettingsOf(t, lab, h[2]).Vmknic != "vmk1" {
		t.Fatalf("after the insert: switch hosts %v, %s settings %+v", got, h[2], pvrdmaSettingsOf(t, lab, h[2]))
	}

	expectChanges(t, d.plan(dc, hostsVar(h[0], h[2], h[3])), settings(h[1]), "delete")
	d.run("apply", "-auto-approve", "-input=false", "tfplan")
	if s := pvrdmaSettingsOf(t, lab, h[1]); s.Vmknic != before.Vmknic || s.FirewallEnabled != before.FirewallEnabled {
		t.Fatalf("%s after leaving: %+v, want what it had: %+v", h[1], s, before)
	}
	for _, host := range []string{h[0], h[2], h[3]} {
		if s := pvrdmaSettingsOf(t, lab, host); s.Vmknic != "vmk1" || len(s.AllowedIPs) != 3 {
			t.Fatalf("%s after %s left: %+v, want vmk1 and the 3 remaining vmknics allowed", host, h[1], s)
		}
	}
	if got := switchHosts(t, lab, d); len(got) != 3 || slices.Contains(got, h[1]) {
		t.Fatalf("switch hosts %v, want all but %s", got, h[1])
	}
	d.run("destroy", "-auto-approve", "-input=false", dc, hostsVar(h[0], h[2], h[3]))
}

// A user of the count version moves to the for_each version without
// replacing anything, with the moved blocks the module's README shows.
func TestAccModulePVRDMACluster_migrationFromCount(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 3})
	simulatedOnly(t, lab, "the module measures the lab's simulated fabric")
	lab.SetLostProbeDelay(time.Millisecond)
	h := lab.HostNames()
	d := newTFDir(t, lab, map[string]string{"main.tf": pvrdmaRoot})
	old := map[string]string{}
	for _, f := range []string{"main.tf", "outputs.tf", "variables.tf", "versions.tf"} {
		b, err := os.ReadFile(filepath.Join("testdata/pvrdma-cluster-count", f))
		acctest.Must(t, err)
		old[filepath.Join("modules/pvrdma-cluster", f)] = string(b)
	}
	d.write(old)
	d.run("get") // the modules; init would ask the registry for the overridden provider
	dc, all := "-var=datacenter_id="+lab.DatacenterID(), hostsVar(h...)
	d.run("apply", "-auto-approve", "-input=false", dc, all)

	d.copyModule("pvrdma-cluster")
	var moved strings.Builder
	for i, host := range h {
		fmt.Fprintf(
			&moved,
			"moved {\n  from = module.pvrdma.vspherehpc_host_pvrdma_settings.this[%d]\n  to   = module.pvrdma.vspherehpc_host_pvrdma_settings.this[%q]\n}\n",
			i,
			host,
		)
	}
	d.write(map[string]string{"moved.tf": moved.String()})
	expectNoChanges(t, d, dc, all)
	d.run("apply", "-auto-approve", "-input=false", dc, all)
	d.run("destroy", "-auto-approve", "-input=false", dc, all)
}

// The gpu-node module on a VM, with the PVRDMA port group of a switch an
// administrator built (the pvrdma-cluster module's output in real use),
// applied with the Terraform CLI as a module's caller would: it re-plans
// empty, and a PVRDMA adapter without a port group is refused.
func TestAccModuleGPUNode(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	spec := vsphere.DVSSpec{
		DatacenterID: lab.DatacenterID(), Name: testName("pvrdma-dvs"), UplinkCount: 1, MTU: 9000,
		PortGroup: vsphere.PortGroupSpec{Name: testName("VM 100GbE Network"), Ports: 8, AutoExpand: true},
	}
	for _, h := range lab.HostNames() {
		spec.Hosts = append(spec.Hosts, vsphere.DVSHost{HostID: lab.HostID(h), Vmnic: lab.RDMANICs()[0]})
	}
	_, portGroup, err := labClient(lab).CreateDVS(context.Background(), spec)
	acctest.Must(t, err)
	destroySwitchAfter(t, lab, spec.Name)
	vm := lab.VMNames()[1]
	// The GPUs' memory and MMIO window: two H100 80GB in the lab.
	var totalGB float64
	for _, gb := range gpuMemoryGB(t, lab, vm) {
		totalGB += gb
	}
	mmioGB := windowGB(t, lab, 512, totalGB)
	d := newTFDir(t, lab, map[string]string{"main.tf": `
variable "virtual_machine_id" {
  type = string
}

variable "port_group_id" {
  type    = string
  default = null
}

module "node" {
  source = "./modules/gpu-node"

  virtual_machine_id = var.virtual_machine_id
  port_group_id      = var.port_group_id
  gpu_pci_ids        = ` + hclList(lab.GPUs()) + `
}

output "node" {
  value = module.node
}
`})
	d.copyModule("gpu-node")
	d.run("get")
	vmVar, pgVar := "-var=virtual_machine_id="+lab.VMUUID(vm), "-var=port_group_id="+portGroup
	d.vars = []string{vmVar, pgVar}
	d.run("apply", "-auto-approve", "-input=false", vmVar, pgVar)
	var node struct {
		MAC        string  `json:"pvrdma_mac_address"`
		MMIOSizeGB int64   `json:"mmio_size_gb"`
		TotalGB    float64 `json:"total_gpu_memory_gb"`
		GuestSetup string  `json:"guest_setup"`
	}
	d.output("node", &node)
	if !regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){5}$`).MatchString(node.MAC) || node.MMIOSizeGB != mmioGB || node.TotalGB != totalGB ||
		!regexp.MustCompile(`(?s)MMIO window `+strconv.FormatInt(mmioGB, 10)+` GB.*expect 2 GPU\(s\).*sudo modprobe rdma_ucm\n`+
			`\s*sudo modprobe -r vmw_pvrdma .*\n\s*sudo modprobe vmw_pvrdma\n.*ib_send_bw --report_gbits`).
			MatchString(node.GuestSetup) {
		t.Fatalf("outputs %+v", node)
	}
	settings, err := lab.VMSettings(context.Background(), vm)
	acctest.Must(t, err)
	if settings.Firmware != "efi" || len(settings.GPUs) != 2 {
		t.Fatalf("VM %s: %+v, want EFI and 2 GPUs", vm, settings)
	}
	expectNoChanges(t, d, vmVar, pgVar)
	expectFailure(t, d, regexp.MustCompile(`pvrdma_adapter is true but port_group_id is not set`), vmVar)
	d.run("destroy", "-auto-approve", "-input=false", vmVar, pgVar)
}

// gpu-node given devices without GPUs refuses at plan instead of dropping
// them silently (issue 22, item 3).
func TestAccModuleGPUNode_devicesWithoutGPUs(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	d := newTFDir(t, lab, map[string]string{"main.tf": `
module "node" {
  source = "./modules/gpu-node"

  virtual_machine_id = "` + lab.VMUUID(lab.VMNames()[0]) + `"
  pvrdma_adapter     = false
  pci_device_ids     = ["0000:86:00.2"]
}
`})
	d.copyModule("gpu-node")
	d.run("get")
	expectFailure(t, d, regexp.MustCompile(`(?s)pci_device_ids is given but gpu_pci_ids and vgpus are empty.*List the GPUs in gpu_pci_ids`))
}

// gpu-node gives a VM vGPUs on a host whose GPUs are in Shared Direct:
// applied, reported, planned empty after.
func TestAccModuleGPUNode_vgpus(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "sets a host's graphics and reboots it")
	vm := lab.VMNames()[0]
	sharedDirectHost(t, lab, lab.VMHostName(vm))
	d := newTFDir(t, lab, map[string]string{"main.tf": `
module "node" {
  source = "./modules/gpu-node"

  virtual_machine_id = "` + lab.VMUUID(vm) + `"
  pvrdma_adapter     = false
  vgpus              = { "grid_a100-20c" = 2 }
}

output "node" {
  value = module.node
}
`})
	d.copyModule("gpu-node")
	d.run("get")
	d.run("apply", "-auto-approve", "-input=false")
	var node struct {
		MMIOSizeGB int64            `json:"mmio_size_gb"`
		VGPUs      map[string]int64 `json:"vgpus"`
	}
	d.output("node", &node)
	if node.MMIOSizeGB != 64 || len(node.VGPUs) != 1 || node.VGPUs["grid_a100-20c"] != 2 {
		t.Fatalf("outputs %+v, want a 64 GB window and two grid_a100-20c", node)
	}
	acctest.Must(t, vmVGPUsAre(lab, vm, "grid_a100-20c", "grid_a100-20c")(nil))
	expectNoChanges(t, d)
	d.run("destroy", "-auto-approve", "-input=false")
	acctest.Must(t, vmVGPUsAre(lab, vm)(nil))
}
