package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// copies writes two instances of one resource the three ways a
// configuration makes them: copied blocks, count, and for_each over a map
// whose values name one object twice. body is the resource's body with %s
// where the object is named; object is that name as HCL.
func copies(resourceType, object, body string) []string {
	one := func(name, meta, ref string) string {
		return fmt.Sprintf("\nresource %q %q {\n%s%s}\n", resourceType, name, meta, fmt.Sprintf(body, ref))
	}
	return []string{
		one("a", "", object) + one("b", "", object),
		one("a", "  count = 2\n", object),
		one("a", fmt.Sprintf("  for_each = { first = %s, second = %s }\n", object, object), "each.value"),
	}
}

// Two instances claiming one thing are refused at plan however they were
// made, even with identical values (issue 22, item 1): nothing is created.
func TestAccClaims_identicalInstances(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's GPUs and SR-IOV card")
	host := lab.HostNames()[0]
	hostID := fmt.Sprintf("%q", lab.HostID(host))
	pf, _ := sriovPF(t, lab, host)
	vm := lab.VMNames()[0]
	cases := []struct {
		name, resourceType, object, body, prelude, want string
	}{
		{
			name: "passthrough", resourceType: "vspherehpc_host_pci_passthrough", object: hostID,
			body: fmt.Sprintf("  host_system_id = %%s\n  pci_ids        = [%q]\n", lab.GPUs()[0]),
			want: `PCI\s+device\s+` + regexp.QuoteMeta(lab.GPUs()[0]) + `\s+of\s+host`,
		},
		{
			name: "sriov", resourceType: "vspherehpc_host_sriov", object: hostID,
			body: fmt.Sprintf("  host_system_id        = %%s\n  pci_id                = %q\n  num_virtual_functions = 2\n", pf),
			want: `PCI\s+device\s+` + regexp.QuoteMeta(pf) + `\s+of\s+host`,
		},
		{
			name: "gpu setup", resourceType: "vspherehpc_vm_gpu_mmio", object: fmt.Sprintf("%q", lab.VMUUID(vm)),
			body: "  virtual_machine_id = %s\n" + gpuBlock(lab.GPUs()[0]),
			want: `the\s+GPU\s+setup\s+of\s+virtual\s+machine`,
		},
		{
			name: "host settings", resourceType: "vspherehpc_host_pvrdma_settings", object: hostID,
			body: fmt.Sprintf("  host_system_id = %%s\n  vmknic         = %q\n", lab.Vmknic()),
			want: `the\s+PVRDMA\s+settings\s+of\s+host`,
		},
		{
			name: "switch name", resourceType: "vspherehpc_rdma_dvs", object: fmt.Sprintf("%q", testName("twin")),
			body: fmt.Sprintf("  datacenter_id = %q\n  name          = %%s\n  port_group {\n    name = %q\n  }\n", lab.DatacenterID(), testName("twin-vms")),
			want: `the\s+switch\s+name\s+"` + regexp.QuoteMeta(testName("twin")) + `"`,
		},
		{
			name: "static MAC of SR-IOV adapters", resourceType: "vspherehpc_vm_sriov_nic", object: fmt.Sprintf("%q", lab.VMUUID(vm)),
			prelude: strings.Replace(hostSRIOVVmnic4Config(lab, vm), acctest.ProviderConfig(lab), "", 1),
			body: fmt.Sprintf("  virtual_machine_id        = %%s\n  distributed_port_group_id = vspherehpc_rdma_dvs.a.port_group_id\n"+
				"  physical_function         = %q\n  mac_address               = \"00:50:56:0a:0b:0c\"\n", vmnic4PF),
			want: `MAC\s+address\s+00:50:56:0a:0b:0c`,
		},
	}
	var steps []resource.TestStep
	for _, c := range cases {
		for _, hcl := range copies(c.resourceType, c.object, c.body) {
			steps = append(steps, resource.TestStep{
				Config: acctest.ProviderConfig(lab) + c.prelude + hcl, PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Claimed twice in this configuration.*Two\s+resource\s+instances.*claim\s+` + c.want),
			})
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
		CheckDestroy:             noNetworksLeft(lab),
	})
}

// A replacement is one instance planned twice (with its prior state, then
// without): moving a GPU setup to another VM keeps its GPU without a claim
// against itself, and the apply moves the GPU.
func TestAccClaims_replacementIsOneInstance(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vm := lab.VMNames()[0]
	var other string
	for _, n := range lab.VMNames() {
		if n != vm && lab.VMHostName(n) == lab.VMHostName(vm) {
			other = n
		}
	}
	if other == "" {
		simulatedOnly(t, lab, "needs two VMs on one host")
		t.Fatal("no second VM on the host of " + vm)
	}
	one := "\n" + gpuBlock(lab.GPUs()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmGPUMMIOConfig(lab, lab.VMUUID(vm), one)},
			{
				Config: vmGPUMMIOConfig(lab, lab.VMUUID(other), one),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("id"), knownvalue.StringExact(lab.VMUUID(other))),
				},
			},
		},
	})
}

// Across provider aliases the provider sees what already exists in vCenter,
// not the other alias's plan: Terraform runs a provider process per provider
// configuration, each with a claim book of its own. A second alias's switch
// with a name the first one's switch has is refused at plan, naming the
// switch that has it. (Through the CLI: in the testing framework's single
// in-process provider, aliases share one configured provider.)
func TestAccClaims_providerAliases(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	sw := func(resourceName, provider string) string {
		return fmt.Sprintf(`
resource "vspherehpc_rdma_dvs" %q {
  provider      = %s
  datacenter_id = %q
  name          = %q
  port_group {
    name = %q
  }
}
`, resourceName, provider, lab.DatacenterID(), testName("twin"), testName(resourceName+"-vms"))
	}
	first := acctest.RequiredProviders + "provider \"vspherehpc\" {}\n\nprovider \"vspherehpc\" {\n  alias = \"second\"\n}\n" + sw("first", "vspherehpc")
	d := newTFDir(t, lab, map[string]string{"main.tf": first})
	d.run("apply", "-auto-approve")
	d.write(map[string]string{"main.tf": first + sw("other", "vspherehpc.second")})
	out, err := d.try("plan")
	if err == nil ||
		!regexp.MustCompile(`(?s)Switch name taken.*already\s+has\s+a\s+distributed\s+switch\s+called\s+"`+regexp.QuoteMeta(testName("twin"))+`"`).
			MatchString(out) {
		t.Errorf("a second alias's switch with the first's name: %v, want Switch name taken at plan:\n%s", err, out)
	}
	d.write(map[string]string{"main.tf": first}) // a refused configuration would stop a plain destroy at its plan
	d.run("destroy", "-auto-approve")
}

// The replacement pairing (the rule at the top of claims.go) run through the
// Terraform binary under test as a user runs it, so that `make test-pairing`
// proves it on Terraform 1.5.7, OpenTofu and the Terraform of PATH as make
// test NEWEST=1 does on 1.16: a GPU setup moved to another VM, the
// same with create_before_destroy, and an adapter moved with its static MAC
// each plan as one instance replaced (no claim against itself), apply, and
// plan nothing after.
func TestAccClaims_replacementPairing(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{VMs: 4}) // two modern VMs on one host
	simulatedOnly(t, lab, "moves a GPU and an adapter between the lab's VMs")
	vms := lab.VMNames()
	var from, to string
	for _, a := range vms {
		for _, b := range vms {
			// Modern VMs only: legacy-node is too old for PVRDMA, installed-node has a BIOS guest.
			modern := strings.HasPrefix(a, "hpc-node-") && strings.HasPrefix(b, "hpc-node-")
			if a != b && modern && lab.VMHostName(a) == lab.VMHostName(b) && from == "" {
				from, to = a, b
			}
		}
	}
	if from == "" {
		t.Fatal("no two VMs on one host in the lab")
	}
	gpu := lab.GPUs()[0]
	gpuSetup := func(vm, lifecycle string) string {
		return fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %q
  gpu {
    pci_id = %q
  }
%s}
`, lab.VMUUID(vm), gpu, lifecycle)
	}
	const mac = "00:50:56:2a:bb:cf"
	adapter := func(vm string) string {
		return without(vmPVRDMANICConfig(lab, lab.VMUUID(vm), "a", fmt.Sprintf("  mac_address = %q", mac)), lab)
	}
	gpusOf := func(vm string) []string {
		s, err := lab.VMSettings(context.Background(), vm)
		acctest.Must(t, err)
		return s.GPUs
	}
	const createBeforeDestroy = "  lifecycle {\n    create_before_destroy = true\n  }\n"
	cases := []struct {
		name      string
		before    string
		after     string
		actions   []string
		addresses []string
		planSays  string // a warning of the plan after the move
		// applyFails: the apply of that plan fails saying this, and then
		// plans the same again; then is the configuration that moves.
		applyFails, then string
		check            func(d *tfDir)
	}{
		{
			name: "GPU setup moved", before: gpuSetup(from, ""), after: gpuSetup(to, ""),
			actions: []string{"delete", "create"}, addresses: []string{gpuAddr},
			planSays: "The GPU setup moves from virtual machine " + lab.VMUUID(from) + " to " + lab.VMUUID(to) + " on the same host and names devices " + gpu,
		},
		{
			// Refused at apply, the plan having warned: nothing is lost, and
			// the move without create_before_destroy then goes through.
			name:    "GPU setup moved with create_before_destroy",
			before:  gpuSetup(from, createBeforeDestroy),
			after:   gpuSetup(to, createBeforeDestroy),
			actions: []string{"create", "delete"}, addresses: []string{gpuAddr},
			planSays: "GPU setup moves with its devices",
			applyFails: "If this is a GPU setup moved from " + from + " with create_before_destroy, remove create_before_destroy " +
				"and run terraform destroy -refresh=false -target on this resource once",
			then: gpuSetup(to, ""),
		},
		{
			name: "adapter moved with its static MAC", before: adapter(from), after: adapter(to),
			actions: []string{"delete", "create"}, addresses: []string{nicAddr},
			planSays: "The PVRDMA adapter moves from virtual machine " + lab.VMUUID(from) + " to " + lab.VMUUID(to) + " and keeps MAC address " + mac,
			check: func(d *tfDir) {
				var state struct {
					Values struct {
						RootModule struct {
							Resources []struct {
								Address string         `json:"address"`
								Values  map[string]any `json:"values"`
							} `json:"resources"`
						} `json:"root_module"`
					} `json:"values"`
				}
				acctest.Must(t, json.Unmarshal([]byte(d.run("show", "-json")), &state))
				for _, r := range state.Values.RootModule.Resources {
					if r.Address == nicAddr && (r.Values["virtual_machine_id"] != lab.VMUUID(to) || r.Values["mac_address"] != mac) {
						t.Errorf("the moved adapter is on %v with MAC %v, want %s and %s", r.Values["virtual_machine_id"], r.Values["mac_address"], lab.VMUUID(to), mac)
					}
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + c.before})
			d.run("apply", "-auto-approve")
			d.write(map[string]string{"main.tf": acctest.RequiredProviders + c.after})
			planned := func() {
				t.Helper()
				changes, out := d.planSaying()
				if len(changes) != 1 || changes[0].Address != c.addresses[0] || !slices.Equal(changes[0].Actions, c.actions) {
					t.Fatalf("the plan after the move: %v, want %s %v", changes, c.addresses[0], c.actions)
				}
				if !acctest.Wording(c.planSays).MatchString(out) {
					t.Errorf("the plan after the move does not say %q:\n%s", c.planSays, out)
				}
			}
			planned()
			if c.applyFails != "" {
				if out, err := d.try("apply", "tfplan"); err == nil || !acctest.Wording(c.applyFails).MatchString(out) {
					t.Fatalf("the apply: %v, want it to fail saying %q:\n%s", err, c.applyFails, out)
				}
				// Terraform keeps the old setup as a deposed object when the
				// apply's own plan of the new one fails (it restores one only
				// when the create itself fails), and any plan, the one a
				// destroy refreshes with too, then sees its GPU still taken:
				// the error says to destroy it without that refresh, which
				// restores its VM.
				d.run("destroy", "-auto-approve", "-refresh=false", "-target="+c.addresses[0])
				if got := gpusOf(from); len(got) != 0 {
					t.Errorf("%s keeps GPUs %q after the deposed setup's destroy", from, got)
				}
				d.write(map[string]string{"main.tf": acctest.RequiredProviders + c.then})
				d.plan()
			}
			d.run("apply", "tfplan")
			if c.check != nil {
				c.check(d)
			}
			if strings.HasPrefix(c.name, "GPU") {
				if got := gpusOf(to); !slices.Equal(got, []string{gpu}) {
					t.Errorf("%s has GPUs %q after the move, want [%s]", to, got, gpu)
				}
				if got := gpusOf(from); len(got) != 0 {
					t.Errorf("%s keeps GPUs %q after the move", from, got)
				}
			}
			if changes := d.plan(); len(changes) != 0 {
				t.Errorf("the plan after the apply: %v, want none", changes)
			}
			d.run("destroy", "-auto-approve")
		})
	}
}
