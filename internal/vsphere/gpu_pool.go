package vsphere

// GPU pools: host devices grouped by a hardware label (HostPciPassthruInfo.
// hardwareLabel, API 7.0.2.0) that a VM's Dynamic DirectPath device asks
// for with the same label (VirtualPCIPassthroughDynamicBackingInfo.
// customLabel: "If set, the device must also have the same customLabel
// attribute set"). vSphere picks the device, and in a DRS cluster the host,
// at power on (VMware, "Exposing Hardware Accelerators using Assignable
// Hardware", vSphere 7): a pool's devices may be on any host of the VM's
// DRS cluster.

import (
	"context"
	"fmt"
	"slices"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// The findings of a VM's pool requests.
type (
	// PoolTooSmall: the VM asks more devices of a pool (a model and a
	// hardware label) than its host has free, and no host of its DRS
	// cluster has that many (Best, on BestHost; "" when none has any).
	// Labels are the other labels the model carries on the VM's host.
	PoolTooSmall struct {
		Index                           int
		VM, Host, Vendor, Device, Label string
		Free, Asked                     int
		Best                            int
		BestHost                        string
		DRS                             bool // the VM's cluster has DRS on
		Labels                          []string
	}
	// PoolOnOtherHost: the VM's host has too few free devices of the pool,
	// and Host, another host of its DRS cluster, has enough: DRS places the
	// VM there at power on (a warning).
	PoolOnOtherHost struct {
		VM, VMHost, Host, Vendor, Device, Label string
		Asked                                   int
		Manual                                  bool // DRS only recommends the host (manual automation)
	}
)

func (PoolTooSmall) finding()    {}
func (PoolOnOtherHost) finding() {}

// pool is a model and a hardware label.
type pool struct{ vendor, device, label string }

// poolFree counts the free devices of p on host: active for passthrough,
// with p's label (a planned label counts as the host's), and configured on
// no VM but vm and releasing; with their memory (0 when unknown).
func poolFree(host *Host, p pool, vm, releasing string, planned PlannedHostDevices) (free int, memoryGB float64) {
	for _, g := range host.GPUs {
		if g.VendorID != p.vendor || g.DeviceID != p.device || planned.labelOf(host, g) != p.label {
			continue
		}
		if !g.PassthroughActive && !planned.activeOnceApplied(host, g.PCIID) {
			continue
		}
		if slices.ContainsFunc(g.VMs, func(u VMRef) bool { return u.MOID != vm && !u.Is(releasing) }) {
			continue
		}
		free++
		memoryGB = max(memoryGB, g.MemoryGB)
	}
	return free, memoryGB
}

// labelOf is a GPU's hardware label once the plan is applied: the one a
// host resource of the plan gives it, else its own.
func (p PlannedHostDevices) labelOf(host *Host, g GPU) string {
	if l, ok := p.Labels[HostDeviceKey(host.ID, g.PCIID)]; ok {
		return l
	}
	return g.HardwareLabel
}

// planPools checks the VM's labelled Dynamic DirectPath requests: each pool
// must have as many free devices as the VM asks for on its host or, in a
// DRS cluster, on another host (a warning then). It returns the memory of a
// device of each request (0 when unknown), by index.
func (c *Client) planPools(ctx context.Context, in deviceCheck, gpus []GPURequest) (map[int]float64, []Finding, error) {
	asked := map[pool][]int{} // the requests' indexes
	var order []pool
	for i, g := range gpus {
		if !g.Dynamic() || g.Label == "" {
			continue
		}
		p := pool{g.VendorID, g.DeviceID, g.Label}
		if len(asked[p]) == 0 {
			order = append(order, p)
		}
		asked[p] = append(asked[p], i)
	}
	memory := map[int]float64{}
	var out []Finding
	var cluster *poolCluster
	for _, p := range order {
		n := len(asked[p])
		free, gb := poolFree(in.host, p, in.vm.MOID, in.releasing, in.planned)
		if free >= n {
			for _, i := range asked[p] {
				memory[i] = gb
			}
			continue
		}
		if cluster == nil {
			var err error
			if cluster, err = c.readPoolCluster(ctx, in.host, in.vm.MOID); err != nil {
				return nil, nil, err
			}
		}
		best, bestHost, bestGB := 0, "", 0.0
		for _, h := range cluster.hosts {
			if h.ID == in.host.ID {
				continue
			}
			if f, gb := poolFree(h, p, in.vm.MOID, in.releasing, in.planned); f > best {
				best, bestHost, bestGB = f, h.Name, gb
			}
		}
		if cluster.drs && best >= n {
			out = append(out, PoolOnOtherHost{VM: in.label, VMHost: in.host.Name, Host: bestHost, Vendor: p.vendor, Device: p.device,
				Label: p.label, Asked: n, Manual: cluster.manual})
			for _, i := range asked[p] {
				memory[i] = bestGB
			}
			continue
		}
		var labels []string
		for _, g := range in.host.GPUs {
			if l := in.planned.labelOf(in.host, g); g.VendorID == p.vendor && g.DeviceID == p.device && l != "" && l != p.label &&
				!slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out = append(out, PoolTooSmall{Index: asked[p][min(free, n-1)], VM: in.label, Host: in.host.Name, Vendor: p.vendor, Device: p.device,
			Label: p.label, Free: free, Asked: n, Best: best, BestHost: bestHost, DRS: cluster.drs, Labels: labels})
	}
	return memory, out, nil
}

// poolCluster is a host's cluster as pools see it: whether DRS is on (it
// picks the host of a VM that powers on: the API reference of
// PowerOnVM_Task, "When powering on a virtual machine in a cluster, the
// system might ... do an implicit relocation"), whether it only recommends
// it (manual automation, vSphere Resource Management), and its hosts.
type poolCluster struct {
	drs, manual bool
	hosts       []*Host
}

// readPoolCluster reads host's cluster: its DRS setting for the VM vmID
// (its override in the cluster's VM Overrides, when it has one: "If this
// flag is false, the virtual machine is effectively excluded from DRS",
// ClusterDrsVmConfigInfo.enabled) and its hosts
// (each read as Host reads it, so from the command's prefetch of every
// host when there is one).
func (c *Client) readPoolCluster(ctx context.Context, host *Host, vmID string) (*poolCluster, error) {
	out := &poolCluster{}
	if host.ClusterID == "" {
		return out, nil
	}
	op := "reading the cluster of host " + host.Name
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	var cr mo.ClusterComputeResource
	if err := c.readObject(ctx, vc, types.ManagedObjectReference{Type: "ClusterComputeResource", Value: host.ClusterID},
		[]string{"configurationEx", "host"}, &cr); err != nil {
		return nil, translate(op, err)
	}
	if cfg, ok := cr.ConfigurationEx.(*types.ClusterConfigInfoEx); ok && cfg.DrsConfig.Enabled != nil {
		behavior := cfg.DrsConfig.DefaultVmBehavior
		out.drs = *cfg.DrsConfig.Enabled
		for _, o := range cfg.DrsVmConfig {
			if o.Key.Value != vmID {
				continue
			}
			if o.Enabled != nil && !*o.Enabled {
				out.drs = false
			}
			if o.Behavior != "" {
				behavior = o.Behavior
			}
		}
		out.manual = behavior == types.DrsBehaviorManual
	}
	for _, ref := range cr.Host {
		h, err := c.Host(ctx, ref.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out.hosts = append(out.hosts, h)
	}
	return out, nil
}
