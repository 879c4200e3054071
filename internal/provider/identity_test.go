package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// terraformVersion is the version of the terraform the tests run.
var terraformVersion = sync.OnceValues(func() (*version.Version, error) {
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		tf = "terraform"
	}
	out, err := exec.Command(tf, "version", "-json").Output()
	if err != nil {
		return nil, fmt.Errorf("%s version: %w", tf, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, err
	}
	return version.NewVersion(v.Version)
})

// needsTerraform114 skips a test of identity, list resources or actions
// under an older Terraform, which has none of them. `make test-adopt` runs these tests
// with Terraform 1.14 and sets VSPHEREHPC_TEST_ADOPT, which turns the skip
// into a failure: in CI they run, never skip.
func needsTerraform114(t *testing.T) {
	t.Helper()
	v, err := terraformVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.Core().GreaterThanOrEqual(version.Must(version.NewVersion("1.14.0"))) {
		return
	}
	if os.Getenv("VSPHEREHPC_TEST_ADOPT") != "" {
		t.Fatalf("terraform %s has no list resources or actions; make test-adopt runs Terraform 1.14 (make terraform-query builds it)", v)
	}
	t.Skipf("terraform %s has no identity, list resources or actions; make test-adopt runs this test with Terraform 1.14", v)
}

// identitySteps creates a resource, checks the identity it records, and
// imports it by that identity through an import block: the import plans no
// change, and the identity it reads back is the same.
func identitySteps(addr, config string, identity map[string]knownvalue.Check, checks ...statecheck.StateCheck) []resource.TestStep {
	return []resource.TestStep{
		{
			Config:            config,
			ConfigStateChecks: append(checks, statecheck.ExpectIdentity(addr, identity)),
		},
		{
			Config:       requiredProviders + config,
			ResourceName: addr, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity,
		},
	}
}

// A switch's identity names its port group: with a second port group on the
// switch, the import by identity adopts the one the resource manages, and
// plans no change.
func TestAccIdentity_rdmaDVS(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	steps := identitySteps(dvsAddr, dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""), map[string]knownvalue.Check{
		"id":             knownvalue.NotNull(),
		"port_group_key": knownvalue.NotNull(),
	}, statecheck.ExpectIdentityValueMatchesState(dvsAddr, tfjsonpath.New("id")),
		statecheck.ExpectIdentityValueMatchesState(dvsAddr, tfjsonpath.New("port_group_key")))
	steps[0].Check = func(*terraform.State) error {
		return lab.AddPortGroup(context.Background(), testName("rdma"), testName("storage"), 8)
	}
	resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})
}

func TestAccIdentity_hostPVRDMASettings(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	name := lab.HostNames()[0]
	needsVmk0(t, lab, name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(hostSettings, hostSettingsConfig(lab, name, fmt.Sprintf("  vmknic = %q", lab.Vmknic())), map[string]knownvalue.Check{
			"host_system_id": knownvalue.StringExact(lab.HostID(name)),
		}),
	})
}

// A passthrough's identity names its devices: a resource that manages one
// of the host's two H100s imports by identity with that one, and plans no
// change, though the other has passthrough on too.
func TestAccIdentity_hostPCIPassthrough(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's H100s, which start with passthrough on")
	name := lab.HostNames()[0]
	gpu := lab.GPUs()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(passthroughAddr, passthroughConfig(lab, name, "  pci_ids = "+hclList([]string{gpu})), map[string]knownvalue.Check{
			"host_system_id": knownvalue.StringExact(lab.HostID(name)),
			"pci_ids":        knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(gpu)}),
		}),
	})
}

func TestAccIdentity_hostSRIOV(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	name := lab.HostNames()[0]
	pf, _ := sriovPF(t, lab, name)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(sriovAddr, sriovConfig(lab, name, pf, 4), map[string]knownvalue.Check{
			"host_system_id": knownvalue.StringExact(lab.HostID(name)),
			"pci_id":         knownvalue.StringExact(pf),
		}),
	})
}

func TestAccIdentity_vmPVRDMANIC(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(nicAddr, nicConfig(lab, uuid, "a", ""), map[string]knownvalue.Check{
			"virtual_machine_id": knownvalue.StringExact(uuid),
			"device_key":         knownvalue.NotNull(),
		}, statecheck.ExpectIdentityValueMatchesState(nicAddr, tfjsonpath.New("device_key"))),
	})
}

func TestAccIdentity_vmSRIOVNIC(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's SR-IOV NICs")
	vm := lab.VMNames()[0]
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(sriovNICAddr, sriovNICConfig(lab, vm, "a", vmnic4PF, false), map[string]knownvalue.Check{
			"virtual_machine_id": knownvalue.StringExact(lab.VMUUID(vm)),
			"device_key":         knownvalue.NotNull(),
		}, statecheck.ExpectIdentityValueMatchesState(sriovNICAddr, tfjsonpath.New("device_key"))),
	})
}

func TestAccIdentity_vmGPUMMIO(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: identitySteps(gpuAddr, gpuConfig(lab, uuid, twoGPUs(lab)), map[string]knownvalue.Check{
			"virtual_machine_id": knownvalue.StringExact(uuid),
		}),
	})
}

// A string import id names the same object an identity does: the two kinds
// of import agree.
func TestIdentityRoundTrip(t *testing.T) {
	for _, id := range []string{"vm-uuid-1:4000", "4223b7a1-0000-0000-0000-00000000009c:4013"} {
		m, ok := vmDeviceIdentity.fromID(id)
		if !ok || vmDeviceIdentity.importID(m) != id {
			t.Errorf("device identity of %q: %+v, %v", id, m, ok)
		}
	}
	if _, ok := vmDeviceIdentity.fromID("no-key"); ok {
		t.Error("an id without a device key has an identity")
	}
	m, ok := hostDeviceIdentity.fromID("host-12:0000:86:00.0")
	if !ok || m.HostSystemID.ValueString() != "host-12" || m.PCIID.ValueString() != "0000:86:00.0" {
		t.Errorf("host device identity: %+v", m)
	}
	if got := hostDeviceIdentity.importID(m); !strings.EqualFold(got, "host-12:0000:86:00.0") {
		t.Errorf("host device import id %q", got)
	}
}

// State written before identities named a switch's port group and a
// passthrough's devices refreshes into the identities of today, without
// "Unexpected Identity Change": both resources declare a mutable identity.
func TestAccIdentity_olderStateGainsNewAttributes(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's H100s, which start with passthrough on")
	gpu := lab.GPUs()[0]
	d := newTFDir(t, lab, map[string]string{"main.tf": requiredProviders + dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "") +
		fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "p" {
  host_system_id = %q
  pci_ids        = [%q]
}
`, lab.HostID(lab.HostNames()[0]), gpu)})
	d.run("apply", "-auto-approve")

	// What an older release wrote: the identities without the attributes.
	dropped := map[string]string{"vspherehpc_rdma_dvs": "port_group_key", "vspherehpc_host_pci_passthrough": "pci_ids"}
	identities := func(edit bool) map[string]map[string]any {
		var state map[string]any
		must(t, json.Unmarshal([]byte(d.read("terraform.tfstate")), &state))
		out := map[string]map[string]any{}
		for _, r := range state["resources"].([]any) {
			r := r.(map[string]any)
			for _, inst := range r["instances"].([]any) {
				identity, _ := inst.(map[string]any)["identity"].(map[string]any)
				if edit {
					delete(identity, dropped[r["type"].(string)])
				}
				out[r["type"].(string)] = identity
			}
		}
		if edit {
			b, err := json.Marshal(state)
			must(t, err)
			d.write(map[string]string{"terraform.tfstate": string(b)})
		}
		return out
	}
	identities(true)
	if got := identities(false); got["vspherehpc_rdma_dvs"]["port_group_key"] != nil || got["vspherehpc_host_pci_passthrough"]["pci_ids"] != nil {
		t.Fatalf("the state still has the attributes: %v", got)
	}

	d.run("apply", "-refresh-only", "-auto-approve")
	got := identities(false)
	if key, _ := got["vspherehpc_rdma_dvs"]["port_group_key"].(string); !strings.HasPrefix(key, "dvportgroup-") {
		t.Errorf("switch identity after refresh: %v, want a port_group_key", got["vspherehpc_rdma_dvs"])
	}
	if ids, _ := got["vspherehpc_host_pci_passthrough"]["pci_ids"].([]any); len(ids) != 1 || ids[0] != gpu {
		t.Errorf("passthrough identity after refresh: %v, want pci_ids [%s]", got["vspherehpc_host_pci_passthrough"], gpu)
	}
	if changes := d.plan(); len(changes) != 0 {
		t.Errorf("plan after the refresh: %+v, want no changes", changes)
	}
	d.run("destroy", "-auto-approve")
}

// An identity is what the last read found: a switch whose port group was
// deleted out of band has the empty key after a refresh (and the key of
// the one the next apply creates after it); a passthrough that selects its
// devices with match names the devices match found. An identity listing no
// device is refused, not read as every device.
func TestAccIdentity_followsTheRead(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's A100")
	ctx := context.Background()
	host := lab.HostID(lab.HostNames()[0])
	d := newTFDir(t, lab, map[string]string{"main.tf": requiredProviders + dvsConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "") +
		fmt.Sprintf(`
resource "vspherehpc_host_pci_passthrough" "p" {
  host_system_id = %q
  match {
    vendor_id = "10de"
    device_id = "20f1"
  }
}
`, host)})
	d.run("apply", "-auto-approve")
	type instance struct {
		Attributes map[string]any `json:"attributes"`
		Identity   map[string]any `json:"identity"`
	}
	read := func() map[string]instance {
		var state struct {
			Resources []struct {
				Type      string     `json:"type"`
				Instances []instance `json:"instances"`
			} `json:"resources"`
		}
		must(t, json.Unmarshal([]byte(d.read("terraform.tfstate")), &state))
		out := map[string]instance{}
		for _, r := range state.Resources {
			out[r.Type] = r.Instances[0]
		}
		return out
	}
	got := read()
	if ids, _ := got["vspherehpc_host_pci_passthrough"].Identity["pci_ids"].([]any); len(ids) != 1 || ids[0] != a100 {
		t.Errorf("identity of a passthrough by match: %v, want pci_ids [%s]", got["vspherehpc_host_pci_passthrough"].Identity, a100)
	}

	must(t, lab.DestroyPortGroup(ctx, testName("pvrdma-vms")))
	d.run("apply", "-refresh-only", "-auto-approve")
	sw := read()["vspherehpc_rdma_dvs"]
	if sw.Attributes["port_group_key"] != nil || sw.Identity["port_group_key"] != "" {
		t.Errorf("after the port group's deletion and a refresh: state key %v, identity %v; want none and the empty key",
			sw.Attributes["port_group_key"], sw.Identity)
	}
	d.run("apply", "-auto-approve")
	sw = read()["vspherehpc_rdma_dvs"]
	if key, _ := sw.Attributes["port_group_key"].(string); key == "" || sw.Identity["port_group_key"] != key {
		t.Errorf("after the apply that creates the port group again: state key %v, identity %v; want the same key",
			sw.Attributes["port_group_key"], sw.Identity)
	}

	d.write(map[string]string{"import.tf": fmt.Sprintf(`
import {
  to       = vspherehpc_host_pci_passthrough.other
  identity = { host_system_id = %q, pci_ids = [] }
}
resource "vspherehpc_host_pci_passthrough" "other" {
  host_system_id = %q
  pci_ids        = [%q]
}
`, host, host, lab.GPUs()[0])})
	out, err := d.try("plan")
	if err == nil || !wrapped(fmt.Sprintf("Import %q names no device", host+":")).MatchString(out) {
		t.Errorf("import by an identity with no device: %v\n%s", err, out)
	}
	must(t, os.Remove(filepath.Join(d.dir, "import.tf")))
	d.run("destroy", "-auto-approve")
}

// A VM given a new BIOS UUID (uuid.bios, as the duplicate-UUID error
// advises) keeps its adapter and GPU setup, configured by managed object
// id: their ids and identities follow the new UUID through refreshes and a
// change, rather than the framework refusing the identity's change.
func TestAccIdentity_vmUUIDChanged(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "changes a VM's BIOS UUID")
	vm := lab.VMNames()[0]
	const newUUID = "4200aaaa-1111-2222-3333-444455556666"
	config := func(extra string) string { return reregisterConfig(lab, fmt.Sprintf("%q", lab.VMID(vm)), extra) }
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config("")},
			{
				PreConfig: func() { must(t, lab.SetVMUUID(context.Background(), vm, newUUID)) },
				Config:    config(""),
			},
			{
				Config: config(`  start_connected = false`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity(gpuAddr, map[string]knownvalue.Check{"virtual_machine_id": knownvalue.StringExact(newUUID)}),
					statecheck.ExpectIdentityValue(nicAddr, tfjsonpath.New("virtual_machine_id"), knownvalue.StringExact(newUUID)),
					statecheck.ExpectKnownValue(gpuAddr, tfjsonpath.New("id"), knownvalue.StringExact(newUUID)),
				},
			},
		},
	})
}
