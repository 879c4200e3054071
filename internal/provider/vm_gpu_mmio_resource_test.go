package provider

import (
	"context"
	"fmt"
	"slices"
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
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

const gpuAddr = "vspherehpc_vm_gpu_mmio.gpu"

func vmGPUMMIOConfig(lab *vcsimlab.Lab, vmID, body string) string {
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %q
%s
}
`, vmID, body)
}

// gpusNeedOff is the refusal of a GPU setup's change on a running VM.
const gpusNeedOff = "is powered on, and " + vsphere.WhatGPUsNeedOff + " needs it powered off"

// gpuBlock is a gpu block for the GPU with PCI id pciID.
func gpuBlock(pciID string) string {
	return fmt.Sprintf("  gpu {\n    pci_id = %q\n  }\n", pciID)
}

// twoGPUs is the gpu blocks of both GPUs of lab.GPUs(): the two H100s
// 0000:3b:00.0 and 0000:5e:00.0 in the simulated lab.
func twoGPUs(lab *vcsimlab.Lab) string {
	return "\n" + gpuBlock(lab.GPUs()[0]) + gpuBlock(lab.GPUs()[1])
}

// gpuMemoryGB is the memory of each GPU of lab.GPUs() on the host of vm:
// 80 GB each, the H100s', in the simulated lab; what the host reports on an
// external target.
func gpuMemoryGB(t *testing.T, lab *vcsimlab.Lab, vm string) []float64 {
	t.Helper()
	if lab.Simulated() {
		return []float64{80, 80}
	}
	host := vmHost(t, lab, vm)
	var out []float64
	for _, id := range lab.GPUs() {
		i := slices.IndexFunc(host.GPUs, func(g vsphere.GPU) bool { return g.PCIID == id })
		if i < 0 {
			t.Fatalf("host %s has no GPU %s (VSPHERE_TEST_GPUS)", host.Name, id)
		}
		if host.GPUs[i].MemoryGB == 0 {
			t.Skipf("host %s does not report the memory of GPU %s, which the sizing this test checks needs", host.Name, id)
		}
		out = append(out, host.GPUs[i].MemoryGB)
	}
	return out
}

// vmHost reads the host of vm, with its GPUs.
func vmHost(t *testing.T, lab *vcsimlab.Lab, vm string) *vsphere.Host {
	t.Helper()
	host, err := labClient(lab).Host(context.Background(), lab.HostID(lab.VMHostName(vm)))
	if err != nil {
		t.Fatal(err)
	}
	return host
}

// windowGB is the MMIO window the tests expect for GPUs with totalGB of
// memory: in the simulated lab the value worked out by hand (simulated), so
// that the rule itself is checked; on an external target, what the rule of
// internal/mmio gives for the GPUs it has.
func windowGB(t *testing.T, lab *vcsimlab.Lab, simulated int64, totalGB float64) int64 {
	t.Helper()
	if lab.Simulated() {
		return simulated
	}
	size, err := mmio.SizeGB(totalGB)
	if err != nil {
		t.Fatal(err)
	}
	return size
}

// gpuModel is the model of the first GPU of lab.GPUs() on the host of vm,
// as the provider names it (vendor:device (name)), and how many GPUs of it
// the host has active for passthrough: in the simulated lab, its two H100s.
func gpuModel(t *testing.T, lab *vcsimlab.Lab, vm string) (vendorID, deviceID, name string, active int) {
	t.Helper()
	if lab.Simulated() {
		return "10de", "2330", "GH100 [H100 SXM5 80GB]", 2
	}
	host := vmHost(t, lab, vm)
	i := slices.IndexFunc(host.GPUs, func(g vsphere.GPU) bool { return g.PCIID == lab.GPUs()[0] })
	if i < 0 {
		t.Fatalf("host %s has no GPU %s (VSPHERE_TEST_GPUS)", host.Name, lab.GPUs()[0])
	}
	vendorID, deviceID = host.GPUs[i].VendorID, host.GPUs[i].DeviceID
	for _, g := range host.GPUs {
		if g.VendorID == vendorID && g.DeviceID == deviceID {
			name = g.DeviceName
			if g.PassthroughActive {
				active++
			}
		}
	}
	return vendorID, deviceID, name, active
}

// vmExtraConfig reads a VM's extraConfig, firmware and number of GPUs from
// the lab, as an administrator would see them.
func vmExtraConfig(lab *vcsimlab.Lab, vmName string) (map[string]string, string, int, error) {
	got, err := lab.VMSettings(context.Background(), vmName)
	if err != nil {
		return nil, "", 0, err
	}
	return got.ExtraConfig, got.Firmware, len(got.GPUs), nil
}

func TestAccVMGPUMMIO_basic(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	memory := gpuMemoryGB(t, lab, vm)
	window := windowGB(t, lab, 512, memory[0]+memory[1])
	// The VM starts with a small window set by hand: destroy puts it back.
	acctest.Must(t, lab.SetVMExtraConfig(context.Background(), vm, mmio.SizeGBKey, "64"))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: vmGPUMMIOConfig(lab, uuid, twoGPUs(lab)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(window)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("id"), knownvalue.StringExact(uuid)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(window)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("total_gpu_memory_gb"), knownvalue.Float64Exact(memory[0]+memory[1])),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("firmware"), knownvalue.StringExact("efi")),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("use_64bit_mmio"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("memory_reservation_locked_to_max"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(2)),
				},
			},
			{
				// An import records the MMIO keys as found: destroy then
				// leaves them so; the created setup recorded them unset.
				ResourceName: gpuAddr, ImportState: true, ImportStateId: uuid, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"extra_config_before"},
			},
			{
				Config:       acctest.RequiredProviders + vmGPUMMIOConfig(lab, uuid, twoGPUs(lab)),
				ResourceName: gpuAddr, ImportState: true, ImportStateKind: resource.ImportBlockWithID, ImportStateId: uuid,
			},
			{
				// One GPU, a bigger window than the rule's 256.
				Config: vmGPUMMIOConfig(lab, uuid, `
  mmio_size_gb = 1024
`+gpuBlock(lab.GPUs()[1])),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(1024)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("total_gpu_memory_gb"), knownvalue.Float64Exact(memory[1])),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(1)),
				},
			},
		},
		CheckDestroy: func(*terraform.State) error {
			extra, firmware, gpus, err := vmExtraConfig(lab, vm)
			if err != nil {
				return err
			}
			if extra[mmio.SizeGBKey] != "64" || extra[mmio.Use64bitMMIOKey] != "" || gpus != 0 || firmware != "efi" {
				return fmt.Errorf("after destroy: %v, firmware %s, %d GPUs; want the old window back, no GPUs, EFI kept", extra, firmware, gpus)
			}
			return nil
		},
	})
}

func TestAccVMGPUMMIO_drift(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	memory := gpuMemoryGB(t, lab, vm)
	config := vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab))
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate)}}
	empty := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	converged := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("firmware"), knownvalue.StringExact("efi")),
		statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("use_64bit_mmio"), knownvalue.Bool(true)),
		statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(windowGB(t, lab, 512, memory[0]+memory[1]))),
		statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("memory_reservation_locked_to_max"), knownvalue.Bool(true)),
		statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(2)),
	}
	ctx := context.Background()
	extra := func(key, value string) func() {
		return func() { acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, key, value)) }
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig:         func() { acctest.Must(t, lab.SetVMFirmware(ctx, vm, "bios")) },
				Config:            config,
				ConfigPlanChecks:  update,
				ConfigStateChecks: converged,
			},
			// "True" is TRUE to vSphere: not drift.
			{PreConfig: extra(mmio.Use64bitMMIOKey, "True"), Config: config, ConfigPlanChecks: empty},
			{PreConfig: extra(mmio.Use64bitMMIOKey, "FALSE"), Config: config, ConfigPlanChecks: update, ConfigStateChecks: converged},
			{PreConfig: extra(mmio.SizeGBKey, "128"), Config: config, ConfigPlanChecks: update, ConfigStateChecks: converged},
			{
				PreConfig: func() { acctest.Must(t, lab.SetVMMemoryReservationLocked(ctx, vm, false)) },
				Config:    config, ConfigPlanChecks: update, ConfigStateChecks: converged,
			},
			{
				// A GPU removed out of band comes back.
				PreConfig: func() { acctest.Must(t, lab.DetachGPU(ctx, vm, lab.GPUs()[0])) },
				Config:    config, ConfigPlanChecks: update, ConfigStateChecks: converged,
			},
		},
	})
}

// The setup removed out of band (GPUs detached, MMIO keys cleared) is gone:
// the plan sets it up again.
func TestAccVMGPUMMIO_disappears(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab)),
			Check: func(*terraform.State) error {
				ctx := context.Background()
				for _, pci := range lab.GPUs() {
					if err := lab.DetachGPU(ctx, vm, pci); err != nil {
						return err
					}
				}
				for _, key := range []string{mmio.Use64bitMMIOKey, mmio.SizeGBKey} {
					if err := lab.SetVMExtraConfig(ctx, vm, key, ""); err != nil {
						return err
					}
				}
				return nil
			},
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionCreate),
			}},
			ExpectNonEmptyPlan: true,
		}},
	})
}

// The VM is the resource's argument, not its object: a VM removed from
// vCenter drops the setup out of state, and the plan names the missing VM.
func TestAccVMGPUMMIO_vmRemoved(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "destroys a VM")
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmGPUMMIOConfig(lab, uuid, twoGPUs(lab))},
			{
				PreConfig: func() { acctest.Must(t, lab.DestroyVM(context.Background(), vm)) },
				Config:    vmGPUMMIOConfig(lab, uuid, twoGPUs(lab)),
				PlanOnly:  true,
				ExpectError: acctest.Wording(
					"no virtual machine has UUID " + uuid + "; use vsphere_virtual_machine's id, or data.vspherehpc_virtual_machine to look one up by name.",
				),
			},
		},
	})
}

// A GPU setup and PVRDMA adapters on one VM at default parallelism: each
// reconfigure carries only its own devices, so none undoes another.
func TestAccVMGPUMMIO_withPVRDMAOnOneVM(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	config := rdmaDVSTwoSwitchesConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_vm_pvrdma_nic" "nic" {
  count                     = 3
  virtual_machine_id        = %[1]q
  distributed_port_group_id = count.index == 0 ? vspherehpc_rdma_dvs.a.port_group_id : vspherehpc_rdma_dvs.b.port_group_id
}
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %[1]q
%[2]s
}
`, uuid, twoGPUs(lab))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(*terraform.State) error {
				v, err := labClient(lab).VM(context.Background(), uuid)
				if err != nil {
					return err
				}
				n := 0
				for _, a := range v.NetworkAdapters {
					if a.Type == "vmxnet3vrdma" {
						n++
					}
				}
				if n != 3 || len(v.PCIPassthroughs) != 2 || v.Firmware != "efi" {
					return fmt.Errorf("VM has %d PVRDMA adapters, %d GPUs, firmware %s; want 3, 2, efi", n, len(v.PCIPassthroughs), v.Firmware)
				}
				return nil
			},
		}},
	})
}

// A running VM with power_off_allowed: shut down, set up, powered back on.
func TestAccVMGPUMMIO_powerCycle(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[1]
	acctest.Must(t, lab.PowerOnVM(context.Background(), vm))
	running := func(*terraform.State) error {
		v, err := labClient(lab).VM(context.Background(), lab.VMUUID(vm))
		if err == nil && (v.PowerState != "on" || v.Firmware != "efi") {
			err = fmt.Errorf("%s is %s with firmware %s, want on and efi", vm, v.PowerState, v.Firmware)
		}
		return err
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab)+"  power_off_allowed = true"),
			Check:  running,
		}},
		CheckDestroy: running,
	})
}

// A reconfigure task that fails once changes nothing and records nothing;
// the next apply converges.
func TestAccVMGPUMMIO_failedReconfigure(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a task fault")
	vm := lab.VMNames()[0]
	config := vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					acctest.Must(t, lab.InjectTaskFault("ReconfigVM_Task", vm, vcsimlab.Fault{Type: "GenericVmConfigFault", Detail: "injected"}))
				},
				Config:      config,
				ExpectError: acctest.Wording(`Cannot set up GPU passthrough on virtual machine`),
			},
			{
				Config: config,
				// Nothing was recorded: the adapter or setup is created now.
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(2)),
				},
				Check: func(*terraform.State) error {
					_, _, gpus, err := vmExtraConfig(lab, vm)
					if err == nil && gpus != 2 {
						err = fmt.Errorf("%d GPUs on %s, want 2", gpus, vm)
					}
					return err
				},
			},
		},
	})
}

// A GPU added out of band, then to the configuration: the window is sized
// for both, not from the total recorded for one.
func TestAccVMGPUMMIO_gpuAddedOutOfBand(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	memory := gpuMemoryGB(t, lab, vm)
	one := vmGPUMMIOConfig(lab, lab.VMUUID(vm), gpuBlock(lab.GPUs()[0]))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: one,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(windowGB(t, lab, 256, memory[0]))),
				},
			},
			{
				PreConfig: func() { acctest.Must(t, lab.AttachGPU(context.Background(), vm, lab.GPUs()[1])) },
				Config:    vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("total_gpu_memory_gb"), knownvalue.Float64Exact(memory[0]+memory[1])),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(windowGB(t, lab, 512, memory[0]+memory[1]))),
				},
			},
		},
	})
}

// A GPU added out of band while the VM's host cannot be read: the refresh
// warns and records the GPU memory as not known (0), so the plan reads the
// host again and sizes the window for both GPUs, instead of keeping one
// GPU's total and a window too small to boot.
func TestAccVMGPUMMIO_hostUnreadableAfterOutOfBandChange(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "fails a read of the host")
	vm := lab.VMNames()[0]
	memory := gpuMemoryGB(t, lab, vm)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), gpuBlock(lab.GPUs()[0]))},
			{
				PreConfig: func() {
					acctest.Must(t, lab.AttachGPU(context.Background(), vm, lab.GPUs()[1]))
					// Both the refresh's read of every host and, after it,
					// its read of the one host.
					lab.FailRead("HostSystem", &types.HostNotConnected{}, 2)
				},
				Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("total_gpu_memory_gb"), knownvalue.Float64Exact(memory[0]+memory[1])),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(windowGB(t, lab, 512, memory[0]+memory[1]))),
				},
			},
		},
	})
}

// When the VM fails to power back on after the change, the change is
// tracked: destroy still detaches the GPUs and restores the keys.
func TestAccVMGPUMMIO_powerOnFails(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a task fault")
	vm := lab.VMNames()[1]
	acctest.Must(t, lab.PowerOnVM(context.Background(), vm))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					acctest.Must(t, lab.InjectTaskFault("PowerOnVM_Task", vm, vcsimlab.Fault{Type: "InsufficientResourcesFault"}))
				},
				Config:      vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab)+"  power_off_allowed = true"),
				ExpectError: acctest.Wording(`did not power back on`),
			},
			{
				Config: acctest.ProviderConfig(lab),
				Check: func(*terraform.State) error {
					extra, _, gpus, err := vmExtraConfig(lab, vm)
					if err == nil && (gpus != 0 || extra[mmio.SizeGBKey] != "" || extra[mmio.Use64bitMMIOKey] != "") {
						err = fmt.Errorf("after destroy: %d GPUs, %v; want none and the keys removed", gpus, extra)
					}
					return err
				},
			},
		},
	})
}

// GPU ids known only at apply are checked then, not refused while planning.
func TestAccVMGPUMMIO_unknownAtPlan(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "terraform_data" "gpu" {
  input = %q
}
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %q
  mmio_size_gb       = 256
  gpu {
    pci_id = terraform_data.gpu.output
  }
}
`, lab.GPUs()[0], lab.VMUUID(lab.VMNames()[0])),
			ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(1))},
		}},
	})
}

// A GPU unknown at plan added to a setup in state: the total and the window
// sized from it are planned unknown, not kept from state, so the apply's
// plan (which knows the GPU) agrees with this one.
func TestAccVMGPUMMIO_unknownGPUAdded(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMUUID(lab.VMNames()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: vmGPUMMIOConfig(lab, vm, gpuBlock(lab.GPUs()[0])+"  power_off_allowed = true\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("total_gpu_memory_gb"), knownvalue.Float64Exact(80)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(256)),
				},
			},
			{
				Config: acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "terraform_data" "gpu" {
  input = %q
}
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %q
  power_off_allowed  = true
  gpu {
    pci_id = %q
  }
  gpu {
    pci_id = terraform_data.gpu.output
  }
}
`, lab.GPUs()[1], vm, lab.GPUs()[0]),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(gpuAddr, tfjsonpath.New("total_gpu_memory_gb")),
					plancheck.ExpectUnknownValue(gpuAddr, tfjsonpath.New("mmio_size_gb")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu"), knownvalue.ListSizeExact(2)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("total_gpu_memory_gb"), knownvalue.Float64Exact(160)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(512)),
				},
			},
		},
	})
}

// The same VM by UUID or managed object id is one VM: no replacement (which
// would detach the GPUs); a new window on a running VM needs it off.
func TestAccVMGPUMMIO_sameVMAndRunningChanges(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab))},
			{
				Config: vmGPUMMIOConfig(lab, lab.VMID(vm), twoGPUs(lab)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate),
				}},
			},
			{
				PreConfig: func() { acctest.Must(t, lab.PowerOnVM(context.Background(), vm)) },
				Config:    vmGPUMMIOConfig(lab, lab.VMID(vm), twoGPUs(lab)+"  mmio_size_gb = 1024"), PlanOnly: true,
				ExpectError: acctest.Wording(gpusNeedOff),
			},
			{Config: vmGPUMMIOConfig(lab, lab.VMID(vm), twoGPUs(lab)+"  power_off_allowed = true")},
		},
	})
}
