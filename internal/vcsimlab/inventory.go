package vcsimlab

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

// Building the lab's inventory on vcsim's model (the package
// documentation's Inventory): the hosts' hardware and state (the data is in
// hardware.go), the names and ids the Lab reports, and the VMs.

// prepareHosts gives every host of the model the lab's hardware and state.
// It runs before the server starts.
func (l *Lab) prepareHosts(opts Options) error {
	reg := l.model.Map()
	var cluster *simulator.ClusterComputeResource
	for _, e := range reg.All("ClusterComputeResource") {
		if cr, ok := e.(*simulator.ClusterComputeResource); ok {
			cluster = cr
		}
	}
	if cluster == nil {
		return errors.New("vcsimlab: model has no cluster")
	}
	for i := range opts.HostVersions {
		if i < 0 || i >= len(cluster.Host) {
			return fmt.Errorf("vcsimlab: Options.HostVersions names host %d; the hosts are 0 to %d", i, len(cluster.Host)-1)
		}
	}
	for i, hr := range cluster.Host {
		h, ok := reg.Get(hr).(*simulator.HostSystem)
		if !ok {
			return fmt.Errorf("vcsimlab: %s is not a host", hr)
		}
		if err := l.prepareHost(i, h, !opts.HostsNeedReboot, cmp.Or(opts.HostVersions[i], defaultESXi)); err != nil {
			return err
		}
	}
	if opts.NewerGPUHost {
		// The last host is of a newer GPU generation: hardware.go's newerGPUs.
		if len(cluster.Host) < 2 {
			return errors.New("vcsimlab: Options.NewerGPUHost needs at least two hosts")
		}
		h, _ := reg.Get(cluster.Host[len(cluster.Host)-1]).(*simulator.HostSystem)
		ps, _ := reg.Get(*h.ConfigManager.PciPassthruSystem).(*pciPassthruSystem)
		useGPUs(&h.HostSystem, &ps.HostPciPassthruSystem, newerGPUs)
	}
	for _, i := range opts.DGXHosts {
		if i < 0 || i >= len(cluster.Host) || opts.NewerGPUHost && i == len(cluster.Host)-1 {
			return fmt.Errorf("vcsimlab: Options.DGXHosts names host %d; the hosts are 0 to %d, less the newer GPU host", i, len(cluster.Host)-1)
		}
		h, _ := reg.Get(cluster.Host[i]).(*simulator.HostSystem)
		ps, _ := reg.Get(*h.ConfigManager.PciPassthruSystem).(*pciPassthruSystem)
		useDGXTopology(&h.HostSystem, &ps.HostPciPassthruSystem)
	}
	return nil
}

// prepareHost gives host i its own firewall, the PVRDMA advanced option,
// a passthrough system, the lab's hardware, its network and its ESXi
// version. rebind is the host's
// capability.deviceRebindWithoutRebootSupported.
func (l *Lab) prepareHost(i int, h *simulator.HostSystem, rebind bool, version string) error {
	reg := l.model.Map()
	ctx := newContext(reg)
	if h.Config == nil || h.Config.Network == nil || h.Hardware == nil || h.ConfigManager.FirewallSystem == nil ||
		h.ConfigManager.AdvancedOption == nil {
		return fmt.Errorf("vcsimlab: host %s lacks config", h.Name)
	}
	fwInfo, err := l.prepareFirewall(ctx, h)
	if err != nil {
		return err
	}

	om, ok := reg.Get(*h.ConfigManager.AdvancedOption).(*simulator.OptionManager)
	if !ok {
		return fmt.Errorf("vcsimlab: host %s has no option manager", h.Name)
	}
	l.ext.hostOptions[om.Self] = true
	// Through the OptionManager, which mirrors into config.option; the
	// reverse is not true.
	ctx.WithLock(om, func() {
		om.UpdateOptions(&types.UpdateOptions{ChangedValue: []types.BaseOptionValue{
			&types.OptionValue{Key: pvrdmaOption, Value: ""},
		}})
	})

	ps := newPciPassthruSystem(h)
	reg.Put(ps)
	gm := newGraphicsManager(h)
	reg.Put(gm)

	var versionErr error
	ctx.WithLock(h, func() {
		versionErr = setHostVersion(h, version)
		h.Config.Firewall = fwInfo
		addNetwork(i, h.Config.Network)
		// The hardware struct and its device slice are shared with the
		// package template and every other host.
		hw := *h.Hardware
		hw.PciDevice = append(slices.Clone(hw.PciDevice), pciDevices()...)
		h.Hardware = &hw
		h.Config.PciPassthruInfo = passthruInfo()
		h.Config.GraphicsInfo = graphicsInfo()
		h.Config.GraphicsConfig = defaultGraphicsConfig()
		h.Config.SharedPassthruGpuTypes, h.Config.SharedGpuCapabilities = nil, nil
		gm.GraphicsInfo, gm.GraphicsConfig = slices.Clone(h.Config.GraphicsInfo), h.Config.GraphicsConfig
		// Passthrough and SR-IOV changes apply without a reboot unless
		// Options.HostsNeedReboot (see UpdatePassthruConfig); the
		// capability is copied, not shared.
		if h.Capability != nil {
			hc := *h.Capability
			hc.DeviceRebindWithoutRebootSupported = types.NewBool(rebind)
			h.Capability = &hc
		}
		psRef, gmRef := ps.Self, gm.Self
		h.ConfigManager.PciPassthruSystem = &psRef
		h.ConfigManager.GraphicsManager = &gmRef
	})
	return versionErr
}

// prepareFirewall gives the host's firewall system its own rulesets, with
// pvrdma disabled and open to all addresses, and returns a copy of them for
// the host's config.firewall. Stock hosts share one firewall template across
// all hosts and all simulators in the process.
func (l *Lab) prepareFirewall(ctx *simulator.Context, h *simulator.HostSystem) (*types.HostFirewallInfo, error) {
	fw, ok := ctx.Map.Get(*h.ConfigManager.FirewallSystem).(*simulator.HostFirewallSystem)
	if !ok || fw.FirewallInfo == nil {
		return nil, fmt.Errorf("vcsimlab: host %s has no firewall", h.Name)
	}
	var fwInfo types.HostFirewallInfo
	if err := clone(fw.FirewallInfo, &fwInfo); err != nil {
		return nil, err
	}
	for j := range fwInfo.Ruleset {
		if fwInfo.Ruleset[j].Key == pvrdmaRuleset {
			fwInfo.Ruleset[j].Enabled = false
			fwInfo.Ruleset[j].AllowedHosts = &types.HostFirewallRulesetIpList{AllIp: true}
			fwInfo.Ruleset[j].UserControllable = types.NewBool(true)
			fwInfo.Ruleset[j].IpListUserConfigurable = types.NewBool(true)
		}
	}
	var fwCopy types.HostFirewallInfo
	if err := clone(&fwInfo, &fwCopy); err != nil {
		return nil, err
	}
	ctx.WithLock(fw, func() { fw.FirewallInfo = &fwInfo })
	l.ext.fwHost[fw.Self] = h.Self
	return &fwCopy, nil
}

// readInventory records names and ids so tests never hard-code them.
func (l *Lab) readInventory() error {
	reg := l.model.Map()
	dcs := reg.All("Datacenter")
	clusters := reg.All("ClusterComputeResource")
	if len(dcs) != 1 || len(clusters) != 1 {
		return errors.New("vcsimlab: want one datacenter and one cluster")
	}
	dc := dcs[0].Entity()
	l.dcName, l.dcID = dc.Name, dc.Self.Value
	cluster, ok := clusters[0].(*simulator.ClusterComputeResource)
	if !ok {
		return errors.New("vcsimlab: unexpected cluster type")
	}
	l.clusterName = cluster.Name
	// DRS as the vSphere Client turns it on: fully automated (vSphere
	// Resource Management, "Create a Cluster": the default automation level).
	// vcsim enables it with no automation level.
	if cfg, ok := cluster.ConfigurationEx.(*types.ClusterConfigInfoEx); ok {
		cfg.DrsConfig.DefaultVmBehavior = types.DrsBehaviorFullyAutomated
	}
	for _, hr := range cluster.Host {
		if h, ok := reg.Get(hr).(*simulator.HostSystem); ok {
			l.hosts = append(l.hosts, entry{name: h.Name, id: hr.Value})
		}
	}
	return nil
}

// vmKind describes one VM the lab creates.
type vmKind struct {
	name      string
	version   string
	nic       bool
	installed bool
}

func vmKinds(modern int) []vmKind {
	var out []vmKind
	for i := range modern {
		out = append(out, vmKind{name: fmt.Sprintf("hpc-node-%d", i), version: "vmx-19", nic: true})
	}
	return append(out,
		vmKind{name: "bare-node", version: "vmx-19"},
		vmKind{name: "legacy-node", version: "vmx-11", nic: true},
		vmKind{name: "installed-node", version: "vmx-19", nic: true, installed: true},
	)
}

// createVMs creates the lab's VMs in parallel through the admin client:
// vcsim creates VMs slowly (file I/O and task round trips).
func (l *Lab) createVMs(ctx context.Context, modern int) error {
	folder, pool, network, err := l.vmPlacement(ctx)
	if err != nil {
		return err
	}
	kinds := vmKinds(modern)
	l.vms = make([]vmEntry, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, k := range kinds {
		host := object.NewHostSystem(l.client.Client, ref("HostSystem", l.hosts[i%len(l.hosts)].id))
		wg.Go(func() {
			vm, err := createVM(ctx, folder, pool, host, network, k)
			if err != nil {
				errs[i] = fmt.Errorf("vcsimlab: create %s: %w", k.name, err)
				return
			}
			l.vms[i] = vm
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, k := range kinds {
		l.setGuest(ref("VirtualMachine", l.vms[i].id), k.installed)
	}
	return nil
}

// vmPlacement is where the lab creates VMs: the datacenter's VM folder, the
// cluster's resource pool, and VM Network for their adapters.
func (l *Lab) vmPlacement(ctx context.Context) (*object.Folder, *object.ResourcePool, types.ManagedObjectReference, error) {
	c := l.client.Client
	reg := l.model.Map()
	var none types.ManagedObjectReference
	dc, ok := reg.Get(ref("Datacenter", l.dcID)).(*simulator.Datacenter)
	if !ok {
		return nil, nil, none, errors.New("vcsimlab: datacenter not found")
	}
	fs, err := object.NewDatacenter(c, dc.Self).Folders(ctx)
	if err != nil {
		return nil, nil, none, err
	}
	var pool, network types.ManagedObjectReference
	for _, e := range reg.All("ClusterComputeResource") {
		if cr, ok := e.(*simulator.ClusterComputeResource); ok && cr.ResourcePool != nil {
			pool = *cr.ResourcePool
		}
	}
	for _, e := range reg.All("Network") {
		if e.Entity().Name == "VM Network" {
			network = e.Reference()
		}
	}
	if pool.Value == "" || network.Value == "" {
		return nil, nil, none, errors.New("vcsimlab: no resource pool or VM Network")
	}
	return fs.VmFolder, object.NewResourcePool(c, pool), network, nil
}

func createVM(
	ctx context.Context,
	folder *object.Folder,
	pool *object.ResourcePool,
	host *object.HostSystem,
	network types.ManagedObjectReference,
	k vmKind,
) (vmEntry, error) {
	spec := types.VirtualMachineConfigSpec{
		Name:     k.name,
		GuestId:  string(types.VirtualMachineGuestOsIdentifierUbuntu64Guest),
		Version:  k.version,
		Firmware: string(types.GuestOsDescriptorFirmwareTypeBios),
		NumCPUs:  4,
		MemoryMB: 8192,
		Files:    &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"},
	}
	var devices object.VirtualDeviceList
	scsi, err := devices.CreateSCSIController("pvscsi")
	if err != nil {
		return vmEntry{}, err
	}
	controller, ok := scsi.(types.BaseVirtualController)
	if !ok {
		return vmEntry{}, errors.New("no SCSI controller")
	}
	disk := devices.CreateDisk(controller, types.ManagedObjectReference{}, "[LocalDS_0] "+k.name+"/disk1.vmdk")
	disk.CapacityInKB = 20 << 20
	devices = append(devices, scsi, disk)
	if k.nic {
		backing := &types.VirtualEthernetCardNetworkBackingInfo{
			VirtualDeviceDeviceBackingInfo: types.VirtualDeviceDeviceBackingInfo{DeviceName: "VM Network"},
			Network:                        &network,
		}
		nic, err := devices.CreateEthernetCard("vmxnet3", backing)
		if err != nil {
			return vmEntry{}, err
		}
		devices = append(devices, nic)
	}
	if spec.DeviceChange, err = devices.ConfigSpec(types.VirtualDeviceConfigSpecOperationAdd); err != nil {
		return vmEntry{}, err
	}
	task, err := folder.CreateVM(ctx, spec, pool, host)
	if err != nil {
		return vmEntry{}, err
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return vmEntry{}, err
	}
	vmRef, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return vmEntry{}, errors.New("no VM reference in task result")
	}
	var vm mo.VirtualMachine
	if err := object.NewVirtualMachine(folder.Client(), vmRef).Properties(ctx, vmRef, []string{"config.uuid"}, &vm); err != nil {
		return vmEntry{}, err
	}
	if vm.Config == nil {
		return vmEntry{}, errors.New("VM has no config")
	}
	return vmEntry{entry: entry{name: k.name, id: vmRef.Value}, uuid: vm.Config.Uuid}, nil
}

// setGuest sets what vCenter reports about the guest OS: vcsim derives a
// guest family from the configured guest id even when no OS ever ran.
func (l *Lab) setGuest(vmRef types.ManagedObjectReference, installed bool) {
	ctx := newContext(l.model.Map())
	vm, ok := ctx.Map.Get(vmRef).(*simulator.VirtualMachine)
	if !ok {
		return
	}
	ctx.WithLock(vm, func() {
		g := types.GuestInfo{}
		summary := types.VirtualMachineGuestSummary{}
		if vm.Guest != nil {
			g = *vm.Guest
		}
		if installed {
			g.GuestFamily = string(types.VirtualMachineGuestOsFamilyLinuxGuest)
			g.GuestId = string(types.VirtualMachineGuestOsIdentifierUbuntu64Guest)
			g.GuestFullName = "Ubuntu Linux (64-bit)"
			g.ToolsStatus = types.VirtualMachineToolsStatusToolsNotRunning
			g.ToolsRunningStatus = string(types.VirtualMachineToolsRunningStatusGuestToolsNotRunning)
			g.ToolsVersionStatus2 = string(types.VirtualMachineToolsVersionStatusGuestToolsCurrent)
			g.ToolsVersion = "12389"
			summary.GuestId, summary.GuestFullName = g.GuestId, g.GuestFullName
			summary.ToolsStatus, summary.ToolsRunningStatus = g.ToolsStatus, g.ToolsRunningStatus
		} else {
			g.GuestFamily, g.GuestId, g.GuestFullName = "", "", ""
		}
		ctx.Update(vm, []types.PropertyChange{
			{Name: "guest", Val: &g},
			{Name: "summary.guest", Val: &summary},
		})
	})
}

// clone deep-copies src into dst the way vcsim copies its templates:
// through the SOAP encoding, which keeps every concrete type.
func clone(src, dst any) error {
	b, err := xml.Marshal(src)
	if err != nil {
		return err
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.TypeFunc = types.TypeFunc()
	return dec.Decode(dst)
}
