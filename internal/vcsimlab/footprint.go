package vcsimlab

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Footprint describes, one line per fact, everything of the lab's inventory
// the provider's resources change: the datacenter's distributed switches
// and port groups, the hosts' PVRDMA vmknic option, pvrdma firewall ruleset
// and PCI passthrough and SR-IOV configuration, and the VMs' PVRDMA, SR-IOV
// and passthrough devices, passthrough extraConfig, memory lock, firmware
// and power state. Two footprints taken before and after a test run differ
// exactly where the run left something behind.
func (l *Lab) Footprint(ctx context.Context) ([]string, error) {
	c := l.client.Client
	var out []string

	m := view.NewManager(c)
	v, err := m.CreateContainerView(ctx, ref("Datacenter", l.dcID), []string{"DistributedVirtualSwitch", "DistributedVirtualPortgroup"}, true)
	if err != nil {
		return nil, err
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var switches []mo.DistributedVirtualSwitch
	if err := v.Retrieve(ctx, []string{"DistributedVirtualSwitch"}, []string{"name"}, &switches); err != nil {
		return nil, err
	}
	for _, n := range switches {
		out = append(out, fmt.Sprintf("switch %q", n.Name))
	}
	var portgroups []mo.DistributedVirtualPortgroup
	if err := v.Retrieve(ctx, []string{"DistributedVirtualPortgroup"}, []string{"name"}, &portgroups); err != nil {
		return nil, err
	}
	for _, n := range portgroups {
		out = append(out, fmt.Sprintf("port group %q", n.Name))
	}

	for _, h := range l.hosts {
		var host mo.HostSystem
		props := []string{"config.option", "config.firewall", "config.pciPassthruInfo"}
		if err := l.client.RetrieveOne(ctx, ref("HostSystem", h.id), props, &host); err != nil {
			return nil, fmt.Errorf("host %s: %w", h.name, err)
		}
		if host.Config == nil {
			continue
		}
		for _, o := range host.Config.Option {
			if ov := o.GetOptionValue(); ov != nil && ov.Key == "Net.PVRDMAVmknic" {
				out = append(out, fmt.Sprintf("host %s option %s=%v", h.name, ov.Key, ov.Value))
			}
		}
		if fw := host.Config.Firewall; fw != nil {
			for _, r := range fw.Ruleset {
				if r.Key == "pvrdma" {
					out = append(out, fmt.Sprintf("host %s ruleset pvrdma enabled=%v allowed=%s", h.name, r.Enabled, allowedHosts(r.AllowedHosts)))
				}
			}
		}
		for _, p := range host.Config.PciPassthruInfo {
			info := p.GetHostPciPassthruInfo()
			line := fmt.Sprintf("host %s pci %s passthruEnabled=%v", h.name, info.Id, info.PassthruEnabled)
			if s, ok := p.(*types.HostSriovInfo); ok {
				line += fmt.Sprintf(" sriovEnabled=%v vfs=%d", s.SriovEnabled, s.NumVirtualFunctionRequested)
			}
			out = append(out, line)
		}
	}

	for _, vm := range l.vms {
		var v mo.VirtualMachine
		if err := l.client.RetrieveOne(ctx, ref("VirtualMachine", vm.id), []string{"config", "runtime.powerState"}, &v); err != nil {
			return nil, fmt.Errorf("VM %s: %w", vm.name, err)
		}
		out = append(out, fmt.Sprintf("vm %s power=%s", vm.name, v.Runtime.PowerState))
		if v.Config == nil {
			continue
		}
		out = append(
			out,
			fmt.Sprintf(
				"vm %s firmware=%s memoryLocked=%v",
				vm.name,
				v.Config.Firmware,
				v.Config.MemoryReservationLockedToMax != nil && *v.Config.MemoryReservationLockedToMax,
			),
		)
		for _, d := range v.Config.Hardware.Device {
			switch dev := d.(type) {
			case *types.VirtualVmxnet3Vrdma:
				out = append(out, fmt.Sprintf("vm %s pvrdma adapter %d", vm.name, dev.Key))
			case *types.VirtualSriovEthernetCard:
				out = append(out, fmt.Sprintf("vm %s sr-iov adapter %d", vm.name, dev.Key))
			case *types.VirtualPCIPassthrough:
				out = append(out, fmt.Sprintf("vm %s pci passthrough %d", vm.name, dev.Key))
			}
		}
		for _, o := range v.Config.ExtraConfig {
			if ov := o.GetOptionValue(); ov != nil && strings.HasPrefix(strings.ToLower(ov.Key), "pcipassthru") {
				out = append(out, fmt.Sprintf("vm %s extraConfig %s=%v", vm.name, ov.Key, ov.Value))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func allowedHosts(l *types.HostFirewallRulesetIpList) string {
	if l == nil || l.AllIp {
		return "all"
	}
	ips := slices.Clone(l.IpAddress)
	for _, n := range l.IpNetwork {
		ips = append(ips, fmt.Sprintf("%s/%d", n.Network, n.PrefixLength))
	}
	slices.Sort(ips)
	return strings.Join(ips, ",")
}
