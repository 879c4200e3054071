package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A reboot inside the apply of a host where a VM runs with a vGPU: the plan
// refuses it, naming the VM and what keeps DRS from moving it, while the
// cluster's DRS option, vCenter's setting or room on another host's GPUs
// is missing, or the same plan gives that host's running VM vGPUs that
// fill it; with all three, maintenance mode moves the VM to the other host
// that shares its A100, the host reboots, and the plan after is empty.
func TestAccHostReboot_movesVGPUVMs(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts and runs VMs with vGPUs")
	ctx := context.Background()
	first, second := lab.HostNames()[0], lab.HostNames()[1]
	sharedDirectHost(t, lab, first)
	sharedDirectHost(t, lab, second)
	acctest.Must(t, lab.CreateVM(ctx, "trainer", first, 19))
	acctest.Must(t, lab.AttachVGPU(ctx, "trainer", "grid_a100-20c"))
	acctest.Must(t, lab.PowerOnVM(ctx, "trainer"))
	// One 40C fills the second host's A100.
	acctest.Must(t, lab.CreateVM(ctx, "full", second, 19))
	acctest.Must(t, lab.AttachVGPU(ctx, "full", "grid_a100-40c"))
	acctest.Must(t, lab.PowerOnVM(ctx, "full"))

	// Virtual functions on the host's InfiniBand card wait for its reboot.
	pf, _ := sriovPF(t, lab, first)
	config := strings.Replace(hostSRIOVConfig(lab, first, pf, 4), "num_virtual_functions = 4\n",
		"num_virtual_functions = 4\n  reboot_allowed = true\n", 1)
	withFull := func(count int) string {
		return strings.Replace(config, "  reboot_allowed = true\n", "  reboot_allowed = true\n  depends_on     = [vspherehpc_vm_gpu_mmio.full]\n", 1) +
			fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "full" {
  virtual_machine_id = %q
  power_off_allowed  = true
%s}
`, lab.VMUUID("full"), vgpuBlock("grid_a100-20c", count))
	}
	refused := func(why string) *regexp.Regexp {
		return regexp.MustCompile(`(?s)Host cannot enter maintenance mode.*trainer.*` + why)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, PlanOnly: true, ExpectError: refused(`VgpuMMAutomationTimeoutSecs\s+is\s+-1`)},
			{
				PreConfig:   func() { acctest.Must(t, lab.SetClusterDRSOption(ctx, "VgpuMMAutomationTimeoutSecs", "-1")) },
				Config:      config,
				PlanOnly:    true,
				ExpectError: refused(`vgpu\.hotmigrate\.enabled\s+is\s+true`),
			},
			{
				PreConfig:   func() { acctest.Must(t, lab.SetVCenterSetting(ctx, "vgpu.hotmigrate.enabled", "true")) },
				Config:      config,
				PlanOnly:    true,
				ExpectError: refused(`no\s+other\s+host\s+of\s+the\s+cluster\s+offers\s+vGPU\s+profile\s+grid_a100-20c\s+with\s+room`),
			},
			// The same plan turning full's 40C into a 20C leaves room; into
			// two 20Cs, none. The reboot is planned after it (depends_on).
			{Config: withFull(1), PlanOnly: true, ExpectNonEmptyPlan: true},
			{
				Config: withFull(2), PlanOnly: true,
				ExpectError: refused(`no\s+other\s+host\s+of\s+the\s+cluster\s+offers\s+vGPU\s+profile\s+grid_a100-20c\s+with\s+room`),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.PowerOffVM(ctx, "full")) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("reboot_required"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(sriovAddr, tfjsonpath.New("active_virtual_functions"), knownvalue.Int64Exact(4)),
				},
				Check: resource.ComposeTestCheckFunc(rebootWindows(lab, first),
					func(*terraform.State) error {
						if got := lab.VMHostName("trainer"); got != second {
							return fmt.Errorf("trainer runs on %s, want %s, where maintenance mode moved it", got, second)
						}
						return nil
					}),
			},
			{Config: config, PlanOnly: true},
		},
	})
}
