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
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// labelsAre checks the host itself: the hardware labels of devices, by PCI
// id ("" for none).
func labelsAre(lab *vcsimlab.Lab, hostName string, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		h, err := labClient(lab).HostPassthrough(context.Background(), lab.HostID(hostName))
		if err != nil {
			return err
		}
		for id, label := range want {
			if d := h.Device(id); d == nil || d.Label != label {
				return fmt.Errorf("hardware label of %s on %s: %+v, want %q", id, hostName, d, label)
			}
		}
		return nil
	}
}

// hardware_label labels every managed device, shows a label changed in
// vCenter as drift, is adopted by an import, and leaving it out or
// destroying puts back the labels the devices had.
func TestAccHostPCIPassthrough_hardwareLabel(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	gpus := lab.GPUs()
	ctx := context.Background()
	// One H100 carries a label already: destroy puts it back.
	acctest.Must(t, lab.SetHardwareLabel(ctx, name, gpus[1], "spare"))
	ids := fmt.Sprintf("  pci_ids = [%q, %q]\n", gpus[0], gpus[1])
	labelled := hostPCIPassthroughConfig(lab, name, ids+"  hardware_label = \"training\"\n")
	device := func(i int) tfjsonpath.Path {
		return tfjsonpath.New("devices").AtSliceIndex(i).AtMapKey("hardware_label")
	}
	training := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("hardware_label"), knownvalue.StringExact("training")),
		statecheck.ExpectKnownValue(passthroughAddr, device(0), knownvalue.StringExact("training")),
		statecheck.ExpectKnownValue(passthroughAddr, device(1), knownvalue.StringExact("training")),
	}
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(passthroughAddr, plancheck.ResourceActionUpdate)}}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: labelled,
				ConfigStateChecks: append(training, statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("hardware_labels_before"),
					knownvalue.MapExact(map[string]knownvalue.Check{gpus[0]: knownvalue.StringExact(""), gpus[1]: knownvalue.StringExact("spare")}))),
				Check: labelsAre(lab, name, map[string]string{gpus[0]: "training", gpus[1]: "training"}),
			},
			// Relabelled in vCenter: drift, put back in place.
			{
				PreConfig: func() { acctest.Must(t, lab.SetHardwareLabel(ctx, name, gpus[0], "borrowed")) },
				Config:    labelled, ConfigPlanChecks: update, ConfigStateChecks: training,
				Check: labelsAre(lab, name, map[string]string{gpus[0]: "training"}),
			},
			{
				ResourceName: passthroughAddr, ImportState: true, ImportStateId: lab.HostID(name), ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"hardware_labels_before", "passthrough_before", "reboot_allowed", "reboot_timeout", "pci_ids"},
			},
			// Another label: no reboot, the record kept.
			{
				Config:           hostPCIPassthroughConfig(lab, name, ids+"  hardware_label = \"inference\"\n"),
				ConfigPlanChecks: update,
				Check:            labelsAre(lab, name, map[string]string{gpus[0]: "inference", gpus[1]: "inference"}),
			},
			// Left out: the labels before come back.
			{
				Config: hostPCIPassthroughConfig(lab, name, ids),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("hardware_label"), knownvalue.Null()),
					statecheck.ExpectKnownValue(passthroughAddr, device(1), knownvalue.StringExact("spare")),
				},
				Check: labelsAre(lab, name, map[string]string{gpus[0]: "", gpus[1]: "spare"}),
			},
			{Config: labelled, Check: labelsAre(lab, name, map[string]string{gpus[0]: "training", gpus[1]: "training"})},
		},
		CheckDestroy: labelsAre(lab, name, map[string]string{gpus[0]: "", gpus[1]: "spare"}),
	})
}

// poolConfig is a host passthrough resource labelling host's H100s
// "training", and a GPU setup of vm asking for count of them by label.
func poolConfig(lab *vcsimlab.Lab, host, vm string, count int) string {
	return acctest.ProviderConfig(lab) + poolResources(lab, host, vm, count)
}

// poolResources is poolConfig without the provider's configuration.
func poolResources(lab *vcsimlab.Lab, host, vm string, count int) string {
	countLine := ""
	if count > 1 {
		countLine = fmt.Sprintf("    count     = %d\n", count)
	}
	return fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "pool" {
  host_system_id = %q
  match {
    vendor_id = "10de"
    device_id = "2330"
  }
  hardware_label = "training"
}

resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %q
  gpu {
    vendor_id = "10de"
    device_id = "2330"
    label     = vspherehpc_host_pci_passthrough.pool.hardware_label
%s  }
}
`, lab.HostID(host), lab.VMUUID(vm), countLine)
}

// A pool across the hosts of a cluster: the labels made in the same plan
// count; a VM whose own host has the pool takes it; one whose host has not
// is planned with a warning in a DRS cluster (DRS places it at power on) and
// refused without DRS; more GPUs than the pool has free are refused; and the
// VM's device carries the label, which a refresh reads back.
func TestAccVMGPUMMIO_gpuPool(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "turns DRS off")
	hosts := lab.HostNames()
	var here, elsewhere string // a VM on the pool's host, one on another host
	for _, vm := range lab.VMNames() {
		switch h := lab.VMHostName(vm); {
		case h == hosts[0] && here == "":
			here = vm
		case h != hosts[0] && elsewhere == "":
			elsewhere = vm
		}
	}
	gpuLabel := tfjsonpath.New("gpu").AtSliceIndex(0).AtMapKey("label")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: poolConfig(lab, hosts[0], here, 3), PlanOnly: true, ExpectNonEmptyPlan: true,
				ExpectError: acctest.Wording(fmt.Sprintf(`asks for 3 GPUs (vendor id 10de, device id 2330) labelled "training", but its host %s `+
					`has 2 free`, hosts[0])),
			},
			{
				Config: poolConfig(lab, hosts[0], here, 2),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, gpuLabel, knownvalue.StringExact("training")),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("gpu").AtSliceIndex(0).AtMapKey("count"), knownvalue.Int64Exact(2)),
				},
				Check: func(*terraform.State) error {
					v, err := labClient(lab).VM(context.Background(), lab.VMUUID(here))
					if err != nil {
						return err
					}
					for _, p := range v.PCIPassthroughs {
						if !p.Dynamic || p.Label != "training" {
							return fmt.Errorf("%s's device %+v, want a dynamic one labelled training", here, p)
						}
					}
					return nil
				},
			},
			{ResourceName: gpuAddr, ImportState: true, ImportStateId: lab.VMUUID(here), ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"extra_config_before"}},
			{
				PreConfig: func() {
					acctest.Must(t, lab.SetClusterDRS(context.Background(), false, types.DrsBehaviorFullyAutomated))
				},
				Config: poolConfig(lab, hosts[0], elsewhere, 2), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf(`its host %s has 0 free; host %s of its cluster has 2, but the cluster has DRS off`,
					lab.VMHostName(elsewhere), hosts[0])),
			},
			// In a DRS cluster, DRS places the VM where the pool is
			// (TestAccVMGPUMMIO_gpuPoolOnAnotherHost reads the warning).
			{
				PreConfig: func() {
					acctest.Must(t, lab.SetClusterDRS(context.Background(), true, types.DrsBehaviorFullyAutomated))
				},
				Config:            poolConfig(lab, hosts[0], elsewhere, 2),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(gpuAddr, gpuLabel, knownvalue.StringExact("training"))},
			},
		},
	})
}

// The plan of a VM whose host lacks the pool that another host of its DRS
// cluster has warns, naming that host.
func TestAccVMGPUMMIO_gpuPoolOnAnotherHost(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	hosts := lab.HostNames()
	var vm string
	for _, name := range lab.VMNames() {
		if lab.VMHostName(name) != hosts[0] {
			vm = name
			break
		}
	}
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + poolResources(lab, hosts[0], vm, 2)})
	changes, said := d.planSaying()
	if len(changes) != 2 {
		t.Fatalf("planned %v, want the host's labels and the VM's setup", changes)
	}
	want := fmt.Sprintf(`Host %s of virtual machine %s (%s) has too few free GPUs (vendor id 10de, device id 2330) labelled "training" for `+
		`the 2 the VM asks for; host %s of its DRS cluster has enough`, lab.VMHostName(vm), vm, lab.VMUUID(vm), hosts[0])
	if !acctest.Wording(want).MatchString(said) {
		t.Errorf("the plan does not say %q:\n%s", want, said)
	}
}

// A label on a GPU given by PCI id is refused before any vCenter call.
func TestAccVMGPUMMIO_labelOnAStaticGPU(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: vmGPUMMIOConfig(lab, lab.VMUUID(lab.VMNames()[0]), fmt.Sprintf("  gpu {\n    pci_id = %q\n    label = \"training\"\n  }\n",
				lab.GPUs()[0])),
			PlanOnly:    true,
			ExpectError: acctest.Wording(`names one device, and a hardware label picks among devices`),
		}},
	})
}

// A hardware_label not known until the apply (another resource's output)
// plans the devices' labels unknown, and the apply sets them.
func TestAccHostPCIPassthrough_hardwareLabelKnownAtApply(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	name, gpu := lab.HostNames()[0], lab.GPUs()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
resource "terraform_data" "label" {
  input = "training"
}
` + hostPCIPassthroughConfig(lab, name, fmt.Sprintf("  pci_ids = [%q]\n  hardware_label = terraform_data.label.output\n", gpu)),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(passthroughAddr, tfjsonpath.New("devices").AtSliceIndex(0).AtMapKey("hardware_label")),
			}},
			Check: labelsAre(lab, name, map[string]string{gpu: "training"}),
		}},
	})
}
