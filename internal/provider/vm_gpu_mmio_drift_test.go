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
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// MMIO keys that mean what the setup wants, written otherwise ("True",
// "0512"), are no change: an update that needs nothing of a running VM
// (allow_firmware_change) neither rewrites them nor cycles its power.
func TestAccVMGPUMMIO_equivalentValuesNeedNoPowerCycle(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "counts calls")
	vm := lab.VMNames()[0]
	ctx := context.Background()
	base := twoGPUs(lab) + "  power_off_allowed = true\n"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), base)},
			{
				PreConfig: func() {
					settings, _, _, err := vmExtraConfig(lab, vm)
					acctest.Must(t, err)
					acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, mmio.Use64bitMMIOKey, "True"))
					acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, mmio.SizeGBKey, "0"+settings[mmio.SizeGBKey]))
					acctest.Must(t, lab.PowerOnVM(ctx, vm))
					lab.ResetCalls()
				},
				Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), base+"  allow_firmware_change = true\n"),
				Check: func(*terraform.State) error {
					c := lab.Calls()
					if n := c["ShutdownGuest"] + c["PowerOffVM_Task"] + c["PowerOnVM_Task"] + c["ReconfigVM_Task"]; n != 0 {
						return fmt.Errorf("%d shutdowns, power-offs, power-ons and reconfigures of %s for a change that needs nothing of it: %v", n, vm, c)
					}
					return nil
				},
			},
			{PreConfig: func() { acctest.Must(t, lab.PowerOffVM(ctx, vm)) }, Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), base)},
		},
	})
}

// pciPassthru.use64bitMMIO turned off out of band on a running VM is drift
// whose fix needs the VM off: refused at plan without power_off_allowed, as
// a changed window is.
func TestAccVMGPUMMIO_64bitMMIOOffOnARunningVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "powers a VM on")
	vm := lab.VMNames()[0]
	ctx := context.Background()
	config := vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, mmio.Use64bitMMIOKey, "FALSE"))
					acctest.Must(t, lab.PowerOnVM(ctx, vm))
				},
				Config:      config,
				PlanOnly:    true,
				ExpectError: acctest.Wording(gpusNeedOff),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.PowerOffVM(ctx, vm)) },
				Config:    config,
				Check: func(*terraform.State) error {
					settings, _, _, err := vmExtraConfig(lab, vm)
					if err == nil && settings[mmio.Use64bitMMIOKey] != "TRUE" {
						err = fmt.Errorf("%s = %q after the apply, want TRUE", mmio.Use64bitMMIOKey, settings[mmio.Use64bitMMIOKey])
					}
					return err
				},
			},
		},
	})
}

// A setup moved to another VM removes the GPUs from its VM: that VM's power
// is checked at plan, as for a destroy.
func TestAccVMGPUMMIO_movedFromARunningVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "powers a VM on")
	from := lab.VMNames()[0]
	var to string
	for _, n := range lab.VMNames() {
		if n != from && lab.VMHostName(n) == lab.VMHostName(from) {
			to = n
			break
		}
	}
	ctx := context.Background()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmGPUMMIOConfig(lab, lab.VMUUID(from), twoGPUs(lab))},
			{
				PreConfig:   func() { acctest.Must(t, lab.PowerOnVM(ctx, from)) },
				Config:      vmGPUMMIOConfig(lab, lab.VMUUID(to), twoGPUs(lab)),
				PlanOnly:    true,
				ExpectError: acctest.Wording(gpusNeedOff),
			},
			{PreConfig: func() { acctest.Must(t, lab.PowerOffVM(ctx, from)) }, Config: vmGPUMMIOConfig(lab, lab.VMUUID(to), twoGPUs(lab))},
		},
	})
}

// One GPU passed through twice out of band (vCenter takes it; the VM then
// does not power on) is drift: the plan gives the VM the GPU once, and the
// apply removes the extra.
func TestAccVMGPUMMIO_sameGPUTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "passes a GPU through out of band")
	vm := lab.VMNames()[0]
	ctx := context.Background()
	config := vmGPUMMIOConfig(lab, lab.VMUUID(vm), gpuBlock(lab.GPUs()[0]))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() { acctest.Must(t, lab.AttachGPU(ctx, vm, lab.GPUs()[0])) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					_, _, n, err := vmExtraConfig(lab, vm)
					if err == nil && n != 1 {
						err = fmt.Errorf("%s has %d GPUs after the apply, want 1", vm, n)
					}
					return err
				},
			},
		},
	})
}

// The end of the create's reconfigure task cannot be read (vCenter
// unreachable for a moment), but the VM has the setup: it is recorded, not
// failed (a failed create's replacement would not know the VM's own MMIO
// values), and destroy puts the VM's own window back.
func TestAccVMGPUMMIO_createTaskEndLost(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "fails reads")
	vm := lab.VMNames()[0]
	acctest.Must(t, lab.SetVMExtraConfig(context.Background(), vm, mmio.SizeGBKey, "64"))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() { lab.FailTaskEndRead(&types.HostNotConnected{}) },
			Config:    vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(512)),
			},
		}},
		CheckDestroy: func(*terraform.State) error {
			extra, _, gpus, err := vmExtraConfig(lab, vm)
			if err == nil && (extra[mmio.SizeGBKey] != "64" || extra[mmio.Use64bitMMIOKey] != "" || gpus != 0) {
				err = fmt.Errorf("after destroy: %v, %d GPUs; want the VM's own window of 64 GB back and use64bitMMIO removed", extra, gpus)
			}
			return err
		},
	})
}

// A Dynamic DirectPath GPU given a hardware label its block does not have,
// or a second model, out of band takes other host GPUs than the
// configuration's gpu block by model: it is drift, and the apply puts back
// one for the model alone.
func TestAccVMGPUMMIO_dynamicGPUNarrowed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "edits a VM's devices out of band")
	vm := lab.VMNames()[0]
	ctx := context.Background()
	config := vmGPUMMIOConfig(lab, lab.VMUUID(vm), "  gpu {\n    vendor_id = \"10de\"\n    device_id = \"2330\"\n    count     = 2\n  }\n")
	plain := func(*terraform.State) error {
		v, err := labClient(lab).VM(ctx, lab.VMUUID(vm))
		if err != nil {
			return err
		}
		if len(v.PCIPassthroughs) != 2 {
			return fmt.Errorf("%s has %d passthrough devices, want 2", vm, len(v.PCIPassthroughs))
		}
		for _, p := range v.PCIPassthroughs {
			if !p.Dynamic || p.Narrowed() {
				return fmt.Errorf("%s's device %+v, want a Dynamic DirectPath device for the model alone", vm, p)
			}
		}
		return nil
	}
	updated := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate)}}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, Check: plain},
			{
				PreConfig: func() {
					acctest.Must(t, lab.SetHardwareLabel(ctx, lab.VMHostName(vm), lab.GPUs()[0], "reserved-for-team-b"))
					acctest.Must(t, lab.NarrowDynamicGPUs(ctx, vm, "reserved-for-team-b", 0, 0))
				},
				Config:           config,
				ConfigPlanChecks: updated,
				Check:            plain,
			},
			{
				PreConfig:        func() { acctest.Must(t, lab.NarrowDynamicGPUs(ctx, vm, "", 0x10de, 0x20f1)) },
				Config:           config,
				ConfigPlanChecks: updated,
				Check:            plain,
			},
		},
	})
}

// An adapter and a GPU setup destroyed by a plan made before their VM was
// registered again are removed from the VM under its new id, not taken for
// gone with the old id and left behind.
func TestAccVMGPUMMIO_destroyAfterReregister(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "registers a VM again")
	vm := lab.VMNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: reregisterConfig(lab, fmt.Sprintf("%q", lab.VMID(vm)), "")},
			{
				Config: rdmaDVSTwoSwitchesConfig(lab),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionDestroy),
					plancheck.ExpectResourceAction("vspherehpc_vm_gpu_mmio.gpu", plancheck.ResourceActionDestroy),
					reregisterBeforeApply{lab: lab, vm: vm},
				}},
				Check: func(*terraform.State) error {
					nics, v, err := pvrdmaAdapters(lab, vm)
					if err != nil || len(nics) != 0 || len(v.PCIPassthroughs) != 0 {
						return fmt.Errorf("%s has PVRDMA adapters %+v and passthrough devices %+v (%v) after their destroy, want none",
							vm, nics, v.PCIPassthroughs, err)
					}
					return nil
				},
			},
		},
	})
}
