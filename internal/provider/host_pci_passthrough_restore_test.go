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
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// What destroy restores survives a create whose reboot fails (issue 37,
// left open): the failed create is tainted, and the apply that replaces it
// hands the tainted object's destroy no private state, so the record is in
// state. Here the host was rebooted by hand between the two applies (the
// A100 then in effect): the replacement's destroy puts passthrough back off
// from the record, the new object records "off", and the last destroy
// leaves the A100 as it was before any of it.
func TestAccHostPCIPassthrough_failedRebootKeepsWhatDestroyRestores(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	host := lab.HostNames()[0]
	config := hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true", a100))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(passthroughIs(lab, host, a100, false), passthroughActive(lab, host, a100, false)),
		Steps: []resource.TestStep{
			{
				PreConfig:   func() { lab.FailTaskOnce("RebootHost_Task", host, &types.HostConfigFault{}) },
				Config:      config,
				ExpectError: acctest.Wording("Cannot reboot host " + lab.HostID(host)),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.RebootHost(context.Background(), host)) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("passthrough_before"),
						knownvalue.MapExact(map[string]knownvalue.Check{a100: knownvalue.Bool(false)})),
				},
				Check: passthroughActive(lab, host, a100, true),
			},
		},
	})
}

// What destroy restores is what was in effect, never a change waiting for a
// reboot (issue 37, item 2): passthrough turned on by hand and not yet
// active is recorded as off, so destroy turns the A100 back off.
func TestAccHostPCIPassthrough_beforeIsWhatIsInEffect(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	host := lab.HostNames()[0]
	acctest.Must(t, labClient(lab).SetHostPassthrough(context.Background(), lab.HostID(host), map[string]bool{a100: true}, nil))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(passthroughIs(lab, host, a100, false), passthroughActive(lab, host, a100, false)),
		Steps: []resource.TestStep{{
			Config: hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true", a100)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(passthroughAddr, tfjsonpath.New("passthrough_before"),
					knownvalue.MapExact(map[string]knownvalue.Check{a100: knownvalue.Bool(false)})),
			},
			Check: passthroughActive(lab, host, a100, true),
		}},
	})
}

// sriovInEffect checks the host itself: how many virtual functions a
// function has in effect, none waiting for a reboot.
func sriovInEffect(lab *vcsimlab.Lab, hostName, pciID string, want int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if err := sriovIs(lab, hostName, pciID, want)(s); err != nil {
			return err
		}
		h, err := labClient(lab).HostPassthrough(context.Background(), lab.HostID(hostName))
		if err != nil {
			return err
		}
		if d := h.Device(pciID); d == nil || d.SRIOV == nil || d.SRIOV.VFs != want || (want > 0) != d.SRIOV.Active {
			return fmt.Errorf("SR-IOV of %s on %s: %+v, want %d virtual functions in effect", pciID, hostName, d, want)
		}
		return nil
	}
}

// A destroy that would reboot a host whose running VM cannot move is
// refused at plan with advice that works with terraform destroy, which takes
// reboot_allowed from state (issue 37, item 2): not "set reboot_allowed =
// false", which only an apply records.
func TestAccHostPCIPassthrough_destroyRefusalAdvice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{HostsNeedReboot: true})
	simulatedOnly(t, lab, "reboots hosts")
	ctx := context.Background()
	vm := lab.VMNames()[0]
	host := lab.VMHostName(vm)
	config := hostPCIPassthroughConfig(lab, host, fmt.Sprintf("  pci_ids = [%q]\n  reboot_allowed = true", a100))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             passthroughIs(lab, host, a100, false),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					acctest.Must(t, lab.AttachGPU(ctx, vm, lab.GPUs()[0]))
					acctest.Must(t, lab.PowerOnVM(ctx, vm))
				},
				Config:  config,
				Destroy: true,
				ExpectError: wrappedInOrder(fmt.Sprintf("Destroying this resource would reboot host %s (%s) to put back the passthrough it "+
					"changed, but its running virtual machines %s would keep it from entering maintenance mode", host, lab.HostID(host), vm),
					"Power them off or move them, then run the destroy again. To put the passthrough back without a reboot instead, "+
						"set reboot_allowed = false and run terraform apply first (terraform destroy uses the value in state), then destroy: "+
						"the host then waits for a reboot."),
			},
			{
				PreConfig: func() { acctest.Must(t, lab.PowerOffVM(ctx, vm)) },
				Config:    config,
			},
		},
	})
}

// wrappedInOrder matches texts as wrapped does, each after the one before.
func wrappedInOrder(texts ...string) *regexp.Regexp {
	parts := make([]string, len(texts))
	for i, text := range texts {
		parts[i] = acctest.Wording(text).String()
	}
	return regexp.MustCompile(strings.Join(parts, `[\s\S]*`))
}

// State written before passthrough_before and virtual_functions_before
// existed keeps what destroy restores in private state: a refresh moves it
// into state, and a destroy without refresh reads it there.
func TestAccHostPCIPassthrough_restoreRecordMovesFromPrivateState(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100 and ConnectX-7")
	host := lab.HostNames()[0]
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "p" {
  host_system_id = %[1]q
  pci_ids        = [%[2]q]
}

resource "vspherehpc_host_sriov" "s" {
  host_system_id        = %[1]q
  pci_id                = %[3]q
  num_virtual_functions = 4
}
`, lab.HostID(host), a100, ibPF)})
	d.run("apply", "-auto-approve")
	// What an older release wrote: the record in private state only.
	older := func() {
		d.editState(func(address string, inst map[string]any) {
			attrs := inst["attributes"].(map[string]any)
			key, value := "sriov_before", []byte("2") // as if it had 2 before
			if strings.HasPrefix(address, "vspherehpc_host_pci_passthrough.") {
				key, value = "passthrough_before", []byte(fmt.Sprintf(`{%q:false}`, a100))
			}
			delete(attrs, key)
			delete(attrs, "virtual_functions_before")
			setPrivate(t, inst, map[string][]byte{key: value})
		})
	}
	older()
	d.run("apply", "-refresh-only", "-auto-approve")
	if s := d.run("show", "-json"); !strings.Contains(s, fmt.Sprintf(`"passthrough_before":{%q:false}`, a100)) ||
		!strings.Contains(s, `"virtual_functions_before":2`) {
		t.Errorf("after a refresh the state must hold what destroy restores:\n%s", s)
	}
	if changes := d.plan(); len(changes) > 0 {
		t.Errorf("the plan after the refresh must be empty: %+v", changes)
	}
	older()
	d.run("destroy", "-auto-approve", "-refresh=false")
	for _, check := range []resource.TestCheckFunc{passthroughIs(lab, host, a100, false), sriovIs(lab, host, ibPF, 2)} {
		if err := check(nil); err != nil {
			t.Error(err)
		}
	}
}
