package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func TestAccRDMADVS_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	nics := lab.RDMANICs()
	first := lab.HostNames()[0]
	with := func(nic string) map[string]string {
		hosts := allHosts(lab, nics[0])
		hosts[first] = nic
		return hosts
	}
	twice := rdmaDVSConfig(lab, "rdma", allHosts(lab, nics[0]), "")
	twice = strings.Replace(
		twice,
		"  host {\n",
		fmt.Sprintf("  host {\n    host_system_id = %q\n    vmnic          = %q\n  }\n  host {\n", lab.HostID(first), nics[1]),
		1,
	)
	teaming := acctest.Wording(fmt.Sprintf(`is listed with %s and with %s. PVRDMA supports no NIC teaming`, nics[0], nics[1]))
	// What the refusals list of the first host and of vCenter: the lab's
	// NICs and vCenter 8.0.3's switch versions, or what an external
	// vCenter has.
	missing := "vmnic9" // a NIC the host does not have
	nicList, freeRDMA := "vmnic0, vmnic1, vmnic4, vmnic5", "vmnic4, vmnic5"
	usedNIC, usedBy := "vmnic0", `standard switch "vSwitch0"` // "" when the host has no NIC a switch uses
	offered := "7.0.0, 7.0.2, 7.0.3, 8.0.0, 8.0.3"
	if !lab.Simulated() {
		host, err := labClient(lab).Host(ctx, lab.HostID(first))
		acctest.Must(t, err)
		var names, free []string
		for _, n := range host.PhysicalNICs {
			names = append(names, n.Name)
			if n.RDMADevice != "" && n.Switch == "" {
				free = append(free, n.Name)
			}
		}
		// A NIC a standard switch uses, else one a distributed switch uses.
		usedNIC, usedBy = "", ""
		for _, kind := range []string{"standard switch", "distributed switch"} {
			for _, n := range host.PhysicalNICs {
				if usedNIC == "" && n.Switch != "" && (n.SwitchUUID == "") == (kind == "standard switch") {
					usedNIC, usedBy = n.Name, fmt.Sprintf("%s %q", kind, n.Switch)
				}
			}
		}
		for slices.Contains(names, missing) {
			missing += "9"
		}
		nicList, freeRDMA = strings.Join(names, ", "), strings.Join(free, ", ")
		versions, err := labClient(lab).DVSVersions(ctx)
		acctest.Must(t, err)
		offered = strings.Join(versions, ", ")
		// Which of the host's two entries comes first depends on how
		// Terraform orders the set's elements, by their values.
		teaming = regexp.MustCompile(teaming.String() + "|" +
			acctest.Wording(fmt.Sprintf(`is listed with %s and with %s. PVRDMA supports no NIC teaming`, nics[1], nics[0])).String())
	}
	steps := []resource.TestStep{
		{
			Config: rdmaDVSConfig(lab, "rdma", with(missing), ""), PlanOnly: true,
			ExpectError: acctest.Wording(
				fmt.Sprintf(
					"Host %s (%s) has no physical NIC %s; its NICs are %s. Its free RDMA NICs: %s.",
					first,
					lab.HostID(first),
					missing,
					nicList,
					freeRDMA,
				),
			),
		},
	}
	if usedNIC != "" {
		steps = append(steps, resource.TestStep{
			Config: rdmaDVSConfig(lab, "rdma", with(usedNIC), ""), PlanOnly: true,
			ExpectError: acctest.Wording(
				fmt.Sprintf(`%s on host %s (%s) is an uplink of %s. Free it there, or choose another NIC.`, usedNIC, first, lab.HostID(first), usedBy),
			),
		})
	}
	steps = append(
		steps,
		resource.TestStep{Config: twice, PlanOnly: true, ExpectError: teaming},
		resource.TestStep{
			Config:      rdmaDVSConfig(lab, "rdma", with("eth0"), ""),
			PlanOnly:    true,
			ExpectError: acctest.Wording(`must name a physical NIC such as vmnic4`),
		},
		resource.TestStep{
			Config: strings.Replace(
				rdmaDVSConfig(lab, "rdma", allHosts(lab, nics[0]), ""),
				"  port_group {\n    "+portGroupLine("pvrdma-vms")+"\n  }\n",
				"",
				1,
			),
			PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)port_group.*must have a configuration value`),
		},
		resource.TestStep{
			Config:      rdmaDVSConfig(lab, "rdma", allHosts(lab, nics[0]), `  version = "6.5.0"`),
			PlanOnly:    true,
			ExpectError: acctest.Wording(`vCenter offers distributed switch versions ` + offered + `, not 6.5.0.`),
		},
		resource.TestStep{
			Config:      rdmaDVSConfig(lab, "rdma", allHosts(lab, nics[0]), `  mtu = 9216`),
			PlanOnly:    true,
			ExpectError: acctest.Wording(`mtu value must be between 1280 and 9000`),
		},
		// A NIC another distributed switch uses is refused, naming that switch.
		resource.TestStep{
			PreConfig: func() {
				acctest.Must(t, lab.CreateSwitch(ctx, testName("storage-dvs"), first, nics[1]))
				destroySwitchAfter(t, lab, testName("storage-dvs"))
			},
			Config: rdmaDVSConfig(lab, "rdma", with(nics[1]), ""), PlanOnly: true,
			ExpectError: acctest.Wording(
				fmt.Sprintf(`%s on host %s (%s) is an uplink of distributed switch %q.`, nics[1], first, lab.HostID(first), testName("storage-dvs")),
			),
		},
		// A downgrade is refused at plan time.
		resource.TestStep{Config: rdmaDVSConfig(lab, "rdma", allHosts(lab, nics[0]), `  version = "8.0.3"`)},
		resource.TestStep{
			Config: rdmaDVSConfig(lab, "rdma", allHosts(lab, nics[0]), `  version = "8.0.0"`), PlanOnly: true,
			ExpectError: acctest.Wording(`Switch ` + testName("rdma") + ` is at version 8.0.3; vSphere cannot downgrade a distributed switch to 8.0.0.`),
		},
	)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
	})
}

// Destroy is refused, naming the VM, while a PVRDMA adapter uses the port
// group; once the adapter is gone, destroy removes everything.
func TestAccRDMADVS_destroyRefusedWhileInUse(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vmName := lab.VMNames()[0]
	var switchUUID, portGroupKey string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""),
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources[dvsAddr].Primary.Attributes
					switchUUID, portGroupKey = attrs["id"], attrs["port_group_key"]
					return nil
				},
			},
			{
				PreConfig: func() {
					acctest.Must(t, lab.AddPVRDMAAdapter(context.Background(), vmName, switchUUID, portGroupKey))
				},
				// Refused at plan: no adapter resource of this plan removes it.
				Config: acctest.ProviderConfig(lab),
				ExpectError: acctest.Wording(
					fmt.Sprintf(`Switch still in use VM network adapters that this configuration does not remove still use the port groups `+
						`of switch %s: port group %q: %s (PVRDMA).`, testName("rdma"), testName("pvrdma-vms"), vmName),
				),
			},
			{
				PreConfig: func() {
					acctest.Must(t, lab.RemovePVRDMAAdapters(context.Background(), vmName))
				},
				Config: acctest.ProviderConfig(lab),
				Check:  noNetworksLeft(lab),
			},
		},
	})
}

// Removing a host whose VMs have adapters on the switch is refused before
// vCenter is asked, naming the VMs and the fix, not left to its "The
// resource is in use"; once the adapter is gone, or goes in the same apply,
// the host leaves. The refusal is the update's: its plan only warns, as
// Terraform plans a destroy of the adapters in the same plan before or after
// the switch's change, in no fixed order (Terraform 1.16 often after).
func TestAccRDMADVS_hostLeavingInUse(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	vmName := lab.VMNames()[0]
	host := lab.VMHostName(vmName)
	nic := lab.RDMANICs()[0]
	others := allHosts(lab, nic)
	delete(others, host)
	var switchUUID, portGroupKey string
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: rdmaDVSConfig(lab, "rdma", allHosts(lab, nic), ""),
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources[dvsAddr].Primary.Attributes
					switchUUID, portGroupKey = attrs["id"], attrs["port_group_key"]
					return nil
				},
			},
			{
				PreConfig: func() {
					acctest.Must(t, lab.AddPVRDMAAdapter(context.Background(), vmName, switchUUID, portGroupKey))
				},
				Config: rdmaDVSConfig(lab, "rdma", others, ""),
				ExpectError: acctest.Wording(fmt.Sprintf(`Host %s (%s) cannot leave switch %s: virtual machines on it have adapters `+
					`that this configuration does not remove on the switch's port groups: port group %q: %s (PVRDMA). vCenter refuses to remove `+
					`a host from a switch while they do: remove those adapters first`, host, lab.HostID(host), testName("rdma"), testName("pvrdma-vms"), vmName)),
			},
			{
				PreConfig: func() {
					acctest.Must(t, lab.RemovePVRDMAAdapters(context.Background(), vmName))
				},
				Config:            rdmaDVSConfig(lab, "rdma", others, ""),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, others))},
			},
			// An adapter this configuration removes in the same apply does
			// not hold the host: Terraform removes it first.
			{Config: rdmaDVSConfig(lab, "rdma", allHosts(lab, nic), "")},
			{Config: rdmaDVSConfig(lab, "rdma", allHosts(lab, nic), "") + nicOn(lab.VMUUID(vmName), "vspherehpc_rdma_dvs.rdma.port_group_id", "")},
			{
				Config:            rdmaDVSConfig(lab, "rdma", others, ""),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(dvsAddr, tfjsonpath.New("host"), hostSet(lab, others))},
			},
		},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// Arguments naming what vCenter does not have, and names it already has, are
// refused at plan: nothing is created, so nothing is left tainted.
func TestAccRDMADVS_refusedAtPlan(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	first := lab.HostNames()[0]
	config := rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), "")
	withHostID := func(id string) string {
		return strings.Replace(config, fmt.Sprintf("host_system_id = %q", lab.HostID(first)), fmt.Sprintf("host_system_id = %q", id), 1)
	}
	steps := []resource.TestStep{
		{
			Config: withHostID("host-99999"), PlanOnly: true,
			ExpectError: acctest.Wording("no host has id host-99999; data.vspherehpc_host looks one up by name."),
		},
		// A host's name where its id belongs.
		{
			Config: withHostID(first), PlanOnly: true,
			ExpectError: acctest.Wording(fmt.Sprintf(`no host has id %q (the name of host %s); host ids are managed object ids such as host-12; `+
				`data.vspherehpc_host looks one up by name.`, first, lab.HostID(first))),
		},
		// The datacenter's name where its id belongs.
		{
			Config: strings.Replace(
				config,
				fmt.Sprintf("datacenter_id = %q", lab.DatacenterID()),
				fmt.Sprintf("datacenter_id = %q", lab.DatacenterName()),
				1,
			), PlanOnly: true,
			ExpectError: acctest.Wording(fmt.Sprintf(`no datacenter has id %q (the name of datacenter %s); datacenter ids are managed object ids such as `+
				`datacenter-3; data.vspherehpc_datacenter looks one up by name.`, lab.DatacenterName(), lab.DatacenterID())),
		},
	}
	// "VM Network" is a standard port group of every lab host (and of an
	// ESXi host as installed: an external vCenter may have none).
	vmNetwork := lab.Simulated()
	if !vmNetwork {
		n, err := lab.CountNetworks(ctx, "VM Network")
		acctest.Must(t, err)
		vmNetwork = n > 0
	}
	if vmNetwork {
		steps = append(steps, resource.TestStep{
			Config: strings.Replace(config, portGroupLine("pvrdma-vms"), `name = "VM Network"`, 1), PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)already has a network called "VM Network"\s+\(network-\d+\).*Choose\s+another\s+port\s+group\s+name`),
		})
	}
	storage := testName("storage-dvs")
	steps = append(steps, resource.TestStep{
		PreConfig: func() {
			acctest.Must(t, lab.CreateSwitch(ctx, storage, first, lab.RDMANICs()[1]))
			destroySwitchAfter(t, lab, storage)
		},
		Config: strings.Replace(config, dvsNameLine("rdma"), fmt.Sprintf("name          = %q", storage), 1), PlanOnly: true,
		ExpectError: regexp.MustCompile(
			`(?s)already has a distributed switch called\s+"` + regexp.QuoteMeta(storage) + `"\s+\(dvs-\d+\).*Choose\s+another\s+name`,
		),
	})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
		CheckDestroy: func(*terraform.State) error {
			pattern := testName("rdma") + "*"
			n, err := lab.CountNetworks(ctx, pattern)
			if err == nil && n != 0 {
				err = fmt.Errorf("%d networks named %s exist after refused plans, want none", n, pattern)
			}
			return err
		},
	})
}

// Without vCenter settings a resource that needs vCenter is refused at plan,
// not at apply.
func TestAccRDMADVS_noVCenter(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	config := strings.Replace(rdmaDVSConfig(lab, "rdma", allHosts(lab, lab.RDMANICs()[0]), ""), acctest.ProviderConfig(lab), "", 1)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config,
				PlanOnly:    true,
				ExpectError: acctest.Wording(`This needs vCenter, but the provider has no vCenter settings. Set vsphere_server, user and password`),
			},
		},
	})
}

// Two switches of one configuration claiming one host's NIC are refused at
// plan, naming both switches.
func TestAccRDMADVS_nicClaimedTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	first := lab.HostNames()[0]
	nic := lab.RDMANICs()[0]
	second := strings.NewReplacer(`resource "vspherehpc_rdma_dvs" "rdma"`, `resource "vspherehpc_rdma_dvs" "other"`,
		dvsNameLine("rdma"), dvsNameLine("rdma-other"), portGroupLine("pvrdma-vms"), portGroupLine("pvrdma-other")).
		Replace(strings.Replace(rdmaDVSConfig(lab, "rdma", map[string]string{first: nic}, ""), acctest.ProviderConfig(lab), "", 1))
	name := regexp.QuoteMeta(testName("rdma"))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: rdmaDVSConfig(lab, "rdma", map[string]string{first: nic}, "") + second, PlanOnly: true,
			ExpectError: regexp.MustCompile(
				`(?s)Claimed twice in this configuration.*Two\s+resource\s+instances\s+of\s+this\s+configuration\s+claim\s+` + regexp.QuoteMeta(
					nic,
				) + `\s+of\s+host\s+` +
					lab.HostID(
						first,
					) + `:\s+distributed\s+switch\s+"` + name + `(-other)?",\s+and\s+distributed\s+switch\s+"` + name + `(-other)?".*PVRDMA\s+needs\s+its\s+NIC`,
			),
		}},
	})
}

// Two switches of one configuration with one port group name are refused at
// plan, naming both, not left to fail at apply with the second tainted.
func TestAccRDMADVS_portGroupNameClaimedTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	hosts := lab.HostNames()
	nic := lab.RDMANICs()[0]
	second := strings.NewReplacer(`resource "vspherehpc_rdma_dvs" "rdma"`, `resource "vspherehpc_rdma_dvs" "other"`,
		dvsNameLine("rdma"), dvsNameLine("rdma-other")).
		Replace(strings.Replace(rdmaDVSConfig(lab, "rdma", map[string]string{hosts[1]: nic}, ""), acctest.ProviderConfig(lab), "", 1))
	name := regexp.QuoteMeta(testName("rdma"))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: rdmaDVSConfig(lab, "rdma", map[string]string{hosts[0]: nic}, "") + second, PlanOnly: true,
			ExpectError: regexp.MustCompile(
				`(?s)Claimed twice in this configuration.*Two\s+resource\s+instances\s+of\s+this\s+configuration\s+claim\s+the\s+port\s+group\s+name\s+"` +
					regexp.QuoteMeta(testName("pvrdma-vms")) + `"\s+in\s+datacenter\s+` + lab.DatacenterID() + `:\s+the\s+port\s+group\s+of\s+switch\s+"` + name +
					`(-other)?",\s+and\s+the\s+port\s+group\s+of\s+switch\s+"` + name + `(-other)?".*give\s+each\s+switch's\s+port\s+group\s+its\s+own\s+name`,
			),
		}},
		CheckDestroy: noNetworksLeft(lab),
	})
}

// Numbers the schema cannot hold (issue 12): a fractional MTU and a VLAN id
// beyond any integer are refused naming the argument and its range, not with
// the framework's "always an error in the provider".
func TestAccRDMADVS_numbersNotWhole(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	hosts := allHosts(lab, lab.RDMANICs()[0])
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rdmaDVSConfig(lab, "rdma-numbers", hosts, "  mtu = 1500.5"), PlanOnly: true,
				ExpectError: acctest.Wording(`mtu must be a whole number from 1280 to 9000; 1500.5 is not.`)},
			{Config: rdmaDVSConfig(lab, "rdma-numbers", hosts, "  uplink_count = 1e400"), PlanOnly: true,
				ExpectError: acctest.Wording(`uplink_count must be a whole number from 1 to 32; 1e+400 is not.`)},
			{
				Config: strings.Replace(
					rdmaDVSConfig(lab, "rdma-numbers", hosts, ""),
					portGroupLine("pvrdma-vms"),
					portGroupLine("pvrdma-vms")+"\n    vlan_id = 10.5",
					1,
				),
				PlanOnly:    true,
				ExpectError: acctest.Wording(`port_group.vlan_id must be a whole number from 0 to 4094; 10.5 is not.`),
			},
		},
	})
}

// repeat is n copies of s, as fmt arguments.
func repeat(s string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// A host of another datacenter cannot join a switch: a distributed switch
// spans the hosts of its own datacenter. The plan refuses it, naming both
// datacenters, from the one read it makes of each joining host (its
// datacenter comes through the host's parents in the same call), so no
// switch is created, and tainted, by an apply vCenter refuses.
func TestAccRDMADVS_hostOfAnotherDatacenterRefusedAtPlan(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "adds a datacenter and a host")
	ctx := context.Background()
	acctest.Must(t, lab.CreateDatacenter(ctx, "site-b", "dc-b"))
	other, err := lab.AddStandaloneHost(ctx, "/site-b/dc-b", "esx-b.example.com")
	acctest.Must(t, err)
	hosts := allHosts(lab, lab.RDMANICs()[0])
	withOther := rdmaDVSConfig(lab, "rdma", hosts, fmt.Sprintf("  host {\n    host_system_id = %q\n    vmnic          = \"vmnic0\"\n  }\n", other))
	refused := acctest.Wording(fmt.Sprintf("Host esx-b.example.com (%s) is in datacenter dc-b (", other))
	explained := acctest.Wording(fmt.Sprintf("not in %s, the datacenter of switch %s: a distributed switch takes the hosts of its own datacenter only",
		lab.DatacenterID(), testName("rdma")))
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             noNetworksLeft(lab),
		Steps: []resource.TestStep{
			{Config: withOther, PlanOnly: true, ExpectError: refused},
			{Config: withOther, PlanOnly: true, ExpectError: explained},
			{Config: rdmaDVSConfig(lab, "rdma", hosts, "")},
			// Joining an existing switch: refused the same way.
			{Config: withOther, PlanOnly: true, ExpectError: refused},
		},
	})
}
