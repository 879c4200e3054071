package provider

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// vsphereProviderEnv names a terraform-provider-vsphere binary (built from
// github.com/vmware/terraform-provider-vsphere): the composition guide's
// example needs it, and neither the Go module proxy nor anything else here
// serves it.
const vsphereProviderEnv = "VSPHERE_PROVIDER_BINARY"

// The guide "Using with the vSphere provider" as a reader applies it:
// examples/guides/with-vsphere-provider, unchanged, with both providers
// installed through dev_overrides and sharing one environment (the vSphere
// provider cannot take a CA file, so VSPHERE_ALLOW_UNVERIFIED_SSL is set
// beside this provider's VSPHERE_CA_FILE). It applies, plans empty, shows a
// PVRDMA adapter removed out of band and puts it back, and destroys
// everything it made.
func TestAccWithVSphereProvider_guide(t *testing.T) {
	binary := os.Getenv(vsphereProviderEnv)
	if binary == "" {
		t.Skipf("set %s to a terraform-provider-vsphere binary (v2.4.0 or later) to apply the composition guide's example", vsphereProviderEnv)
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("%s: %v", vsphereProviderEnv, err)
	}
	lab := startLab(t, vcsimlab.Options{})
	simulatedOnly(t, lab, "creates a VM and needs the lab's datastore and VM Network")
	ctx := context.Background()

	files := map[string]string{}
	for _, dir := range []string{"guides/with-vsphere-provider", "modules/pvrdma-cluster"} {
		src := filepath.Join("../../examples", dir)
		must(t, filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
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
	must(t, err)
	vsphereDir := t.TempDir()
	must(t, os.Symlink(binary, filepath.Join(vsphereDir, "terraform-provider-vsphere")))
	d.write(map[string]string{".terraformrc": `provider_installation {
  dev_overrides {
    "vspherehpc/vspherehpc" = "` + providers + `"
    "vmware/vsphere"        = "` + vsphereDir + `"
  }
  direct {}
}
`})
	gpuHost := lab.VMHostName(lab.VMNames()[0])
	d.env = append(d.env, "VSPHERE_ALLOW_UNVERIFIED_SSL=true",
		"TF_VAR_datacenter="+lab.DatacenterName(), "TF_VAR_cluster="+lab.ClusterName(),
		"TF_VAR_datastore=LocalDS_0", "TF_VAR_gpu_host="+gpuHost, "TF_VAR_management_network=VM Network")
	d.dir = filepath.Join(d.dir, "guides/with-vsphere-provider")

	d.run("get")
	d.run("apply", "-auto-approve")
	if changes := d.plan(); len(changes) != 0 {
		t.Fatalf("second plan: %v, want none", changes)
	}
	// Out of band, as an administrator must: vSphere removes a PVRDMA
	// adapter only from a powered-off VM, and the vSphere provider left it
	// running.
	must(t, lab.PowerOffVM(ctx, "gpu-node-01"))
	must(t, lab.RemovePVRDMAAdapters(ctx, "gpu-node-01"))
	must(t, lab.PowerOnVM(ctx, "gpu-node-01"))
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
