package vcsimlab

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Which hosts a distributed switch version accepts: the hosts' ESXi
// versions (config.product, summary.config.product), the switch manager's
// compatibility queries, and the refusal of a host too old for a switch.
//
// The rule: a switch of version X.Y.Z accepts hosts of ESXi X.Y.Z or later.
// Each switch version is described as compatible with its vSphere release
// and newer (geek-university.com/distributed-switches-explained, for the
// versions of vCenter 5.5: "Distributed Switch 5.5.0 – compatible with
// vSphere 5.5 and newer"); TechTarget's definition of the VMware vDS: "the
// ESXi host versions must be equal or greater to the VDS version"; an ESXi 8
// host cannot join a version 9 switch (noahfarshad/vcf-import-prep, release
// v1.1.1). Broadcom's own table for the 7.x and 8.x versions was not found
// to quote.

// dvsVersions are the distributed switch versions vCenter 8.0.3 can create
// or upgrade to.
var dvsVersions = []string{"7.0.0", "7.0.2", "7.0.3", "8.0.0", "8.0.3"}

// compareVersions compares dotted versions numerically.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// esxiRelease is the AboutInfo an ESXi release reports.
type esxiRelease struct {
	version, build, api string
}

// esxiReleases are the ESXi releases vCenter 8.0.3 manages (7.0 and 8.0),
// with the builds of their general availability. Broadcom KB 395110
// ("Unified VCF Versioning in ESXi Release") gives 8.0 GA as
// 8.0.0-1.0.20513097 and 8.0 U2 as 8.0.2-0.0.22380479; the other builds are
// those of Broadcom KB 316595 ("Build numbers and versions of VMware ESXi"),
// not checked here. AboutInfo.version is the first part ("8.0.2").
var esxiReleases = []esxiRelease{
	{"7.0.0", "15843807", "7.0.0.0"},
	{"7.0.1", "16850804", "7.0.1.0"},
	{"7.0.2", "17630552", "7.0.2.0"},
	{"7.0.3", "18644231", "7.0.3.0"},
	{"8.0.0", "20513097", "8.0.0.0"},
	{"8.0.1", "21495797", "8.0.1.0"},
	{"8.0.2", "22380479", "8.0.2.0"},
	{"8.0.3", "24022510", "8.0.3.0"},
}

// defaultESXi is the version of every host Options.HostVersions leaves out.
const defaultESXi = "8.0.3"

// esxiProductLine is AboutInfo.productLineId of ESXi.
const esxiProductLine = "embeddedEsx"

// esxiAbout is the AboutInfo of an ESXi release, false for one the lab does
// not know.
func esxiAbout(version string) (types.AboutInfo, bool) {
	i := slices.IndexFunc(esxiReleases, func(r esxiRelease) bool { return r.version == version })
	if i < 0 {
		return types.AboutInfo{}, false
	}
	r := esxiReleases[i]
	return types.AboutInfo{
		Name:                  "VMware ESXi",
		FullName:              fmt.Sprintf("VMware ESXi %s build-%s", r.version, r.build),
		Vendor:                "VMware, Inc.",
		Version:               r.version,
		Build:                 r.build,
		LocaleVersion:         "INTL",
		LocaleBuild:           "000",
		OsType:                "vmnix-x86",
		ProductLineId:         esxiProductLine,
		ApiType:               "HostAgent",
		ApiVersion:            r.api,
		LicenseProductName:    "VMware ESX Server",
		LicenseProductVersion: r.version[:strings.LastIndex(r.version, ".")],
	}, true
}

// esxiVersions lists the versions esxiReleases know, for messages.
func esxiVersions() []string {
	out := make([]string, len(esxiReleases))
	for i, r := range esxiReleases {
		out[i] = r.version
	}
	return out
}

// setHostVersion gives host h the product of ESXi version, in config and
// summary alike; vcsim's hosts share one AboutInfo for summary.config.product.
// h is locked by the caller.
func setHostVersion(h *simulator.HostSystem, version string) error {
	about, ok := esxiAbout(version)
	if !ok {
		return fmt.Errorf("vcsimlab: host %s: unknown ESXi version %q; known: %s", h.Name, version, strings.Join(esxiVersions(), ", "))
	}
	h.Config.Product = about
	summary := about
	h.Summary.Config.Product = &summary
	return nil
}

// hostVersion is the ESXi version of a host.
func hostVersion(ctx *simulator.Context, host *simulator.HostSystem) string {
	var v string
	ctx.WithLock(host, func() {
		if host.Config != nil {
			v = host.Config.Product.Version
		}
	})
	return v
}

// runsSwitch reports whether ESXi version esxi can be a member of a switch of
// version dvs: ESXi of the switch's version or later.
func runsSwitch(esxi, dvs string) bool {
	return esxi != "" && compareVersions(esxi, dvs) >= 0
}

// compatibleHostSpecs are the host products a switch of version dvs accepts:
// one per ESXi release the lab knows that can run it. vCenter publishes them
// as QueryDvsCompatibleHostSpec's answer and as the switch's
// capability.compatibleHostComponentProductInfo (vSphere Web Services API,
// DVSCapability; QueryCompatibleHostForExistingDvs searches hosts "based on
// the specification published in" it). Whether vCenter lists every update
// release or one entry per version line is not settled by the reference; a
// client that matches a host's version against an entry as equal or as a
// dotted prefix reads both alike.
func compatibleHostSpecs(dvs string) []types.DistributedVirtualSwitchHostProductSpec {
	var out []types.DistributedVirtualSwitchHostProductSpec
	for _, r := range esxiReleases {
		if runsSwitch(r.version, dvs) {
			out = append(out, types.DistributedVirtualSwitchHostProductSpec{ProductLineId: esxiProductLine, Version: r.version})
		}
	}
	return out
}

// checkHostsRunSwitch refuses hosts that cannot run a switch of version dvs,
// on CreateDVS_Task and ReconfigureDvs_Task (hosts added) and
// PerformDvsProductSpecOperation_Task (members, on upgrade).
//
// The fault is NotSupported, as a call fault: Ansible's vmware_dvs_host
// catches vmodl.fault.NotSupported around ReconfigureDvs_Task as "not
// compatible with the VDS version", and a host attach to a newer switch is
// reported failing with "the operation is not supported on the object"
// (NotSupported's message; noahfarshad/vcf-import-prep v1.1.1). Neither
// source covers CreateDVS_Task or the upgrade, which the lab refuses alike:
// not settled. NotSupportedHostInDvs, whose reference names the switch
// product spec, extends HostConnectFault: the fault of connecting a host,
// not of joining one to a switch.
func checkHostsRunSwitch(ctx *simulator.Context, hosts []types.ManagedObjectReference, dvs string) *soap.Fault {
	for _, ref := range hosts {
		host, ok := ctx.Map.Get(ref).(*simulator.HostSystem)
		if !ok {
			continue // the method's own checks refuse hosts that do not exist
		}
		if v := hostVersion(ctx, host); !runsSwitch(v, dvs) {
			return simulator.Fault("The operation is not supported on the object.", &types.NotSupported{})
		}
	}
	return nil
}

// switchVersion is the version a switch is created with: the spec's, or the
// newest (DVSCreateSpec.productInfo).
func switchVersion(p *types.DistributedVirtualSwitchProductSpec) string {
	if p != nil && p.Version != "" {
		return p.Version
	}
	return dvsVersions[len(dvsVersions)-1]
}

// QueryDvsCompatibleHostSpec lists the host products that can be members of
// a switch of the given version, the newest when the spec is unset.
func (x *extension) QueryDvsCompatibleHostSpec(_ *simulator.Context, req *types.QueryDvsCompatibleHostSpec) soap.HasFault {
	return &methods.QueryDvsCompatibleHostSpecBody{Res: &types.QueryDvsCompatibleHostSpecResponse{
		Returnval: compatibleHostSpecs(switchVersion(req.SwitchProductSpec)),
	}}
}

// QueryCompatibleHostForNewDvs lists the hosts of a container that can be
// members of a new switch of the given version, the newest when the spec is
// unset ("assumed to be the default one used for DistributedVirtualSwitch
// creation").
func (x *extension) QueryCompatibleHostForNewDvs(ctx *simulator.Context, req *types.QueryCompatibleHostForNewDvs) soap.HasFault {
	body := new(methods.QueryCompatibleHostForNewDvsBody)
	hosts, ok := containerHosts(ctx, req.Container, req.Recursive)
	if !ok {
		body.Fault_ = notFoundFault(req.Container)
		return body
	}
	body.Res = &types.QueryCompatibleHostForNewDvsResponse{Returnval: hostsRunning(ctx, hosts, switchVersion(req.SwitchProductSpec))}
	return body
}

// QueryCompatibleHostForExistingDvs lists the hosts of a container that can
// be members of the switch, by its version.
func (x *extension) QueryCompatibleHostForExistingDvs(ctx *simulator.Context, req *types.QueryCompatibleHostForExistingDvs) soap.HasFault {
	body := new(methods.QueryCompatibleHostForExistingDvsBody)
	s, ok := ctx.Map.Get(req.Dvs).(*simulator.DistributedVirtualSwitch)
	if !ok {
		body.Fault_ = notFoundFault(req.Dvs)
		return body
	}
	var version string
	ctx.WithLock(s, func() {
		if s.Config != nil {
			version = s.Config.GetDVSConfigInfo().ProductInfo.Version
		}
	})
	hosts, ok := containerHosts(ctx, req.Container, req.Recursive)
	if !ok {
		body.Fault_ = notFoundFault(req.Container)
		return body
	}
	body.Res = &types.QueryCompatibleHostForExistingDvsResponse{Returnval: hostsRunning(ctx, hosts, version)}
	return body
}

// hostsRunning keeps the hosts that can run a switch of version dvs.
func hostsRunning(ctx *simulator.Context, hosts []types.ManagedObjectReference, dvs string) []types.ManagedObjectReference {
	var out []types.ManagedObjectReference
	for _, ref := range hosts {
		if host, ok := ctx.Map.Get(ref).(*simulator.HostSystem); ok && runsSwitch(hostVersion(ctx, host), dvs) {
			out = append(out, ref)
		}
	}
	return out
}

// containerHosts lists the hosts of a Datacenter (its host folder), Folder
// or ComputeResource: those of the compute resources at the container's
// level, and with recursive those of its subfolders too (vSphere Web
// Services API, QueryCompatibleHostForNewDvs: "In the case when container is
// a Datacenter, the recursive flag is applied to its HostFolder"). False when
// container is none of these.
func containerHosts(ctx *simulator.Context, container types.ManagedObjectReference, recursive bool) ([]types.ManagedObjectReference, bool) {
	switch o := ctx.Map.Get(container).(type) {
	case *simulator.Datacenter:
		var folder types.ManagedObjectReference
		ctx.WithLock(o, func() { folder = o.HostFolder })
		return folderHosts(ctx, folder, recursive), true
	case *simulator.Folder:
		return folderHosts(ctx, o.Self, recursive), true
	case *simulator.ClusterComputeResource, *mo.ComputeResource:
		return resourceHosts(ctx, o), true
	}
	return nil, false
}

func folderHosts(ctx *simulator.Context, ref types.ManagedObjectReference, recursive bool) []types.ManagedObjectReference {
	f, ok := ctx.Map.Get(ref).(*simulator.Folder)
	if !ok {
		return nil
	}
	var children []types.ManagedObjectReference
	ctx.WithLock(f, func() { children = slices.Clone(f.ChildEntity) })
	var out []types.ManagedObjectReference
	for _, c := range children {
		switch o := ctx.Map.Get(c).(type) {
		case *simulator.Folder:
			if recursive {
				out = append(out, folderHosts(ctx, c, true)...)
			}
		case *simulator.ClusterComputeResource, *mo.ComputeResource:
			out = append(out, resourceHosts(ctx, o)...)
		}
	}
	return out
}

func resourceHosts(ctx *simulator.Context, o mo.Reference) []types.ManagedObjectReference {
	var out []types.ManagedObjectReference
	ctx.WithLock(o, func() {
		switch cr := o.(type) {
		case *simulator.ClusterComputeResource:
			out = slices.Clone(cr.Host)
		case *mo.ComputeResource:
			out = slices.Clone(cr.Host)
		}
	})
	return out
}
