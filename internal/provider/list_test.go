package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// handBuiltLab is a lab as BuildByHand leaves it, for list tests.
func handBuiltLab(t *testing.T) *vcsimlab.Lab {
	t.Helper()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "builds the lab by hand")
	acctest.Must(t, lab.BuildByHand(context.Background()))
	return lab
}

// query is one terraform query of a list block "q" of a list resource,
// with config's arguments, and what it must find or the error it must give.
type query struct {
	config string
	checks []querycheck.QueryResultCheck
	err    string
}

// runQueries runs each query as a query step of one test case.
func runQueries(t *testing.T, lab *vcsimlab.Lab, listType string, queries []query) {
	t.Helper()
	// Query files take no terraform block: a first step writes it.
	steps := []resource.TestStep{{Config: acctest.RequiredProviders}}
	for _, q := range queries {
		step := resource.TestStep{Query: true, QueryResultChecks: q.checks, Config: acctest.ProviderConfig(lab) + fmt.Sprintf(`
list %q "q" {
  provider         = vspherehpc
  include_resource = true
  config {
%s
  }
}
`, listType, q.config)}
		if q.err != "" {
			step.ExpectError = acctest.Wording(q.err)
		}
		steps = append(steps, step)
	}
	resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})
}

// Every list shares these queries: a datacenter that does not exist is a
// clear error, and a host filter keeps out everything not on that host.
func scopeErrors(lab *vcsimlab.Lab) []query {
	return []query{
		{config: `    datacenter_id = "datacenter-999"`, err: "no datacenter has id datacenter-999"},
		{config: `    cluster_id = "domain-c999"`, err: "no cluster has id domain-c999"},
		{config: fmt.Sprintf("    datacenter_id = %q\n    cluster_id = \"domain-c1\"", lab.DatacenterID()), err: "cluster_id"},
	}
}

func inDatacenter(lab *vcsimlab.Lab) string {
	return fmt.Sprintf("    datacenter_id = %q", lab.DatacenterID())
}

func onHosts(lab *vcsimlab.Lab, names ...string) string {
	ids := make([]string, len(names))
	for i, n := range names {
		ids[i] = lab.HostID(n)
	}
	return "    host_system_ids = " + hclList(ids)
}

// displayed checks a list block "q" of listType found a result named name.
func displayed(listType, name string) querycheck.QueryResultCheck {
	return querycheck.ExpectResourceDisplayName(listType+".q", queryfilter.ByDisplayName(knownvalue.StringExact(name)), knownvalue.StringExact(name))
}

// hostWithoutAdapters is a host where neither of the two VMs the hand-built
// lab sets up runs.
func hostWithoutAdapters(lab *vcsimlab.Lab) string {
	vms := lab.VMNames()
	for _, h := range lab.HostNames() {
		if h != lab.VMHostName(vms[0]) && h != lab.VMHostName(vms[1]) {
			return h
		}
	}
	return ""
}

// Two VMs sharing one BIOS UUID (vCenter allows it) are both listed, each
// with a warning that names both: an import by their identity would adopt
// whichever vCenter finds first.
func TestAccList_sharedIdentityWarned(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	vms := lab.VMNames()
	acctest.Must(t, lab.SetVMUUID(context.Background(), vms[1], lab.VMUUID(vms[0])))
	d := newTFDir(t, lab, adoptExample(t))
	d.env = append(d.env, "TF_VAR_datacenter="+lab.DatacenterName())
	var warned []string
	sc := bufio.NewScanner(strings.NewReader(d.run("query", "-json")))
	for sc.Scan() {
		var m struct {
			Type       string `json:"type"`
			Diagnostic struct {
				Severity string `json:"severity"`
				Summary  string `json:"summary"`
				Detail   string `json:"detail"`
			} `json:"diagnostic"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "diagnostic" && m.Diagnostic.Severity == "warning" &&
			strings.Contains(m.Diagnostic.Detail, "have the same identity") {
			warned = append(warned, m.Diagnostic.Summary+": "+m.Diagnostic.Detail)
		}
	}
	// The two GPU setups; the PVRDMA adapters keep identities of their
	// own, as the first VM's has another device key (its SR-IOV adapter
	// came first).
	if len(warned) != 2 {
		t.Fatalf("%d warnings of a shared identity, want the two GPU setups':\n%s", len(warned), strings.Join(warned, "\n"))
	}
	for _, w := range warned {
		if !strings.Contains(w, vms[0]+":") || !strings.Contains(w, vms[1]+":") || !strings.Contains(w, "uuid.bios") {
			t.Errorf("warning %q does not name both VMs and the fix", w)
		}
	}
}

// queryDiagnostics runs terraform query -json and returns the display names
// of the results per list block address, and the warnings as
// "summary: detail".
func queryDiagnostics(t *testing.T, d *tfDir) (map[string][]string, []string) {
	t.Helper()
	found := map[string][]string{}
	var warnings []string
	sc := bufio.NewScanner(strings.NewReader(d.run("query", "-json")))
	for sc.Scan() {
		var m struct {
			Type  string `json:"type"`
			Found struct {
				Address     string `json:"address"`
				DisplayName string `json:"display_name"`
			} `json:"list_resource_found"`
			Diagnostic struct {
				Severity string `json:"severity"`
				Summary  string `json:"summary"`
				Detail   string `json:"detail"`
			} `json:"diagnostic"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Type == "list_resource_found":
			found[m.Found.Address] = append(found[m.Found.Address], m.Found.DisplayName)
		case m.Type == "diagnostic" && m.Diagnostic.Severity == "warning":
			warnings = append(warnings, m.Diagnostic.Summary+": "+m.Diagnostic.Detail)
		}
	}
	return found, warnings
}

// While a host is disconnected vCenter returns no configuration or
// hardware for it: the host lists leave it out, and the GPU list the VMs on
// it (their GPUs would pass for other PCI devices), each with a warning
// naming what is left out, instead of results that adopt wrong settings or
// hosts silently missing.
func TestAccList_disconnectedHostLeftOut(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	vms := lab.VMNames()
	host := lab.VMHostName(vms[0])
	acctest.Must(t, lab.SetHostConnected(context.Background(), host, false))
	d := newTFDir(t, lab, adoptExample(t))
	d.env = append(d.env, "TF_VAR_datacenter="+lab.DatacenterName())
	found, warnings := queryDiagnostics(t, d)
	for address, names := range found {
		for _, n := range names {
			if strings.HasPrefix(n, host+" ") || strings.HasPrefix(n, host+":") || strings.HasPrefix(n, vms[0]+":") {
				t.Errorf("%s lists %q, read while its host is disconnected", address, n)
			}
		}
	}
	want := map[string]string{
		"Host " + host + " left out: The PVRDMA settings of host " + host + " are not listed":                                                       "",
		"Host " + host + " left out: The PCI passthrough of host " + host + " is not listed":                                                        "",
		"Host " + host + " left out: The SR-IOV physical functions of host " + host + " are not listed":                                             "",
		"Virtual machine " + vms[0] + " left out: The GPU setup of virtual machine " + vms[0] + " is not listed: its host's devices cannot be read": "",
	}
	for prefix := range want {
		for _, w := range warnings {
			if strings.HasPrefix(w, prefix) && strings.Contains(w, "vCenter returns no configuration for host "+host+" ("+lab.HostID(host)+
				", connection state: disconnected); reconnect it") {
				want[prefix] = w
			}
		}
		if want[prefix] == "" {
			t.Errorf("no warning %q...; the warnings:\n%s", prefix, strings.Join(warnings, "\n"))
		}
	}
	// Connected again, the host and the VM are listed as before.
	acctest.Must(t, lab.SetHostConnected(context.Background(), host, true))
	found, _ = queryDiagnostics(t, d)
	if !slices.ContainsFunc(found["list.vspherehpc_vm_gpu_mmio.vm"], func(n string) bool { return strings.HasPrefix(n, vms[0]+":") }) {
		t.Errorf("the GPU list has no %s once its host is connected: %q", vms[0], found["list.vspherehpc_vm_gpu_mmio.vm"])
	}
}

// A template cannot be reconfigured (convert it to a VM first), so no
// resource manages its devices: the VM lists leave templates out.
func TestAccList_templatesLeftOut(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	vms := lab.VMNames()
	ctx := context.Background()
	_ = lab.PowerOffVM(ctx, vms[1]) // already off is fine: the template needs it off
	vm := object.NewVirtualMachine(lab.Client().Client, types.ManagedObjectReference{Type: "VirtualMachine", Value: lab.VMID(vms[1])})
	acctest.Must(t, vm.MarkAsTemplate(ctx))
	d := newTFDir(t, lab, adoptExample(t))
	d.env = append(d.env, "TF_VAR_datacenter="+lab.DatacenterName())
	found, _ := queryDiagnostics(t, d)
	for _, address := range []string{"list.vspherehpc_vm_gpu_mmio.vm", "list.vspherehpc_vm_pvrdma_nic.adapter"} {
		var others []string
		for _, n := range found[address] {
			if strings.HasPrefix(n, vms[1]+":") || strings.HasPrefix(n, vms[1]+" ") {
				t.Errorf("%s lists the template %s: %q", address, vms[1], n)
			} else {
				others = append(others, n)
			}
		}
		if !slices.ContainsFunc(others, func(n string) bool { return strings.HasPrefix(n, vms[0]) }) {
			t.Errorf("%s does not list %s: %q", address, vms[0], found[address])
		}
	}
}
