package provider

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// fleetConfig is scripts/bench-scale.sh's configuration (with count, as the
// testing framework's state shim takes no for_each): the PVRDMA switch over
// every host, host settings on every host, a PVRDMA adapter on every VM,
// each host and VM found by a look-up by name, the resources' ids from
// lists computed once in locals, as the guide writes a fleet (an argument
// that names a look-up reads all of its instances, for every instance).
func fleetConfig(lab *vcsimlab.Lab) string {
	var vms []string
	for _, n := range lab.VMNames() {
		if !lab.Simulated() || strings.HasPrefix(n, "hpc-node-") { // not the lab's bare-node, legacy-node, installed-node
			vms = append(vms, n)
		}
	}
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_datacenter" "dc" {
  name = %q
}

locals {
  hosts    = %s
  vms      = %s
  host_ids = data.vspherehpc_host.h[*].id
  vm_ids   = data.vspherehpc_virtual_machine.vm[*].id
}

data "vspherehpc_host" "h" {
  count         = length(local.hosts)
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = local.hosts[count.index]
}

data "vspherehpc_virtual_machine" "vm" {
  count         = length(local.vms)
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = local.vms[count.index]
}

resource "vspherehpc_rdma_dvs" "fabric" {
  datacenter_id = data.vspherehpc_datacenter.dc.id
  name          = %q
  port_group {
    name = %q
  }
  dynamic "host" {
    for_each = data.vspherehpc_host.h
    content {
      host_system_id = host.value.id
      vmnic          = %q
    }
  }
}

resource "vspherehpc_host_pvrdma_settings" "h" {
  count          = length(local.hosts)
  host_system_id = local.host_ids[count.index]
  vmknic         = %q
}

resource "vspherehpc_vm_pvrdma_nic" "n" {
  count                     = length(local.vms)
  virtual_machine_id        = local.vm_ids[count.index]
  distributed_port_group_id = vspherehpc_rdma_dvs.fabric.port_group_id
}
`, lab.DatacenterName(), hclList(lab.HostNames()), hclList(vms),
		testName("fleet-dvs"), testName("fleet-pvrdma"), lab.RDMANICs()[0], lab.Vmknic())
}

// The calls an apply and a refresh of a fleet take, counted by the lab: 16
// hosts and 64 VMs (81 look-ups by name, 81 resources) at Terraform's
// default parallelism. Look-ups read the datacenter's names once per kind; no VM's
// UUID is searched and no host's option queried apart from the shared
// reads; what is left is the property-collector reads, which calls made at
// the same moment share, and which a prefetch answers once many VMs are
// read alike. The budgets count the shared reads (see budgetCalls), not how
// they happened to meet.
func TestAccFleet_calls(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 16, VMs: 64})
	simulatedOnly(t, lab, "counts SOAP calls")
	config := fleetConfig(lab)
	clients := &vsphere.Clients{}
	var before vsphere.ReadStats
	reset := func() {
		lab.ResetCalls()
		before = clients.ReadStats()
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
			"vspherehpc": providerserver.NewProtocol6WithError(&vspherehpcProvider{version: "test", clients: clients}),
		},
		Steps: []resource.TestStep{
			{
				// The apply, its plan included (issue 39): at most 4 calls
				// per resource at Terraform's default parallelism (counted
				// 186: 2.3), 6 at parallelism 1 (counted 466: 5.8; make
				// bench-scale measured 476 with PARALLELISM=1).
				PreConfig: reset, Config: config,
				Check: func(*terraform.State) error {
					resources := 1 + 16 + 64
					for _, b := range []struct{ parallelism, perResource int }{{terraformParallelism, 4}, {1, 6}} {
						counted, actual, calls := budgetCalls(lab, clients, before, b.parallelism)
						t.Logf("apply of 16 hosts and 64 VMs at parallelism %d: %d calls as budgeted (%d made): %v", b.parallelism, counted, actual, calls)
						if counted > b.perResource*resources {
							return fmt.Errorf("apply took %d calls as budgeted at parallelism %d for %d resources, want at most %d: %v",
								counted, b.parallelism, resources, b.perResource*resources, calls)
						}
					}
					return nil
				},
			},
			{
				RefreshState: true,
				PreConfig:    reset,
				Check: func(*terraform.State) error {
					counted, actual, calls := budgetCalls(lab, clients, before, terraformParallelism)
					t.Logf("refresh of 16 hosts and 64 VMs: %d calls as budgeted (%d made): %v", counted, actual, calls)
					for _, m := range []string{"FindAllByUuid", "QueryOptions", "QueryConfigOptionEx", "CreateFilter"} {
						if calls[m] != 0 {
							return fmt.Errorf("refresh called %s %d times, want none: %v", m, calls[m], calls)
						}
					}
					// Without sharing: 2 names + 16 hosts + 64 VMs + 1 switch
					// + 32 host settings + 64 adapters + 3 session = 182.
					if counted > fleetRefreshBudget {
						return fmt.Errorf("refresh took %d calls as budgeted, want at most %d: %v", counted, fleetRefreshBudget, calls)
					}
					return nil
				},
			},
		},
	})
}

// fleetRefreshBudget is issue 14's target for this refresh. Counted 4 (see
// TestAccFleet_refreshWithLookupsIsDeterministic): the session's two calls,
// the command's first read of every kind, which answers the datacenter,
// the name look-ups, the VMs and the switch, and the first host read's
// prefetch of every host, which answers the hosts and their settings.
const fleetRefreshBudget = 30

// terraformParallelism is how many operations Terraform runs at once by
// default, so how many reads at most meet in a shared call.
const terraformParallelism = 10

// budgetCalls is the lab's calls since the last reset: counted as the
// budgets count them at parallelism, in all as made, and by method. Which
// shared reads meet in one call depends on when Terraform sends them, so
// on the machine's speed (a busy machine makes more, smaller calls), and
// the reads themselves do not: the budgets count the shared reads at
// parallelism a call (at 1, each read is a call of its own but for those an
// inOneCall joined, see vsphere.ReadStats), a task's state
// (read until the task ends, as often as that takes) once per task, and
// every other call as made.
func budgetCalls(lab *vcsimlab.Lab, clients *vsphere.Clients, before vsphere.ReadStats, parallelism int) (counted, actual int, calls map[string]int) {
	calls = lab.Calls()
	reads, tasks := clients.ReadStats(), 0
	for m, n := range calls {
		actual += n
		if strings.HasSuffix(m, "_Task") {
			tasks += n
		}
	}
	shared := reads.Reads - before.Reads + tasks
	if parallelism == 1 {
		shared -= reads.Joined - before.Joined
	}
	counted = actual - (reads.Calls - before.Calls) + (shared+parallelism-1)/parallelism
	return counted, actual, calls
}

// A refresh of resources given by ids (no look-ups, as when the vSphere
// provider creates the VMs) is independent of the fleet's size and makes the
// same calls every time (issue 25): the first read of each kind reads the
// kind's population (see vsphere's prefetch.go), so 16 hosts and 64 VMs
// refresh in a handful of property-collector calls, every time alike.
func TestAccFleet_refreshByIDIsDeterministic(t *testing.T) {
	t.Parallel()
	refreshesAlike(t, vcsimlab.Options{Hosts: 16, VMs: 64}, 0, fleetByIDConfig, "16 hosts and 64 VMs given by id", 3, 2)
}

// The same at 64 hosts and 256 VMs with a real vCenter's round trip on
// every call (20 ms, from the first refresh on: the apply runs at full
// speed), where the shared calls' waits meet real latency: the same calls
// every time, and as few as at 16 and 64.
func TestAccFleet_refreshAtScaleWithLatencyIsDeterministic(t *testing.T) {
	t.Parallel()
	needsScaleRun(t)
	refreshesAlike(t, vcsimlab.Options{Hosts: 64, VMs: 256}, 20*time.Millisecond, fleetByIDConfig,
		"64 hosts and 256 VMs given by id, 20 ms per call", 3, 2)
}

// needsScaleRun skips a test at fleet size unless VSPHEREHPC_TEST_SCALE is
// set (make test-scale sets it, and CI runs it): one such test takes 1 to
// 3 minutes of a 2-core machine, most of it Terraform's own CPU for 600
// resource instances, too long for make test. Run there, a skip fails.
func needsScaleRun(t *testing.T) {
	t.Helper()
	if os.Getenv("VSPHEREHPC_TEST_SCALE") == "" {
		t.Skip("a test at fleet size: make test-scale runs it (VSPHEREHPC_TEST_SCALE=1)")
	}
}

// Whether refreshes make the same calls does not depend on the machine's
// speed. On a slow machine a command runs longer than the sessions'
// keep-alive interval, and keep-alives (CurrentTime) go out: from clients
// left idle (those of earlier commands, still alive in the test process),
// or a refresh's own between Terraform's calls. Here sessions send one
// whenever they sit idle for 20 ms, as on the slowest machine: the refreshes
// still make the same calls, and the lab saw keep-alives during them.
func TestAccFleet_refreshesAlikeWhateverTheKeepAlives(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{Hosts: 2, VMs: 4})
	simulatedOnly(t, lab, "counts SOAP calls")
	refreshes := sameRefreshes(t, lab, "2 hosts and 4 VMs found by name, keep-alives every 20 ms idle", 2, 2)
	keepAlives := 0
	for i := range refreshes {
		check := refreshes[i].Check
		refreshes[i].Check = func(s *terraform.State) error {
			keepAlives += lab.KeepAlives()
			return check(s)
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
			"vspherehpc": providerserver.NewProtocol6WithError(&vspherehpcProvider{version: "test", keepAliveIdle: 20 * time.Millisecond}),
		},
		Steps: append([]resource.TestStep{{Config: fleetConfig(lab)}}, refreshes...),
	})
	if keepAlives == 0 {
		t.Error("the lab saw no keep-alive during the refreshes: the test did not send what a slow machine does")
	}
}

// refreshesAlike applies config on a lab of the given size at full speed,
// then refreshes it n times, latency added to every call, with
// sameRefreshes.
func refreshesAlike(t *testing.T, size vcsimlab.Options, latency time.Duration, config func(*vcsimlab.Lab) string, what string, n, most int) {
	t.Helper()
	lab := startLab(t, size)
	simulatedOnly(t, lab, "counts SOAP calls and sets the latency")
	refreshes := sameRefreshes(t, lab, what, n, most)
	reset := refreshes[0].PreConfig
	refreshes[0].PreConfig = func() {
		lab.SetLatency(latency)
		reset()
	}
	cfg := config(lab) // once: a configuration may build what it names in the lab
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    append(append([]resource.TestStep{{Config: cfg}}, refreshes...), planCalls(t, lab, cfg, what, most)),
	})
}

// planCalls is a plan step whose full plan (the second, with refresh: the
// first plans without) makes the calls a refresh does: at most most
// RetrievePropertiesEx, at most refreshCallsInAll in all.
func planCalls(t *testing.T, lab *vcsimlab.Lab, config, what string, most int) resource.TestStep {
	var before map[string]int
	return resource.TestStep{
		Config:   config,
		PlanOnly: true,
		ConfigPlanChecks: resource.ConfigPlanChecks{
			PostApplyPreRefresh: []plancheck.PlanCheck{planCheckFunc(func() error {
				before = lab.Calls()
				return nil
			})},
			PostApplyPostRefresh: []plancheck.PlanCheck{planCheckFunc(func() error {
				calls := lab.Calls()
				for m, n := range before {
					if calls[m] -= n; calls[m] == 0 {
						delete(calls, m)
					}
				}
				t.Logf("plan of %s: %v", what, calls)
				if calls["RetrievePropertiesEx"] > most || callsInAll(calls) > refreshCallsInAll(most) {
					return fmt.Errorf("plan made %v, want at most %d RetrievePropertiesEx and %d calls in all", calls, most, refreshCallsInAll(most))
				}
				return nil
			})},
		},
	}
}

// planCheckFunc is a plan check that needs no plan.
type planCheckFunc func() error

func (f planCheckFunc) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = f()
}

// fleetByIDConfig is a switch over every host, PVRDMA settings on every
// host and an adapter on every hpc-node VM, each given by id.
func fleetByIDConfig(lab *vcsimlab.Lab) string {
	var hosts, nics strings.Builder
	for _, h := range lab.HostNames() {
		fmt.Fprintf(&hosts, "  host {\n    host_system_id = %q\n    vmnic          = %q\n  }\n", lab.HostID(h), lab.RDMANICs()[0])
	}
	var uuids []string
	for _, n := range lab.VMNames() {
		if strings.HasPrefix(n, "hpc-node-") {
			uuids = append(uuids, lab.VMUUID(n))
		}
	}
	fmt.Fprintf(&nics, `
resource "vspherehpc_vm_pvrdma_nic" "n" {
  count                     = length(local.vms)
  virtual_machine_id        = local.vms[count.index]
  distributed_port_group_id = vspherehpc_rdma_dvs.fabric.port_group_id
}

resource "vspherehpc_host_pvrdma_settings" "h" {
  count          = length(local.hosts)
  host_system_id = local.hosts[count.index]
  vmknic         = %q
}

locals {
  vms   = %s
  hosts = %s
}
`, lab.Vmknic(), hclList(uuids), hclList(func() []string {
		var ids []string
		for _, h := range lab.HostNames() {
			ids = append(ids, lab.HostID(h))
		}
		return ids
	}()))
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_rdma_dvs" "fabric" {
  datacenter_id = %q
  name          = %q
  port_group {
    name = %q
  }
%s}
`, lab.DatacenterID(), testName("fleet-dvs"), testName("fleet-pvrdma"), hosts.String()) + nics.String()
}

// Issue 25's configuration: an adapter and GPU/MMIO settings on each of 64
// VMs, given by id, on a PVRDMA port group the administrator made by hand.
// The adapters' and the GPU setups' reads are answered by one read of every
// VM, and an unchanged GPU setup plans with no call: terraform refresh
// (which Terraform runs as a whole plan) makes that one call after
// connecting, every time. (apply -refresh-only makes the same: make
// bench-scale FLEET=vms.)
func TestAccFleet_adaptersAndGPUSetupsRefreshInOneRead(t *testing.T) {
	t.Parallel()
	refreshesAlike(t, vcsimlab.Options{Hosts: 16, VMs: 64}, 0, vmsByIDConfig(t), "64 VMs' adapters and GPU setups given by id", 2, 1)
}

// vmsByIDConfig makes a PVRDMA switch over every host and its port group by
// hand, and returns the configuration of an adapter on that port group and
// GPU/MMIO settings on every hpc-node VM, each VM given by id.
func vmsByIDConfig(t *testing.T) func(*vcsimlab.Lab) string {
	return func(lab *vcsimlab.Lab) string {
		portGroup := handMadeSwitch(t, lab, "hpc-fabric", "hpc-pvrdma", 128)
		var uuids []string
		for _, n := range lab.VMNames() {
			if strings.HasPrefix(n, "hpc-node-") {
				uuids = append(uuids, lab.VMUUID(n))
			}
		}
		return acctest.ProviderConfig(lab) + fmt.Sprintf(`
locals {
  vms = %s
}

resource "vspherehpc_vm_pvrdma_nic" "n" {
  count                     = length(local.vms)
  virtual_machine_id        = local.vms[count.index]
  distributed_port_group_id = %q
}

resource "vspherehpc_vm_gpu_mmio" "g" {
  count              = length(local.vms)
  virtual_machine_id = local.vms[count.index]
  mmio_size_gb       = 256
  power_off_allowed  = true
}
`, hclList(uuids), portGroup)
	}
}

// The same refresh with look-ups by name: the datacenter, the index of its
// host and VM names, every VM and the switch answered by the command's
// first read of every kind, every host and host's settings by the first
// host read's, the same every time.
func TestAccFleet_refreshWithLookupsIsDeterministic(t *testing.T) {
	t.Parallel()
	refreshesAlike(t, vcsimlab.Options{Hosts: 16, VMs: 64}, 0, fleetConfig, "16 hosts and 64 VMs found by name", 3, 2)
}

// And at 64 hosts and 256 VMs found by name, 20 ms per call: as many calls
// as at 16 and 64. Refreshed twice, not three times: the apply of this size
// takes most of the test's minutes, and a third refresh adds nothing the
// second does not check.
func TestAccFleet_refreshWithLookupsAtScaleWithLatencyIsDeterministic(t *testing.T) {
	t.Parallel()
	needsScaleRun(t)
	refreshesAlike(t, vcsimlab.Options{Hosts: 64, VMs: 256}, 20*time.Millisecond, fleetConfig,
		"64 hosts and 256 VMs found by name, 20 ms per call", 2, 2)
}

// refreshCallsInAll bounds a refresh's calls (issue 39): the service
// content, the login, its most RetrievePropertiesEx (the command's first
// prefetch, prefetch_all.go, and the hosts' when it reads hosts) and the
// logout: at most 4 one after the other.
func refreshCallsInAll(most int) int { return 3 + most }

func callsInAll(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// sameRefreshes is n refresh steps, each counting its calls: every one must
// make the calls the first made, at most most RetrievePropertiesEx, and at
// most refreshCallsInAll calls in all, so at most that many one after the
// other whatever the configuration's depth. Session keep-alives are not
// among the calls (see vcsimlab's KeepAlives): how many go out depends on
// the machine's speed.
func sameRefreshes(t *testing.T, lab *vcsimlab.Lab, what string, n, most int) []resource.TestStep {
	var first map[string]int
	var steps []resource.TestStep
	for i := range n {
		steps = append(steps, resource.TestStep{
			RefreshState: true,
			PreConfig:    lab.ResetCalls,
			Check: func(*terraform.State) error {
				calls := lab.Calls()
				t.Logf("refresh %d of %s: %v, and %d keep-alives", i+1, what, calls, lab.KeepAlives())
				if first == nil {
					first = calls
				} else if fmt.Sprint(calls) != fmt.Sprint(first) {
					return fmt.Errorf("refresh %d made %v, refresh 1 %v: the same configuration must make the same calls", i+1, calls, first)
				}
				if calls["RetrievePropertiesEx"] > most {
					return fmt.Errorf("refresh made %d RetrievePropertiesEx, want at most %d: %v", calls["RetrievePropertiesEx"], most, calls)
				}
				if inAll := callsInAll(calls); inAll > refreshCallsInAll(most) {
					return fmt.Errorf("refresh made %d calls, want at most %d: %v", inAll, refreshCallsInAll(most), calls)
				}
				return nil
			},
		})
	}
	return steps
}
