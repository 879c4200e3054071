package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// listTypes are the resources with a list, each queried by the guide's
// query file, examples/adopt/adopt.tfquery.hcl.
var listTypes = []string{
	"vspherehpc_rdma_dvs", "vspherehpc_host_pvrdma_settings", "vspherehpc_host_pci_passthrough", "vspherehpc_host_sriov",
	"vspherehpc_host_graphics", "vspherehpc_vm_pvrdma_nic", "vspherehpc_vm_sriov_nic", "vspherehpc_vm_gpu_mmio",
}

// adoptExample is the files of examples/adopt, the guide's configuration.
func adoptExample(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, name := range []string{"main.tf", "adopt.tfquery.hcl"} {
		b, err := os.ReadFile(filepath.Join("../../examples/adopt", name))
		acctest.Must(t, err)
		files[name] = string(b)
	}
	return files
}

// queryResults runs terraform query -json and returns, per list block
// address, the display names of its results, sorted.
func queryResults(t *testing.T, d *tfDir) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(d.run("query", "-json")))
	for sc.Scan() {
		var m struct {
			Type  string `json:"type"`
			Found struct {
				Address     string `json:"address"`
				DisplayName string `json:"display_name"`
			} `json:"list_resource_found"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "list_resource_found" {
			out[m.Found.Address] = append(out[m.Found.Address], m.Found.DisplayName)
		}
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}

// The adoption story end to end, with Terraform 1.14: a lab built by hand
// is listed, in one round trip per list block; the configuration terraform
// query generates plans imports of everything, and exactly the two changes
// the hand-built lab needs (a teamed uplink, a too-small MMIO window); once
// applied, the next plan is empty.
func TestAccAdopt_handBuiltLab(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "builds the lab by hand")
	acctest.Must(t, lab.BuildByHand(context.Background()))
	hosts, vms := lab.HostNames(), lab.VMNames()
	// One host shares its GPUs by vGPU, set up by hand too (its A100 waits
	// for a reboot: adopted as it is, with nothing to change).
	acctest.Must(t, lab.ConfigureGraphics(context.Background(), hosts[0], "sharedDirect", "consolidation", nil))
	d := newTFDir(t, lab, adoptExample(t))
	d.env = append(d.env, "TF_VAR_datacenter="+lab.DatacenterName())
	for _, typ := range listTypes {
		if !strings.Contains(d.read("adopt.tfquery.hcl"), fmt.Sprintf("list %q", typ)) {
			t.Fatalf("examples/adopt/adopt.tfquery.hcl lists no %s", typ)
		}
	}

	lab.ResetCalls()
	found := queryResults(t, d)
	// One property-collector call per list block, and one for the
	// datacenter data source the blocks refer to.
	if got := lab.Calls()["RetrievePropertiesEx"]; got != len(listTypes)+1 {
		t.Errorf("terraform query made %d RetrievePropertiesEx calls for %d list blocks and a data source, want one each; calls: %v",
			got, len(listTypes), lab.Calls())
	}
	h100 := "GH100 [H100 SXM5 80GB]"
	want := map[string][]string{
		"list.vspherehpc_rdma_dvs.switch": {vcsimlab.HandBuiltSwitch, vcsimlab.HandBuiltTeamedSwitch},
		"list.vspherehpc_host_sriov.pf": {fmt.Sprintf("%s %s MT2892 Family [ConnectX-6 Dx] (4 virtual functions)",
			hosts[0], vcsimlab.HandBuiltSRIOVPF)},
		"list.vspherehpc_host_graphics.host": {hosts[0] + " (default sharedDirect, consolidation)"},
		"list.vspherehpc_vm_gpu_mmio.vm": {
			fmt.Sprintf("%s: 1 passthrough device, MMIO window 256 GB", vms[0]),
			fmt.Sprintf("%s: 1 passthrough device, MMIO window %d GB", vms[1], vcsimlab.HandBuiltSmallWindow),
		},
	}
	for _, h := range hosts {
		want["list.vspherehpc_host_pvrdma_settings.host"] = append(want["list.vspherehpc_host_pvrdma_settings.host"], h+" (vmknic vmk1, firewall on)")
		want["list.vspherehpc_host_pci_passthrough.host"] = append(want["list.vspherehpc_host_pci_passthrough.host"],
			fmt.Sprintf("%s: %s %s, %s %s", h, lab.GPUs()[0], h100, lab.GPUs()[1], h100))
	}
	for key, names := range want {
		if !slices.Equal(found[key], names) {
			t.Errorf("%s found %q, want %q", key, found[key], names)
		}
	}
	for key, n := range map[string]int{"list.vspherehpc_vm_pvrdma_nic.adapter": 2, "list.vspherehpc_vm_sriov_nic.adapter": 1} {
		if len(found[key]) != n {
			t.Errorf("%s found %q, want %d adapters", key, found[key], n)
		}
		for _, name := range found[key] {
			if !strings.HasPrefix(name, vms[0]+" ") && !strings.HasPrefix(name, vms[1]+" ") {
				t.Errorf("%s: display name %q does not start with its VM's name", key, name)
			}
		}
	}

	d.run("query", "-generate-config-out=adopted.tf")
	// The first VM's NUMA node affinity, set by hand, is in the generated configuration.
	if generated := d.read("adopted.tf"); !regexp.MustCompile(`numa_node_affinity\s*=\s*\[0\]`).MatchString(generated) {
		t.Errorf("the generated configuration lacks numa_node_affinity = [0]:\n%s", generated)
	}
	// The plan says why it changes what it does.
	out := d.run("plan", "-out=tfplan")
	for _, why := range []string{
		fmt.Sprintf("Host %s is joined to switch %s with the uplinks vmnic5,vmnic1. PVRDMA supports no NIC teaming",
			lab.HostID(hosts[len(hosts)-1]), vcsimlab.HandBuiltTeamedSwitch),
		fmt.Sprintf("has an MMIO window of %d GB for 80 GB of GPU memory: too small to boot, with no error. This plan grows it to 256 GB",
			vcsimlab.HandBuiltSmallWindow),
	} {
		if !acctest.Wording(why).MatchString(out) {
			t.Errorf("the plan of the generated configuration does not say %q:\n%s", why, out)
		}
	}
	var p struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions   []string        `json:"actions"`
				Importing json.RawMessage `json:"importing"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	acctest.Must(t, json.Unmarshal([]byte(d.run("show", "-json", "tfplan")), &p))
	var imported int
	var changed []string
	for _, rc := range p.ResourceChanges {
		if len(rc.Change.Importing) > 0 {
			imported++
		}
		if !slices.Equal(rc.Change.Actions, []string{"no-op"}) {
			changed = append(changed, rc.Address+" "+strings.Join(rc.Change.Actions, ","))
		}
	}
	total := 0
	for _, names := range found {
		total += len(names)
	}
	if imported != total || imported != len(p.ResourceChanges) {
		t.Errorf("the generated configuration imports %d of %d resources; the query found %d", imported, len(p.ResourceChanges), total)
	}
	sort.Strings(changed)
	wantChanged := []string{"vspherehpc_rdma_dvs.switch_1 update", "vspherehpc_vm_gpu_mmio.vm_1 update"}
	if !slices.Equal(changed, wantChanged) {
		t.Errorf("the generated configuration plans %q, want only imports and %q", changed, wantChanged)
	}
	d.run("apply", "-auto-approve", "tfplan")
	if again := d.plan(); len(again) != 0 {
		t.Errorf("plan after adopting: %+v, want no changes", again)
	}
}
