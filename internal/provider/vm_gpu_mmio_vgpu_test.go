package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// vgpuBlock is a vgpu block of count vGPUs of profile (count 1: left out).
func vgpuBlock(profile string, count int) string {
	if count == 1 {
		return fmt.Sprintf("  vgpu {\n    profile = %q\n  }\n", profile)
	}
	return fmt.Sprintf("  vgpu {\n    profile = %q\n    count   = %d\n  }\n", profile, count)
}

// vmVGPUsAre checks the VM itself: its vGPUs' profiles, in any order.
func vmVGPUsAre(lab *vcsimlab.Lab, vm string, want ...string) func(*terraform.State) error {
	return func(*terraform.State) error {
		got, err := labClient(lab).GPUMMIO(context.Background(), lab.VMID(vm))
		if err != nil {
			return err
		}
		var profiles []string
		for _, d := range got.Devices {
			if d.VGPU != "" {
				profiles = append(profiles, d.VGPU)
			}
		}
		slices.Sort(profiles)
		slices.Sort(want)
		if !slices.Equal(profiles, want) {
			return fmt.Errorf("virtual machine %s has vGPUs %v, want %v", vm, profiles, want)
		}
		return nil
	}
}

// sharedDirectHost sets a host's GPUs to Shared Direct by hand and reboots
// it, so its A100 offers vGPU profiles.
func sharedDirectHost(t *testing.T, lab *vcsimlab.Lab, host string) {
	t.Helper()
	ctx := context.Background()
	acctest.Must(t, lab.ConfigureGraphics(ctx, host, "sharedDirect", "performance", nil))
	acctest.Must(t, lab.RebootHost(ctx, host))
}

// The one-apply path: the host's graphics set to Shared Direct with its
// reboot, then a VM given two vGPUs after it (depends_on), in one apply; an
// empty plan after; the VM powers on with them placed on the A100; a vGPU
// added in vCenter is drift the plan takes away; import reads the blocks;
// destroy removes the vGPUs and puts the host's graphics back.
func TestAccVMGPUMMIO_vgpuOneApply(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "sets a host's graphics, reboots it and places vGPUs")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	ctx := context.Background()
	config := func(blocks string) string {
		return hostGraphicsConfig(lab, host, "  reboot_allowed = true\n") + strings.Replace(
			vmGPUMMIOConfig(lab, lab.VMUUID(vm), "  depends_on = [vspherehpc_host_graphics.g]\n"+blocks), acctest.ProviderConfig(lab), "", 1)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config(vgpuBlock("grid_a100-20c", 2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(64)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("vgpu"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectExact(map[string]knownvalue.Check{
							"profile": knownvalue.StringExact("grid_a100-20c"), "count": knownvalue.Int64Exact(2),
						}),
					})),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("firmware"), knownvalue.StringExact("efi")),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("memory_reservation_locked_to_max"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(graphicsAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
				},
				Check: vmVGPUsAre(lab, vm, "grid_a100-20c", "grid_a100-20c"),
			},
			{
				// The two vGPUs fit the A100's 40 GB: the VM powers on.
				PreConfig: func() { acctest.Must(t, lab.PowerOnVM(ctx, vm)) },
				Config:    config(vgpuBlock("grid_a100-20c", 2)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("vgpu").AtSliceIndex(0).AtMapKey("count"), knownvalue.Int64Exact(2)),
				},
			},
			{
				// A vGPU added by hand (the VM off) is drift.
				PreConfig: func() {
					acctest.Must(t, lab.PowerOffVM(ctx, vm))
					acctest.Must(t, lab.AttachVGPU(ctx, vm, "grid_a100-10c"))
				},
				Config: config(vgpuBlock("grid_a100-20c", 2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate),
				}},
				Check: vmVGPUsAre(lab, vm, "grid_a100-20c", "grid_a100-20c"),
			},
			{
				ResourceName: gpuAddr, ImportState: true, ImportStateId: lab.VMUUID(vm), ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"extra_config_before"},
			},
			{
				// Another profile in place of the two: one reconfigure.
				Config: config(vgpuBlock("grid_a100-40c", 1)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("vgpu").AtSliceIndex(0).AtMapKey("count"), knownvalue.Null()),
				},
				Check: vmVGPUsAre(lab, vm, "grid_a100-40c"),
			},
		},
		CheckDestroy: resource.ComposeTestCheckFunc(vmVGPUsAre(lab, vm), graphicsAre(lab, host, esxiGraphicsDefaults, "basic")),
	})
}

// Refused at plan: a host that offers no vGPU (its GPUs not in Shared
// Direct, and no host graphics resource of the plan), a profile the host
// does not offer (those it does listed), the shared GPU passed through
// too, profiles of two boards, two blocks
// of one profile, more than 8, a window below NVIDIA's 64 GB, more vGPUs
// than the running VM's host has room for, and a vGPU added to a running
// VM without power_off_allowed.
func TestAccVMGPUMMIO_vgpuRefusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100 in Shared Direct")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	config := func(body string) string { return vmGPUMMIOConfig(lab, lab.VMUUID(vm), body) }
	ctx := context.Background()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config(vgpuBlock("grid_a100-20c", 1)), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("Host %s of virtual machine %s (%s) does not offer vGPU profile grid_a100-20c, so "+
					"the VM would not power on. It offers no vGPU profile: none of its GPUs is driven by NVIDIA's vGPU manager. Its GPUs "+
					"%s (basic) are not in Shared Direct mode", host, vm, lab.VMUUID(vm), a100)),
			},
			{
				PreConfig: func() { sharedDirectHost(t, lab, host) },
				Config:    config(vgpuBlock("nvidia_h100xm-80c", 1)), PlanOnly: true,
				ExpectError: acctest.Wording("does not offer vGPU profile nvidia_h100xm-80c, so the VM would not power on. Its GPUs in " +
					"Shared Direct graphics mode offer grid_a100-40c, grid_a100-20c, grid_a100-10c, grid_a100-8c, grid_a100-5c, grid_a100-4c."),
			},
			{
				// One GPU is passed through whole or shared, never both.
				Config: config(gpuBlock(a100) + vgpuBlock("grid_a100-20c", 1)), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("GPU %s (GA100 [A100 PCIe 40GB]) on host %s is shared as NVIDIA vGPUs (graphics "+
					"type Shared Direct), not passed through", a100, host)),
			},
			{
				Config: config(vgpuBlock("grid_a100-20c", 1) + vgpuBlock("nvidia_h100xm-80c", 1)), PlanOnly: true,
				ExpectError: acctest.Wording("is given vGPU profiles grid_a100-20c, nvidia_h100xm-80c. NVIDIA allows several vGPUs on one VM " +
					"only when all are of the same board type and series"),
			},
			{
				Config: config(vgpuBlock("grid_a100-20c", 1) + vgpuBlock("grid_a100-20c", 1)), PlanOnly: true,
				ExpectError: acctest.Wording("vgpu blocks 1 and 2 both ask for profile grid_a100-20c."),
			},
			{
				Config: config(vgpuBlock("grid_a100-5c", 8) + vgpuBlock("grid_a100-4c", 2)), PlanOnly: true,
				ExpectError: acctest.Wording("The vgpu blocks ask for 10 vGPUs; vSphere 8 gives a VM at most 8."),
			},
			{
				Config: config(vgpuBlock("grid_a100-20c", 9)), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)count.*between 2 and 8`),
			},
			{
				Config: config(`  vgpu {
    profile = "A100-20C"
  }
`), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)must be a vGPU profile as vSphere names it`),
			},
			{
				Config: config("  mmio_size_gb = 32\n" + vgpuBlock("grid_a100-20c", 1)), PlanOnly: true,
				ExpectError: acctest.Wording("mmio_size_gb = 32 is below 64, the least window NVIDIA asks for a VM with vGPUs"),
			},
			{
				// Three 20C vGPUs do not fit one A100 40GB: a running VM
				// would not power on again after the change.
				PreConfig: func() { acctest.Must(t, lab.PowerOnVM(ctx, vm)) },
				Config:    config("  power_off_allowed = true\n" + vgpuBlock("grid_a100-20c", 3)), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("asks for 3 vGPUs of profile grid_a100-20c, and the GPUs of host %s have room for 2 "+
					"more of it", host)),
			},
			{
				Config: config(vgpuBlock("grid_a100-20c", 1)), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)power_off_allowed`),
			},
		},
	})
}

// The list finds a VM given vGPUs by hand, and its resource has them as
// vgpu blocks.
func TestAccVMGPUMMIO_vgpuList(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "gives a VM vGPUs by hand")
	vm := lab.VMNames()[0]
	ctx := context.Background()
	acctest.Must(t, lab.AttachVGPU(ctx, vm, "grid_a100-10c"))
	acctest.Must(t, lab.AttachVGPU(ctx, vm, "grid_a100-10c"))
	runQueries(t, lab, "vspherehpc_vm_gpu_mmio", []query{
		{config: onHosts(lab, lab.VMHostName(vm)), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_vm_gpu_mmio.q", 1),
			querycheck.ExpectIdentity("vspherehpc_vm_gpu_mmio.q", map[string]knownvalue.Check{"virtual_machine_id": knownvalue.StringExact(lab.VMUUID(vm))}),
			querycheck.ExpectResourceKnownValues("vspherehpc_vm_gpu_mmio.q",
				queryfilter.ByDisplayName(knownvalue.StringRegexp(regexp.MustCompile("^"+vm+":"))), []querycheck.KnownValueCheck{
					{Path: tfjsonpath.New("vgpu"), KnownValue: knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
						"profile": knownvalue.StringExact("grid_a100-10c"), "count": knownvalue.Int64Exact(2),
					})})},
				}),
		}},
	})
}

// A vGPU VM and its host set up by hand are adopted: terraform query writes
// their configuration, its plan imports both (by identity) and changes
// nothing, and the plan after the apply is empty.
func TestAccVMGPUMMIO_vgpuAdopted(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "sets a vGPU VM up by hand")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	ctx := context.Background()
	sharedDirectHost(t, lab, host)
	acctest.Must(t, lab.SetVMFirmware(ctx, vm, "efi"))
	acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, "pciPassthru.use64bitMMIO", "TRUE"))
	acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, "pciPassthru.64bitMMIOSizeGB", "64"))
	acctest.Must(t, lab.SetVMMemoryReservationLocked(ctx, vm, true))
	acctest.Must(t, lab.AttachVGPU(ctx, vm, "grid_a100-20c"))
	acctest.Must(t, lab.AttachVGPU(ctx, vm, "grid_a100-20c"))
	d := newTFDir(t, lab, map[string]string{
		"main.tf": "terraform {\n  required_providers {\n    vspherehpc = {\n      source = \"vspherehpc/vspherehpc\"\n    }\n  }\n}\n",
		"adopt.tfquery.hcl": fmt.Sprintf(`
list "vspherehpc_vm_gpu_mmio" "vm" {
  provider         = vspherehpc
  include_resource = true
  config {
    host_system_ids = [%[1]q]
  }
}

list "vspherehpc_host_graphics" "host" {
  provider         = vspherehpc
  include_resource = true
  config {
    host_system_ids = [%[1]q]
  }
}
`, lab.HostID(host)),
	})
	d.run("query", "-generate-config-out=adopted.tf")
	if adopted := d.read("adopted.tf"); !strings.Contains(adopted, `profile = "grid_a100-20c"`) || !strings.Contains(adopted, "identity = {") {
		t.Fatalf("generated configuration without the vGPUs or identities:\n%s", adopted)
	}
	changes, said := d.planSaying()
	if len(changes) != 0 || strings.Count(said, "will be imported") != 2 {
		t.Fatalf("plan of the generated configuration: %+v, want two imports and no change\n%s", changes, said)
	}
	d.run("apply", "-auto-approve", "tfplan")
	if again := d.plan(); len(again) != 0 {
		t.Errorf("plan after adopting: %+v, want no changes", again)
	}
	acctest.Must(t, vmVGPUsAre(lab, vm, "grid_a100-20c", "grid_a100-20c")(nil))
}

// Two running VMs of one host given vGPUs in one plan share its A100: two
// 20Cs each do not fit beside each other, and whichever Terraform plans
// second is refused, naming the other; one each fits, and applies.
func TestAccVMGPUMMIO_vgpusOfOnePlanShareTheRoom(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100 in Shared Direct")
	ctx := context.Background()
	host := lab.HostNames()[0]
	sharedDirectHost(t, lab, host)
	for _, vm := range []string{"train-a", "train-b"} {
		acctest.Must(t, lab.CreateVM(ctx, vm, host, 19))
		acctest.Must(t, lab.PowerOnVM(ctx, vm))
	}
	config := func(count int) string {
		out := acctest.ProviderConfig(lab)
		for _, vm := range []string{"train-a", "train-b"} {
			out += fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" %q {
  virtual_machine_id = %q
  power_off_allowed  = true
%s}
`, vm, lab.VMUUID(vm), vgpuBlock("grid_a100-20c", count))
		}
		return out
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config(2), PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)vGPUs do not fit.*have\s+room\s+for\s+0\s+more.*this\s+plan\s+gives\s+train-[ab]`),
			},
			{
				Config: config(1),
				Check:  resource.ComposeTestCheckFunc(vmVGPUsAre(lab, "train-a", "grid_a100-20c"), vmVGPUsAre(lab, "train-b", "grid_a100-20c")),
			},
		},
	})
}

// A host graphics resource of the same plan that takes the GPU offering the
// VM's vGPU profile out of Shared Direct, with the host's reboot in the
// apply, refuses the vGPU at plan: the VM would not power on after it. The
// same pair with the GPU kept in Shared Direct applies.
func TestAccVMGPUMMIO_vgpuProfileLeavingWithTheHostGraphics(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "sets a host's graphics and places vGPUs")
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	sharedDirectHost(t, lab, host)
	config := func(graphics string) string {
		return hostGraphicsConfig(lab, host, graphics+"  reboot_allowed = true\n") + strings.Replace(
			vmGPUMMIOConfig(lab, lab.VMUUID(vm), "  depends_on = [vspherehpc_host_graphics.g]\n"+vgpuBlock("grid_a100-20c", 1)),
			acctest.ProviderConfig(lab), "", 1)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("  default_graphics_type = \"shared\"\n"), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("Host %s of virtual machine %s (%s) offers vGPU profile grid_a100-20c only on GPUs %s, "+
					"which a vspherehpc_host_graphics of this plan takes out of Shared Direct graphics mode", host, vm, lab.VMUUID(vm), a100)),
			},
			{Config: config(""), Check: vmVGPUsAre(lab, vm, "grid_a100-20c")},
		},
	})
}
