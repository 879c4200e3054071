package vcsimlab

import (
	"context"
	"fmt"

	govmomifind "github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// AttachGPU passes a host PCI device through to a VM with the lab's admin
// client, as an administrator (or govc device.pci.add) would out of band:
// the backing is filled from what QueryConfigTarget offers on the VM's host,
// and vSphere's own checks apply. A device the host does not offer is still
// sent, bare, so that vSphere's refusal is what the caller sees.
func (l *Lab) AttachGPU(ctx context.Context, vmName, pciID string) error {
	vm := object.NewVirtualMachine(l.client.Client, ref("VirtualMachine", l.VMID(vmName)))
	browser, err := vm.EnvironmentBrowser(ctx)
	if err != nil {
		return err
	}
	host, err := vm.HostSystem(ctx)
	if err != nil {
		return err
	}
	target, err := browser.QueryConfigTarget(ctx, host)
	if err != nil {
		return err
	}
	backing := &types.VirtualPCIPassthroughDeviceBackingInfo{Id: pciID}
	for _, p := range target.PciPassthrough {
		info, ok := p.(*types.VirtualMachinePciPassthroughInfo)
		if ok && info.PciDevice.Id == pciID {
			backing.DeviceId = fmt.Sprintf("%x", uint16(info.PciDevice.DeviceId))
			backing.VendorId = info.PciDevice.VendorId
			backing.SystemId = info.SystemId
			backing.DeviceName = info.PciDevice.DeviceName
		}
	}
	return vm.AddDevice(ctx, &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Key: -1, Backing: backing}})
}

// SetHostOption sets a host's advanced option out of band.
func (l *Lab) SetHostOption(ctx context.Context, hostName, key string, value any) error {
	host := object.NewHostSystem(l.client.Client, ref("HostSystem", l.HostID(hostName)))
	options, err := host.ConfigManager().OptionManager(ctx)
	if err != nil {
		return err
	}
	return options.Update(ctx, []types.BaseOptionValue{&types.OptionValue{Key: key, Value: value}})
}

// SetRuleset enables or disables a host's firewall ruleset out of band.
func (l *Lab) SetRuleset(ctx context.Context, hostName, ruleset string, enabled bool) error {
	host := object.NewHostSystem(l.client.Client, ref("HostSystem", l.HostID(hostName)))
	firewall, err := host.ConfigManager().FirewallSystem(ctx)
	if err != nil {
		return err
	}
	if enabled {
		return firewall.EnableRuleset(ctx, ruleset)
	}
	return firewall.DisableRuleset(ctx, ruleset)
}

// SetSwitchMTU changes a distributed switch's MTU out of band, as an
// administrator would in the vSphere Client: a reconfigure at the switch's
// current config version.
func (l *Lab) SetSwitchMTU(ctx context.Context, switchName string, mtu int32) error {
	finder := govmomifind.NewFinder(l.client.Client, false)
	finder.SetDatacenter(object.NewDatacenter(l.client.Client, ref("Datacenter", l.DatacenterID())))
	n, err := finder.Network(ctx, switchName)
	if err != nil {
		return err
	}
	dvs, ok := n.(*object.DistributedVirtualSwitch)
	if !ok {
		return fmt.Errorf("%s is not a distributed switch", switchName)
	}
	var s mo.DistributedVirtualSwitch
	if err := dvs.Properties(ctx, dvs.Reference(), []string{"config.configVersion"}, &s); err != nil {
		return err
	}
	task, err := dvs.Reconfigure(ctx, &types.VMwareDVSConfigSpec{
		DVSConfigSpec: types.DVSConfigSpec{ConfigVersion: s.Config.GetDVSConfigInfo().ConfigVersion},
		MaxMtu:        mtu,
	})
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

// RemoveHost removes a host that runs no VMs from vCenter, out of band.
func (l *Lab) RemoveHost(ctx context.Context, hostName string) error {
	task, err := object.NewHostSystem(l.client.Client, ref("HostSystem", l.HostID(hostName))).Destroy(ctx)
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

// HostWithoutVMs names a host no lab VM is registered on, or "".
func (l *Lab) HostWithoutVMs() string {
	used := map[string]bool{}
	for _, vm := range l.VMNames() {
		used[l.VMHostName(vm)] = true
	}
	for _, h := range l.HostNames() {
		if !used[h] {
			return h
		}
	}
	return ""
}
