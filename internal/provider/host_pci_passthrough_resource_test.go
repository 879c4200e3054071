package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

const passthroughAddr = "vspherehpc_host_pci_passthrough.p"

// The lab's hosts each have two H100s with passthrough on and an A100
// (0000:af:00.0, device 20f1) with it off.
const a100 = "0000:af:00.0"

func hostPCIPassthroughConfig(lab *vcsimlab.Lab, hostName, body string) string {
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "p" {
  host_system_id = %q
%s
}
`, lab.HostID(hostName), body)
}

// passthroughIs checks the host itself: whether passthrough is on for a device.
func passthroughIs(lab *vcsimlab.Lab, hostName, pciID string, want bool) func(*terraform.State) error {
	return passthroughState(lab, hostName, pciID, "enabled", want, func(d *vsphere.PassthroughDevice) bool { return d.Enabled })
}

// passthroughActive checks the host itself: whether passthrough of a device
// is in effect.
func passthroughActive(lab *vcsimlab.Lab, hostName, pciID string, want bool) func(*terraform.State) error {
	return passthroughState(lab, hostName, pciID, "active", want, func(d *vsphere.PassthroughDevice) bool { return d.Active })
}

func passthroughState(
	lab *vcsimlab.Lab,
	hostName, pciID, what string,
	want bool,
	state func(*vsphere.PassthroughDevice) bool,
) func(*terraform.State) error {
	return func(*terraform.State) error {
		h, err := labClient(lab).HostPassthrough(context.Background(), lab.HostID(hostName))
		if err != nil {
			return err
		}
		if d := h.Device(pciID); d == nil || state(d) != want {
			return fmt.Errorf("passthrough of %s on %s: %+v, want %s = %v", pciID, hostName, d, what, want)
		}
		return nil
	}
}

func TestAccHostPCIPassthrough_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100, which has passthrough off")
	name := lab.HostNames()[0]
	gpu := lab.GPUs()[0]
	device := func(i int, key string) tfjsonpath.Path {
		return tfjsonpath.New("devices").AtSliceIndex(i).AtMapKey(key)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, a100)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectUnknownValue(passthroughAddr, tfjsonpath.New("reboot_required")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(name))),
					statecheck.ExpectKnownValue(passthroughAddr, device(0, "pci_id"), knownvalue.StringExact(a100)),
					statecheck.ExpectKnownValue(passthroughAddr, device(0, "device_id"), knownvalue.StringExact("20f1")),
					statecheck.ExpectKnownValue(passthroughAddr, device(0, "enabled"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(passthroughAddr, device(0, "active"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				},
				Check: passthroughIs(lab, name, a100, true),
			},
			{
				// An import records the devices as found (on): destroy then
				// leaves them so; the created resource recorded them off.
				ResourceName: passthroughAddr, ImportState: true, ImportStateVerify: true,
				ImportStateId: lab.HostID(name) + ":" + a100, ImportStateVerifyIgnore: []string{"passthrough_before"},
			},
			{
				// Spaces and case as people type them are read; each entry
				// that cannot be imported is named.
				ResourceName: passthroughAddr, ImportState: true,
				ImportStateId: lab.HostID(name) + ":" + strings.ToUpper(a100) + ", 0000:99:00.0, " + a100,
				ExpectError:   acctest.Wording(fmt.Sprintf("0000:99:00.0 is no PCI device of the host; %s is listed twice. Devices of host %s", a100, name)),
			},
			// Every A100 of the host by vendor and device id: the same device, nothing to do.
			{
				Config: hostPCIPassthroughConfig(lab, name, `  match {
    vendor_id = "10de"
    device_id = "20f1"
  }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				}},
				Check: passthroughIs(lab, name, a100, true),
			},
			// An H100 joins; it was on before and stays on when dropped.
			{
				Config: hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q, %q]`, a100, gpu)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("devices"), knownvalue.ListSizeExact(2)),
				},
			},
			{
				Config:             hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q, %q]`, a100, gpu)),
				ConfigPlanChecks:   resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ExpectNonEmptyPlan: false,
			},
		},
		// Destroy puts back what the host had: the A100 off, the H100s on.
		CheckDestroy: func(s *terraform.State) error {
			if err := passthroughIs(lab, name, a100, false)(s); err != nil {
				return err
			}
			return passthroughIs(lab, name, gpu, true)(s)
		},
	})
}

// A managed device turned off in vCenter is drift, one of them or every one
// (issue 22, item 5: every one was planned as a create): the plan turns it
// on again in place.
func TestAccHostPCIPassthrough_driftAndDisappears(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100, which has passthrough off")
	name := lab.HostNames()[0]
	off := func(pciID string) func(*terraform.State) error {
		return func(*terraform.State) error {
			return labClient(lab).SetHostPassthrough(context.Background(), lab.HostID(name), map[string]bool{pciID: false}, nil)
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q, %q]`, a100, lab.GPUs()[1])),
				Check:  off(a100),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionUpdate),
				}},
				ExpectNonEmptyPlan: true,
			},
			{Config: hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, a100)), Check: passthroughIs(lab, name, a100, true)},
			{
				Config: hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, a100)),
				Check:  off(a100),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("devices").AtSliceIndex(0).AtMapKey("enabled"), knownvalue.Bool(true)),
				}},
				ExpectNonEmptyPlan: true,
			},
			{Config: hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, a100)), Check: passthroughIs(lab, name, a100, true)},
		},
	})
}

func TestAccHostPCIPassthrough_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100 and vmnic0")
	name := lab.HostNames()[0]
	id := lab.HostID(name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostPCIPassthroughConfig(lab, name, `  pci_ids = ["0000:99:00.0"]`), PlanOnly: true,
				ExpectError: regexp.MustCompile(
					`(?s)Host\s+` + regexp.QuoteMeta(
						name,
					) + `\s+\(` + id + `\)\s+has\s+no\s+PCI\s+device\s+0000:99:00.0.\s+Its\s+devices\s+that\s+can\s+be\s+passed\s+through:.*0000:af:00.0`,
				),
			},
			{
				Config: hostPCIPassthroughConfig(lab, name, `  match {
    vendor_id = "10de"
    device_id = "ffff"
  }`), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("Host %s (%s) has no device with vendor id 10de and device id ffff that can be passed through", name, id),
				),
			},
			// vmnic0 is the uplink of vSwitch0 on every lab host.
			{
				Config: hostPCIPassthroughConfig(lab, name, `  pci_ids = ["0000:0b:00.0"]`), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						`PCI device 0000:0b:00.0 of host %s (%s) is vmnic0, an uplink of switch "vSwitch0": passing it through takes it from the host's network.`,
						name,
						id,
					),
				),
			},
			{
				Config: hostPCIPassthroughConfig(lab, name, ""), PlanOnly: true,
				ExpectError: acctest.Wording("Give the devices to pass through in pci_ids, or select them with match blocks."),
			},
			{
				Config: hostPCIPassthroughConfig(lab, name, `  pci_ids = ["0000:af:00.0"]`) + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "again" {
  host_system_id = %q
  pci_ids        = ["0000:af:00.0", %q]
}
`, id, lab.GPUs()[0]), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*PCI\s+device\s+0000:af:00.0\s+of\s+host\s+` + id),
			},
		},
	})
}

// Turning passthrough back off (destroy) for a device a VM is configured with
// is refused at plan, naming the VM.
func TestAccHostPCIPassthrough_destroyRefusedWhileAVMUsesIt(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100, which has passthrough off")
	vm := lab.VMNames()[0]
	name := lab.VMHostName(vm)
	config := hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, a100))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() { acctest.Must(t, lab.AttachGPU(context.Background(), vm, a100)) },
				Config:    config, Destroy: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						"Passthrough of PCI device %s of host %s (%s) would go back off, but virtual machines %s are configured with it",
						a100,
						name,
						lab.HostID(name),
						vm,
					),
				),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.DetachGPU(context.Background(), vm, a100)) },
				Config:    config,
			},
		},
		CheckDestroy: passthroughIs(lab, name, a100, false),
	})
}

// The host step and the VM step in one configuration: the GPU's passthrough
// is turned on first, and the VM takes it in the same apply.
func TestAccHostPCIPassthrough_withGPUSetup(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100, which has passthrough off")
	vm := lab.VMNames()[0]
	name := lab.VMHostName(vm)
	config := hostPCIPassthroughConfig(lab, name, `  match {
    vendor_id = "10de"
    device_id = "20f1"
  }`) + fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %q
  gpu {
    pci_id = vspherehpc_host_pci_passthrough.p.devices[0].pci_id
  }
}
`, lab.VMUUID(vm))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(
						"vspherehpc_vm_gpu_mmio.gpu",
						tfjsonpath.New("gpu").AtSliceIndex(0).AtMapKey("pci_id"),
						knownvalue.StringExact(a100),
					),
					statecheck.ExpectKnownValue("vspherehpc_vm_gpu_mmio.gpu", tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(128)),
				},
			},
			{Config: config, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
		CheckDestroy: passthroughIs(lab, name, a100, false),
	})
}

// On a host that must reboot to apply passthrough, the device is enabled but
// not active and reboot_required says so, with no diff while it waits; after
// the reboot it is active.
func TestAccHostPCIPassthrough_rebootRequired(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "uses the lab's A100 and reboots a host")
	name := lab.HostNames()[0]
	config := hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, a100))
	active := tfjsonpath.New("devices").AtSliceIndex(0).AtMapKey("active")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(passthroughAddr, active, knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(true)),
				},
			},
			{Config: config, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			{
				PreConfig: func() { acctest.Must(t, lab.RebootHost(context.Background(), name)) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(passthroughAddr, active, knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				},
			},
		},
	})
}

// A device the host has but cannot pass through (the lab's host bridge; ESXi
// lists every PCI device in pciPassthruInfo, capable or not) is said to be
// that, not missing from the host.
func TestAccHostPCIPassthrough_notCapable(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's host bridge, 0000:00:00.0")
	name := lab.HostNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: hostPCIPassthroughConfig(lab, name, `  pci_ids = ["0000:00:00.0"]`), PlanOnly: true,
			ExpectError: acctest.Wording(fmt.Sprintf("PCI device 0000:00:00.0 (Virtual Machine Chipset) on host %s (%s) cannot be passed through "+
				"(ESXi reports it not passthrough-capable).", name, lab.HostID(name))),
		}},
	})
}

// beforeApply runs f once the plan is made, just before the apply: what a
// test arranges in the lab for the apply only.
type beforeApply func()

func (f beforeApply) CheckPlan(context.Context, plancheck.CheckPlanRequest, *plancheck.CheckPlanResponse) {
	f()
}

// Adding a device whose passthrough is on and active changes nothing on the
// host: no reboot is planned, so a VM with a GPU running on the host (which
// maintenance mode could not move) does not refuse the plan.
func TestAccHostPCIPassthrough_addingAnActiveDeviceNeedsNoReboot(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	gpus := lab.GPUs()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true", a100)), Check: rebootWindows(lab, host)},
			{
				PreConfig: func() {
					acctest.Must(t, lab.AttachGPU(ctx, vm, gpus[0]))
					acctest.Must(t, lab.PowerOnVM(ctx, vm))
				},
				Config: hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q, %q]\n  reboot_allowed = true", a100, gpus[1])),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				}},
				Check: rebootWindows(lab, host),
			},
			// Destroy turns the A100 back off, a reboot the GPU VM would refuse.
			{PreConfig: func() { acctest.Must(t, lab.PowerOffVM(ctx, vm)) }, Config: hostPCIPassthroughConfig(lab, host,
				fmt.Sprintf("  pci_ids = [%q, %q]\n  reboot_allowed = true", a100, gpus[1])), PlanOnly: true},
		},
	})
}

// Dropping a device the resource turned on puts it back off, which waits
// for a reboot: with reboot_allowed the plan says the apply reboots the
// host, and the apply does.
func TestAccHostPCIPassthrough_droppingADeviceReboots(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	host := lab.HostNames()[0]
	gpus := lab.GPUs()
	dropped := hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true", gpus[1]))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q, %q]\n  reboot_allowed = true", a100, gpus[1]))},
			{
				Config: dropped,
				Check: resource.ComposeTestCheckFunc(rebootWindows(lab, host, host), passthroughIs(lab, host, a100, false),
					passthroughActive(lab, host, a100, false)),
			},
			{Config: dropped, PlanOnly: true},
		},
	})
}

// An update whose change vCenter refuses keeps, for destroy, what the host
// had before: a device dropped from the configuration is still put back
// off by the next apply.
func TestAccHostPCIPassthrough_failedUpdateKeepsWhatDestroyRestores(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a fault")
	host := lab.HostNames()[0]
	h100 := lab.GPUs()[0]
	withoutA100 := hostPCIPassthroughConfig(lab, host, fmt.Sprintf(`  pci_ids = [%q]`, h100))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: hostPCIPassthroughConfig(lab, host, fmt.Sprintf(`  pci_ids = [%q, %q]`, a100, h100)), Check: passthroughIs(lab, host, a100, true)},
			{
				PreConfig:   func() { lab.FailCall("UpdatePassthruConfig", "", &types.HostConfigFault{}, 1) },
				Config:      withoutA100,
				ExpectError: regexp.MustCompile(`Cannot set PCI passthrough`),
			},
			{Config: withoutA100, Check: passthroughIs(lab, host, a100, false)},
		},
	})
}

// A create whose read-back fails after the host changed records state from
// the plan, with what the host had before in private state, and warns: no
// orphan, no taint (Terraform gives a tainted object's private state to
// nothing), and destroy puts the device back off.
func TestAccHostPCIPassthrough_failedReadBackKeepsState(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a fault")
	host := lab.HostNames()[0]
	config := hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]", a100))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             passthroughIs(lab, host, a100, false),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{beforeApply(func() {
					// The read after the change fails: the fault is armed
					// while UpdatePassthruConfig is held.
					release := lab.Hold("UpdatePassthruConfig")
					go func() {
						for lab.Calls()["UpdatePassthruConfig"] == 0 {
							time.Sleep(5 * time.Millisecond)
						}
						lab.FailRead("HostSystem", &types.HostCommunication{}, 1)
						release()
					}()
				})}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("devices").AtSliceIndex(0).AtMapKey("active"), knownvalue.Null()),
				},
				// The A100 is then turned off out of band, so the plans after
				// this step (the one without a refresh sees only the planned
				// values) both show a change.
				Check: resource.ComposeTestCheckFunc(passthroughIs(lab, host, a100, true), func(*terraform.State) error {
					return labClient(lab).SetHostPassthrough(context.Background(), lab.HostID(host), map[string]bool{a100: false}, nil)
				}),
				ExpectNonEmptyPlan: true,
			},
			// Turned back on, still recorded as off before this resource.
			{Config: config, Check: passthroughIs(lab, host, a100, true)},
			{Config: config, PlanOnly: true},
		},
	})
}

// A listed device gone from the host (a virtual function, with SR-IOV
// off) stays in devices with passthrough off: the plan refuses, naming it,
// rather than dropping it silently; back without passthrough, it is drift
// the next apply fixes.
func TestAccHostPCIPassthrough_listedDeviceGone(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "changes SR-IOV out of band")
	ctx := context.Background()
	host := lab.HostNames()[0]
	const pf, vf = "0000:86:00.0", "0000:86:00.1"
	acctest.Must(t, lab.SetHostSRIOV(ctx, host, pf, 2))
	config := hostPCIPassthroughConfig(lab, host, fmt.Sprintf(`  pci_ids = [%q, %q]`, a100, vf))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, Check: passthroughIs(lab, host, vf, true)},
			{
				PreConfig:   func() { acctest.Must(t, lab.SetHostSRIOV(ctx, host, pf, 0)) },
				Config:      config,
				PlanOnly:    true,
				ExpectError: acctest.Wording(fmt.Sprintf("has no PCI device %s", vf)),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostSRIOV(ctx, host, pf, 2)) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionUpdate),
				}},
				Check: passthroughIs(lab, host, vf, true),
			},
			{Config: config, PlanOnly: true},
		},
	})
}

// A host disconnected from vCenter, which then returns no hardware for it,
// keeps its passthrough in state: a refresh neither fails nor shows its
// devices gone, and a change is refused naming the host.
func TestAccHostPCIPassthrough_hostDisconnected(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "disconnects a host")
	name := lab.HostNames()[0]
	ctx := context.Background()
	config := hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, a100))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostConnected(ctx, name, false)) },
				Config:    config,
				PlanOnly:  true,
			},
			{
				Config:      hostPCIPassthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q, %q]`, a100, lab.GPUs()[0])),
				ExpectError: acctest.Wording(fmt.Sprintf("vCenter returns no configuration for host %s (connection state: disconnected)", name)),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostConnected(ctx, name, true)) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionNoop),
				}},
			},
		},
		CheckDestroy: passthroughIs(lab, name, a100, false),
	})
}
