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

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// A switch accepts hosts of its own ESXi version or later. These tests run a
// lab whose last host runs ESXi 7.0.3, the others 8.0.3.

// oldHostLab starts a lab whose last host runs ESXi 7.0.3, and names it.
func oldHostLab(t *testing.T) (*vcsimlab.Lab, string) {
	t.Helper()
	lab := startLab(t, vcsimlab.Options{HostVersions: map[int]string{2: "7.0.3"}})
	return lab, lab.HostNames()[2]
}

// noSwitchCreated fails the test when a refused plan left a network behind.
func noSwitchCreated(t *testing.T, lab *vcsimlab.Lab) func() {
	return func() {
		t.Helper()
		for _, pattern := range []string{"rdma*", "pvrdma-vms*"} {
			if n, err := lab.CountNetworks(context.Background(), pattern); err != nil || n != 0 {
				t.Errorf("after refused plans: %d networks named %s (%v), want none", n, pattern, err)
			}
		}
	}
}

// switchIn reads the switch as vCenter has it.
func switchIn(t *testing.T, lab *vcsimlab.Lab, uuid string) *vsphere.DVS {
	t.Helper()
	d, err := labClient(lab).DVS(context.Background(), vsphere.DVSID{UUID: uuid}, "")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A new switch with the old host is refused at plan time, naming the host,
// its ESXi version and the newest version it can join, for the default
// (newest) version and for one set; nothing is created. At that version the
// switch is made; an upgrade past the host is refused at plan time, and the
// switch stays as it was.
func TestAccRDMADVS_hostTooOldForNewSwitch(t *testing.T) {
	t.Parallel()
	lab, old := oldHostLab(t)
	at := func(version string) string {
		extra := ""
		if version != "" {
			extra = `  version = "` + version + `"`
		}
		return rdmaDVSConfig(lab, "rdma", allHosts(lab, "vmnic4"), extra)
	}
	refused := func(version string) string {
		return fmt.Sprintf(`Host %s (%s) runs ESXi 7.0.3 and cannot join a version %s distributed switch: a distributed switch accepts hosts `+
			`of its own ESXi version or later. The newest switch version it can run is 7.0.3: set version = "7.0.3", upgrade the host to `+
			`ESXi %s or later, or leave it out of the switch.`, old, lab.HostID(old), version, version)
	}
	var uuid string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: at(""), PlanOnly: true, ExpectError: acctest.Wording(refused("8.0.3"))},
			{Config: at("8.0.0"), PlanOnly: true, ExpectError: acctest.Wording(refused("8.0.0"))},
			{
				PreConfig: noSwitchCreated(t, lab),
				Config:    at("7.0.3"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("version"), knownvalue.StringExact("7.0.3")),
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, allHosts(lab, "vmnic4"))),
				},
				Check: func(s *terraform.State) error {
					uuid = s.RootModule().Resources[dvsAddr].Primary.ID
					return nil
				},
			},
			{
				Config: at("8.0.0"), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf(`Switch rdma cannot be upgraded to version 8.0.0: its member host %s (%s) runs ESXi 7.0.3, and a `+
					`distributed switch accepts hosts of its own ESXi version or later. The newest switch version it can run is 7.0.3. Upgrade the `+
					`host to ESXi 8.0.0 or later first, or keep the switch at a version the host can run.`, old, lab.HostID(old))),
			},
			// Nothing tainted, nothing changed.
			{
				PreConfig: func() {
					if d := switchIn(t, lab, uuid); d.Version != "7.0.3" || len(d.Hosts) != 3 {
						t.Errorf("after the refused upgrade: version %s, %d hosts; want 7.0.3 and 3", d.Version, len(d.Hosts))
					}
				},
				Config: at("7.0.3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// The old host cannot join a switch of a newer version: refused at plan
// time, naming the host; the switch keeps its members and is not tainted.
func TestAccRDMADVS_hostTooOldToJoin(t *testing.T) {
	t.Parallel()
	lab, old := oldHostLab(t)
	young := allHosts(lab, "vmnic4")
	delete(young, old)
	var uuid string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: rdmaDVSConfig(lab, "rdma", young, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("version"), knownvalue.StringExact("8.0.3")),
				},
				Check: func(s *terraform.State) error {
					uuid = s.RootModule().Resources[dvsAddr].Primary.ID
					return nil
				},
			},
			{
				Config: rdmaDVSConfig(lab, "rdma", allHosts(lab, "vmnic4"), ""), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf(`Host %s (%s) runs ESXi 7.0.3 and cannot join switch rdma, at version 8.0.3: a distributed switch `+
					`accepts hosts of its own ESXi version or later, and a switch cannot be downgraded. The newest switch version it can run is `+
					`7.0.3. Upgrade the host to ESXi 8.0.3 or later, or leave it out of the switch.`, old, lab.HostID(old))),
			},
			{
				PreConfig: func() {
					if d := switchIn(t, lab, uuid); len(d.Hosts) != 2 {
						t.Errorf("after the refused join: hosts %v, want the two young ones", d.Hosts)
					}
				},
				Config: rdmaDVSConfig(lab, "rdma", young, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}
