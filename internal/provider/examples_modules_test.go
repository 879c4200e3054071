package provider

// Tests of the example modules in examples/modules (pvrdma-cluster,
// gpu-node), applied with real Terraform against the lab. No source file of
// this package pairs with them: the file is named after the directory it
// tests, and lives here because the modules need the in-process provider and
// the lab helpers of this package.

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// labEnv points the provider at a lab through its environment variables, as
// a module's caller would; modules carry no provider block. Not parallel:
// the environment is the process's.
func labEnv(t *testing.T, lab *vcsimlab.Lab) {
	t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "vspherehpc") // the modules' required_providers source
	t.Setenv("VSPHERE_SERVER", lab.URL.Host)
	t.Setenv("VSPHERE_USER", lab.Username)
	t.Setenv("VSPHERE_PASSWORD", lab.Password)
	t.Setenv("VSPHERE_CA_FILE", lab.CertFile)
}

func TestAccModulePVRDMACluster(t *testing.T) { //nolint:paralleltest // labEnv sets the environment
	lab := startLab(t, vcsimlab.Options{Hosts: 4})
	lab.SetLostProbeDelay(time.Millisecond)
	labEnv(t, lab)
	hosts := lab.HostNames()
	vars := config.Variables{
		"datacenter_id": config.StringVariable(lab.DatacenterID()),
		"host_names":    config.ListVariable(config.StringVariable(hosts[0]), config.StringVariable(hosts[1]), config.StringVariable(hosts[2]), config.StringVariable(hosts[3])),
	}
	byCluster := config.Variables{
		"datacenter_id": vars["datacenter_id"],
		"cluster_name":  config.StringVariable(lab.ClusterName()),
	}
	dir := config.StaticDirectory("../../examples/modules/pvrdma-cluster")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// The uplinks are picked from the hosts' NICs: vmnic4, the first
				// free 100 GbE RDMA NIC; the fabric carries 9000 everywhere.
				ConfigDirectory: dir,
				ConfigVariables: vars,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("measured_mtu", knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownOutputValue("uplinks", knownvalue.MapExact(map[string]knownvalue.Check{
						hosts[0]: knownvalue.StringExact("vmnic4"), hosts[1]: knownvalue.StringExact("vmnic4"),
						hosts[2]: knownvalue.StringExact("vmnic4"), hosts[3]: knownvalue.StringExact("vmnic4"),
					})),
					statecheck.ExpectKnownOutputValue("port_group_id", knownvalue.StringRegexp(regexp.MustCompile(`^dvportgroup-\d+$`))),
					statecheck.ExpectKnownValue("vspherehpc_rdma_dvs.this", tfjsonpath.New("mtu"), knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownValue("vspherehpc_host_pvrdma_settings.this[3]", tfjsonpath.New("firewall_allowed_ips"), knownvalue.ListSizeExact(4)),
				},
			},
			{
				// Re-planned empty: the NICs the switch now claims stay picked.
				ConfigDirectory:  dir,
				ConfigVariables:  vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The same four hosts as "all hosts of the cluster": nothing to change.
				ConfigDirectory:  dir,
				ConfigVariables:  byCluster,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ConfigDirectory: dir,
				ConfigVariables: config.Variables{"datacenter_id": vars["datacenter_id"], "host_names": vars["host_names"], "cluster_name": byCluster["cluster_name"]},
				PlanOnly:        true,
				ExpectError:     regexp.MustCompile(`Give either host_names or cluster_name, not both and not neither`),
			},
			{
				ConfigDirectory: dir,
				ConfigVariables: config.Variables{"datacenter_id": vars["datacenter_id"]},
				PlanOnly:        true,
				ExpectError:     regexp.MustCompile(`Give either host_names or cluster_name, not both and not neither`),
			},
			{
				ConfigDirectory: dir,
				ConfigVariables: config.Variables{"datacenter_id": vars["datacenter_id"], "host_names": config.ListVariable(config.StringVariable(hosts[0]))},
				PlanOnly:        true,
				ExpectError:     regexp.MustCompile(`PVRDMA connects VMs across hosts, and the switch would have 1: list two or\s+more hosts in host_names`),
			},
			{
				ConfigDirectory: dir,
				ConfigVariables: config.Variables{"datacenter_id": vars["datacenter_id"], "cluster_name": config.StringVariable(" ")},
				PlanOnly:        true,
				ExpectError:     wrapped("cluster_name is empty: name the cluster, or leave it null and list host_names."),
			},
			{
				// vmk0 is at 1500 on every host: the hosts, not the fabric, fall short.
				ConfigDirectory: dir,
				ConfigVariables: config.Variables{"datacenter_id": vars["datacenter_id"], "host_names": vars["host_names"], "vmknic": config.StringVariable("vmk0")},
				PlanOnly:        true,
				ExpectError:     wrapped("The fabric carries 1500-byte packets, not the switch MTU 9000. The hosts allow less themselves: vmk0 MTU " + hosts[0] + " (1500)"),
			},
			{
				// A 1500 link between two hosts stops the plan, naming the paths.
				PreConfig:       func() { lab.SetLinkMTU(hosts[1], hosts[2], 1500) },
				ConfigDirectory: dir,
				ConfigVariables: vars,
				ExpectError: regexp.MustCompile(`(?s)The fabric carries 1500-byte packets, not the switch MTU 9000.*` +
					regexp.QuoteMeta(hosts[1]+" -> "+hosts[2]) + `\s+1500.*` + regexp.QuoteMeta(hosts[2]+" -> "+hosts[1]) + `\s+1500`),
			},
			{
				// Fixed again, so the post-test destroy can plan.
				PreConfig:        func() { lab.SetLinkMTU(hosts[1], hosts[2], 9000) },
				ConfigDirectory:  dir,
				ConfigVariables:  vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// The gpu-node module on a VM, with the PVRDMA port group of a switch an
// administrator built (the pvrdma-cluster module's output in real use).
func TestAccModuleGPUNode(t *testing.T) { //nolint:paralleltest // labEnv sets the environment
	lab := startLab(t, vcsimlab.Options{})
	labEnv(t, lab)
	spec := vsphere.DVSSpec{
		DatacenterID: lab.DatacenterID(), Name: "pvrdma-dvs", UplinkCount: 1, MTU: 9000,
		PortGroup: vsphere.PortGroupSpec{Name: "VM 100GbE Network", Ports: 8, AutoExpand: true},
	}
	for _, h := range lab.HostNames() {
		spec.Hosts = append(spec.Hosts, vsphere.DVSHost{HostID: lab.HostID(h), Vmnic: "vmnic4"})
	}
	_, portGroup, err := labService(lab).CreateDVS(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	vars := config.Variables{
		"virtual_machine_id": config.StringVariable(lab.VMUUID(lab.VMNames()[1])),
		"port_group_id":      config.StringVariable(portGroup),
		"gpu_pci_ids":        config.ListVariable(config.StringVariable("0000:3b:00.0"), config.StringVariable("0000:5e:00.0")),
	}
	dir := config.StaticDirectory("../../examples/modules/gpu-node")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				ConfigDirectory: dir,
				ConfigVariables: vars,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("pvrdma_mac_address", knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{2}(:[0-9a-f]{2}){5}$`))),
					statecheck.ExpectKnownOutputValue("mmio_size_gb", knownvalue.Int64Exact(512)),
					statecheck.ExpectKnownOutputValue("total_gpu_memory_gb", knownvalue.Float64Exact(160)),
					statecheck.ExpectKnownOutputValue("guest_setup", knownvalue.StringRegexp(regexp.MustCompile(
						`(?s)MMIO window 512 GB.*expect 2 GPU\(s\).*sudo modprobe rdma_ucm\n\s*sudo modprobe -r vmw_pvrdma .*\n\s*sudo modprobe vmw_pvrdma\n.*ib_send_bw --report_gbits`))),
					statecheck.ExpectKnownValue("vspherehpc_vm_gpu_mmio.this[0]", tfjsonpath.New("firmware"), knownvalue.StringExact("efi")),
					statecheck.ExpectKnownValue("vspherehpc_vm_pvrdma_nic.this[0]", tfjsonpath.New("distributed_port_group_id"), knownvalue.StringExact(portGroup)),
				},
			},
			{
				ConfigDirectory:  dir,
				ConfigVariables:  vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ConfigDirectory: dir,
				ConfigVariables: config.Variables{"virtual_machine_id": vars["virtual_machine_id"]},
				PlanOnly:        true,
				ExpectError:     regexp.MustCompile(`pvrdma_adapter is true but port_group_id is not set`),
			},
		},
	})
}
