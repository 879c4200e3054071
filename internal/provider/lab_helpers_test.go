package provider

// Helpers shared by the provider's tests: the provider under test, the
// simulated lab each test gets (started by internal/acctest, which also has
// the provider block for it), a service-layer client of that lab, and the
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
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var compareSame = compare.ValuesSame()

var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"vspherehpc": providerserver.NewProtocol6WithError(New("test")()),
}

// startLab gives a test its own simulated vCenter (acctest.StartLab), whose
// calls the privileges check records. On an external run (external_test.go)
// it is that vCenter.
func startLab(t *testing.T, opts vcsimlab.Options) *vcsimlab.Lab {
	t.Helper()
	if target, _ := external(); target != nil {
		return connectExternal(t, *target, opts)
	}
	lab := acctest.StartLab(t, opts)
	t.Cleanup(func() { recordCalls(t.Name(), lab) })
	return lab
}

// labClient is a service-layer client of the lab, to look at vSphere
// directly from tests.
func labClient(lab *vcsimlab.Lab) *vsphere.Client {
	return vsphere.New(vsphere.Config{Server: lab.URL.Host, User: lab.Username, Password: lab.Password, CAFile: lab.CertFile,
		AllowUnverifiedSSL: lab.CertFile == ""})
}

// rdmaDVSTwoSwitchesConfig is two PVRDMA switches over all lab hosts, rdma-a on the
// first RDMA NIC (vmnic4 in the simulator) with port group pvrdma-a and
// rdma-b on the second (vmnic5) with port group pvrdma-b, for tests that put
// adapters on VMs.
func rdmaDVSTwoSwitchesConfig(lab *vcsimlab.Lab) string {
	config := acctest.ProviderConfig(lab) + fmt.Sprintf(`
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
			acctest.Must(t, lab.CreateSwitch(ctx, switchName, host, lab.RDMANICs()[0]))
		} else {
			acctest.Must(t, lab.AddSwitchHost(ctx, switchName, host, lab.RDMANICs()[0]))
		}
	}
	acctest.Must(t, lab.AddPortGroup(ctx, switchName, portGroupName, ports))
	id, err := lab.PortGroupID(ctx, portGroupName)
	acctest.Must(t, err)
	return id
}
