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

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// peerToPeerKeys checks the VM's two peer-to-peer keys are allowP2P and
// relaxACS ("" for unset).
func peerToPeerKeys(lab *vcsimlab.Lab, vm, allowP2P, relaxACS string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		extra, _, _, err := vmExtraConfig(lab, vm)
		if err != nil {
			return err
		}
		if extra[vsphere.AllowP2PKey] != allowP2P || extra[vsphere.RelaxACSKey] != relaxACS {
			return fmt.Errorf("%s: %s = %q and %s = %q, want %q and %q", vm, vsphere.AllowP2PKey, extra[vsphere.AllowP2PKey],
				vsphere.RelaxACSKey, extra[vsphere.RelaxACSKey], allowP2P, relaxACS)
		}
		return nil
	}
}

// peer_to_peer sets both GPUDirect RDMA keys, shows either changed in
// vCenter as drift (refused on a running VM without power_off_allowed, as
// the keys apply at power on), removes them when false, leaves them alone
// when left out, is adopted by an import, and destroy puts back what the VM
// had.
func TestAccVMGPUMMIO_peerToPeer(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	ctx := context.Background()
	// Set by hand before: destroy puts it back.
	acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, vsphere.RelaxACSKey, "FALSE"))
	config := func(p2p string) string {
		return vmGPUMMIOConfig(lab, uuid, twoGPUs(lab)+p2p)
	}
	on, off := config("  peer_to_peer = true\n"), config("  peer_to_peer = false\n")
	extra := func(key, value string) func() {
		return func() { acctest.Must(t, lab.SetVMExtraConfig(ctx, vm, key, value)) }
	}
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
		plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionUpdate),
	}}
	p2p := func(want bool) []statecheck.StateCheck {
		return []statecheck.StateCheck{statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("peer_to_peer"), knownvalue.Bool(want))}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: on,
				ConfigStateChecks: append(p2p(true), statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("extra_config_before"),
					knownvalue.MapPartial(map[string]knownvalue.Check{
						vsphere.AllowP2PKey: knownvalue.StringExact(""), vsphere.RelaxACSKey: knownvalue.StringExact("FALSE"),
					}))),
				Check: peerToPeerKeys(lab, vm, "TRUE", "TRUE"),
			},
			{
				ResourceName: gpuAddr, ImportState: true, ImportStateId: uuid, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"extra_config_before"},
			},
			// One key removed in vCenter: drift, fixed in place.
			{PreConfig: extra(vsphere.AllowP2PKey, ""), Config: on, ConfigPlanChecks: update, ConfigStateChecks: p2p(true),
				Check: peerToPeerKeys(lab, vm, "TRUE", "TRUE")},
			{
				PreConfig: func() {
					extra(vsphere.RelaxACSKey, "")()
					acctest.Must(t, lab.PowerOnVM(ctx, vm))
				},
				Config: on, PlanOnly: true,
				ExpectError: acctest.Wording(gpusNeedOff),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.PowerOffVM(ctx, vm)) },
				Config:    off, ConfigPlanChecks: update, ConfigStateChecks: p2p(false), Check: peerToPeerKeys(lab, vm, "", ""),
			},
			// Set in vCenter while false: drift the other way.
			{PreConfig: func() { extra(vsphere.AllowP2PKey, "true")(); extra(vsphere.RelaxACSKey, "TRUE")() }, Config: off,
				ConfigPlanChecks: update, ConfigStateChecks: p2p(false), Check: peerToPeerKeys(lab, vm, "", "")},
			// Left out: what vCenter has stays, and is no drift.
			{
				PreConfig: extra(vsphere.AllowP2PKey, "TRUE"), Config: config(""),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("peer_to_peer"), knownvalue.Null())},
				Check:             peerToPeerKeys(lab, vm, "TRUE", ""),
			},
		},
		CheckDestroy: func(s *terraform.State) error {
			// Left out at the end: destroy leaves the keys as they are.
			return peerToPeerKeys(lab, vm, "TRUE", "")(s)
		},
	})
}

// Destroy of a setup with peer_to_peer puts back the keys as recorded: here
// neither was set, so both go.
func TestAccVMGPUMMIO_peerToPeerDestroyRestores(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), twoGPUs(lab)+"  peer_to_peer = true\n"),
			Check:  peerToPeerKeys(lab, vm, "TRUE", "TRUE"),
		}},
		CheckDestroy: peerToPeerKeys(lab, vm, "", ""),
	})
}
