package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// A switch's identity names its port group: with a second port group on the
// switch, the import by identity adopts the one the resource manages, and
// plans no change.
func TestAccRDMADVS_identity(t *testing.T) {
	t.Parallel()
	needsTerraform114(t)
	lab := startLab(t, vcsimlab.Options{})
	steps := identitySteps(dvsAddr, rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""), map[string]knownvalue.Check{
		"id":             knownvalue.NotNull(),
		"port_group_key": knownvalue.NotNull(),
	}, statecheck.ExpectIdentityValueMatchesState(dvsAddr, tfjsonpath.New("id")),
		statecheck.ExpectIdentityValueMatchesState(dvsAddr, tfjsonpath.New("port_group_key")))
	steps[0].Check = func(*terraform.State) error {
		return lab.AddPortGroup(context.Background(), testName("rdma"), testName("storage"), 8)
	}
	resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})
}

func TestAccRDMADVS_list(t *testing.T) {
	t.Parallel()
	lab := handBuiltLab(t)
	hosts := lab.HostNames()
	last := hosts[len(hosts)-1]
	teamed := queryfilter.ByDisplayName(knownvalue.StringExact(vcsimlab.HandBuiltTeamedSwitch))
	runQueries(t, lab, "vspherehpc_rdma_dvs", append([]query{
		{config: inDatacenter(lab), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_rdma_dvs.q", 2),
			displayed("vspherehpc_rdma_dvs", vcsimlab.HandBuiltSwitch),
			// The teamed host keeps its first uplink in the result.
			querycheck.ExpectResourceKnownValues("vspherehpc_rdma_dvs.q", teamed, []querycheck.KnownValueCheck{
				{Path: tfjsonpath.New("host"), KnownValue: knownvalue.SetExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
					"host_system_id": knownvalue.StringExact(lab.HostID(last)), "vmnic": knownvalue.StringExact("vmnic5"),
				})})},
				{Path: tfjsonpath.New("mtu"), KnownValue: knownvalue.Int64Exact(9000)},
			}),
		}},
		{config: `    name = "` + vcsimlab.HandBuiltTeamedSwitch + `"`, checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_rdma_dvs.q", 1), displayed("vspherehpc_rdma_dvs", vcsimlab.HandBuiltTeamedSwitch),
		}},
		// Only the switch the first host is a member of.
		{config: onHosts(lab, hosts[0]), checks: []querycheck.QueryResultCheck{
			querycheck.ExpectLength("vspherehpc_rdma_dvs.q", 1), displayed("vspherehpc_rdma_dvs", vcsimlab.HandBuiltSwitch),
		}},
		{config: `    name = "no-such-switch"`, checks: []querycheck.QueryResultCheck{querycheck.ExpectLength("vspherehpc_rdma_dvs.q", 0)}},
	}, scopeErrors(lab)...))
}

// A switch with several port groups imports with the one named after ":"
// (by name or key), or with none after ":" alone; the next apply then creates
// the configuration's.
func TestAccRDMADVS_importChoosesPortGroup(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	config := rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	name, portGroup, storage := testName("rdma"), testName("pvrdma-vms"), testName("storage")
	path := "/" + lab.DatacenterName() + "/network/" + name
	var key string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(s *terraform.State) error {
					key = s.RootModule().Resources[dvsAddr].Primary.Attributes["port_group_key"]
					return lab.AddPortGroup(ctx, name, storage, 8)
				},
			},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateId: path,
				ExpectError: acctest.Wording(`Switch ` + name + ` has 2 port groups (` + portGroup + `, ` + storage + `). Import it as ` + path +
					`:<port group name> to say which one this resource manages, or as ` + path + `: to adopt the switch without one`),
			},
			{ResourceName: dvsAddr, ImportState: true, ImportStateId: path + ":" + portGroup, ImportStateVerify: true},
			{ResourceName: dvsAddr, ImportState: true, ImportStateIdFunc: func(*terraform.State) (string, error) { return path + ":" + key, nil },
				ImportStateVerify: true},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateId: path + ":",
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 || states[0].Attributes["port_group_key"] != "" || states[0].Attributes["port_group.name"] != "" {
						return fmt.Errorf("imported with a port group: %v", states)
					}
					return nil
				},
			},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateId: path + ":nope",
				ExpectError: acctest.Wording(`Switch ` + name + ` has no port group "nope"; its port groups are ` + portGroup + `, ` + storage + `.`),
			},
		},
	})
}

// A port group name with ":" imports after a switch UUID: the id splits at
// the first ":" after the UUID, not the last.
func TestAccRDMADVS_importPortGroupNameWithColon(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	portGroup := testName("pg:1")
	config := strings.Replace(
		rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""),
		portGroupLine("pvrdma-vms"),
		fmt.Sprintf("name = %q", portGroup),
		1,
	)
	var uuid string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(s *terraform.State) error {
					uuid = s.RootModule().Resources[dvsAddr].Primary.Attributes["id"]
					return lab.AddPortGroup(ctx, testName("rdma"), testName("storage"), 8)
				},
			},
			{
				ResourceName: dvsAddr, ImportState: true, ImportStateVerify: true,
				ImportStateIdFunc: func(*terraform.State) (string, error) { return uuid + ":" + portGroup, nil },
			},
		},
	})
}

// ":" alone adopts a switch without its port group even when it has only
// one: the apply creates the configuration's beside it, and leaves the
// switch's own port group as it was (it neither adopts nor renames it), also
// when the same apply upgrades the switch. A configuration naming that port
// group is refused at plan: the name is taken.
func TestAccRDMADVS_importWithoutPortGroup(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "makes a switch at an older version")
	ctx := context.Background()
	name, shared := testName("rdma"), testName("shared-vms")
	host, nic := lab.HostNames()[0], lab.RDMANICs()[0]
	acctest.Must(t, lab.CreateSwitchAtVersion(ctx, name, host, nic, "8.0.0"))
	acctest.Must(t, lab.AddPortGroup(ctx, name, shared, 8))
	sharedID, err := lab.PortGroupID(ctx, shared)
	acctest.Must(t, err)
	// An import as the first step needs the provider's source spelled out.
	config := acctest.RequiredProviders + rdmaDVSConfig(lab, "rdma", map[string]string{host: nic}, `  version = "8.0.3"`)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config, ResourceName: dvsAddr, ImportState: true, ImportStatePersist: true,
				ImportStateId: "/" + lab.DatacenterName() + "/network/" + name + ":",
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if key := states[0].Attributes["port_group_key"]; key != "" {
						return fmt.Errorf("imported with port group %s", key)
					}
					return nil
				},
			},
			{
				Config:      strings.Replace(config, portGroupLine("pvrdma-vms"), portGroupLine("shared-vms"), 1),
				PlanOnly:    true,
				ExpectError: acctest.Wording(fmt.Sprintf("Switch %s already has a port group called %q", name, shared)),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(dvsAddr, tfjsonpath.New("port_group_id")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group").AtMapKey("name"), knownvalue.StringExact(testName("pvrdma-vms"))),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("version"), knownvalue.StringExact("8.0.3")),
				},
				Check: func(s *terraform.State) error {
					id, err := lab.PortGroupID(ctx, shared)
					if err != nil || id != sharedID || s.RootModule().Resources[dvsAddr].Primary.Attributes["port_group_id"] == sharedID {
						return fmt.Errorf("port group %s after the apply: %q, %v; want %s, untouched and not the resource's", shared, id, err, sharedID)
					}
					return nil
				},
			},
			{Config: config, PlanOnly: true},
		},
	})
}
