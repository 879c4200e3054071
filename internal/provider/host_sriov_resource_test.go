package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
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
)

const sriovAddr = "vspherehpc_host_sriov.s"

// sriovPF is the first SR-IOV capable function of a lab host and its maximum.
func sriovPF(t *testing.T, lab *vcsimlab.Lab, hostName string) (string, int) {
	t.Helper()
	h, err := acctest.LabClient(lab).HostPassthrough(context.Background(), lab.HostID(hostName))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range h.Devices {
		if d.SRIOV != nil && d.SRIOV.Capable {
			return d.PCIID, d.SRIOV.MaxVFs
		}
	}
	t.Fatalf("host %s has no SR-IOV capable function", hostName)
	return "", 0
}

func sriovConfig(lab *vcsimlab.Lab, hostName, pciID string, vfs int) string {
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_host_sriov" "s" {
  host_system_id        = %q
  pci_id                = %q
  num_virtual_functions = %d
}
`, lab.HostID(hostName), pciID, vfs)
}

// sriovIs checks the host itself: how many virtual functions are requested.
func sriovIs(lab *vcsimlab.Lab, hostName, pciID string, want int) func(*terraform.State) error {
	return func(*terraform.State) error {
		h, err := acctest.LabClient(lab).HostPassthrough(context.Background(), lab.HostID(hostName))
		if err != nil {
			return err
		}
		d := h.Device(pciID)
		got := -1
		if d != nil && d.SRIOV != nil {
			got = 0
			if d.SRIOV.Enabled {
				got = d.SRIOV.VFsRequested
			}
		}
		if got != want {
			return fmt.Errorf("SR-IOV of %s on %s: %d virtual functions, want %d", pciID, hostName, got, want)
		}
		return nil
	}
}

func TestAccHostSRIOV_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card")
	name := lab.HostNames()[0]
	pf, maxVFs := sriovPF(t, lab, name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: sriovConfig(lab, name, pf, 4),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(name)+":"+pf)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("active_virtual_functions"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("max_virtual_functions"), knownvalue.Int64Exact(int64(maxVFs))),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids"), vfIDs(pf, 4)),
				},
				Check: sriovIs(lab, name, pf, 4),
			},
			{
				// An import records the count found: destroy then leaves it so.
				ResourceName: sriovAddr, ImportState: true, ImportStateVerify: true, ImportStateId: lab.HostID(name) + ":" + pf,
				ImportStateVerifyIgnore: []string{"virtual_functions_before"},
			},
			{
				Config: sriovConfig(lab, name, pf, 8),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionUpdate),
					// The four VFs that exist keep their ids; the four new ones
					// are known after the apply.
					plancheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids").AtSliceIndex(0), knownvalue.StringExact(ibVF0)),
					plancheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids").AtSliceIndex(3), knownvalue.StringExact("0000:86:00.4")),
					plancheck.ExpectUnknownValue(sriovAddr, tfjsonpath.New("virtual_function_ids").AtSliceIndex(4)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids"), vfIDs(pf, 8)),
				},
				Check: sriovIs(lab, name, pf, 8),
			},
		},
		// Destroy puts back what the function had: SR-IOV off.
		CheckDestroy: sriovIs(lab, name, pf, 0),
	})
}

// A count changed in vCenter is drift; SR-IOV turned off is the resource gone.
func TestAccHostSRIOV_driftAndDisappears(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	set := func(vfs int) func(*terraform.State) error {
		return func(*terraform.State) error {
			return acctest.LabClient(lab).SetHostSRIOV(context.Background(), lab.HostID(name), pf, vfs)
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: sriovConfig(lab, name, pf, 4), Check: set(2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionUpdate),
				}},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: sriovConfig(lab, name, pf, 4), Check: set(0),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionCreate),
				}},
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

func TestAccHostSRIOV_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card and A100")
	name := lab.HostNames()[0]
	id := lab.HostID(name)
	pf, maxVFs := sriovPF(t, lab, name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: sriovConfig(lab, name, pf, maxVFs+1), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf("PCI device %s of host %s (%s) supports at most %d virtual functions, not %d.", pf, name, id, maxVFs, maxVFs+1),
				),
			},
			{
				Config: sriovConfig(lab, name, "0000:af:00.0", 4), PlanOnly: true,
				ExpectError: regexp.MustCompile(
					`(?s)PCI\s+device\s+0000:af:00.0\s+\(GA100.*is\s+not\s+SR-IOV\s+capable.*Its\s+SR-IOV\s+capable\s+devices:.*` + regexp.QuoteMeta(pf),
				),
			},
			{
				Config: sriovConfig(lab, name, "0000:99:00.0", 4), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)has\s+no\s+PCI\s+device\s+0000:99:00.0.\s+Its\s+SR-IOV\s+capable\s+devices:`),
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
	config := sriovConfig(lab, name, pf, 4)
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
	config := strings.Replace(sriovConfig(lab, name, pf, 4), "num_virtual_functions", "reboot_allowed        = true\n  num_virtual_functions", 1)
	turnOff := func() {
		acctest.Must(t, acctest.LabClient(lab).SetHostSRIOV(context.Background(), lab.HostID(name), pf, 0))
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			h, err := acctest.LabClient(lab).HostPassthrough(context.Background(), lab.HostID(name))
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

// vfIDs is the list of the first n VF ids of the lab's ConnectX-7 PF
// 0000:86:00.0: VF k is 0000:86:00.(k+1), carrying into slot 01.
func vfIDs(pf string, n int) knownvalue.Check {
	if pf != ibPF {
		panic("vfIDs knows the VFs of " + ibPF + " only, not " + pf)
	}
	var ids []knownvalue.Check
	for k := range n {
		ids = append(ids, knownvalue.StringExact(fmt.Sprintf("0000:86:%02x.%d", (k+1)/8, (k+1)%8)))
	}
	return knownvalue.ListExact(ids)
}

// A virtual function passed through to a VM is needed itself: a count that
// would remove it is refused at plan, naming the function and the VM. The
// VF's id comes from the SR-IOV resource, so one configuration does it all.
func TestAccHostSRIOV_passedThroughVFInUse(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	config := func(vfs int) string {
		return gpuConfig(lab, lab.VMUUID(vm), `
  mmio_size_gb = 64
  pci_device {
    pci_id = one(vspherehpc_host_pci_passthrough.ib.pci_ids)
  }
`) + fmt.Sprintf(`
resource "vspherehpc_host_sriov" "s" {
  host_system_id        = %[1]q
  pci_id                = %[2]q
  num_virtual_functions = %[3]d
}

resource "vspherehpc_host_pci_passthrough" "ib" {
  host_system_id = %[1]q
  pci_ids        = [vspherehpc_host_sriov.s.virtual_function_ids[3]]
}
`, lab.HostID(host), ibPF, vfs)
	}
	vf3 := "0000:86:00.4"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config(4),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids").AtSliceIndex(3), knownvalue.StringExact(vf3)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("pci_device").AtSliceIndex(0).AtMapKey("pci_id"), knownvalue.StringExact(vf3)),
				},
				Check: vmDevicesAre(lab, vm, vf3),
			},
			{
				Config: config(3), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						"Physical function %s of host %s (%s) serves virtual function 3 (%s), passed through to %s. "+
							"3 virtual functions would leave some VM without its own",
						ibPF,
						host,
						lab.HostID(host),
						vf3,
						vm,
					),
				),
			},
		},
	})
}

// A function passed through whole cannot also serve virtual functions: an
// SR-IOV resource on a device an unchanged passthrough resource manages is
// refused at plan, naming both.
func TestAccHostSRIOV_claimedByPassthrough(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	passthrough := passthroughConfig(lab, name, fmt.Sprintf(`  pci_ids = [%q]`, pf))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: passthrough},
			{
				Config: passthrough + strings.Replace(sriovConfig(lab, name, pf, 4), acctest.ProviderConfig(lab), "", 1), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)One card, two uses.*PCI\s+device\s+` + regexp.QuoteMeta(pf) + `\s+of\s+host\s+` + lab.HostID(name) +
					`\s+is\s+claimed\s+for\s+(passthrough|SR-IOV).*passed\s+through\s+whole.*or\s+split`),
			},
		},
	})
}

// VMs' SR-IOV adapters on a function each need a virtual function: fewer is
// refused at plan, naming the VMs, and a destroy whose restore (SR-IOV off,
// as before) would take them away fails before it changes anything.
func TestAccHostSRIOV_vfsInUse(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	var other string
	for _, n := range lab.VMNames() {
		if n != vm && lab.VMHostName(n) == host && other == "" {
			other = n
		}
	}
	if other == "" {
		t.Fatal("no second VM on " + host)
	}
	const vmnic4 = "0000:d8:00.0"
	config := sriovConfig(lab, host, vmnic4, 4)
	label := fmt.Sprintf("%s (%s)", host, lab.HostID(host))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					acctest.Must(t, lab.AddSRIOVAdapter(ctx, vm, "VM Network", vmnic4))
					acctest.Must(t, lab.AddSRIOVAdapter(ctx, other, "VM Network", vmnic4))
				},
				Config: sriovConfig(lab, host, vmnic4, 1), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						"Physical function %s of host %s serves 2 SR-IOV adapters of virtual machines %s, "+
							"each needing a virtual function of its own at power on. 1 virtual functions would leave some VM without its own",
						vmnic4,
						label,
						strings.Join(slices.Sorted(slices.Values([]string{vm, other})), ", "),
					),
				),
			},
			{
				Config: config, Destroy: true,
				ExpectError: acctest.Wording("Destroy puts back what the function had before this resource: remove the VMs' use of its virtual functions first."),
			},
			{
				PreConfig: func() {
					acctest.Must(t, lab.RemoveSRIOVAdapters(ctx, vm))
					acctest.Must(t, lab.RemoveSRIOVAdapters(ctx, other))
				},
				Check:  sriovIs(lab, host, vmnic4, 4),
				Config: config, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
		CheckDestroy: sriovIs(lab, host, vmnic4, 0),
	})
}

// Import says why there is nothing to import: a device that is no SR-IOV
// function (the lab's A100) cannot be managed by this resource at all, and
// only an SR-IOV capable function with SR-IOV off, not passed through whole,
// is one to create. The GPU's import said "create the resource instead",
// which plan then refuses.
func TestAccHostSRIOV_importRefusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV capable InfiniBand card and A100")
	name := lab.HostNames()[0]
	id := lab.HostID(name)
	pf, _ := sriovPF(t, lab, name)
	importStep := func(pciID string, want *regexp.Regexp) resource.TestStep {
		return resource.TestStep{
			Config: acctest.RequiredProviders + sriovConfig(lab, name, pf, 4), ResourceName: sriovAddr, ImportState: true, ImportStateId: id + ":" + pciID,
			ExpectError: want,
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			importStep("0000:af:00.0", regexp.MustCompile(`(?s)Not an SR-IOV function.*`+acctest.Wording(
				fmt.Sprintf(
					"PCI device 0000:af:00.0 (GA100 [A100 PCIe 40GB]) of host %s (%s) is not SR-IOV capable, so vspherehpc_host_sriov cannot manage it",
					name,
					id,
				),
			).String()+
				`.*vspherehpc_host_pci_passthrough`)),
			importStep("0000:99:00.0", regexp.MustCompile(`(?s)No such PCI device.*`+acctest.Wording(
				fmt.Sprintf("Host %s (%s) has no PCI device 0000:99:00.0. Its SR-IOV capable devices: %s", name, id, pf)).String())),
			importStep(pf, regexp.MustCompile(`(?s)Nothing to import.*`+acctest.Wording(
				fmt.Sprintf("SR-IOV is off for PCI device %s", pf)).String()+`.*`+acctest.Wording("create the resource instead").String())),
			// Passed through whole, the card is not one to create either.
			func() resource.TestStep {
				step := importStep(pf, regexp.MustCompile(`(?s)Nothing to import.*`+acctest.Wording(
					fmt.Sprintf(
						"SR-IOV is off for PCI device %s (MT2910 Family [ConnectX-7]) of host %s (%s), which is passed through whole.",
						pf,
						name,
						id,
					),
				).String()+
					`.*`+acctest.Wording("turn its passthrough off first").String()))
				step.PreConfig = func() {
					acctest.Must(t, acctest.LabClient(lab).SetHostPassthrough(context.Background(), id, map[string]bool{pf: true}))
				}
				return step
			}(),
		},
	})
	if err := sriovIs(lab, name, pf, 0)(nil); err != nil {
		t.Error(err) // a refused import changes nothing
	}
}

// whileHeld holds the next call of method in the lab and, once it is in
// flight, runs do before letting it finish: what do injects applies to
// what the provider does after that call, whatever came before it.
func whileHeld(t *testing.T, lab *vcsimlab.Lab, method string, do func()) {
	t.Helper()
	base := lab.Calls()[method]
	release := lab.Hold(method)
	t.Cleanup(release)
	go func() {
		defer release()
		deadline := time.Now().Add(2 * time.Minute) // a wait, not a verdict: the step fails on its own if the call never comes
		for lab.Calls()[method] == base && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		do()
	}()
}

// SR-IOV set, then its read back fails: the resource is in state all the
// same, with what destroy restores, and the apply warns rather than fails (a
// failed create would be tainted, and its replacement would not know the
// count to restore). The function has 2 virtual functions before, so a
// destroy that lost the record (SR-IOV off) differs from one that kept it.
func TestAccHostSRIOV_readBackFails(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "fails a read of the host")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	config := sriovConfig(lab, name, pf, 4)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					acctest.Must(t, lab.SetHostSRIOV(context.Background(), name, pf, 2))
					whileHeld(t, lab, "UpdatePassthruConfig", func() {
						lab.FailRead("HostSystem", &types.SystemError{Reason: "read fails"}, 1)
					})
				},
				Config: config,
				Check:  sriovIs(lab, name, pf, 4),
			},
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("virtual_function_ids"), vfIDs(pf, 4)),
				},
			},
		},
		CheckDestroy: sriovIs(lab, name, pf, 2),
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
		return strings.Replace(sriovConfig(lab, name, pf, 4), "num_virtual_functions = 4\n", "num_virtual_functions = 4\n"+settings, 1) +
			strings.Replace(passthroughConfig(lab, name, `  pci_ids = [vspherehpc_host_sriov.s.virtual_function_ids[3]]`), acctest.ProviderConfig(lab), "", 1)
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

// A host disconnected from vCenter, which then returns no hardware for it,
// keeps its SR-IOV in state: a refresh neither drops it nor fails, and a
// change is refused naming the host, not as a device the host lacks.
func TestAccHostSRIOV_hostDisconnected(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "disconnects a host")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	ctx := context.Background()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: sriovConfig(lab, name, pf, 4)},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostConnected(ctx, name, false)) },
				Config:    sriovConfig(lab, name, pf, 4),
				PlanOnly:  true,
			},
			{
				Config:      sriovConfig(lab, name, pf, 2),
				ExpectError: acctest.Wording(fmt.Sprintf("vCenter returns no configuration for host %s (connection state: disconnected)", name)),
			},
			{
				// Its destroy says why, rather than vCenter's refusal of the change.
				Config:      acctest.ProviderConfig(lab),
				ExpectError: acctest.Wording(fmt.Sprintf("vCenter returns no configuration for host %s (connection state: disconnected)", name)),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostConnected(ctx, name, true)) },
				Config:    sriovConfig(lab, name, pf, 4),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionNoop),
				}},
			},
		},
		CheckDestroy: sriovIs(lab, name, pf, 0),
	})
}
