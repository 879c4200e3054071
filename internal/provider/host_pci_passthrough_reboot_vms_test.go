package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A reboot and the VM changes of the same plan (issue 37, item 2). The lab's
// first VM runs on a host that applies passthrough changes only when it
// reboots; the plan turns the host's A100 on with reboot_allowed.

// rebootA100Config turns the A100 of host on with a reboot inside the apply;
// extra goes into the resource block.
func rebootA100Config(lab *vcsimlab.Lab, host, extra string) string {
	return fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "a100" {
  host_system_id = %q
  pci_ids        = [%q]
  reboot_allowed = true
%s
}
`, lab.HostID(host), a100, extra)
}

// vmGPUMMIOOneGPUConfig gives vm a GPU by PCI id; extra goes into the resource
// block, vmID is the virtual_machine_id expression.
func vmGPUMMIOOneGPUConfig(vmID, gpu, extra string) string {
	return fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "node" {
  virtual_machine_id = %s
  power_off_allowed  = true
  gpu {
    pci_id = %q
  }
%s
}
`, vmID, gpu, extra)
}

// A host resource planned after a change to a VM on its host (here forced:
// it depends on the VM's resource) is refused: the VM's resource cannot
// refer to it, so the two would run in any order, at once. The message
// names both and the fix.
func TestAccHostPCIPassthrough_rebootPlannedAfterAVMChangeIsRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	config := acctest.ProviderConfig(lab) + vmGPUMMIOOneGPUConfig(fmt.Sprintf("%q", lab.VMUUID(vm)), lab.GPUs()[0], "") +
		rebootA100Config(lab, host, "  depends_on = [vspherehpc_vm_gpu_mmio.node]")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:   config,
			PlanOnly: true,
			ExpectError: wrappedInOrder(fmt.Sprintf("This apply reboots host %[1]s (%[2]s) for the vspherehpc_host_pci_passthrough of host "+
				"%[1]s (%[2]s), and this configuration also changes virtual machine %[3]s (%[4]s) on that host: the vspherehpc_vm_gpu_mmio of "+
				"virtual machine %[3]s (%[4]s), planned before this resource. Terraform plans a resource after those it refers to",
				host, lab.HostID(host), vm, lab.VMUUID(vm)), "Make the VM's resource depend on this one (add this "+
				"vspherehpc_host_pci_passthrough to its depends_on), so that the reboot is applied first"),
		}},
	})
}

// A running VM given a GPU of the host that the same plan reboots is
// refused, in whichever order Terraform plans the two: maintenance mode
// could not move it. The fix works with the command being run.
func TestAccHostPCIPassthrough_rebootUnderARunningVMTakingItsDevicesIsRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	acctest.Must(t, lab.PowerOnVM(context.Background(), vm))
	refusal := wrappedInOrder(fmt.Sprintf("This apply reboots the host of virtual machine %s (%s), for the "+
		"vspherehpc_host_pci_passthrough of host %s (%s), and the vspherehpc_vm_gpu_mmio of virtual machine %s (%s) leaves the VM running "+
		"with passthrough or SR-IOV devices or vGPUs of that host.", vm, lab.VMUUID(vm), host, lab.HostID(host), vm, lab.VMUUID(vm)),
		"Power the VM off before this apply (the vspherehpc_vm_power action, or the vSphere Client), or apply the "+
			"host's resource alone first (terraform apply -target=<its address>), then the rest.")
	vmID := fmt.Sprintf("%q", lab.VMUUID(vm))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// The VM's resource planned after the host's.
				Config: acctest.ProviderConfig(lab) + rebootA100Config(lab, host, "") +
					vmGPUMMIOOneGPUConfig(vmID, lab.GPUs()[0], "  depends_on = [vspherehpc_host_pci_passthrough.a100]"),
				PlanOnly:    true,
				ExpectError: refusal,
			},
			{
				// The host's planned after the VM's.
				Config: acctest.ProviderConfig(lab) + vmGPUMMIOOneGPUConfig(vmID, lab.GPUs()[0], "") +
					rebootA100Config(lab, host, "  depends_on = [vspherehpc_vm_gpu_mmio.node]"),
				PlanOnly:    true,
				ExpectError: refusal,
			},
		},
		CheckDestroy: rebootWindows(lab),
	})
}

// gatedVMID is a virtual_machine_id known only once terraform_data.gate is
// created, which waits for the file open: the VM's resource is planned
// without a VM (so it checks nothing at plan and refers to no host
// resource), and planned again at apply only once the test opens the gate.
func gatedVMID(t *testing.T, vmUUID string) (config, open string) {
	open = filepath.Join(t.TempDir(), "open")
	return fmt.Sprintf(`
resource "terraform_data" "gate" {
  input = %q
  provisioner "local-exec" {
    command = "while [ ! -e %s ]; do sleep 0.05; done"
  }
}
`, vmUUID, open), open
}

// openWhenInMaintenance opens the gate once host is in maintenance mode,
// so the VM's resource is planned again at apply while the host reboots.
// The gate opens at the end of the test in any case.
func openWhenInMaintenance(t *testing.T, lab *vcsimlab.Lab, host, open string) {
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		_ = os.WriteFile(open, nil, 0o600)
	})
	go func() {
		for {
			for _, w := range lab.MaintenanceWindows() {
				if w.Host == host {
					_ = os.WriteFile(open, nil, 0o600)
					return
				}
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
}

// vmReconfiguredAfterReboot checks, in the VM's task history, that every
// reconfiguration of the VM started after its host left maintenance mode.
func vmReconfiguredAfterReboot(lab *vcsimlab.Lab, vm, host string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		windows := lab.MaintenanceWindows()
		if len(windows) != 1 || windows[0].Host != host || windows[0].End.IsZero() {
			return fmt.Errorf("maintenance windows %+v, want one closed window of %s", windows, host)
		}
		ctx := context.Background()
		c := lab.Client()
		var v mo.VirtualMachine
		if err := property.DefaultCollector(c.Client).RetrieveOne(ctx, types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(vm)},
			[]string{"recentTask"}, &v); err != nil {
			return err
		}
		var tasks []mo.Task
		if err := property.DefaultCollector(c.Client).Retrieve(ctx, v.RecentTask, []string{"info"}, &tasks); err != nil {
			return err
		}
		reconfigured := 0
		for _, task := range tasks {
			if !strings.Contains(strings.ToLower(task.Info.DescriptionId), "reconfig") {
				continue
			}
			reconfigured++
			if task.Info.QueueTime.Before(windows[0].End) {
				return fmt.Errorf("virtual machine %s was reconfigured (%s at %s) before host %s left maintenance mode (%s)", vm,
					task.Info.DescriptionId, task.Info.QueueTime.Format(time.RFC3339Nano), host, windows[0].End.Format(time.RFC3339Nano))
			}
		}
		if reconfigured == 0 {
			return fmt.Errorf("virtual machine %s has no reconfiguration in its tasks", vm)
		}
		return nil
	}
}

// A powered-off VM's change planned after the reboot of its host, with no
// reference to the host's resource, waits at apply for that resource's
// apply to end: the VM gets the A100 the reboot makes active, and its
// reconfiguration comes after the host left maintenance mode. The VM's
// resource is planned again at apply while the host is in maintenance mode.
func TestAccHostPCIPassthrough_rebootWaitedForByTheVMChange(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	gate, open := gatedVMID(t, lab.VMUUID(vm))
	hostOnly := acctest.ProviderConfig(lab) + rebootA100Config(lab, host, "") + gate
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { openWhenInMaintenance(t, lab, host, open) },
				Config:    hostOnly + vmGPUMMIOOneGPUConfig("terraform_data.gate.output", a100, ""),
				Check:     resource.ComposeTestCheckFunc(vmDevicesAre(lab, vm, a100), vmReconfiguredAfterReboot(lab, vm, host)),
			},
			// The VM's setup goes first, so the host's destroy finds the
			// A100 free (without a reference, destroys too run in any order).
			{Config: hostOnly},
		},
	})
}

// The same, with the reboot failing: the VM's change, waiting for it, fails
// naming the host's resource and its failure, and changes nothing.
func TestAccHostPCIPassthrough_rebootFailedFailsTheWaitingVMChange(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	gate, open := gatedVMID(t, lab.VMUUID(vm))
	hostOnly := acctest.ProviderConfig(lab) + rebootA100Config(lab, host, "") + gate
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					lab.FailTaskOnce("RebootHost_Task", host, &types.HostConfigFault{})
					openWhenInMaintenance(t, lab, host, open)
				},
				Config: hostOnly + vmGPUMMIOOneGPUConfig("terraform_data.gate.output", a100, ""),
				ExpectError: acctest.Wording(fmt.Sprintf("Virtual machine %s was not changed: its change waits for the host reboot planned by the "+
					"vspherehpc_host_pci_passthrough of host %s (%s), and that apply failed: Cannot reboot host %s", lab.VMUUID(vm), host,
					lab.HostID(host), lab.HostID(host))),
			},
			{
				// The VM is as it was; the host's resource, tainted, is
				// replaced.
				PreConfig: func() {
					if err := vmDevicesAre(lab, vm)(nil); err != nil {
						t.Error(err)
					}
				},
				Config: hostOnly,
				Check:  passthroughActive(lab, host, a100, true),
			},
		},
	})
}

// Two Terraform runs at once (two working directories, each with its own
// provider process, as two workspaces have) reboot two hosts of one
// cluster (issue 37, item 3): the second waits before maintenance mode,
// saying at INFO which host it waits for, until the first host is back and
// out of maintenance mode; the lab never has both in maintenance mode.
func TestAccHostPCIPassthrough_rebootsOfTwoRunsTakeTurns(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "keeps a host down")
	a, b := lab.HostNames()[0], lab.HostNames()[1]
	run := func(host string) *tfDir {
		return newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + rebootA100Config(lab, host, "")})
	}
	first, second := run(a), run(b)
	logFile := filepath.Join(t.TempDir(), "terraform.log")
	second.env = append(second.env, "TF_LOG=INFO", "TF_LOG_PATH="+logFile)
	lab.KeepHostDown(a) // the first run's host stays down until the second is seen waiting
	type result struct {
		out string
		err error
	}
	apply := func(d *tfDir) <-chan result {
		ch := make(chan result, 1)
		go func() {
			out, err := d.try("apply", "-auto-approve")
			ch <- result{out, err}
		}()
		return ch
	}
	firstDone := apply(first)
	for len(lab.MaintenanceWindows()) == 0 {
		time.Sleep(20 * time.Millisecond) // until a is in maintenance mode, however long that takes
	}
	secondDone := apply(second)
	waiting := fmt.Sprintf("waiting for host %s (%s) of its cluster to leave maintenance mode", a, lab.HostID(a))
	for {
		log, _ := os.ReadFile(logFile)
		if strings.Contains(string(log), waiting) {
			if !strings.Contains(string(log), "[INFO]") {
				t.Errorf("the wait is not logged at INFO:\n%s", log)
			}
			break
		}
		select {
		case r := <-secondDone:
			t.Fatalf("the second run ended (%v) without waiting for %s:\n%s", r.err, a, r.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if windows := lab.MaintenanceWindows(); len(windows) != 1 {
		t.Errorf("host %s entered maintenance mode while %s was in it: %+v", b, a, windows)
	}
	acctest.Must(t, lab.BringHostUp(a))
	for _, done := range []<-chan result{firstDone, secondDone} {
		if r := <-done; r.err != nil {
			t.Fatalf("terraform apply: %v\n%s", r.err, r.out)
		}
	}
	if err := rebootWindows(lab, a, b)(nil); err != nil {
		t.Error(err)
	}
}

// A host of the cluster left in maintenance mode holds a reboot for at most
// reboot_timeout: the apply then fails naming it, with what to do, before
// the resource's own host is touched. reboot_timeout is at least a minute:
// the test waits that long.
func TestAccHostPCIPassthrough_rebootTurnWaitIsBounded(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "puts a host in maintenance mode")
	ctx := context.Background()
	a, b := lab.HostNames()[0], lab.HostNames()[1]
	task, err := object.NewHostSystem(lab.Client().Client, types.ManagedObjectReference{Type: "HostSystem", Value: lab.HostID(a)}).
		EnterMaintenanceMode(ctx, 0, false, nil)
	acctest.Must(t, err)
	acctest.Must(t, task.Wait(ctx))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig(lab) + rebootA100Config(lab, b, `  reboot_timeout = "1m"`),
			ExpectError: acctest.Wording(fmt.Sprintf("host %s was not rebooted: host %s (%s) of its cluster was in maintenance mode, or entering it, "+
				"for the 1m0s its reboot may wait for its turn (hosts of a cluster reboot one at a time, whichever run or client takes them "+
				"there). reboot_timeout bounds this wait too: take that host out of maintenance mode once what put it there is done", b, a,
				lab.HostID(a))),
		}},
		CheckDestroy: func(*terraform.State) error {
			if windows := lab.MaintenanceWindows(); len(windows) != 1 || windows[0].Host != a {
				return fmt.Errorf("maintenance windows %+v, want only %s's", windows, a)
			}
			return passthroughIs(lab, b, a100, false)(nil)
		},
	})
}
