package vcsimlab

import (
	"context"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// hostLabels reads the hardware labels of a host's devices, by PCI id.
func hostLabels(t *testing.T, l *Lab, host string) map[string]string {
	t.Helper()
	var h mo.HostSystem
	retrieve(t, l.Client(), ref("HostSystem", l.HostID(host)), []string{"config.pciPassthruInfo"}, &h)
	out := map[string]string{}
	for _, p := range h.Config.PciPassthruInfo {
		if info := p.GetHostPciPassthruInfo(); info.HardwareLabel != "" {
			out[info.Id] = info.HardwareLabel
		}
	}
	return out
}

// A hardware label set through UpdatePassthruConfig is read back, kept by an
// SR-IOV or passthrough change that carries it, offered with the device in
// the VM's config target, and narrows which devices a labelled Dynamic
// DirectPath device may take: in a DRS cluster any host's, without DRS the
// VM's host's only.
func TestHardwareLabels(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	hosts, gpu := l.HostNames(), l.GPUs()[0]
	if err := l.SetHardwareLabel(ctx, hosts[1], gpu, "training"); err != nil {
		t.Fatal(err)
	}
	if got := hostLabels(t, l, hosts[1]); got[gpu] != "training" || len(got) != 1 {
		t.Fatalf("%s's labels: %v, want %s labelled training", hosts[1], got, gpu)
	}
	if got := hostLabels(t, l, hosts[0]); len(got) != 0 {
		t.Fatalf("%s's labels: %v, want none", hosts[0], got)
	}
	if err := l.SetHostPassthroughAtNextReboot(ctx, hosts[1], gpu, true); err != nil {
		t.Fatal(err)
	}
	if got := hostLabels(t, l, hosts[1]); got[gpu] != "training" {
		t.Fatalf("after a passthrough change carrying it: %v", got)
	}

	var vm *string
	for _, name := range l.VMNames() {
		if l.VMHostName(name) == hosts[0] {
			vm = &name
			break
		}
	}
	if vm == nil {
		t.Fatalf("no VM on %s", hosts[0])
	}
	v := object.NewVirtualMachine(l.Client().Client, ref("VirtualMachine", l.VMID(*vm)))
	var browser mo.VirtualMachine
	retrieve(t, l.Client(), v.Reference(), []string{"environmentBrowser"}, &browser)
	target, err := object.NewEnvironmentBrowser(l.Client().Client, browser.EnvironmentBrowser).QueryConfigTarget(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	labelled := 0
	for _, d := range target.DynamicPassthrough {
		if d.CustomLabel == "training" {
			labelled++
		}
	}
	if labelled != 1 {
		t.Fatalf("the cluster's config target offers %d devices labelled training, want 1: %+v", labelled, target.DynamicPassthrough)
	}

	add := func(label string) error {
		return v.AddDevice(ctx, &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Key: -1,
			Backing: &types.VirtualPCIPassthroughDynamicBackingInfo{CustomLabel: label,
				AllowedDevice: []types.VirtualPCIPassthroughAllowedDevice{{VendorId: 0x10de, DeviceId: 0x2330}}}}})
	}
	if err := add("inference"); err == nil || !strings.Contains(err.Error(), `labelled "inference"`) {
		t.Fatalf("a label no host's device carries: %v", err)
	}
	// The VM's host has no device labelled training; another host of the
	// DRS cluster has.
	if err := add("training"); err != nil {
		t.Fatalf("a label another host of the DRS cluster carries: %v", err)
	}
	// Left out of DRS by its override, or without DRS, the VM takes only
	// its host's devices.
	if err := l.SetVMDRSOverride(ctx, *vm, false, ""); err != nil {
		t.Fatal(err)
	}
	if err := add("training"); err == nil {
		t.Fatal("a VM excluded from DRS, a label only another host carries: no error")
	}
	if err := l.SetVMDRSOverride(ctx, *vm, true, types.DrsBehaviorFullyAutomated); err != nil {
		t.Fatal(err)
	}
	if err := l.SetClusterDRS(ctx, false, types.DrsBehaviorFullyAutomated); err != nil {
		t.Fatal(err)
	}
	if err := add("training"); err == nil {
		t.Fatal("without DRS, a label only another host carries: no error")
	}
	// Cleared: sent without a label.
	if err := l.SetHardwareLabel(ctx, hosts[1], gpu, ""); err != nil {
		t.Fatal(err)
	}
	if got := hostLabels(t, l, hosts[1]); len(got) != 0 {
		t.Fatalf("after clearing: %v", got)
	}
}
