package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
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
	config := acctest.ProviderConfig(lab) + ibSRIOVConfig(lab, vm) + fmt.Sprintf(`
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
