package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

func hostDataSourceConfig(lab *vcsimlab.Lab, name string) string {
	return acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_host" "h" {
  datacenter_id = %q
  name          = %q
}
`, lab.DatacenterID(), name)
}

func TestAccHostDataSource(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "asserts the lab's host hardware: its NICs, vmknics and GPUs (the A100 among them)")
	name := lab.HostNames()[0]
	h := "data.vspherehpc_host.h"
	nic := func(i int, attr string) tfjsonpath.Path {
		return tfjsonpath.New("physical_nics").AtSliceIndex(i).AtMapKey(attr)
	}
	gpu := func(i int, attr string) tfjsonpath.Path { return tfjsonpath.New("gpus").AtSliceIndex(i).AtMapKey(attr) }
	vmName := lab.VMNames()[0]

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostDataSourceConfig(lab, name),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(h, tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(name))),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("cluster_name"), knownvalue.StringExact(lab.ClusterName())),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("connection_state"), knownvalue.StringExact("connected")),
					// vmnic0, vmnic1 (10 GbE, no RDMA), then vmnic4, vmnic5 (100 GbE RDMA).
					statecheck.ExpectKnownValue(h, nic(0, "name"), knownvalue.StringExact("vmnic0")),
					statecheck.ExpectKnownValue(h, nic(0, "rdma_capable"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(h, nic(0, "switch"), knownvalue.StringExact("vSwitch0")),
					statecheck.ExpectKnownValue(h, nic(2, "name"), knownvalue.StringExact(lab.RDMANICs()[0])),
					statecheck.ExpectKnownValue(h, nic(2, "speed_mbps"), knownvalue.Int64Exact(100000)),
					statecheck.ExpectKnownValue(h, nic(2, "rdma_capable"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(h, nic(2, "rdma_device"), knownvalue.StringExact("vmrdma0")),
					statecheck.ExpectKnownValue(h, nic(2, "rocev2"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(h, nic(2, "switch"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vmkernel_nics").AtSliceIndex(0).AtMapKey("name"), knownvalue.StringExact("vmk0")),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vmkernel_nics").AtSliceIndex(1).AtMapKey("mtu"), knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("gpus"), knownvalue.ListSizeExact(3)),
					statecheck.ExpectKnownValue(h, gpu(0, "vendor_id"), knownvalue.StringExact("10de")),
					statecheck.ExpectKnownValue(h, gpu(0, "device_id"), knownvalue.StringExact("2330")),
					statecheck.ExpectKnownValue(h, gpu(0, "memory_gb"), knownvalue.Float64Exact(80)),
					statecheck.ExpectKnownValue(h, gpu(0, "passthrough_active"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(h, gpu(0, "used_by"), knownvalue.ListSizeExact(0)),
					statecheck.ExpectKnownValue(h, gpu(2, "memory_gb"), knownvalue.Float64Exact(40)),
					statecheck.ExpectKnownValue(h, gpu(2, "passthrough_enabled"), knownvalue.Bool(false)),
				},
			},
			{
				// A GPU passed through out of band shows who uses it. A second VM
				// given the same GPU fails silently: it does not boot, and vCenter
				// shows no error (docs/guides/gpu-passthrough.md).
				PreConfig: func() { acctest.Must(t, lab.AttachGPU(context.Background(), vmName, lab.GPUs()[0])) },
				Config:    hostDataSourceConfig(lab, lab.VMHostName(vmName)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(h, gpu(0, "used_by"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectExact(map[string]knownvalue.Check{
							"virtual_machine_id": knownvalue.StringExact(lab.VMUUID(vmName)),
							"moid":               knownvalue.StringExact(lab.VMID(vmName)),
							"name":               knownvalue.StringExact(vmName),
							"powered_on":         knownvalue.Bool(false),
						}),
					})),
				},
			},
			{
				Config:      hostDataSourceConfig(lab, "esx-404.example.com"),
				ExpectError: acctest.Wording(`has no host called "esx-404.example.com"`),
			},
			{
				// A host is named by id, or by name in a datacenter: not both.
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_host" "h" {
  host_system_id = "` + lab.HostID(name) + `"
  datacenter_id  = "` + lab.DatacenterID() + `"
  name           = "` + name + `"
}
`,
				ExpectError: regexp.MustCompile(`(?s)Invalid Attribute Combination.*Exactly one of these attributes must be configured: \[host_system_id,name\]`),
			},
			{
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_host" "h" {
  name = "` + name + `"
}
`,
				ExpectError: regexp.MustCompile(`(?s)Attribute "datacenter_id" must be specified when "name" is\s+specified`),
			},
			{
				// By id, as vsphere_virtual_machine.host_system_id gives it.
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_host" "h" {
  host_system_id = "` + lab.HostID(name) + `"
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(h, tfjsonpath.New("name"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("id"), knownvalue.StringExact(lab.HostID(name))),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("datacenter_id"), knownvalue.Null()),
					statecheck.ExpectKnownValue(h, nic(2, "rdma_device"), knownvalue.StringExact("vmrdma0")),
				},
			},
			{
				Config: acctest.ProviderConfig(lab) + `
data "vspherehpc_host" "h" {
  host_system_id = "host-404"
}
`,
				ExpectError: acctest.Wording(`no host has id host-404`),
			},
		},
	})
}

// pci_devices lists what vspherehpc_host_pci_passthrough takes, with what
// uses each device: the host's own uplink, ConnectX cards, GPUs; and the
// devices that cannot be passed through.
func TestAccHostDataSource_pciDevices(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "asserts the lab's PCI devices, and turns on SR-IOV of its InfiniBand PF")
	name := lab.HostNames()[0]
	h := "data.vspherehpc_host.h"
	// The lab's host: 3 GPUs, 2 ConnectX-6 Dx ports, 2 10 GbE NICs and 2
	// ConnectX-7 PFs, then vcsim's chipset, bridges and controllers.
	const slimDevices, allDevices = 9, 50
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: hostDataSourceConfig(lab, name),
			ConfigStateChecks: []statecheck.StateCheck{
				// The chipset, bridges and controllers that cannot be passed
				// through are left out unless asked for.
				statecheck.ExpectKnownValue(h, tfjsonpath.New("pci_devices"), knownvalue.ListSizeExact(slimDevices)),
				statecheck.ExpectKnownValue(h, tfjsonpath.New("all_pci_devices"), knownvalue.Null()),
			},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckTypeSetElemNestedAttrs(h, "pci_devices.*", map[string]string{
					"pci_id": "0000:0b:00.0", "physical_nic": "vmnic0", "uplink_of": "vSwitch0", "connectx": "false",
				}),
				resource.TestCheckTypeSetElemNestedAttrs(h, "pci_devices.*", map[string]string{
					"pci_id": "0000:d8:00.0", "physical_nic": lab.RDMANICs()[0], "uplink_of": "", "connectx": "true", "vendor_id": "15b3",
					"passthrough_capable": "true", "passthrough_enabled": "false",
				}),
				resource.TestCheckTypeSetElemNestedAttrs(h, "pci_devices.*", map[string]string{
					"pci_id": "0000:af:00.0", "device_id": "20f1", "passthrough_capable": "true", "passthrough_enabled": "false",
					"sriov_capable": "false", "max_virtual_functions": "0", "used_by.#": "0",
				}),
				resource.TestCheckTypeSetElemNestedAttrs(h, "pci_devices.*", map[string]string{
					"pci_id": lab.GPUs()[0], "passthrough_enabled": "true", "passthrough_active": "true", "physical_function": "",
				}),
			),
		}, {
			// Asked for, every device ESXi lists: those that cannot be
			// passed through too.
			Config: strings.Replace(hostDataSourceConfig(lab, name), "name          =", "all_pci_devices = true\n  name          =", 1),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(h, tfjsonpath.New("pci_devices"), knownvalue.ListSizeExact(allDevices)),
			},
			Check: resource.TestCheckTypeSetElemNestedAttrs(h, "pci_devices.*", map[string]string{
				"pci_id": "0000:00:00.0", "device_name": "Virtual Machine Chipset", "passthrough_capable": "false",
			}),
		}, {
			// Each PF's VFs, and each VF's PF, once SR-IOV is on.
			PreConfig: func() {
				acctest.Must(t, labClient(lab).SetHostSRIOV(context.Background(), lab.HostID(name), ibPF, 2))
			},
			Config: hostDataSourceConfig(lab, name),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckTypeSetElemNestedAttrs(h, "pci_devices.*", map[string]string{
					"pci_id": ibPF, "sriov_enabled": "true", "virtual_functions": "2",
					"virtual_function_ids.#": "2", "virtual_function_ids.0": ibVF0, "virtual_function_ids.1": ibVF1,
				}),
				resource.TestCheckTypeSetElemNestedAttrs(h, "pci_devices.*", map[string]string{
					"pci_id": ibVF1, "physical_function": ibPF, "virtual_function_ids.#": "0", "device_id": "101e",
				}),
			),
		}},
	})
}

// A disconnected host is found, with a warning naming it and its connection
// state: vCenter returns no configuration for it, so its empty lists must
// not pass for a host without NICs or devices.
func TestAccHostDataSource_disconnectedWarns(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "disconnects a host")
	name := lab.HostNames()[0]
	d := newTFDir(t, lab, map[string]string{"main.tf": acctest.RequiredProviders + fmt.Sprintf(`
provider "vspherehpc" {}
data "vspherehpc_host" "h" {
  host_system_id = %q
}
output "state" {
  value = data.vspherehpc_host.h.connection_state
}
`, lab.HostID(name))})
	warning := regexp.MustCompile(`(?s)Warning: Host not connected.*Host\s+` + regexp.QuoteMeta(name) + `\s+\(` + lab.HostID(name) +
		`\)\s+is\s+disconnected\s+in\s+vCenter`)
	acctest.Must(t, lab.SetHostConnected(context.Background(), name, false))
	if out := d.run("plan"); !warning.MatchString(out) || !strings.Contains(out, `state = "disconnected"`) {
		t.Errorf("plan with the host disconnected: want the warning %q and its state:\n%s", warning, out)
	}
	acctest.Must(t, lab.SetHostConnected(context.Background(), name, true))
	if out := d.run("plan"); strings.Contains(out, "Host not connected") {
		t.Errorf("plan with the host connected again warns:\n%s", out)
	}
}

// The host's graphics: its settings, each GPU's graphics type now and as
// configured, and the vGPU profiles it offers. A Shared Direct setting made
// in the vSphere Client shows as configured at once; the A100 is shared,
// and its profiles offered, once the host has rebooted.
func TestAccHostDataSource_graphics(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "sets a host's graphics and reboots it")
	name := lab.HostNames()[0]
	h := "data.vspherehpc_host.h"
	a100 := func(attr string) tfjsonpath.Path { return tfjsonpath.New("gpus").AtSliceIndex(2).AtMapKey(attr) }
	graphics := func(defaultType, policy string) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(h, tfjsonpath.New("graphics"), knownvalue.ObjectExact(map[string]knownvalue.Check{
			"default_graphics_type": knownvalue.StringExact(defaultType), "assignment_policy": knownvalue.StringExact(policy),
		}))
	}
	ctx := context.Background()
	vm := lab.VMNames()[0] // on the first host
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: hostDataSourceConfig(lab, name),
				ConfigStateChecks: []statecheck.StateCheck{
					graphics("shared", "performance"),
					statecheck.ExpectKnownValue(h, a100("pci_id"), knownvalue.StringExact("0000:af:00.0")),
					statecheck.ExpectKnownValue(h, a100("graphics_type"), knownvalue.StringExact("basic")),
					statecheck.ExpectKnownValue(h, a100("configured_graphics_type"), knownvalue.StringExact("shared")),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("gpus").AtSliceIndex(0).AtMapKey("graphics_type"), knownvalue.StringExact("direct")),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vgpu_profiles"), knownvalue.ListSizeExact(0)),
				},
			},
			{
				PreConfig: func() {
					acctest.Must(t, lab.ConfigureGraphics(ctx, name, "sharedDirect", "consolidation", nil))
				},
				Config: hostDataSourceConfig(lab, name),
				ConfigStateChecks: []statecheck.StateCheck{
					graphics("sharedDirect", "consolidation"),
					statecheck.ExpectKnownValue(h, a100("graphics_type"), knownvalue.StringExact("basic")),
					statecheck.ExpectKnownValue(h, a100("configured_graphics_type"), knownvalue.StringExact("sharedDirect")),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vgpu_profiles"), knownvalue.ListSizeExact(0)),
				},
			},
			{
				PreConfig: func() { acctest.Must(t, lab.RebootHost(ctx, name)) },
				Config:    hostDataSourceConfig(lab, name),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(h, a100("graphics_type"), knownvalue.StringExact("sharedDirect")),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vgpu_profiles"), knownvalue.ListSizeExact(6)),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vgpu_profiles").AtSliceIndex(1), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"name": knownvalue.StringExact("grid_a100-20c"), "frame_buffer_gb": knownvalue.Int64Exact(20),
						"migrate_supported": knownvalue.Bool(true), "suspend_supported": knownvalue.Bool(true),
						"disk_snapshot_supported": knownvalue.Bool(false), "memory_snapshot_supported": knownvalue.Bool(false),
						"available": knownvalue.Int64Exact(2), // two 20 GB vGPUs on the A100 40GB
					})),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vgpu_profiles").AtSliceIndex(0).AtMapKey("available"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(h, a100("vgpus"), knownvalue.ListSizeExact(0)),
				},
			},
			{
				// A VM given a vGPU by hand runs on the A100 once powered on.
				PreConfig: func() {
					acctest.Must(t, lab.AttachVGPU(ctx, vm, "grid_a100-20c"))
					acctest.Must(t, lab.PowerOnVM(ctx, vm))
				},
				Config: hostDataSourceConfig(lab, name),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(h, a100("vgpus"), knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
						"virtual_machine_id": knownvalue.StringExact(lab.VMUUID(vm)), "moid": knownvalue.StringExact(lab.VMID(vm)),
						"name": knownvalue.StringExact(vm), "profiles": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("grid_a100-20c")}),
					})})),
					statecheck.ExpectKnownValue(h, a100("used_by"), knownvalue.ListSizeExact(0)),
					// Equal-size: one more 20C fits beside it, no 10C or 40C.
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vgpu_profiles").AtSliceIndex(1).AtMapKey("available"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vgpu_profiles").AtSliceIndex(2).AtMapKey("available"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue(h, tfjsonpath.New("vgpu_profiles").AtSliceIndex(0).AtMapKey("available"), knownvalue.Int64Exact(0)),
				},
			},
		},
	})
}
