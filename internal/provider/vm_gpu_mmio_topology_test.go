package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// The lab's DGX H100 host (vcsimlab's topology.go): GPU i at dgxGPU[i], its
// ConnectX-7 card at dgxCard[i], under one PCIe switch; 0-3 on NUMA node 0,
// 4-7 on node 1.
var (
	dgxGPU  = []string{"0000:19:00.0", "0000:41:00.0", "0000:50:00.0", "0000:5f:00.0", "0000:9b:00.0", "0000:c1:00.0", "0000:cf:00.0", "0000:dd:00.0"}
	dgxCard = []string{"0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0", "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"}
)

// vmOnHost is a lab VM on host.
func vmOnHost(t *testing.T, lab *vcsimlab.Lab, host string) string {
	t.Helper()
	for _, vm := range lab.VMNames() {
		if lab.VMHostName(vm) == host {
			return vm
		}
	}
	t.Fatalf("no VM on %s", host)
	return ""
}

// vspherehpc_host gives each device's PCIe switch and NUMA node, so a
// configuration can pair a GPU with the card under its switch; a host
// that reports no tree gives them empty and null.
func TestAccHostDataSource_topology(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{DGXHosts: []int{0}})
	hosts := lab.HostNames()
	// place is what an output gives of a device: its pcie_switch and
	// numa_node, and its parent_bridge when bridge.
	place := func(id string, bridge bool) knownvalue.Check {
		want := map[string]knownvalue.Check{"pcie_switch": topologyValue("pcie_switch", id), "numa_node": topologyValue("numa_node", id)}
		if bridge {
			want["parent_bridge"] = topologyValue("parent_bridge", id)
		}
		return knownvalue.ObjectExact(want)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig(lab) + fmt.Sprintf(`
data "vspherehpc_host" "dgx" {
  host_system_id = %q
}

data "vspherehpc_host" "stock" {
  host_system_id = %q
}

output "gpus" {
  value = { for g in data.vspherehpc_host.dgx.gpus : g.pci_id => { pcie_switch = g.pcie_switch, numa_node = g.numa_node } }
}

output "devices" {
  value = {
    for d in data.vspherehpc_host.dgx.pci_devices : d.pci_id => {
      parent_bridge = d.parent_bridge, pcie_switch = d.pcie_switch, numa_node = d.numa_node
    }
  }
}

output "stock_gpus" {
  value = { for g in data.vspherehpc_host.stock.gpus : g.pci_id => { pcie_switch = g.pcie_switch, numa_node = g.numa_node } }
}

# Each GPU with the ConnectX card under its PCIe switch.
output "pairs" {
  value = {
    for g in data.vspherehpc_host.dgx.gpus : g.pci_id => one([
      for d in data.vspherehpc_host.dgx.pci_devices : d.pci_id if d.connectx && d.pcie_switch == g.pcie_switch
    ])
  }
}
`, lab.HostID(hosts[0]), lab.HostID(hosts[1])),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("gpus", knownvalue.MapPartial(map[string]knownvalue.Check{
					dgxGPU[0]: place(dgxGPU[0], false), dgxGPU[4]: place(dgxGPU[4], false), dgxGPU[7]: place(dgxGPU[7], false),
				})),
				statecheck.ExpectKnownOutputValue("devices", knownvalue.MapPartial(map[string]knownvalue.Check{
					dgxCard[0]: place(dgxCard[0], true), dgxCard[5]: place(dgxCard[5], true), dgxGPU[3]: place(dgxGPU[3], true),
				})),
				statecheck.ExpectKnownOutputValue("stock_gpus", knownvalue.MapPartial(map[string]knownvalue.Check{
					lab.GPUs()[0]: place(lab.GPUs()[0], false),
				})),
				statecheck.ExpectKnownOutputValue("pairs", knownvalue.MapExact(pairsOf(dgxGPU, dgxCard))),
			},
		}},
	})
}

// topologyValue is what the lab's hosts give a device for a topology
// attribute: the DGX host's tree (topology.go), nothing on a stock host.
func topologyValue(attr, id string) knownvalue.Check {
	pair := -1
	for i := range dgxGPU {
		if id == dgxGPU[i] || id == dgxCard[i] {
			pair = i
		}
	}
	if pair < 0 { // a stock host's GPU
		if attr == "numa_node" {
			return knownvalue.Null()
		}
		return knownvalue.StringExact("")
	}
	var bus int
	_, _ = fmt.Sscanf(dgxCard[pair], "0000:%x:", &bus)
	switch attr {
	case "numa_node":
		return knownvalue.Int64Exact(int64(pair / 4))
	case "pcie_switch":
		return knownvalue.StringExact(fmt.Sprintf("0000:%02x:00.0", bus-2))
	case "parent_bridge":
		slot := 0 // the card's downstream port, then the GPU's
		if id == dgxGPU[pair] {
			slot = 1
		}
		return knownvalue.StringExact(fmt.Sprintf("0000:%02x:%02x.0", bus-1, slot))
	}
	panic(attr)
}

func pairsOf(gpus, cards []string) map[string]knownvalue.Check {
	out := map[string]knownvalue.Check{}
	for i := range gpus {
		out[gpus[i]] = knownvalue.StringExact(cards[i])
	}
	return out
}

// topologyHostConfig turns SR-IOV on for GPU 0's card on the DGX host and
// passthrough on for its first VF.
func topologyHostConfig(lab *vcsimlab.Lab, host string) string {
	return acctest.RequiredProviders + fmt.Sprintf(`
resource "vspherehpc_host_sriov" "ib" {
  host_system_id        = %[1]q
  pci_id                = %[2]q
  num_virtual_functions = 2
}

resource "vspherehpc_host_pci_passthrough" "vf" {
  host_system_id = %[1]q
  pci_ids        = [vspherehpc_host_sriov.ib.virtual_function_ids[0]]
}
`, lab.HostID(host), dgxCard[0])
}

// topologyVMConfig is a GPU setup of vm with gpu and the VF of
// topologyHostConfig.
func topologyVMConfig(lab *vcsimlab.Lab, vm, gpu string, p2p bool, extra ...string) string {
	return fmt.Sprintf(`
resource "vspherehpc_vm_gpu_mmio" "gpu" {
  virtual_machine_id = %q
  peer_to_peer       = %t
%s
  gpu {
    pci_id = %q
  }
  pci_device {
    pci_id = one(vspherehpc_host_pci_passthrough.vf.pci_ids)
  }
}
`, lab.VMUUID(vm), p2p, strings.Join(extra, "\n"), gpu)
}

// The plan of a VM with a GPU and an InfiniBand VF warns exactly when the
// two are not under one PCIe switch: across sockets (stronger with
// peer-to-peer on), on one NUMA node, and not at all for the GPU beside
// the card; each warning names the better GPU and card on the host. The
// applied pair plans empty, with no warning.
func TestAccVMGPUMMIO_topology(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{DGXHosts: []int{0}})
	host := lab.HostNames()[0]
	vm := vmOnHost(t, lab, host)
	vf := "0000:18:00.1"
	d := newTFDir(t, lab, map[string]string{"main.tf": topologyHostConfig(lab, host)})
	d.run("apply", "-auto-approve")
	label := fmt.Sprintf("%s (%s)", vm, lab.VMUUID(vm))

	d.write(map[string]string{"vm.tf": topologyVMConfig(lab, vm, dgxGPU[4], true)})
	_, said := d.planSaying()
	for _, want := range []string{
		fmt.Sprintf("GPU %s (GH100 [H100 SXM5 80GB]) of virtual machine %s on host %s has none of the VM's InfiniBand or RoCE "+
			"functions under its PCIe switch: the nearest, %s, is on another NUMA node (the GPU on 1, the card on 0)", dgxGPU[4], label, host, vf),
		"peer_to_peer is on, but GPUDirect RDMA across NUMA nodes is slow",
		fmt.Sprintf("GPU %s is free under the same switch as %s; and %s sits under this GPU's switch", dgxGPU[0], vf, dgxCard[4]),
	} {
		if !acctest.Wording(want).MatchString(said) {
			t.Errorf("the plan of GPU 4 with GPU 0's card does not say %q:\n%s", want, said)
		}
	}

	d.write(map[string]string{"vm.tf": topologyVMConfig(lab, vm, dgxGPU[1], false)})
	_, said = d.planSaying()
	want := fmt.Sprintf("the nearest, %s, is on the same NUMA node (0) but not under the GPU's PCIe switch", vf)
	if !acctest.Wording(want).MatchString(said) || strings.Contains(said, "peer_to_peer is on") {
		t.Errorf("the plan of GPU 1 with GPU 0's card does not say %q, or speaks of peer-to-peer:\n%s", want, said)
	}

	d.write(map[string]string{"vm.tf": topologyVMConfig(lab, vm, dgxGPU[0], true)})
	if _, said = d.planSaying(); strings.Contains(said, "far from the VM's InfiniBand card") {
		t.Errorf("the plan of GPU 0 with its own card warns:\n%s", said)
	}
	d.run("apply", "-auto-approve")
	if changes, said := d.planSaying(); len(changes) != 0 || strings.Contains(said, "far from the VM's InfiniBand card") {
		t.Errorf("after the apply: %v\n%s", changes, said)
	}

	// A NUMA node affinity that leaves the devices' node out warns; theirs
	// does not.
	d.write(map[string]string{"vm.tf": topologyVMConfig(lab, vm, dgxGPU[0], true, "  numa_node_affinity = [1]")})
	_, said = d.planSaying()
	want = fmt.Sprintf("numa_node_affinity keeps virtual machine %s on NUMA node(s) 1 of host %s, but its devices %s (node 0), %s (node 0) "+
		"are on other nodes", label, host, dgxGPU[0], vf)
	if !acctest.Wording(want).MatchString(said) {
		t.Errorf("the plan of an affinity to node 1 does not say %q:\n%s", want, said)
	}
	d.write(map[string]string{"vm.tf": topologyVMConfig(lab, vm, dgxGPU[0], true, "  numa_node_affinity = [0]")})
	if _, said = d.planSaying(); strings.Contains(said, "leaves devices out") {
		t.Errorf("the plan of an affinity to the devices' node warns:\n%s", said)
	}
}
