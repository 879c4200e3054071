package provider

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// vsphereProviderEnv names a terraform-provider-vsphere binary (built from
// github.com/vmware/terraform-provider-vsphere, as the README's "Trying the
// vSphere provider against the lab" says): the composition guides need it.
// CI cannot build one: of github.com/vmware/ and hashicorp/
// terraform-provider-vsphere the Go module proxy serves only v1.26.0 (tried
// 2026-11-26: v2.0.0, v2.4.0, v2.6.1, v2.10.0, v2.12.0, v2.15.0, v2.16.1
// refused), older than the guides' v2.4.0, and CI reaches nothing else.
const vsphereProviderEnv = "VSPHERE_PROVIDER_BINARY"

// withVSphereProvider makes a working directory holding the given example
// folders (below examples/), unchanged, plus files, with both providers
// installed through dev_overrides and sharing one environment (the vSphere
// provider cannot take a CA file, so VSPHERE_ALLOW_UNVERIFIED_SSL is set
// beside this provider's VSPHERE_CA_FILE). It skips the test when no
// vSphere provider binary is given.
func withVSphereProvider(t *testing.T, lab *vcsimlab.Lab, examples []string, files map[string]string) *tfDir {
	t.Helper()
	binary := os.Getenv(vsphereProviderEnv)
	if binary == "" {
		t.Skipf("set %s to a terraform-provider-vsphere binary (v2.4.0 or later) to apply the composition guides", vsphereProviderEnv)
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("%s: %v", vsphereProviderEnv, err)
	}
	simulatedOnly(t, lab, "creates VMs and needs the lab's datastore and VM Network")
	notProviderCalls(lab)
	if files == nil {
		files = map[string]string{}
	}
	for _, dir := range examples {
		src := filepath.Join("../../examples", dir)
		acctest.Must(t, filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".tf") {
				return err
			}
			b, err := os.ReadFile(path)
			files[filepath.Join(dir, filepath.Base(path))] = string(b)
			return err
		}))
	}
	d := newTFDir(t, lab, files)
	providers, err := builtProvider()
	acctest.Must(t, err)
	vsphereDir := t.TempDir()
	acctest.Must(t, os.Symlink(binary, filepath.Join(vsphereDir, "terraform-provider-vsphere")))
	d.write(map[string]string{".terraformrc": `provider_installation {
  dev_overrides {
    "vspherehpc/vspherehpc" = "` + providers + `"
    "vmware/vsphere"        = "` + vsphereDir + `"
  }
  direct {}
}
`})
	d.env = append(d.env, "VSPHERE_ALLOW_UNVERIFIED_SSL=true",
		"TF_VAR_datacenter="+lab.DatacenterName(), "TF_VAR_cluster="+lab.ClusterName(),
		"TF_VAR_datastore=LocalDS_0", "TF_VAR_management_network=VM Network")
	return d
}

// The guide "Using with the vSphere provider" as a reader applies it:
// examples/guides/with-vsphere-provider. It applies, plans empty, shows a
// PVRDMA adapter removed out of band and puts it back, and destroys
// everything it made.
func TestAccWithVSphereProvider_guide(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	d := withVSphereProvider(t, lab, []string{"guides/with-vsphere-provider", "modules/pvrdma-cluster"}, nil)
	ctx := context.Background()
	d.env = append(d.env, "TF_VAR_gpu_host="+lab.VMHostName(lab.VMNames()[0]))
	d.dir = filepath.Join(d.dir, "guides/with-vsphere-provider")

	d.run("get")
	d.run("apply", "-auto-approve")
	if changes := d.plan(); len(changes) != 0 {
		t.Fatalf("second plan: %v, want none", changes)
	}
	// Out of band, as an administrator must: vSphere removes a PVRDMA
	// adapter only from a powered-off VM, and the vSphere provider left it
	// running.
	acctest.Must(t, lab.PowerOffVM(ctx, "gpu-node-01"))
	acctest.Must(t, lab.RemovePVRDMAAdapters(ctx, "gpu-node-01"))
	acctest.Must(t, lab.PowerOnVM(ctx, "gpu-node-01"))
	changes := d.plan()
	if len(changes) != 1 || changes[0].Address != "vspherehpc_vm_pvrdma_nic.gpu_node" {
		t.Fatalf("plan after the adapter was removed: %v, want vspherehpc_vm_pvrdma_nic.gpu_node re-created", changes)
	}
	d.run("apply", "-auto-approve")
	if changes := d.plan(); len(changes) != 0 {
		t.Fatalf("plan after putting the adapter back: %v, want none", changes)
	}
	d.run("destroy", "-auto-approve")
	if n, err := lab.CountNetworks(ctx, "pvrdma*"); err != nil || n != 0 {
		t.Fatalf("after destroy: %d networks named pvrdma* (%v), want none", n, err)
	}
}

// The alternative the guide offers, examples/guides/vsphere-owns-the-vm:
// the vSphere provider owns the whole VM, PVRDMA adapter and GPUs included,
// and this provider only finds the GPUs and sizes the MMIO window. The
// administrator made the PVRDMA switch and port group by hand before; the GPUs come in a
// second apply (attach_gpus), as the example says.
func TestAccWithVSphereProvider_vsphereOwnsTheVM(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	d := withVSphereProvider(t, lab, []string{"guides/vsphere-owns-the-vm"}, nil)
	ctx := context.Background()
	gpuHost := lab.VMHostName(lab.VMNames()[0])
	handMadeSwitch(t, lab, "hpc-100g", "VM 100GbE Network", 8)
	d.env = append(d.env, "TF_VAR_gpu_host="+gpuHost)
	d.dir = filepath.Join(d.dir, "guides/vsphere-owns-the-vm")

	d.run("apply", "-auto-approve")
	if changes := d.plan(); len(changes) != 0 {
		t.Fatalf("plan after the first apply: %v, want none", changes)
	}
	d.run("apply", "-auto-approve", "-var=attach_gpus=true")
	if changes := d.plan("-var=attach_gpus=true"); len(changes) != 0 {
		t.Fatalf("plan after attaching the GPUs: %v, want none", changes)
	}
	s, err := lab.VMSettings(ctx, "gpu-node-02")
	acctest.Must(t, err)
	gpus := slices.Sorted(slices.Values(s.GPUs))
	if want := slices.Sorted(slices.Values(lab.GPUs())); !slices.Equal(gpus, want) {
		t.Errorf("gpu-node-02's passthrough devices: %v, want %v", gpus, want)
	}
	if s.Firmware != "efi" || s.ExtraConfig["pciPassthru.use64bitMMIO"] != "TRUE" || s.ExtraConfig["pciPassthru.64bitMMIOSizeGB"] == "" {
		t.Errorf("gpu-node-02: firmware %q, extraConfig %v; want efi and the MMIO window", s.Firmware, s.ExtraConfig)
	}
	d.run("destroy", "-auto-approve", "-var=attach_gpus=true")
}

// vsphereProviderNodes has the vSphere provider create nodes VMs and this
// provider give each a PVRDMA adapter on the module's switch: the two
// providers side by side at Terraform's parallelism.
const vsphereProviderNodes = `
terraform {
  required_providers {
    vsphere    = { source = "vmware/vsphere" }
    vspherehpc = { source = "vspherehpc/vspherehpc" }
  }
}

variable "datacenter" {}
variable "cluster" {}
variable "datastore" {}
variable "management_network" {}
variable "host" {}
variable "nodes" {}

data "vsphere_datacenter" "dc" { name = var.datacenter }
data "vsphere_compute_cluster" "hpc" {
  name          = var.cluster
  datacenter_id = data.vsphere_datacenter.dc.id
}
data "vsphere_datastore" "local" {
  name          = var.datastore
  datacenter_id = data.vsphere_datacenter.dc.id
}
data "vsphere_network" "mgmt" {
  name          = var.management_network
  datacenter_id = data.vsphere_datacenter.dc.id
}
data "vsphere_host" "node" {
  name          = var.host
  datacenter_id = data.vsphere_datacenter.dc.id
}

module "pvrdma" {
  source        = "./modules/pvrdma-cluster"
  datacenter_id = data.vsphere_datacenter.dc.id
  cluster_name  = var.cluster
}

resource "vsphere_virtual_machine" "node" {
  count                      = var.nodes
  name                       = "composed-node-${count.index}"
  resource_pool_id           = data.vsphere_compute_cluster.hpc.resource_pool_id
  host_system_id             = data.vsphere_host.node.id
  datastore_id               = data.vsphere_datastore.local.id
  num_cpus                   = 4
  memory                     = 4096
  memory_reservation         = 4096
  guest_id                   = "ubuntu64Guest"
  hardware_version           = 19
  wait_for_guest_net_timeout = 0
  network_interface {
    network_id = data.vsphere_network.mgmt.id
  }
  disk {
    label = "disk0"
    size  = 20
  }
  lifecycle {
    ignore_changes = [network_interface, memory_reservation_locked_to_max]
  }
}

resource "vspherehpc_vm_pvrdma_nic" "node" {
  count                     = var.nodes
  virtual_machine_id        = vsphere_virtual_machine.node[count.index].id
  distributed_port_group_id = module.pvrdma.port_group_id
  power_off_allowed         = true
}
`

// Four VMs the vSphere provider creates, each with this provider's PVRDMA
// adapter. The VMs are applied and refreshed first on their own, so that
// the log shows what the vSphere provider's apply and refresh cost on the
// lab (calls by method and endpoint, wall time) apart from this provider's.
//
// It runs at parallelism 1 (VSPHERE_PROVIDER_PARALLELISM changes it): the
// vSphere provider waits for every task on the session's one property
// collector from all its goroutines, which vSphere does not support (see
// the lab's property_wait.go). On the lab, whichever wait polls first takes
// every pending update, so at parallelism 10 the other waits never see
// their task end: destroying four VMs hangs until the provider's timeout.
func TestAccWithVSphereProvider_fourVMs(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	d := withVSphereProvider(t, lab, []string{"modules/pvrdma-cluster"}, map[string]string{"main.tf": vsphereProviderNodes})
	parallelism := "1"
	if p := os.Getenv("VSPHERE_PROVIDER_PARALLELISM"); p != "" {
		parallelism = p
	}
	const nodes = 4
	d.env = append(d.env, "TF_VAR_host="+lab.VMHostName(lab.VMNames()[0]), "TF_VAR_nodes="+strconv.Itoa(nodes))

	d.run("get")
	lab.ResetCalls()
	start := time.Now()
	d.run("apply", "-auto-approve", "-parallelism="+parallelism, "-target=vsphere_virtual_machine.node")
	t.Logf(
		"the vSphere provider creating %d VMs at parallelism %s: %s, %s",
		nodes,
		parallelism,
		time.Since(start).Round(time.Millisecond),
		callSummary(lab.Calls()),
	)
	lab.ResetCalls()
	start = time.Now()
	d.run("apply", "-refresh-only", "-auto-approve", "-parallelism="+parallelism, "-target=vsphere_virtual_machine.node")
	t.Logf("the vSphere provider refreshing them: %s, %s", time.Since(start).Round(time.Millisecond), callSummary(lab.Calls()))

	lab.ResetCalls()
	start = time.Now()
	d.run("apply", "-auto-approve", "-parallelism="+parallelism)
	t.Logf("the rest (switch, host settings, %d PVRDMA adapters): %s, %s", nodes, time.Since(start).Round(time.Millisecond), callSummary(lab.Calls()))
	if changes := d.plan(); len(changes) != 0 {
		t.Fatalf("plan after the apply: %v, want none", changes)
	}
	lab.ResetCalls()
	start = time.Now()
	d.run("apply", "-refresh-only", "-auto-approve", "-parallelism="+parallelism)
	t.Logf("both providers refreshing everything: %s, %s", time.Since(start).Round(time.Millisecond), callSummary(lab.Calls()))
	for i := range nodes {
		name := "composed-node-" + strconv.Itoa(i)
		nics, _, err := pvrdmaAdapters(lab, name)
		acctest.Must(t, err)
		if len(nics) != 1 {
			t.Errorf("%s has %d PVRDMA adapters, want 1", name, len(nics))
		}
	}
	d.run("destroy", "-auto-approve", "-parallelism="+parallelism)
}

// callSummary is "N calls: Method n, …", the busiest first.
func callSummary(calls map[string]int) string {
	total := 0
	names := make([]string, 0, len(calls))
	for name, n := range calls {
		total += n
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if calls[names[i]] != calls[names[j]] {
			return calls[names[i]] > calls[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + " " + strconv.Itoa(calls[name])
	}
	return strconv.Itoa(total) + " calls: " + strings.Join(parts, ", ")
}

// The guide's node with two vGPUs instead of passthrough GPUs, as "Sharing
// GPUs with vGPU" says to compose it: the guide's configuration with the
// gpu blocks replaced by a vgpu block, on a host whose A100 is in Shared
// Direct. The vSphere provider's ignore_changes (pci_device_id,
// memory_reservation_locked_to_max) keeps it from taking the vGPUs away:
// the plan after the apply is empty, the VM keeps its vGPUs through a
// refresh, and destroy removes everything.
func TestAccWithVSphereProvider_vgpu(t *testing.T) {
	lab := startLab(t, vcsimlab.Options{})
	main, err := os.ReadFile("../../examples/guides/with-vsphere-provider/main.tf")
	acctest.Must(t, err)
	gpus := "  dynamic \"gpu\" {\n    for_each = local.gpus\n    content {\n      pci_id = gpu.value\n    }\n  }\n"
	if !strings.Contains(string(main), gpus) {
		t.Fatalf("examples/guides/with-vsphere-provider/main.tf has no gpu blocks of the form this test replaces:\n%s", gpus)
	}
	vgpuNode := strings.Replace(string(main), gpus, vgpuBlock("grid_a100-20c", 2), 1)
	d := withVSphereProvider(t, lab, []string{"modules/pvrdma-cluster"}, map[string]string{"guides/vgpu-node/main.tf": vgpuNode})
	host := lab.VMHostName(lab.VMNames()[0])
	sharedDirectHost(t, lab, host)
	d.env = append(d.env, "TF_VAR_gpu_host="+host)
	d.dir = filepath.Join(d.dir, "guides/vgpu-node")

	d.run("get")
	d.run("apply", "-auto-approve")
	if changes := d.plan(); len(changes) != 0 {
		t.Fatalf("plan after the apply: %v, want none", changes)
	}
	d.run("apply", "-refresh-only", "-auto-approve")
	acctest.Must(t, vmVGPUsAre(lab, "gpu-node-01", "grid_a100-20c", "grid_a100-20c")(nil))
	if changes := d.plan(); len(changes) != 0 {
		t.Fatalf("plan after a refresh: %v, want none", changes)
	}
	d.run("destroy", "-auto-approve")
}
