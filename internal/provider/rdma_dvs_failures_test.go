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
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// The create of a 3-host switch fails adding the hosts; the next apply
// converges, without a second switch and without an orphan.
func TestAccRDMADVS_createFailsHalfWay(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a task fault")
	acctest.Must(t, lab.InjectTaskFault("ReconfigureDvs_Task", testName("rdma"), vcsimlab.Fault{Type: "DvsFault"}))
	nic := lab.RDMANICs()[0]
	config := rdmaDVSConfig(lab, "rdma", allHosts(lab, nic), "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, ExpectError: acctest.Wording(`Cannot create distributed switch ` + testName("rdma"))},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, allHosts(lab, nic))),
				},
				Check: func(*terraform.State) error {
					pattern := testName("rdma") + "*"
					n, err := lab.CountNetworks(context.Background(), pattern)
					if err == nil && n != 2 { // the switch and its uplink port group
						err = fmt.Errorf("%d networks named %s, want the switch and its uplink port group", n, pattern)
					}
					return err
				},
			},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// A create that fails after the hosts joined (the port group step) leaves a
// tainted switch holding the hosts' NICs; the replacement's plan must not
// take those NICs for another switch's.
func TestAccRDMADVS_createFailsAfterHostsJoined(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a task fault")
	acctest.Must(t, lab.InjectTaskFault("CreateDVPortgroup_Task", testName("rdma"), vcsimlab.Fault{Type: "DvsFault"}))
	config := rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, ExpectError: acctest.Wording(`Cannot create distributed switch ` + testName("rdma"))},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group_id"), knownvalue.NotNull()),
				},
			},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// An apply that created the port group but failed before it knew so (its
// task's end not read) still records it: the next apply finishes with that
// port group, instead of refusing its name as taken by one nobody manages.
func TestAccRDMADVS_portGroupCreatedUnconfirmed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "fails the read of a task")
	ctx := context.Background()
	config := rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	portGroup := testName("pvrdma-vms")
	var createdID string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					acctest.Must(t, lab.DestroyPortGroup(ctx, portGroup))
					// The apply's first read of a task: the port group's
					// creation, the one task of that update.
					lab.FailRead("Task", &types.HostNotConnected{}, 1)
				},
				Config:      config,
				ExpectError: acctest.Wording("HostNotConnected"),
			},
			{
				PreConfig: func() {
					id, err := lab.PortGroupID(ctx, portGroup)
					acctest.Must(t, err)
					createdID = id
				},
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("port_group_id"), knownvalue.StringFunc(func(v string) error {
						if v != createdID {
							return fmt.Errorf("port_group_id %s, want %s, the port group the failed apply created", v, createdID)
						}
						return nil
					})),
				},
			},
			{Config: config, PlanOnly: true},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// An apply that created the switch but failed before it knew so (its
// task's end not read) still records it, tainted: the next apply replaces
// it, instead of refusing its name as taken by a switch nobody manages.
func TestAccRDMADVS_switchCreatedUnconfirmed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "fails the read of a task")
	config := rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// The read that would see the switch's creation end.
				PreConfig:   func() { lab.FailTaskEndRead(&types.HostNotConnected{}) },
				Config:      config,
				ExpectError: acctest.Wording("HostNotConnected"),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dvsAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
			},
			{Config: config, PlanOnly: true},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// A switch whose create failed after it existed (tainted, holding the hosts'
// NICs) is destroyed cleanly: destroy always works on what the provider made.
func TestAccRDMADVS_taintedSwitchDestroys(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "injects a task fault")
	acctest.Must(t, lab.InjectTaskFault("CreateDVPortgroup_Task", testName("rdma"), vcsimlab.Fault{Type: "DvsFault"}))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""),
				ExpectError: acctest.Wording(`Cannot create distributed switch ` + testName("rdma")),
			},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}
