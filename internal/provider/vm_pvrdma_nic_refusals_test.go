package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

func TestAccVMPVRDMANIC_refusals(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "uses the lab's vmx-11 VM legacy-node and upgrades it, the lab's vmnic1, and powers a VM on")
	ctx := context.Background()
	vm0, vm1 := lab.VMNames()[0], lab.VMNames()[1]
	acctest.Must(t, lab.PowerOnVM(ctx, vm1))
	node0, err := labClient(lab).VM(ctx, lab.VMUUID(vm0))
	if err != nil {
		t.Fatal(err)
	}
	standard := node0.NetworkAdapters[0].NetworkID
	// A switch over one host only, on its free 10 GbE NIC.
	var partialGroup string
	partial := func() {
		spec := vsphere.DVSSpec{DatacenterID: lab.DatacenterID(), Name: testName("partial"), UplinkCount: 1, MTU: 9000,
			PortGroup: vsphere.PortGroupSpec{Name: testName("partial-vms"), Ports: 8, AutoExpand: true},
			Hosts:     []vsphere.DVSHost{{HostID: lab.HostID(lab.HostNames()[0]), Vmnic: "vmnic1"}}}
		id, key, err := labClient(lab).CreateDVS(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		d, err := labClient(lab).DVS(ctx, id, key)
		if err != nil {
			t.Fatal(err)
		}
		partialGroup = d.PortGroup.ID
	}
	switches := rdmaDVSTwoSwitchesConfig(lab)
	groupA := "vspherehpc_rdma_dvs.a.port_group_id"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// First: the post-test destroy runs the last step's configuration.
				Config:   switches + nicOn(lab.VMUUID(vm0), groupA, `  device_protocol = "iwarp"`),
				PlanOnly: true, ExpectError: regexp.MustCompile(`value must be one of`),
			},
			{Config: switches},
			{
				Config: switches + nicOn(lab.VMUUID("legacy-node"), groupA, ""), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						"Virtual machine legacy-node (%s) has hardware version 11 (vmx-11); PVRDMA adapters need vmx-13 or later. "+
							"Upgrade the VM's compatibility while it is powered off: with the vSphere provider, set hardware_version = 13",
						lab.VMUUID("legacy-node"),
					),
				),
			},
			{
				Config:   switches + nicOn(lab.VMUUID(vm0), groupA, `  device_protocol = "rocev3"`),
				PlanOnly: true, ExpectError: regexp.MustCompile(`value must be one of`),
			},
			{
				// At vmx-13 the VM offers PVRDMA with no protocol choice.
				PreConfig: func() { acctest.Must(t, lab.UpgradeVMHardware(ctx, "legacy-node", 13)) },
				Config:    switches + nicOn(lab.VMUUID("legacy-node"), groupA, `  device_protocol = "rocev1"`), PlanOnly: true,
				ExpectError: acctest.Wording(
					fmt.Sprintf(
						`Virtual machine legacy-node (%s) (hardware version 13) offers PVRDMA with no choice of protocol, `+
							`so it cannot be rocev1. Remove device_protocol`,
						lab.VMUUID("legacy-node"),
					),
				),
			},
			{
				Config: switches + nicOn(lab.VMUUID(vm0), `"`+standard+`"`, ""), PlanOnly: true,
				ExpectError: acctest.Wording(standard + ` (VM Network) is a standard network; PVRDMA adapters need a distributed port group`),
			},
			{
				Config: switches + nicOn(lab.VMUUID(vm1), groupA, ""), PlanOnly: true,
				ExpectError: acctest.Wording(
					`is powered on, and adding, removing or changing the protocol of a PVRDMA adapter needs it powered off. ` +
						`Power it off first, or set power_off_allowed = true`,
				),
			},
		},
	})
	// A port group whose switch spans only one host of the cluster.
	partial()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:   acctest.ProviderConfig(lab) + nicOn(lab.VMUUID(vm0), `"`+partialGroup+`"`, ""),
			PlanOnly: true,
			ExpectError: acctest.Wording(fmt.Sprintf(`Hosts %s of the cluster of virtual machine %s (%s) are not members of switch %s`,
				strings.Join(lab.HostNames()[1:], ", "), vm0, lab.VMUUID(vm0), testName("partial"))),
		}},
	})
}

// Arguments naming what vCenter does not have are refused at plan, naming
// them and where the right id comes from; imports of what is no PVRDMA
// adapter say which adapters the VM has.
func TestAccVMPVRDMANIC_refusedAtPlan(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	node0, err := labClient(lab).VM(ctx, uuid)
	if err != nil {
		t.Fatal(err)
	}
	// The VM's regular adapter: the lab's VMs have a vmxnet3 one first, on
	// VM Network; an external target's VM says what it has.
	i := slices.IndexFunc(node0.NetworkAdapters, func(a vsphere.NetworkAdapter) bool { return a.Type != "vmxnet3vrdma" })
	if i < 0 && !lab.Simulated() {
		t.Skipf("needs %s to have a network adapter other than PVRDMA ones", vm)
	}
	regular, regularType := node0.NetworkAdapters[0].Key, "vmxnet3"
	if !lab.Simulated() {
		regular, regularType = node0.NetworkAdapters[i].Key, node0.NetworkAdapters[i].Type
	}
	group := "vspherehpc_rdma_dvs.a.port_group_id"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rdmaDVSTwoSwitchesConfig(lab)}, // the port group ids are known from here on
			{
				Config: rdmaDVSTwoSwitchesConfig(lab) + nicOn("4200aaaa-0000-0000-0000-000000000000", group, ""), PlanOnly: true,
				ExpectError: acctest.Wording(
					"no virtual machine has UUID 4200aaaa-0000-0000-0000-000000000000; use vsphere_virtual_machine's id, " +
						"or data.vspherehpc_virtual_machine to look one up by name.",
				),
			},
			{
				Config: rdmaDVSTwoSwitchesConfig(lab) + nicOn("not-a-uuid", group, ""), PlanOnly: true,
				ExpectError: acctest.Wording(`"not-a-uuid" is neither a virtual machine's BIOS UUID (8-4-4-4-12 hex digits`),
			},
			{
				Config: rdmaDVSTwoSwitchesConfig(lab) + nicOn(uuid, `"dvportgroup-99999"`, ""), PlanOnly: true,
				ExpectError: acctest.Wording("no distributed port group has id dvportgroup-99999; use the port_group_id of a vspherehpc_rdma_dvs"),
			},
			{Config: vmPVRDMANICConfig(lab, uuid, "a", "")},
			{
				ResourceName: nicAddr, ImportState: true, ImportStateId: uuid + ":99999",
				ExpectError: regexp.MustCompile(
					`has\s+no\s+network\s+adapter\s+with\s+device\s+key\s+99999\.\s+` +
						`Its\s+PVRDMA\s+adapters\s+have\s+device\s+keys\s+\d+\s+\(on\s+dvportgroup-\d+\);\s+import\s+one\s+of\s+those`,
				),
			},
			{
				ResourceName: nicAddr, ImportState: true, ImportStateId: fmt.Sprintf("%s:%d", uuid, regular),
				ExpectError: acctest.Wording(fmt.Sprintf("Device %d of virtual machine %s is a %s adapter, not a PVRDMA one.", regular, vm, regularType)),
			},
		},
	})
}

// One static MAC on two adapters of one configuration is refused at plan, and
// so is a MAC another VM's adapter already has in vCenter.
func TestAccVMPVRDMANIC_macClaimedTwice(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	name1 := lab.VMNames()[1]
	vm0, vm1 := lab.VMUUID(lab.VMNames()[0]), lab.VMUUID(name1)
	// vCenter generates MACs in the part of VMware's prefix that no
	// configuration may give: the other VM's adapter gets a static one, as
	// an administrator gives it.
	taken := "00:50:56:01:0a:0b"
	acctest.Must(t, lab.SetAdapterMAC(ctx, name1, taken))
	mac := `  mac_address = "00:50:56:01:02:03"`
	second := strings.Replace(nicOn(vm1, "vspherehpc_rdma_dvs.a.port_group_id", mac), `"nic"`, `"second"`, 1)
	steps := []resource.TestStep{
		{Config: rdmaDVSTwoSwitchesConfig(lab)},
		{
			Config: rdmaDVSTwoSwitchesConfig(lab) + nicOn(vm0, "vspherehpc_rdma_dvs.a.port_group_id", mac) + second, PlanOnly: true,
			ExpectError: regexp.MustCompile(
				`(?s)Claimed twice in this configuration.*claim\s+MAC\s+address\s+00:50:56:01:02:03:.*Two\s+adapters\s+with\s+one\s+MAC`,
			),
		},
		{
			// The MAC of the other VM's adapter given to this one.
			Config: rdmaDVSTwoSwitchesConfig(lab) + nicOn(vm0, "vspherehpc_rdma_dvs.a.port_group_id", `  mac_address = "`+taken+`"`), PlanOnly: true,
			ExpectError: acctest.Wording("Virtual machine " + name1 + " already has a network adapter with MAC address " + taken + "."),
		},
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
	})
}

// A static MAC is checked against VMware's rule for static addresses, not
// only for shape (issue 12): multicast and the reserved part of VMware's
// prefix are refused at plan with an address that works; VMware's static
// range and other unicast addresses plan.
func TestAccVMPVRDMANIC_staticMACRule(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	uuid := lab.VMUUID(lab.VMNames()[0])
	mac := func(m string) string { return fmt.Sprintf("  mac_address = %q", m) }
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: vmPVRDMANICConfig(lab, uuid, "a", mac("01:00:5e:00:00:01")), PlanOnly: true,
				ExpectError: acctest.Wording(
					`mac_address = "01:00:5e:00:00:01" is a multicast address (the lowest bit of its first byte is set), and an adapter needs a unicast address`,
				)},
			{Config: vmPVRDMANICConfig(lab, uuid, "a", mac("ff:ff:ff:ff:ff:ff")), PlanOnly: true,
				ExpectError: acctest.Wording(`mac_address = "ff:ff:ff:ff:ff:ff" is a multicast address`)},
			{Config: vmPVRDMANICConfig(lab, uuid, "a", mac("00:50:56:aa:bb:cc")), PlanOnly: true,
				ExpectError: acctest.Wording(
					`mac_address = "00:50:56:aa:bb:cc" is in the part of VMware's prefix 00:50:56 that vSphere reserves for the addresses ` +
						`vCenter generates and for VMkernel adapters: static addresses with that prefix go from 00:50:56:00:00:00 ` +
						`to 00:50:56:3f:ff:ff, e.g. 00:50:56:2a:bb:cc.`,
				)},
			{Config: vmPVRDMANICConfig(lab, uuid, "a", mac("00:50:56:40:00:00")), PlanOnly: true,
				ExpectError: acctest.Wording(`mac_address = "00:50:56:40:00:00" is in the part of VMware's prefix 00:50:56 that vSphere reserves`)},
			{Config: vmPVRDMANICConfig(lab, uuid, "a", mac("00:50:56:AA:BB:CC")), PlanOnly: true,
				ExpectError: acctest.Wording(`mac_address = "00:50:56:AA:BB:CC" is not a MAC address in lower case, such as 00:50:56:0a:0b:0c.`)},
			{Config: vmPVRDMANICConfig(lab, uuid, "a", mac("00:50:56:3f:ff:ff")), PlanOnly: true, ExpectNonEmptyPlan: true},
			{Config: vmPVRDMANICConfig(lab, uuid, "a", mac("02:00:00:00:00:01")), PlanOnly: true, ExpectNonEmptyPlan: true},
		},
	})
}

// Only a MAC the configuration gives is claimed: two adapters that vCenter
// gave one MAC (a clone, a copied VM) do not stop every plan.
func TestAccVMPVRDMANIC_generatedMACsNotClaimed(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	name0, name1 := lab.VMNames()[0], lab.VMNames()[1]
	vm0, vm1 := lab.VMUUID(name0), lab.VMUUID(name1)
	config := rdmaDVSTwoSwitchesConfig(lab) + nicOn(vm0, "vspherehpc_rdma_dvs.a.port_group_id", "") +
		strings.Replace(nicOn(vm1, "vspherehpc_rdma_dvs.a.port_group_id", ""), `"nic"`, `"second"`, 1)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					acctest.Must(t, lab.EditPVRDMAAdapters(ctx, name0, vcsimlab.PVRDMAAdapterEdit{MAC: "00:50:56:01:02:03"}))
					acctest.Must(t, lab.EditPVRDMAAdapters(ctx, name1, vcsimlab.PVRDMAAdapterEdit{MAC: "00:50:56:01:02:03"}))
				},
				Config: config, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// The hosts a plan gives an existing switch are the members the plan of an
// adapter on its port group checks: adding the VM's cluster's missing host
// and the adapter in one plan, as the refusal says to, is planned, and a
// plan taking off a host the adapter needs is refused though vCenter's
// switch still has it.
func TestAccVMPVRDMANIC_switchHostsOfThePlan(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "takes a host of the VM's cluster off the switch")
	vm := lab.VMNames()[0]
	uuid := lab.VMUUID(vm)
	all := allHosts(lab, lab.RDMANICs()[0])
	last := lab.HostNames()[len(lab.HostNames())-1]
	allButLast := maps.Clone(all)
	delete(allButLast, last)
	group := "vspherehpc_rdma_dvs.rdma.port_group_id"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: rdmaDVSConfig(lab, "grow", all, "")},
			{
				Config: rdmaDVSConfig(lab, "grow", allButLast, "") + nicOn(uuid, group, ""), PlanOnly: true,
				ExpectError: acctest.Wording(fmt.Sprintf("Hosts %s of the cluster of virtual machine %s (%s) are not among the hosts "+
					"this plan gives switch %s, which port group %s is on.", last, vm, uuid, testName("grow"), testName("pvrdma-vms"))),
			},
			{Config: rdmaDVSConfig(lab, "grow", allButLast, "")},
			{
				Config: rdmaDVSConfig(lab, "grow", all, "") + nicOn(uuid, group, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("vspherehpc_rdma_dvs.rdma", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(nicAddr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("vspherehpc_rdma_dvs.rdma", tfjsonpath.New("host"), hostSet(lab, all)),
					statecheck.ExpectKnownValue(nicAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile("^"+uuid+`:\d+$`))),
				},
			},
		},
	})
}
