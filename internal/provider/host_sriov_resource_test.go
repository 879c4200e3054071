package provider

import (
	"context"
	"fmt"
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
	h, err := labClient(lab).HostPassthrough(context.Background(), lab.HostID(hostName))
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

func hostSRIOVConfig(lab *vcsimlab.Lab, hostName, pciID string, vfs int) string {
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
		h, err := labClient(lab).HostPassthrough(context.Background(), lab.HostID(hostName))
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
				Config: hostSRIOVConfig(lab, name, pf, 4),
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
				Config: hostSRIOVConfig(lab, name, pf, 8),
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
			return labClient(lab).SetHostSRIOV(context.Background(), lab.HostID(name), pf, vfs)
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostSRIOVConfig(lab, name, pf, 4), Check: set(2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionUpdate),
				}},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: hostSRIOVConfig(lab, name, pf, 4), Check: set(0),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionCreate),
				}},
				ExpectNonEmptyPlan: true,
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
		return vmGPUMMIOConfig(lab, lab.VMUUID(vm), `
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
	config := hostSRIOVConfig(lab, host, vmnic4, 4)
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
				Config: hostSRIOVConfig(lab, host, vmnic4, 1), PlanOnly: true,
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
	config := hostSRIOVConfig(lab, name, pf, 4)
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
			{Config: hostSRIOVConfig(lab, name, pf, 4)},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostConnected(ctx, name, false)) },
				Config:    hostSRIOVConfig(lab, name, pf, 4),
				PlanOnly:  true,
			},
			{
				Config:      hostSRIOVConfig(lab, name, pf, 2),
				ExpectError: acctest.Wording(fmt.Sprintf("vCenter returns no configuration for host %s (connection state: disconnected)", name)),
			},
			{
				// Its destroy says why, rather than vCenter's refusal of the change.
				Config:      acctest.ProviderConfig(lab),
				ExpectError: acctest.Wording(fmt.Sprintf("vCenter returns no configuration for host %s (connection state: disconnected)", name)),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.SetHostConnected(ctx, name, true)) },
				Config:    hostSRIOVConfig(lab, name, pf, 4),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(sriovAddr, plancheck.ResourceActionNoop),
				}},
			},
		},
		CheckDestroy: sriovIs(lab, name, pf, 0),
	})
}
