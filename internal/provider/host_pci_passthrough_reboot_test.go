package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// rebootWindows checks the lab rebooted exactly these hosts through
// maintenance mode, each window closed, no two of one cluster at once.
func rebootWindows(lab *vcsimlab.Lab, hosts ...string) func(*terraform.State) error {
	return func(*terraform.State) error {
		windows := lab.MaintenanceWindows()
		if len(windows) != len(hosts) {
			return fmt.Errorf("maintenance windows %+v, want one for each of %v", windows, hosts)
		}
		seen := map[string]bool{}
		for i, w := range windows {
			seen[w.Host] = true
			if w.End.IsZero() {
				return fmt.Errorf("host %s is still in maintenance mode", w.Host)
			}
			for _, o := range windows[:i] {
				if w.Start.Before(o.End) && o.Start.Before(w.End) {
					return fmt.Errorf("hosts %s and %s of one cluster were in maintenance mode at once: %+v", o.Host, w.Host, windows)
				}
			}
		}
		for _, h := range hosts {
			if !seen[h] {
				return fmt.Errorf("host %s was not rebooted: %+v", h, windows)
			}
		}
		return nil
	}
}

// With reboot_allowed, the apply that turns passthrough on reboots the host
// (which applies it only then): the device is active and reboot_required
// false in the plan and after the apply, the host went through maintenance
// mode, and the next plan is empty. Two hosts of one cluster changing in
// one apply reboot one after the other.
func TestAccHostPCIPassthrough_rebootInsideApply(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	hosts := lab.HostNames()
	active := tfjsonpath.New("devices").AtSliceIndex(0).AtMapKey("active")
	config := acctest.ProviderConfig(lab)
	for i, h := range hosts[:2] {
		config += fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "p%d" {
  host_system_id = %q
  pci_ids        = [%q]
  reboot_allowed = true
}
`, i, lab.HostID(h), a100)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		// Destroy turns passthrough back off, and reboots for it.
		CheckDestroy: resource.ComposeTestCheckFunc(rebootWindows(lab, hosts[0], hosts[1], hosts[0], hosts[1]),
			passthroughIs(lab, hosts[0], a100, false), passthroughActive(lab, hosts[1], a100, false)),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue("vspherehpc_host_pci_passthrough.p0", tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
					plancheck.ExpectKnownValue("vspherehpc_host_pci_passthrough.p0", active, knownvalue.Bool(true)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("vspherehpc_host_pci_passthrough.p0", active, knownvalue.Bool(true)),
					statecheck.ExpectKnownValue("vspherehpc_host_pci_passthrough.p1", tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				},
				Check: resource.ComposeTestCheckFunc(rebootWindows(lab, hosts[0], hosts[1]), passthroughIs(lab, hosts[0], a100, true)),
			},
			{Config: config, PlanOnly: true},
		},
	})
}

// The plan refuses to reboot a host whose running VMs maintenance mode
// could not move: one with a GPU (no vMotion), any under manual DRS, or
// one whose own DRS override is manual.
// Without the opt-in the change waits for a reboot, as before.
func TestAccHostPCIPassthrough_rebootRefused(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	acctest.Must(t, lab.AttachGPU(ctx, vm, lab.GPUs()[0]))
	acctest.Must(t, lab.PowerOnVM(ctx, vm))
	config := hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true", a100))
	other := lab.VMNames()[1]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, PlanOnly: true, ExpectError: acctest.Wording(fmt.Sprintf("This apply would reboot host %s (%s) to apply passthrough "+
				"changes, but its running virtual machines %s would keep it from entering maintenance mode: a VM with a PCI passthrough "+
				"or SR-IOV device cannot be migrated.", host, lab.HostID(host), vm))},
			{
				PreConfig: func() {
					acctest.Must(t, lab.PowerOffVM(ctx, vm))
					acctest.Must(t, lab.SetClusterDRS(ctx, true, "manual"))
					acctest.Must(t, lab.PowerOnVM(ctx, other))
				},
				Config:      hostPCIPassthroughConfig(lab, lab.VMHostName(other), fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true", a100)),
				PlanOnly:    true,
				ExpectError: acctest.Wording("the cluster's DRS is not fully automated, so maintenance mode moves no VM"),
			},
			{
				// The VM's own override counts, as the cluster's VM Overrides set it.
				PreConfig: func() {
					acctest.Must(t, lab.SetClusterDRS(ctx, true, "fullyAutomated"))
					acctest.Must(t, lab.SetVMDRSOverride(ctx, other, true, "manual"))
				},
				Config:   hostPCIPassthroughConfig(lab, lab.VMHostName(other), fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true", a100)),
				PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						"its running virtual machines %s would keep it from entering maintenance mode: DRS moves no VM whose automation level is not fully automated",
						other,
					),
				),
			},
			{
				Config: hostPCIPassthroughConfig(lab, lab.VMHostName(other), fmt.Sprintf("  pci_ids = [%q]", a100)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(true)),
				},
				Check: rebootWindows(lab),
			},
		},
	})
}

// A host that does not come back within reboot_timeout fails the apply,
// naming it and reboot_timeout (not api_timeout); state still records the
// change, and once the host is back (vCenter cannot change a host that is
// not connected) destroy works. reboot_timeout is at least a minute: the
// test waits that long.
func TestAccHostPCIPassthrough_hostNotBack(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "keeps a host down")
	host := lab.HostNames()[0]
	lab.KeepHostDown(host)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true\n  reboot_timeout = \"1m\"", a100)),
				ExpectError: acctest.Wording(fmt.Sprintf("host %s was rebooted and is not back after 1m0s (connection state: notResponding); it stays in "+
					"maintenance mode. reboot_timeout bounds the reboot, from maintenance mode to the host back: raise it", host)),
			},
			{
				// Back: the failed create is tainted, and replaced.
				PreConfig: func() { acctest.Must(t, lab.BringHostUp(host)) },
				Config: hostPCIPassthroughConfig(
					lab,
					host,
					fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true\n  reboot_timeout = \"1m\"", a100),
				),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
		CheckDestroy: passthroughIs(lab, host, a100, false),
	})
}

// reboot_timeout outside 1m to 24h is refused at plan time: "1ns" would
// fail every reboot, and a huge one overflowed vCenter's bound.
func TestAccHostPCIPassthrough_rebootTimeoutRange(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	host := lab.HostNames()[0]
	var steps []resource.TestStep
	for _, timeout := range []string{"1ns", "59s", "25h", "1000000h"} {
		steps = append(steps, resource.TestStep{
			Config:      hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true\n  reboot_timeout = %q", a100, timeout)),
			PlanOnly:    true,
			ExpectError: acctest.Wording(fmt.Sprintf(`reboot_timeout must be a duration from "1m" to "24h", such as "45m", not %q`, timeout)),
		})
	}
	resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})
}

// One apply from a bare host to a GPU + InfiniBand VM (issue 24): SR-IOV
// on the ConnectX-7 PF (a reboot), passthrough on the A100 and on the first
// VF, whose id is known only after that reboot (another reboot), then the
// VM with both. The plan reboots the host twice, one reboot at a time, and
// the next plan is empty.
func TestAccHostPCIPassthrough_rebootInsideOneApplyToAGPUAndInfiniBandVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	vm := lab.VMNames()[0]
	host := lab.HostID(lab.VMHostName(vm))
	config := acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_sriov" "ib" {
  host_system_id        = %[1]q
  pci_id                = %[2]q
  num_virtual_functions = 4
  reboot_allowed        = true
}

resource "vspherehpc_host_pci_passthrough" "node" {
  host_system_id = %[1]q
  pci_ids        = [%[3]q, vspherehpc_host_sriov.ib.virtual_function_ids[0]]
  reboot_allowed = true
}

resource "vspherehpc_vm_gpu_mmio" "node" {
  virtual_machine_id = %[4]q
  gpu {
    pci_id = %[3]q
  }
  pci_device {
    pci_id = vspherehpc_host_sriov.ib.virtual_function_ids[0]
  }
  depends_on = [vspherehpc_host_pci_passthrough.node]
}
`, host, ibPF, a100, lab.VMUUID(vm))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		// Destroy puts passthrough and SR-IOV back, a reboot each.
		CheckDestroy: rebootWindows(lab, lab.VMHostName(vm), lab.VMHostName(vm), lab.VMHostName(vm), lab.VMHostName(vm)),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue("vspherehpc_host_sriov.ib", tfjsonpath.New("virtual_function_ids")),
					plancheck.ExpectKnownValue("vspherehpc_host_sriov.ib", tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("vspherehpc_host_sriov.ib", tfjsonpath.New("virtual_function_ids").AtSliceIndex(0), knownvalue.StringExact(ibVF0)),
					statecheck.ExpectKnownValue("vspherehpc_host_pci_passthrough.node", tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				},
				Check: resource.ComposeTestCheckFunc(
					vmDevicesAre(lab, vm, a100, ibVF0),
					func(s *terraform.State) error { return rebootWindows(lab, lab.VMHostName(vm), lab.VMHostName(vm))(s) },
				),
			},
			{Config: config, PlanOnly: true},
		},
	})
}

// A VM's plan counts a GPU the plan's host resource turns on as active when
// that resource reboots the host for it: the VM gets the A100 in the same
// apply. Without the opt-in the same configuration is refused at plan,
// saying the host must reboot first.
func TestAccHostPCIPassthrough_rebootBeforeTheGPUSetupOfTheSameApply(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	vm := lab.VMNames()[0]
	config := func(allowed bool) string {
		return acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "a100" {
  host_system_id = %q
  pci_ids        = [%q]
  reboot_allowed = %t
}

resource "vspherehpc_vm_gpu_mmio" "node" {
  virtual_machine_id = %q
  gpu {
    pci_id = %q
  }
  depends_on = [vspherehpc_host_pci_passthrough.a100]
}
`, lab.HostID(lab.VMHostName(vm)), a100, allowed, lab.VMUUID(vm), a100)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config(false),
				PlanOnly:    true,
				ExpectError: acctest.Wording("is turned on by this configuration, but the host applies that only at its next reboot"),
			},
			{Config: config(true), Check: resource.ComposeTestCheckFunc(vmDevicesAre(lab, vm, a100), rebootWindows(lab, lab.VMHostName(vm)))},
			{Config: config(true), PlanOnly: true},
		},
	})
}

// A host resource already applied whose device only waits for the host's
// reboot is not "turned on by this configuration": the VM's plan says the
// device waits for a reboot, and how to give it one (issue 24, item 5).
func TestAccHostPCIPassthrough_rebootAppliedAndWaitingWording(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	vm := lab.VMNames()[0]
	host := acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "a100" {
  host_system_id = %q
  pci_ids        = [%q]
}
`, lab.HostID(lab.VMHostName(vm)), a100)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: host},
			{
				Config: host + fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "node" {
  virtual_machine_id = %q
  gpu {
    pci_id = %q
  }
  depends_on = [vspherehpc_host_pci_passthrough.a100]
}
`, lab.VMUUID(vm), a100),
				PlanOnly: true,
				ExpectError: acctest.Wording(
					"is enabled but not active yet: the host must reboot first (vspherehpc_host_pci_passthrough shows reboot_required). " +
						"Set reboot_allowed = true on that resource",
				),
			},
		},
	})
}
