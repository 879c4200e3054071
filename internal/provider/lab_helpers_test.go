package provider

// Helpers shared by the provider's tests: the provider under test, the
// simulated lab each test gets, the provider block for it, and the
// configuration and checks that more than one test file uses. A helper that
// serves one file lives in that file.
//
// The lab (internal/vcsimlab) runs in this process, so a test that needs
// nothing else but the terraform binary is a resource.UnitTest and plain
// `go test` runs it; a test that needs more of the machine is a
// resource.Test, run with TF_ACC=1 (make test), and says why. Changes
// behind Terraform's back go through the lab's admin methods
// (internal/vcsimlab/admin.go), never through the vSphere SDK here.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var compareSame = compare.ValuesSame()

var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"vspherehpc": providerserver.NewProtocol6WithError(New("test")()),
}

// startLab gives a test its own simulated vCenter, so tests run in parallel.
// On an external run (external_test.go) it is that vCenter.
func startLab(t *testing.T, opts vcsimlab.Options) *vcsimlab.Lab {
	t.Helper()
	if target, _ := external(); target != nil {
		return connectExternal(t, *target, opts)
	}
	lab, err := vcsimlab.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting lab: %v", err)
	}
	t.Cleanup(lab.Close)
	t.Cleanup(func() { recordCalls(t.Name(), lab) })
	return lab
}

// must fails the test when a change made through the lab's admin methods
// (an administrator's change behind Terraform's back) fails.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("changing the lab out of band: %v", err)
	}
}

// labService is a service-layer client of the lab, to look at vSphere
// directly from tests.
func labService(lab *vcsimlab.Lab) *vsphere.Client {
	return vsphere.New(vsphere.Config{Server: lab.URL.Host, User: lab.Username, Password: lab.Password, CAFile: lab.CertFile,
		AllowUnverifiedSSL: lab.CertFile == ""})
}

// wrapped matches text as Terraform prints it in a diagnostic, where any
// space may have become a line break.
func wrapped(text string) *regexp.Regexp {
	return regexp.MustCompile(strings.Join(strings.Fields(regexp.QuoteMeta(text)), `\s+`))
}

// requiredProviders names the provider's source, in the namespace the
// testing framework serves it under (TF_ACC_PROVIDER_NAMESPACE, which the
// Makefile sets, else "hashicorp"). Test configurations need it only where
// the framework does not add it: import-block steps.
var requiredProviders = fmt.Sprintf(`
terraform {
  required_providers {
    vspherehpc = {
      source = "registry.terraform.io/%s/vspherehpc"
    }
  }
}
`, cmp.Or(os.Getenv("TF_ACC_PROVIDER_NAMESPACE"), "hashicorp"))

// providerConfig is the provider block for a lab, trusting its CA (an
// external vCenter without a CA file: not verifying it).
func providerConfig(lab *vcsimlab.Lab) string {
	if lab.CertFile == "" {
		return fmt.Sprintf(`
provider "vspherehpc" {
  vsphere_server       = %q
  user                 = %q
  password             = %q
  allow_unverified_ssl = true
}
`, lab.URL.Host, lab.Username, lab.Password)
	}
	return fmt.Sprintf(`
provider "vspherehpc" {
  vsphere_server = %q
  user           = %q
  password       = %q
  ca_file        = %q
}
`, lab.URL.Host, lab.Username, lab.Password, lab.CertFile)
}

// switchesConfig is two PVRDMA switches over all lab hosts, rdma-a on the
// first RDMA NIC (vmnic4 in the simulator) with port group pvrdma-a and
// rdma-b on the second (vmnic5) with port group pvrdma-b, for tests that put
// adapters on VMs.
func switchesConfig(lab *vcsimlab.Lab) string {
	config := providerConfig(lab) + fmt.Sprintf(`
data "vspherehpc_host" "esx" {
  count         = %d
  datacenter_id = %q
  name          = %s[count.index]
}
`, len(lab.HostNames()), lab.DatacenterID(), hclList(lab.HostNames()))
	nics := lab.RDMANICs()
	for i, key := range []string{"a", "b"} {
		config += fmt.Sprintf(`resource "vspherehpc_rdma_dvs" %[1]q {
  datacenter_id = %[2]q
  name          = %[3]q
  port_group {
    name = %[4]q
  }
  dynamic "host" {
    for_each = data.vspherehpc_host.esx
    content {
      host_system_id = host.value.id
      vmnic          = %[5]q
    }
  }
}
`, key, lab.DatacenterID(), testName("rdma-"+key), testName("pvrdma-"+key), nics[i])
	}
	return config
}

// hclList is an HCL list of strings.
func hclList(items []string) string {
	return `["` + strings.Join(items, `", "`) + `"]`
}

// refreshReads is a refresh step that checks how many property-collector
// reads (RetrievePropertiesEx) the refresh of the whole state takes: at most
// budget, one per resource (reads made at the same moment share a call, so
// a refresh may take fewer).
// Only the simulated lab counts calls: elsewhere it is a plain refresh.
func refreshReads(lab *vcsimlab.Lab, budget int) resource.TestStep {
	if !lab.Simulated() {
		return resource.TestStep{RefreshState: true}
	}
	return resource.TestStep{
		RefreshState: true,
		PreConfig:    lab.ResetCalls,
		Check: func(*terraform.State) error {
			if got := lab.Calls()["RetrievePropertiesEx"]; got > budget {
				return fmt.Errorf("refresh took %d RetrievePropertiesEx calls, want at most %d; all calls: %v", got, budget, lab.Calls())
			}
			return nil
		},
	}
}

// handMadeSwitch makes a distributed switch over every host of the lab's
// cluster, each host's first RDMA NIC its uplink, with one port group, as an
// administrator does in the vSphere Client (a PVRDMA adapter needs every
// host of its VM's cluster on the switch), and returns the port group's id.
func handMadeSwitch(t *testing.T, lab *vcsimlab.Lab, switchName, portGroupName string, ports int32) string {
	t.Helper()
	ctx := context.Background()
	for i, host := range lab.HostNames() {
		if i == 0 {
			must(t, lab.CreateSwitch(ctx, switchName, host, lab.RDMANICs()[0]))
		} else {
			must(t, lab.AddSwitchHost(ctx, switchName, host, lab.RDMANICs()[0]))
		}
	}
	must(t, lab.AddPortGroup(ctx, switchName, portGroupName, ports))
	id, err := lab.PortGroupID(ctx, portGroupName)
	must(t, err)
	return id
}
