package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A VF count changed out of band plans the SR-IOV resource alone (issue 24,
// item 5): the VFs that exist keep their ids in the plan, so the passthrough
// on VF 0 and the VM that has it plan nothing.
func TestAccHostSRIOV_countDriftPlansOnlyItself(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's InfiniBand cards")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	config := acctest.ProviderConfig(lab) + hostSRIOVIBConfig(lab, vm) + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "vf" {
  host_system_id = %q
  pci_ids        = [vspherehpc_host_sriov.ib.virtual_function_ids[0]]
}

resource "vspherehpc_vm_gpu_mmio" "node" {
  virtual_machine_id = %q
  mmio_size_gb       = 64
  pci_device {
    pci_id = vspherehpc_host_sriov.ib.virtual_function_ids[0]
  }
  depends_on = [vspherehpc_host_pci_passthrough.vf]
}
`, lab.HostID(host), lab.VMUUID(vm))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, Check: vmDevicesAre(lab, vm, ibVF0)},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostSRIOV(context.Background(), host, ibPF, 2)) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("vspherehpc_host_sriov.ib", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("vspherehpc_host_pci_passthrough.vf", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("vspherehpc_vm_gpu_mmio.node", plancheck.ResourceActionNoop),
				}},
				Check: sriovIs(lab, host, ibPF, 4),
			},
		},
	})
}

// The same for SR-IOV: the function had 2 virtual functions; a create of 4
// whose reboot fails, a reboot by hand, the apply that replaces the tainted
// object: its destroy puts back 2 (not "off", the private state's default),
// the new object records 2, and the last destroy leaves 2.
func TestAccHostSRIOV_failedRebootKeepsWhatDestroyRestores(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	host := lab.HostNames()[0]
	ctx := context.Background()
	acctest.Must(t, lab.SetHostSRIOV(ctx, host, ibPF, 2))
	acctest.Must(t, lab.RebootHost(ctx, host))
	config := acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_sriov" "s" {
  host_system_id        = %q
  pci_id                = %q
  num_virtual_functions = 4
  reboot_allowed        = true
}
`, lab.HostID(host), ibPF)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             sriovInEffect(lab, host, ibPF, 2),
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { lab.FailTaskOnce("RebootHost_Task", host, &types.HostConfigFault{}) },
				Config:      config,
				ExpectError: acctest.Wording("Cannot reboot host " + lab.HostID(host)),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.RebootHost(ctx, host)) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("vspherehpc_host_sriov.s", tfjsonpath.New("virtual_functions_before"), knownvalue.Int64Exact(2)),
				},
				Check: sriovInEffect(lab, host, ibPF, 4),
			},
		},
	})
}

// On a host that must reboot, the virtual functions appear only after the
// reboot: reboot_required says so until then.
func TestAccHostSRIOV_rebootRequired(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card and reboots a host")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	config := hostSRIOVConfig(lab, name, pf, 4)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("active_virtual_functions"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids"), knownvalue.ListSizeExact(0)),
				},
			},
			{
				PreConfig: func() { acctest.Must(t, lab.RebootHost(context.Background(), name)) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("active_virtual_functions"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids"), vfIDs(pf, 4)),
				},
			},
		},
	})
}

// SR-IOV turned off with its virtual functions still there (the change
// waits for the host's reboot, as a destroy that failed before its reboot
// leaves it) is drift, not a resource gone: the plan turns it back on, and
// a destroy finishes the turn-off with the reboot. Removed from state
// instead, a destroy would have nothing to do and leave the host with its
// change waiting.
func TestAccHostSRIOV_turnOffWaitingForReboot(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card and reboots a host")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	config := strings.Replace(hostSRIOVConfig(lab, name, pf, 4), "num_virtual_functions", "reboot_allowed        = true\n  num_virtual_functions", 1)
	turnOff := func() {
		acctest.Must(t, labClient(lab).SetHostSRIOV(context.Background(), lab.HostID(name), pf, 0))
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			h, err := labClient(lab).HostPassthrough(context.Background(), lab.HostID(name))
			if err != nil {
				return err
			}
			if d := h.Device(pf); d == nil || d.SRIOV == nil || d.SRIOV.Enabled || d.SRIOV.Active || len(d.SRIOV.VFIDs) > 0 {
				return fmt.Errorf("after destroy, SR-IOV of %s is %+v; want off, with no virtual function (the destroy reboots)", pf, d)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				Check:  func(*terraform.State) error { turnOff(); return nil },
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionUpdate),
				}},
				ExpectNonEmptyPlan: true,
			},
			{
				RefreshState: true,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(sriovAddr, "num_virtual_functions", "0"),
					resource.TestCheckResourceAttr(sriovAddr, "active_virtual_functions", "4"),
					resource.TestCheckResourceAttr(sriovAddr, "reboot_required", "true"),
				),
				ExpectNonEmptyPlan: true,
			},
			{
				// Turned back on: the functions are there, no reboot.
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("num_virtual_functions"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				},
			},
			{
				// Off again, and destroyed as it is: the destroy reboots.
				PreConfig: turnOff,
				Config:    config,
				Destroy:   true,
			},
		},
	})
}

// Changing only reboot_timeout or reboot_allowed keeps what the host has:
// the virtual functions' ids stay known, so a passthrough of one of them
// plans no change, and the apply sends the host nothing.
func TestAccHostSRIOV_rebootSettingsOnly(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card and counts calls")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	config := func(settings string) string {
		return strings.Replace(hostSRIOVConfig(lab, name, pf, 4), "num_virtual_functions = 4\n", "num_virtual_functions = 4\n"+settings, 1) +
			strings.Replace(
				hostPCIPassthroughConfig(lab, name, `  pci_ids = [vspherehpc_host_sriov.s.virtual_function_ids[3]]`),
				acctest.ProviderConfig(lab),
				"",
				1,
			)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config("")},
			{
				PreConfig: lab.ResetCalls,
				Config:    config("  reboot_timeout = \"50m\"\n  reboot_allowed = true\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids"), vfIDs(pf, 4)),
					plancheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("active_virtual_functions"), knownvalue.Int64Exact(4)),
					plancheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
					plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionNoop),
				}},
				Check: func(*terraform.State) error {
					if n := lab.Calls()["UpdatePassthruConfig"]; n != 0 {
						return fmt.Errorf("%d UpdatePassthruConfig calls for a change of reboot settings only, want none", n)
					}
					return nil
				},
			},
		},
		CheckDestroy: sriovIs(lab, name, pf, 0),
	})
}
