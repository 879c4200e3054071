package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// terraformVersion is the version of the terraform the tests run.
var terraformVersion = sync.OnceValues(func() (*version.Version, error) {
	tf, err := acctest.TerraformPath()
	if err != nil {
		return nil, err
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
// under an older Terraform, which has none of them.
func needsTerraform114(t *testing.T) {
	t.Helper()
	needsTerraform(t, "1.14.0", "identity, list resources or actions")
}

// needsTerraform116 skips a test of what actions gained in Terraform 1.16:
// on_failure, before_destroy and after_destroy.
func needsTerraform116(t *testing.T) {
	t.Helper()
	needsTerraform(t, "1.16.0", "on_failure or destroy events for actions")
}

// needsTerraform skips a test of what Terraform has from version least on
// under an older one. `make test NEWEST=1` runs every test with Terraform 1.16
// and sets VSPHEREHPC_TEST_ADOPT, which turns the skip into a failure: in CI
// they run, never skip.
func needsTerraform(t *testing.T, least, what string) {
	t.Helper()
	v, err := terraformVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.Core().GreaterThanOrEqual(version.Must(version.NewVersion(least))) {
		return
	}
	if os.Getenv("VSPHEREHPC_TEST_ADOPT") != "" {
		t.Fatalf("terraform %s has no %s; make test NEWEST=1 runs Terraform 1.16, built into .cache/bin", v, what)
	}
	t.Skipf("terraform %s has no %s; make test NEWEST=1 runs this test with Terraform 1.16", v, what)
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
			Config:       acctest.RequiredProviders + config,
			ResourceName: addr, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity,
		},
	}
}

// A string import id is read by its syntax, where ":" and "," separate its
// parts; an identity's fields are read each as a field, and one holding a
// separator, or another kind's id, is refused naming the field, never split
// as a string id would be.
func TestIdentityFieldsAreFields(t *testing.T) {
	var diags diag.Diagnostics
	for _, id := range []string{"vm-uuid-1:4000", "4223b7a1-0000-0000-0000-00000000009c:4013"} {
		if m := vmDeviceIdentity.parse(id, &diags); diags.HasError() || m.VirtualMachineID.ValueString()+":"+m.DeviceKey.String() != id {
			t.Errorf("string id %q: %+v, %v", id, m, diags)
		}
	}
	if vmDeviceIdentity.parse("no-key", &diags); !diags.HasError() {
		t.Error("an id without a device key is imported")
	}
	diags = nil
	m := hostDeviceIdentity.parse("host-12:0000:86:00.0", &diags)
	if diags.HasError() || m.HostSystemID.ValueString() != "host-12" || m.PCIID.ValueString() != "0000:86:00.0" {
		t.Errorf("host device string id: %+v, %v", m, diags)
	}
	p := passthroughIdentity.parse("host-12:0000:3b:00.0,0000:5e:00.0", &diags)
	if diags.HasError() || p.HostSystemID.ValueString() != "host-12" || len(listStrings(p.PCIIDs)) != 2 {
		t.Errorf("passthrough string id: %+v, %v", p, diags)
	}

	for _, tc := range []struct {
		check func(*diag.Diagnostics)
		want  string
	}{
		{func(d *diag.Diagnostics) {
			hostIdentity.check(hostIdentityModel{types.StringValue("host-18:0000:3b:00.0")}, d)
		}, `The identity's host_system_id holds "host-18:0000:3b:00.0", with a ":" no host id has`},
		{func(d *diag.Diagnostics) {
			passthroughIdentity.check(passthroughIdentityModel{types.StringValue("host-18"), stringList([]string{"0000:3b:00.0,0000:5e:00.0"})}, d)
		}, `The identity's pci_ids element holds "0000:3b:00.0,0000:5e:00.0", with a ","`},
		{func(d *diag.Diagnostics) {
			hostIdentity.check(hostIdentityModel{types.StringValue("4223b7a1-0000-0000-0000-00000000009c")}, d)
		}, `The identity's host_system_id holds 4223b7a1-0000-0000-0000-00000000009c, which looks like a virtual machine's BIOS UUID; ` +
			`it takes a host's managed object id, such as host-12.`},
		{func(d *diag.Diagnostics) {
			vmIdentity.check(vmIdentityModel{types.StringValue("host-18")}, d)
		}, `The identity's virtual_machine_id holds host-18, which looks like a host's managed object id`},
		{func(d *diag.Diagnostics) {
			hostDeviceIdentity.check(hostDeviceIdentityModel{types.StringValue("host-18"), types.StringValue("0000:3b:00")}, d)
		}, `The identity's pci_id holds "0000:3b:00", which is not a PCI id`},
		{func(d *diag.Diagnostics) {
			switchIdentity.check(switchIdentityModel{types.StringValue("vm-12"), types.StringNull()}, d)
		}, `The identity's id holds "vm-12", which looks like a virtual machine's managed object id; it takes the switch's UUID`},
		{func(d *diag.Diagnostics) {
			vmDeviceIdentity.check(vmDeviceIdentityModel{types.StringValue("vm-12"), types.Int64Value(1 << 40)}, d)
		}, `The identity's device_key holds 1099511627776, which no device has`},
	} {
		var d diag.Diagnostics
		tc.check(&d)
		if !d.HasError() || !strings.Contains(diagText(d), tc.want) {
			t.Errorf("got %q, want %q", diagText(d), tc.want)
		}
	}
	// A name is left to the look-up, which says whose name it is.
	var d diag.Diagnostics
	hostIdentity.check(hostIdentityModel{types.StringValue("esx-01.lab")}, &d)
	if d.HasError() {
		t.Errorf("a host name is refused before the look-up: %v", d)
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
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "") +
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
		acctest.Must(t, json.Unmarshal([]byte(d.read("terraform.tfstate")), &state))
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
			acctest.Must(t, err)
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
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "") +
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
		acctest.Must(t, json.Unmarshal([]byte(d.read("terraform.tfstate")), &state))
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

	acctest.Must(t, lab.DestroyPortGroup(ctx, testName("pvrdma-vms")))
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
	if err == nil || !acctest.Wording("The identity's pci_ids is empty: it names no device.").MatchString(out) {
		t.Errorf("import by an identity with no device: %v\n%s", err, out)
	}
	acctest.Must(t, os.Remove(filepath.Join(d.dir, "import.tf")))
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
				PreConfig: func() { acctest.Must(t, lab.SetVMUUID(context.Background(), vm, newUUID)) },
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

// handBuiltIDs are the ids of what BuildByHand makes that the identity
// tests import.
type handBuiltIDs struct {
	hosts       []string // ids, the first host's first
	vms         []string // UUIDs, the first VM's first
	vmMOIDs     []string
	switchUUID  string
	portGroupID string
	nicKey      int64  // the first VM's PVRDMA adapter
	gpu         string // the first VM's H100
}

func handBuilt(t *testing.T, lab *vcsimlab.Lab) handBuiltIDs {
	t.Helper()
	ctx := context.Background()
	c := labClient(lab)
	var ids handBuiltIDs
	for _, h := range lab.HostNames() {
		ids.hosts = append(ids.hosts, lab.HostID(h))
	}
	for _, vm := range lab.VMNames()[:2] {
		ids.vms, ids.vmMOIDs = append(ids.vms, lab.VMUUID(vm)), append(ids.vmMOIDs, lab.VMID(vm))
	}
	sw, err := c.FindDVSByPath(ctx, "/"+lab.DatacenterName()+"/network/"+vcsimlab.HandBuiltSwitch)
	acctest.Must(t, err)
	ids.switchUUID = sw.UUID
	ids.portGroupID, err = lab.PortGroupID(ctx, vcsimlab.HandBuiltPortGroup)
	acctest.Must(t, err)
	vm, err := c.VM(ctx, ids.vms[0])
	acctest.Must(t, err)
	for _, n := range vm.NetworkAdapters {
		if n.Type == "vmxnet3vrdma" {
			ids.nicKey = n.Key
		}
	}
	setup, err := c.GPUMMIO(ctx, ids.vms[0])
	acctest.Must(t, err)
	if ids.nicKey == 0 || len(setup.Devices) != 1 {
		t.Fatalf("the hand-built VM %s has no PVRDMA adapter or not one GPU: %+v", ids.vms[0], setup)
	}
	ids.gpu = setup.Devices[0].PCIID
	return ids
}

// importBlock imports to addr by identity (HCL object fields).
func importBlock(addr, identity string) string {
	return fmt.Sprintf("\nimport {\n  to       = %s\n  identity = { %s }\n}\n", addr, identity)
}

// An identity's fields are read each as a field, never joined into a string
// id and parsed again (issue 37, item 5): a host id holding a PCI id after a
// ":" is refused, not read as that host with that device; one pci_ids
// element listing two devices is refused, not read as two; another kind's
// id (a VM's UUID as a host's or a switch's) is refused naming the field,
// what it holds and what it takes. Nothing is imported.
func TestAccIdentity_fieldsAreFields(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	ids := handBuilt(t, lab)
	host, gpus := ids.hosts[0], lab.GPUs()
	passthrough := hostPCIPassthroughConfig(lab, lab.HostNames()[0], "  pci_ids = "+hclList(gpus[:1]))
	step := func(config, want string) resource.TestStep {
		return resource.TestStep{Config: config, PlanOnly: true, ExpectError: acctest.Wording(want)}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			step(passthrough+importBlock(passthroughAddr, fmt.Sprintf("host_system_id = %q", host+":"+gpus[0])),
				fmt.Sprintf(`The identity's host_system_id holds %q, with a ":" no host id has; it takes a host's managed object id, `+
					`such as host-12. Each of an identity's fields holds one value: they are not joined as in a string import id.`, host+":"+gpus[0])),
			step(passthrough+importBlock(passthroughAddr, fmt.Sprintf("host_system_id = %q, pci_ids = [%q]", host, gpus[0]+","+gpus[1])),
				fmt.Sprintf(`The identity's pci_ids element holds %q, with a ",": one PCI id per element, not a string import id's list; `+
					`it takes a PCI id such as 0000:3b:00.0`, gpus[0]+","+gpus[1])),
			step(
				hostPVRDMASettingsConfig(lab, lab.HostNames()[0], `  vmknic = "vmk1"`)+importBlock(hostSettings, fmt.Sprintf("host_system_id = %q", ids.vms[0])),
				fmt.Sprintf(`The identity's host_system_id holds %s, which looks like a virtual machine's BIOS UUID; it takes a host's `+
					`managed object id, such as host-12.`, ids.vms[0]),
			),
			step(vmGPUMMIOConfig(lab, ids.vms[0], "")+importBlock(gpuAddr, fmt.Sprintf("virtual_machine_id = %q", host)),
				fmt.Sprintf(`The identity's virtual_machine_id holds %s, which looks like a host's managed object id`, host)),
			step(rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")+importBlock(dvsAddr, fmt.Sprintf("id = %q", ids.vms[0])),
				fmt.Sprintf(`The identity's id holds %q: reading distributed switch %s: no distributed switch has UUID %s (the BIOS UUID of `+
					`virtual machine %s); a distributed switch's id is its UUID, which vCenter writes as 16 spaced byte pairs (50 2a 6c ... -...); `+
					`use the id of a vspherehpc_rdma_dvs or vsphere_distributed_virtual_switch.`,
					ids.vms[0], ids.vms[0], ids.vms[0], ids.vmMOIDs[0])),
		},
	})
}

// An import whose identity (or id) names another object than the
// configuration is refused at plan, naming both and the fix (issue 37,
// item 5), not planned as the import of one object, the destroy of what it
// adopted and the create of the other: for a VM's GPU setup and adapter, a
// host's settings, a host's passthrough (another host, other devices), an
// SR-IOV function and a switch.
func TestAccIdentity_importOfAnotherObjectRefused(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	ids := handBuilt(t, lab)
	hosts, gpus := lab.HostNames(), lab.GPUs()
	refused := func(config, imported, configured string) resource.TestStep {
		return resource.TestStep{Config: config, PlanOnly: true, ExpectError: regexp.MustCompile(`Import does not match the configuration(?s:.*)` +
			acctest.Wording(fmt.Sprintf("with %s, and the configuration gives %s: applied, the import would be followed by destroying or changing "+
				"what it adopts to make it the configured one. Import what the configuration names (its id or identity in the import "+
				"block), or set", imported, configured)).String())}
	}
	nic := fmt.Sprintf(`
resource "vspherehpc_vm_pvrdma_nic" "nic" {
  virtual_machine_id        = %q
  distributed_port_group_id = %q
}
`, ids.vms[1], ids.portGroupID)
	dvs := rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	gpuSetup := vmGPUMMIOConfig(lab, ids.vms[0], "\n"+gpuBlock(ids.gpu)+"  power_off_allowed = true\n")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			// The configuration is the first VM's setup as it is; the import
			// names the second VM's.
			refused(gpuSetup+importBlock(gpuAddr, fmt.Sprintf("virtual_machine_id = %q", ids.vms[1])),
				fmt.Sprintf("virtual_machine_id %q", ids.vms[1]), fmt.Sprintf("virtual_machine_id = %q", ids.vms[0])),
			// The same by string id.
			refused(gpuSetup+fmt.Sprintf("\nimport {\n  to = %s\n  id = %q\n}\n", gpuAddr, ids.vms[1]),
				fmt.Sprintf("virtual_machine_id %q", ids.vms[1]), fmt.Sprintf("virtual_machine_id = %q", ids.vms[0])),
			refused(acctest.ProviderConfig(lab)+nic+importBlock(nicAddr, fmt.Sprintf("virtual_machine_id = %q, device_key = %d", ids.vms[0], ids.nicKey)),
				fmt.Sprintf("virtual_machine_id %q", ids.vms[0]), fmt.Sprintf("virtual_machine_id = %q", ids.vms[1])),
			refused(hostPVRDMASettingsConfig(lab, hosts[1], `  vmknic = "vmk1"`)+importBlock(hostSettings, fmt.Sprintf("host_system_id = %q", ids.hosts[0])),
				fmt.Sprintf("host_system_id %q", ids.hosts[0]), fmt.Sprintf("host_system_id = %q", ids.hosts[1])),
			refused(hostPCIPassthroughConfig(lab, hosts[1], "  pci_ids = "+hclList(gpus[:1]))+
				importBlock(passthroughAddr, fmt.Sprintf("host_system_id = %q, pci_ids = [%q]", ids.hosts[0], gpus[0])),
				fmt.Sprintf("host_system_id %q", ids.hosts[0]), fmt.Sprintf("host_system_id = %q", ids.hosts[1])),
			refused(hostPCIPassthroughConfig(lab, hosts[0], "  pci_ids = "+hclList(gpus[1:2]))+
				importBlock(passthroughAddr, fmt.Sprintf("host_system_id = %q, pci_ids = [%q]", ids.hosts[0], gpus[0])),
				fmt.Sprintf("pci_ids [%q]", gpus[0]), fmt.Sprintf("pci_ids = [%q]", gpus[1])),
			refused(hostSRIOVConfig(lab, hosts[0], "0000:d8:00.1", 4)+
				importBlock(sriovAddr, fmt.Sprintf("host_system_id = %q, pci_id = %q", ids.hosts[0], vcsimlab.HandBuiltSRIOVPF)),
				fmt.Sprintf("pci_id %q", vcsimlab.HandBuiltSRIOVPF), `pci_id = "0000:d8:00.1"`),
			refused(dvs+importBlock(dvsAddr, fmt.Sprintf("id = %q", ids.switchUUID)),
				fmt.Sprintf("name %q and port_group.name %q", vcsimlab.HandBuiltSwitch, vcsimlab.HandBuiltPortGroup),
				fmt.Sprintf("name = %q and port_group.name = %q", testName("rdma"), testName("pvrdma-vms"))),
		},
	})
}

// The refusal is for the plan that follows the import only: an import by
// identity that names the configuration's VM by another of its ids (its
// UUID, the configuration its managed object id) is one object; and once
// imported, a later change of the configuration to another host plans a
// replacement, as any change of the host does.
func TestAccIdentity_importThenReplace(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	ids := handBuilt(t, lab)
	hosts := lab.HostNames()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: acctest.ProviderConfig(lab) + fmt.Sprintf(`
resource "vspherehpc_vm_pvrdma_nic" "nic" {
  virtual_machine_id        = %q
  distributed_port_group_id = %q
}
`, ids.vmMOIDs[0], ids.portGroupID) + importBlock(nicAddr, fmt.Sprintf("virtual_machine_id = %q, device_key = %d", ids.vms[0], ids.nicKey)),
				PlanOnly: true, ExpectNonEmptyPlan: true,
			},
			{
				Config: hostPVRDMASettingsConfig(
					lab,
					hosts[0],
					`  vmknic = "vmk1"`,
				) + importBlock(
					hostSettings,
					fmt.Sprintf("host_system_id = %q", ids.hosts[0]),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hostSettings, plancheck.ResourceActionNoop),
				}},
			},
			{
				Config: hostPVRDMASettingsConfig(lab, hosts[1], `  vmknic = "vmk1"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hostSettings, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(hostSettings, tfjsonpath.New("host_system_id"), knownvalue.StringExact(ids.hosts[1])),
				},
			},
		},
	})
}
