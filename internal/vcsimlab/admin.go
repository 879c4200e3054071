package vcsimlab

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"

	govmomifind "github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Out-of-band administration: what an administrator does to vSphere behind
// Terraform's back, in the vSphere Client or with govc. Tests change the lab
// through these methods only, with plain values (names, ids, numbers), so
// they need no govmomi of their own. Every change goes through the lab's
// admin client (its calls are not counted, no fault is injected into them)
// and meets vSphere's own checks, as the administrator's would.

// SetHostOption sets a host's advanced option out of band, as Configure >
// Advanced System Settings in the vSphere Client (govc host.option.set) does.
func (l *Lab) SetHostOption(ctx context.Context, hostName, key string, value any) error {
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	options, err := host.ConfigManager().OptionManager(ctx)
	if err != nil {
		return err
	}
	return options.Update(ctx, []types.BaseOptionValue{&types.OptionValue{Key: key, Value: value}})
}

// SetRuleset enables or disables a host's firewall ruleset out of band, as
// Configure > Firewall in the vSphere Client (govc host.esxcli network
// firewall ruleset set) does.
func (l *Lab) SetRuleset(ctx context.Context, hostName, ruleset string, enabled bool) error {
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	firewall, err := host.ConfigManager().FirewallSystem(ctx)
	if err != nil {
		return err
	}
	if enabled {
		return firewall.EnableRuleset(ctx, ruleset)
	}
	return firewall.DisableRuleset(ctx, ruleset)
}

// SetHostSRIOV turns SR-IOV of a host's physical function pfID on with
// numVFs virtual functions, or off with 0, as Configure > Hardware > PCI
// Devices in the vSphere Client does, through the host's
// HostPciPassthruSystem; the function's passthrough stays as it is. The
// change takes effect as UpdatePassthruConfig says: at once, or at the
// host's next reboot.
func (l *Lab) SetHostSRIOV(ctx context.Context, hostName, pfID string, numVFs int) error {
	return l.setHostSRIOV(ctx, hostName, pfID, numVFs, nil)
}

// SetHostSRIOVAtNextReboot is SetHostSRIOV with applyNow false: the change
// waits for the host's next reboot even on a host that could apply it at
// once (HostPciPassthruConfig.applyNow), as an administrator who defers it
// to a maintenance window leaves it.
func (l *Lab) SetHostSRIOVAtNextReboot(ctx context.Context, hostName, pfID string, numVFs int) error {
	return l.setHostSRIOV(ctx, hostName, pfID, numVFs, types.NewBool(false))
}

func (l *Lab) setHostSRIOV(ctx context.Context, hostName, pfID string, numVFs int, applyNow *bool) error {
	return l.updatePassthru(ctx, hostName, func(current []types.BaseHostPciPassthruInfo) types.BaseHostPciPassthruConfig {
		cfg := &types.HostSriovConfig{HostPciPassthruConfig: types.HostPciPassthruConfig{Id: pfID, ApplyNow: applyNow}, SriovEnabled: numVFs > 0,
			NumVirtualFunction: int32(numVFs)}
		if info := infoOf(current, pfID); info != nil {
			cfg.PassthruEnabled, cfg.HardwareLabel = info.PassthruEnabled, info.HardwareLabel
		}
		return cfg
	})
}

// SetHostPassthroughAtNextReboot turns passthrough of a host's PCI device
// on or off with applyNow false, as Configure > Hardware > PCI Devices does
// for an administrator who defers the change to the host's next reboot
// (HostPciPassthruConfig.applyNow): it waits for that reboot even on a host
// that could apply it at once.
func (l *Lab) SetHostPassthroughAtNextReboot(ctx context.Context, hostName, pciID string, enabled bool) error {
	return l.updatePassthru(ctx, hostName, func(current []types.BaseHostPciPassthruInfo) types.BaseHostPciPassthruConfig {
		cfg := &types.HostPciPassthruConfig{Id: pciID, PassthruEnabled: enabled, ApplyNow: types.NewBool(false)}
		if info := infoOf(current, pciID); info != nil {
			cfg.HardwareLabel = info.HardwareLabel
		}
		return cfg
	})
}

// SetHardwareLabel gives a host's PCI device a hardware label ("" for
// none), as Configure > Hardware > PCI Devices > Hardware Label in the
// vSphere Client does (HostPciPassthruConfig.hardwareLabel, API 7.0.2.0);
// its passthrough stays as it is.
func (l *Lab) SetHardwareLabel(ctx context.Context, hostName, pciID, label string) error {
	return l.updatePassthru(ctx, hostName, func(current []types.BaseHostPciPassthruInfo) types.BaseHostPciPassthruConfig {
		cfg := &types.HostPciPassthruConfig{Id: pciID, HardwareLabel: label}
		if info := infoOf(current, pciID); info != nil {
			cfg.PassthruEnabled = info.PassthruEnabled
		}
		return cfg
	})
}

// infoOf is the passthrough state of device id among infos, or nil.
func infoOf(infos []types.BaseHostPciPassthruInfo, id string) *types.HostPciPassthruInfo {
	for _, p := range infos {
		if info := p.GetHostPciPassthruInfo(); info.Id == id {
			return info
		}
	}
	return nil
}

// updatePassthru sends one device's passthrough configuration, which
// config builds from the host's current passthrough state, to the host's
// HostPciPassthruSystem (UpdatePassthruConfig).
func (l *Lab) updatePassthru(
	ctx context.Context,
	hostName string,
	config func([]types.BaseHostPciPassthruInfo) types.BaseHostPciPassthruConfig,
) error {
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	var h mo.HostSystem
	if err := host.Properties(ctx, host.Reference(), []string{"configManager.pciPassthruSystem"}, &h); err != nil {
		return err
	}
	ps := h.ConfigManager.PciPassthruSystem
	if ps == nil {
		return fmt.Errorf("vcsimlab: host %q has no PCI passthrough system", hostName)
	}
	var sys mo.HostPciPassthruSystem
	if err := host.Properties(ctx, *ps, []string{"pciPassthruInfo"}, &sys); err != nil {
		return err
	}
	_, err = methods.UpdatePassthruConfig(ctx, l.client.Client, &types.UpdatePassthruConfig{This: *ps,
		Config: []types.BaseHostPciPassthruConfig{config(sys.PciPassthruInfo)}})
	return err
}

// SetStandardSwitchUplinks makes a host's physical NICs vmnics the uplinks
// of its standard switch vswitchName (none for no uplink), as Configure >
// Virtual switches > Manage Physical Adapters in the vSphere Client does
// (HostNetworkSystem.UpdateVirtualSwitch with the switch's spec and a bond
// bridge of those NICs).
func (l *Lab) SetStandardSwitchUplinks(ctx context.Context, hostName, vswitchName string, vmnics ...string) error {
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	var h mo.HostSystem
	if err := host.Properties(ctx, host.Reference(), []string{"config.network.vswitch"}, &h); err != nil {
		return err
	}
	if h.Config == nil || h.Config.Network == nil {
		return fmt.Errorf("vcsimlab: host %q has no network configuration", hostName)
	}
	i := slices.IndexFunc(h.Config.Network.Vswitch, func(vs types.HostVirtualSwitch) bool { return vs.Name == vswitchName })
	if i < 0 {
		return fmt.Errorf("vcsimlab: host %q has no standard switch %q", hostName, vswitchName)
	}
	spec := h.Config.Network.Vswitch[i].Spec
	spec.Bridge = nil
	if len(vmnics) > 0 {
		bridge := &types.HostVirtualSwitchBondBridge{}
		if old, ok := h.Config.Network.Vswitch[i].Spec.Bridge.(*types.HostVirtualSwitchBondBridge); ok {
			*bridge = *old
		}
		bridge.NicDevice = vmnics
		spec.Bridge = bridge
	}
	ns, err := host.ConfigManager().NetworkSystem(ctx)
	if err != nil {
		return err
	}
	return ns.UpdateVirtualSwitch(ctx, vswitchName, spec)
}

// RemoveHost removes a host that runs no VMs from vCenter, out of band, as
// Remove from Inventory in the vSphere Client (govc object.destroy) does.
func (l *Lab) RemoveHost(ctx context.Context, hostName string) error {
	if l.simulatorOnly("RemoveHost") {
		return ErrNotSimulated
	}
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	return adminWait(ctx)(host.Destroy(ctx))
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

// SetClusterDRS sets the lab cluster's DRS: off (enabled false), or on at
// an automation level ("manual", "partiallyAutomated", "fullyAutomated"), as
// the cluster's Configure > vSphere DRS > Edit does.
func (l *Lab) SetClusterDRS(ctx context.Context, enabled bool, behavior types.DrsBehavior) error {
	clusters, err := l.adminFinder().ClusterComputeResourceList(ctx, "*")
	if err != nil {
		return err
	}
	spec := &types.ClusterConfigSpecEx{DrsConfig: &types.ClusterDrsConfigInfo{Enabled: &enabled, DefaultVmBehavior: behavior}}
	return adminWait(ctx)(clusters[0].Reconfigure(ctx, spec, true))
}

// SetClusterDRSOption sets one of the lab cluster's DRS advanced options,
// as the cluster's Configure > vSphere DRS > Edit > Advanced Options (or the
// vSphere provider's drs_advanced_options) does.
func (l *Lab) SetClusterDRSOption(ctx context.Context, key, value string) error {
	clusters, err := l.adminFinder().ClusterComputeResourceList(ctx, "*")
	if err != nil {
		return err
	}
	spec := &types.ClusterConfigSpecEx{DrsConfig: &types.ClusterDrsConfigInfo{
		Option: []types.BaseOptionValue{&types.OptionValue{Key: key, Value: value}},
	}}
	return adminWait(ctx)(clusters[0].Reconfigure(ctx, spec, true))
}

// SetVCenterSetting sets one of vCenter's advanced settings, as vCenter >
// Configure > Advanced Settings > Edit Settings does.
func (l *Lab) SetVCenterSetting(ctx context.Context, key, value string) error {
	m := object.NewOptionManager(l.client.Client, *l.client.ServiceContent.Setting)
	return m.Update(ctx, []types.BaseOptionValue{&types.OptionValue{Key: key, Value: value}})
}

// SetVMDRSOverride overrides the lab cluster's DRS for one VM, as the
// cluster's Configure > VM Overrides > Add (DRS automation level) does:
// behavior is the VM's automation level ("" in a new override keeps the
// cluster's), enabled false excludes it from DRS. A second call for the VM
// edits its override.
func (l *Lab) SetVMDRSOverride(ctx context.Context, vmName string, enabled bool, behavior types.DrsBehavior) error {
	clusters, err := l.adminFinder().ClusterComputeResourceList(ctx, "*")
	if err != nil {
		return err
	}
	vm, err := l.adminFinder().VirtualMachine(ctx, vmName)
	if err != nil {
		return err
	}
	var cfg mo.ClusterComputeResource
	if err := clusters[0].Properties(ctx, clusters[0].Reference(), []string{"configurationEx"}, &cfg); err != nil {
		return err
	}
	op := types.ArrayUpdateOperationAdd
	if ex, ok := cfg.ConfigurationEx.(*types.ClusterConfigInfoEx); ok {
		for _, o := range ex.DrsVmConfig {
			if o.Key == vm.Reference() {
				op = types.ArrayUpdateOperationEdit
			}
		}
	}
	spec := &types.ClusterConfigSpecEx{DrsVmConfigSpec: []types.ClusterDrsVmConfigSpec{{
		ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: op},
		Info:            &types.ClusterDrsVmConfigInfo{Key: vm.Reference(), Enabled: &enabled, Behavior: behavior},
	}}}
	return adminWait(ctx)(clusters[0].Reconfigure(ctx, spec, true))
}

// CreateDatacenter creates a folder at the root of the inventory and a
// datacenter in it, as New Folder and New Datacenter in the vSphere Client
// (govc folder.create, govc datacenter.create -folder) do. vCenter allows a
// datacenter name that is already used in another folder.
func (l *Lab) CreateDatacenter(ctx context.Context, folderName, datacenterName string) error {
	if l.simulatorOnly("CreateDatacenter") {
		return ErrNotSimulated
	}
	folder, err := object.NewRootFolder(l.client.Client).CreateFolder(ctx, folderName)
	if err != nil {
		return err
	}
	_, err = folder.CreateDatacenter(ctx, datacenterName)
	return err
}

// AddStandaloneHost adds a standalone host to the host folder of the
// datacenter at datacenterPath ("/site-b/dc-b"), as Add Host in the vSphere
// Client (govc host.add) does, and returns its managed object id. vcsim
// makes it from its stock ESXi host, without the lab's hardware; it is not
// among HostNames.
func (l *Lab) AddStandaloneHost(ctx context.Context, datacenterPath, hostName string) (string, error) {
	if l.simulatorOnly("AddStandaloneHost") {
		return "", ErrNotSimulated
	}
	dc, err := govmomifind.NewFinder(l.client.Client).Datacenter(ctx, datacenterPath)
	if err != nil {
		return "", err
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return "", err
	}
	task, err := folders.HostFolder.AddStandaloneHost(ctx, types.HostConnectSpec{HostName: hostName}, true, nil, nil)
	if err != nil {
		return "", err
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		return "", err
	}
	cr, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return "", fmt.Errorf("vcsimlab: adding host %s returned no compute resource", hostName)
	}
	if cr.Type == "HostSystem" { // vcsim's result; vCenter's is the compute resource (AddStandaloneHost_Task)
		return cr.Value, nil
	}
	var res mo.ComputeResource
	if err := l.client.RetrieveOne(ctx, cr, []string{"host"}, &res); err != nil {
		return "", err
	}
	if len(res.Host) != 1 {
		return "", fmt.Errorf("vcsimlab: compute resource of host %s has %d hosts", hostName, len(res.Host))
	}
	return res.Host[0].Value, nil
}

// Fault is a vSphere fault for the lab to inject, in plain values: its type
// name in the vSphere API reference ("DvsFault", "InvalidName") and, for the
// types below that carry one, its descriptive field.
type Fault struct {
	Type string
	// Detail is GenericVmConfigFault.reason, InvalidArgument.invalidProperty
	// or InvalidName.name; other types take none.
	Detail string
}

// methodFault builds the fault.
func (f Fault) methodFault() (types.BaseMethodFault, error) {
	switch f.Type {
	case "GenericVmConfigFault":
		return &types.GenericVmConfigFault{Reason: f.Detail}, nil
	case "InvalidArgument":
		return &types.InvalidArgument{InvalidProperty: f.Detail}, nil
	case "InvalidName":
		return &types.InvalidName{Name: f.Detail}, nil
	}
	if f.Detail != "" {
		return nil, fmt.Errorf("vcsimlab: a %s fault takes no detail", f.Type)
	}
	t, ok := types.TypeFunc()(f.Type)
	if !ok {
		return nil, fmt.Errorf("vcsimlab: no vSphere type %q", f.Type)
	}
	mf, ok := reflect.New(t).Interface().(types.BaseMethodFault)
	if !ok {
		return nil, fmt.Errorf("vcsimlab: %s is not a vSphere fault", f.Type)
	}
	return mf, nil
}

// InjectTaskFault makes the next task of method ("ReconfigVM_Task") on the
// object named objectName fail with fault without doing anything: what an
// administrator sees when vCenter fails a task for a reason of its own (a
// host busy or lost, a resource short). It is FailTaskOnce with a Fault.
func (l *Lab) InjectTaskFault(method, objectName string, fault Fault) error {
	f, err := fault.methodFault()
	if err != nil {
		return err
	}
	l.FailTaskOnce(method, objectName, f)
	return nil
}

// InjectCallFault makes the next count calls of method on the object named
// objectName ("" for any) fail with fault as a SOAP fault: what a host that
// refuses a request (an ESXi too old to know an option) answers. It is
// FailCall with a Fault.
func (l *Lab) InjectCallFault(method, objectName string, fault Fault, count int) error {
	f, err := fault.methodFault()
	if err != nil {
		return err
	}
	l.FailCall(method, objectName, f, count)
	return nil
}

// adminHost is the named lab host, for the admin client.
func (l *Lab) adminHost(hostName string) (*object.HostSystem, error) {
	id := l.HostID(hostName)
	if id == "" {
		return nil, fmt.Errorf("vcsimlab: no host %q", hostName)
	}
	return object.NewHostSystem(l.client.Client, ref("HostSystem", id)), nil
}

// adminDatacenter is the lab's datacenter.
func (l *Lab) adminDatacenter() *object.Datacenter {
	return object.NewDatacenter(l.client.Client, ref("Datacenter", l.DatacenterID()))
}

// adminFinder looks up inventory paths relative to the lab's datacenter.
func (l *Lab) adminFinder() *govmomifind.Finder {
	finder := govmomifind.NewFinder(l.client.Client, false)
	finder.SetDatacenter(l.adminDatacenter())
	return finder
}

// adminWait waits for the task a task method started, or returns the
// method's error: adminWait(ctx)(vm.PowerOn(ctx)).
func adminWait(ctx context.Context) func(*object.Task, error) error {
	return func(task *object.Task, err error) error {
		if err != nil {
			return err
		}
		return task.Wait(ctx)
	}
}

// RebootHost reboots a host out of band, as Reboot in the vSphere Client
// (govc host.shutdown -r) or the host's console does, and applies its
// pending passthrough and SR-IOV changes: passthrough and SR-IOV become
// active as enabled and the requested virtual functions appear (see
// UpdatePassthruConfig). The host's runtime.bootTime becomes now; its VMs
// are left as they are.
func (l *Lab) RebootHost(ctx context.Context, hostName string) error {
	if l.simulatorOnly("RebootHost") {
		return ErrNotSimulated
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	id := l.HostID(hostName)
	if id == "" {
		return fmt.Errorf("vcsimlab: no host %q", hostName)
	}
	reg := l.model.Map()
	h, ok := reg.Get(ref("HostSystem", id)).(*simulator.HostSystem)
	if !ok {
		return fmt.Errorf("vcsimlab: host %q is no longer in the inventory", hostName)
	}
	sctx := newContext(reg)
	var ps *pciPassthruSystem
	sctx.WithLock(h, func() {
		if r := h.ConfigManager.PciPassthruSystem; r != nil {
			ps, _ = reg.Get(*r).(*pciPassthruSystem)
		}
	})
	if ps == nil {
		return fmt.Errorf("vcsimlab: host %q has no PCI passthrough system", hostName)
	}
	ps.reboot(sctx)
	sctx.WithLock(h, func() { restartGraphics(sctx, h) })
	return nil
}

// ConfigureGraphics sets a host's graphics configuration as Configure >
// Graphics > Edit Host Graphics Settings and Graphics Devices > Edit in the
// vSphere Client do (HostGraphicsManager.UpdateGraphicsConfig): the
// default graphics type, the assignment policy and each device's own
// type, by PCI id. It takes effect at the host's next reboot (see
// UpdateGraphicsConfig).
func (l *Lab) ConfigureGraphics(ctx context.Context, hostName, defaultType, policy string, devices map[string]string) error {
	host, err := l.adminHost(hostName)
	if err != nil {
		return err
	}
	var h mo.HostSystem
	if err := host.Properties(ctx, host.Reference(), []string{"configManager.graphicsManager"}, &h); err != nil {
		return err
	}
	if h.ConfigManager.GraphicsManager == nil {
		return fmt.Errorf("vcsimlab: host %q has no graphics manager", hostName)
	}
	cfg := types.HostGraphicsConfig{HostDefaultGraphicsType: defaultType, SharedPassthruAssignmentPolicy: policy}
	for _, id := range slices.Sorted(maps.Keys(devices)) {
		cfg.DeviceType = append(cfg.DeviceType, types.HostGraphicsConfigDeviceType{DeviceId: id, GraphicsType: devices[id]})
	}
	_, err = methods.UpdateGraphicsConfig(ctx, l.client.Client, &types.UpdateGraphicsConfig{This: *h.ConfigManager.GraphicsManager, Config: cfg})
	return err
}
