package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// Claims: Terraform configures one provider instance per walk (plan, then
// apply) and plans every resource instance of that provider configuration
// through it, so the provider can see two instances of one plan take one
// thing vCenter has only one of: a GPU, a VM's GPU setup, a host's PVRDMA
// settings, a NIC as a switch uplink, a MAC address, a card's use, a switch
// or port group name. Planners report what their instance takes; the book here decides
// whether another instance took it first. Claims are re-checked against
// vCenter at apply, since plans can be stale.
//
// The rule that tells instances apart, even when their values are identical
// (a copied block, count or for_each over a list naming one object twice):
// Terraform plans each instance once per walk, except an instance being
// replaced, which it plans twice in a row: first with its prior state, then
// with none, handing the second call as prior private state what the first
// returned (Terraform, internal/terraform/node_resource_abstract_instance.go:
// "ask the provider to plan again here, giving it a null object for the
// prior", PriorPrivate: plannedPrivate; the same in every release since 0.12
// and in OpenTofu). So every plan call mints a token and returns it in
// private state; a call without prior state that brings back a token minted
// in this walk is that replacement's second half, the same instance; every
// other call is an instance of its own (a token kept in state from an
// earlier walk is not one of this walk's). A claim by another
// instance is a rival, whatever its values. A tainted instance is planned
// once, without prior state or private state: one instance, as it should be.
//
// What the book cannot see: instances planned by another provider
// configuration (an alias, even one pointing at the same vCenter) or by
// another Terraform run each have a book of their own. What vCenter refuses
// by itself (a switch name taken) is then refused at apply, and what it does
// not (two resources turning one device on) is not seen at all.
//
// Order: an instance sees the claims of the instances planned before it, and
// the planners get what it needs of them as explicit inputs (deviceInputs).
// A rival is refused whichever of the two Terraform plans first (the second
// one's plan fails). Terraform plans an instance after every instance it
// refers to (by value or depends_on), so a VM's resource that refers to the
// host resource turning its GPU on always sees that claim. One that does not
// refer to it has no order at plan nor at apply (its apply could run before
// the host's), so its wording asks for the reference. A host reboot and the
// VM changes of the same plan follow the rule host_reboot.go sets out.

// claimKind is what kind of thing is claimed.
type claimKind string

const (
	claimVMDevice     claimKind = "device passed through to a VM" // key: host id, PCI id
	claimGPUSetup     claimKind = "GPU setup of a VM"             // key: VM UUID
	claimHostSettings claimKind = "PVRDMA settings of a host"     // key: host id
	claimHostGraphics claimKind = "graphics settings of a host"   // key: host id
	claimUplink       claimKind = "physical NIC"                  // key: host id, vmnic
	claimMAC          claimKind = "MAC address"                   // key: the MAC, lower case
	claimHostDevice   claimKind = "use of a host's PCI device"    // key: host id, PCI id
	claimSwitchName   claimKind = "distributed switch name"       // key: datacenter id, name
	claimPortGroup    claimKind = "port group name"               // key: datacenter id, name
)

// deviceUse is how a host resource uses a PCI device: a card is passed
// through whole, split into SR-IOV virtual functions, or (a GPU) driven by
// the host's graphics with a type of its own; one at a time.
type deviceUse string

const (
	usePassthrough deviceUse = "passthrough"
	useSRIOV       deviceUse = "SR-IOV"
	useGraphics    deviceUse = "the host's graphics"
)

// claim is one thing a planned instance takes for itself.
type claim struct {
	kind  claimKind
	key   string
	what  string    // the thing in words: "GPU 0000:3b:00.0 on host esx-01"
	owner string    // the claimant in words: "vspherehpc_vm_gpu_mmio of VM hpc-0"
	use   deviceUse // claimHostDevice only
}

// claimConflict is a claim another instance of the same plan made first.
type claimConflict struct {
	claim, rival claim
}

type heldClaim struct {
	claim
	instance string
}

// claimBook is one walk's claims; Configure makes a new one.
type claimBook struct {
	mu     sync.Mutex
	minted map[string]string // tokens handed out in this walk: the id of the instance's prior object
	claims map[claimKind]map[string]heldClaim
	// switches whose state this walk has read, by lower-case UUID: a new
	// switch may take such a switch's names (it is a tainted switch's
	// replacement: the name claim leaves no other instance that could).
	readSwitches map[string]bool
	// leaving is what destroys planned so far take from VMs: Terraform
	// plans (and applies) a destroy before the destroys of what it depends
	// on, so a switch's or host's destroy sees its VMs' adapters go.
	leaving vsphere.Leaving
	// vfTakers are what takes a physical function's ("host-id pci-id")
	// virtual functions, in words: the instances adding an SR-IOV adapter on
	// it, and the VFs of it instances pass through.
	vfTakers map[string]map[string]string
	// reboots are the host reboots host resources of this walk plan, and
	// vmChanges the changes VM resources plan, both by the host's id (see
	// host_reboot.go).
	reboots   map[string][]*plannedReboot
	vmChanges map[string][]plannedVMChange
	// plannedVFs are the virtual functions host resources of this walk
	// give physical functions ("host-id pci-id").
	plannedVFs map[string]int
	// plannedLabels are the hardware labels host resources of this walk
	// give devices ("host-id pci-id").
	plannedLabels map[string]string
	// switchHosts are, by port group id, the member hosts (managed object
	// ids) switch resources of this walk change their switch's to.
	switchHosts map[string][]string
	// vgpus are, by host id and then VM id, the running VMs VM resources of
	// this walk give vGPUs.
	vgpus map[string]map[string]vsphere.PlannedVGPUs
	// sharedDirect are the hosts, by id, whose GPUs a host graphics
	// resource of this walk sets to Shared Direct by the end of its apply.
	sharedDirect map[string]bool
	// leavingSharedDirect are, by host id, the GPUs (PCI ids) a host
	// graphics resource of this walk takes out of Shared Direct, driven so
	// once its apply's reboot ends.
	leavingSharedDirect map[string][]string
}

func newClaimBook() *claimBook {
	return &claimBook{minted: map[string]string{}, claims: map[claimKind]map[string]heldClaim{}, readSwitches: map[string]bool{}}
}

// privatePlanInstance is the private-state key of an instance's token.
const privatePlanInstance = "plan_instance"

// planInstance is a resource instance as one plan call sees it.
type planInstance struct {
	token string
	// priorID is the id of the object the instance held before this plan,
	// also in the second call of a replacement, which has no prior state;
	// "" for a new instance.
	priorID string
}

// instance tells which resource instance a plan call is for (see the rule
// above). A call may ask more than once: the token it minted is in its
// response's private state.
func (b *claimBook) instance(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) planInstance {
	var brought string
	if ok, _ := getPrivateJSON(ctx, resp.Private, privatePlanInstance, &brought); ok {
		// Either this call minted it, or (without prior state) the first
		// call of this replacement did: a token from an earlier walk,
		// kept in state, is not known here.
		b.mu.Lock()
		priorID, known := b.minted[brought]
		b.mu.Unlock()
		if known {
			return planInstance{token: brought, priorID: priorID}
		}
	}
	var priorID types.String
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("id"), &priorID)...)
	}
	token := b.mint(priorID.ValueString())
	resp.Diagnostics.Append(setPrivateJSON(ctx, resp.Private, privatePlanInstance, token)...)
	return planInstance{token: token, priorID: priorID.ValueString()}
}

func (b *claimBook) mint(priorID string) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go 1.24+)
	token := hex.EncodeToString(raw[:])
	b.mu.Lock()
	defer b.mu.Unlock()
	b.minted[token] = priorID
	return token
}

// claim records c for instance and returns the rival claim of another
// instance, if one took the same thing first.
func (b *claimBook) claim(instance planInstance, c claim) *claimConflict {
	b.mu.Lock()
	defer b.mu.Unlock()
	held := b.claims[c.kind]
	if held == nil {
		held = map[string]heldClaim{}
		b.claims[c.kind] = held
	}
	if rival, ok := held[c.key]; ok && rival.instance != instance.token {
		return &claimConflict{claim: c, rival: rival.claim}
	}
	held[c.key] = heldClaim{claim: c, instance: instance.token}
	return nil
}

// turnedOn lists the host devices ("host-id pci-id") an instance planned so
// far turns to use.
func (b *claimBook) turnedOn(use deviceUse) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]bool{}
	for key, c := range b.claims[claimHostDevice] {
		if c.use == use {
			out[key] = true
		}
	}
	return out
}

// takeVF records that an instance adds an SR-IOV adapter on a physical
// function, and returns every instance's adapter on it so far, sorted: each
// takes a virtual function of its own at power on.
func (b *claimBook) takeVF(instance planInstance, key, adapter string) []string {
	return b.takeVFAs(instance.token, key, adapter)
}

// passVF records that an instance passes virtual function vf of physical
// function key through (with the VF in words: it leaves the function's
// adapters one fewer), and returns everything that takes the function's
// VFs, as takeVF.
func (b *claimBook) passVF(instance planInstance, key, vf, words string) []string {
	return b.takeVFAs(instance.token+" "+vf, key, words)
}

func (b *claimBook) takeVFAs(taker, key, words string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.vfTakers == nil {
		b.vfTakers = map[string]map[string]string{}
	}
	if b.vfTakers[key] == nil {
		b.vfTakers[key] = map[string]string{}
	}
	b.vfTakers[key][taker] = words
	out := make([]string, 0, len(b.vfTakers[key]))
	for _, a := range b.vfTakers[key] {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// leave records a use of a switch or host a planned destroy removes.
func (b *claimBook) leave(u vsphere.VMUse) {
	if b == nil || u.VM == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leaving = append(b.leaving, u)
}

// leavingUses is what the destroys planned so far remove from VMs.
func (b *claimBook) leavingUses() vsphere.Leaving {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.leaving)
}

func (b *claimBook) noteSwitchRead(uuid string) {
	if b == nil || uuid == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.readSwitches[strings.ToLower(uuid)] = true
}

// switchesRead lists the switches read in this walk, sorted.
func (b *claimBook) switchesRead() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.readSwitches))
	for uuid := range b.readSwitches {
		out = append(out, uuid)
	}
	sort.Strings(out)
	return out
}

// macClaim claims a static MAC address for an adapter; vCenter compares MACs
// without case.
func macClaim(mac, adapter string) claim {
	return claim{kind: claimMAC, key: strings.ToLower(mac), what: "MAC address " + mac, owner: adapter}
}

// claimFixes say how to settle two instances claiming one thing.
var claimFixes = map[claimKind]string{
	claimVMDevice:     "A GPU or other PCI device is passed through to one VM only, and the second VM does not boot: remove it from one of them.",
	claimGPUSetup:     "One vspherehpc_vm_gpu_mmio manages all of a VM's GPU passthrough: keep one per VM.",
	claimHostSettings: "One vspherehpc_host_pvrdma_settings manages a host's PVRDMA settings: keep one per host.",
	claimHostGraphics: "One vspherehpc_host_graphics manages a host's graphics settings: keep one per host.",
	claimUplink:       "PVRDMA needs its NIC as the only uplink of one switch: give each switch its own NIC.",
	claimMAC:          "Two adapters with one MAC address break each other's traffic: give each its own, or let vSphere generate them.",
	claimHostDevice:   "Each would put back a different earlier state on destroy: manage each device in one resource.",
	claimSwitchName:   "vCenter keeps switch names unique in a datacenter, so the second create would fail: give each switch its own name.",
	claimPortGroup: "vCenter keeps port group names unique in a datacenter's network folder, so the second create would fail: " +
		"give each switch's port group its own name.",
}

// addClaimConflict words a claim another instance of the plan made first,
// and reports whether there was one.
func addClaimConflict(diags *diag.Diagnostics, at path.Path, c *claimConflict) bool {
	if c == nil {
		return false
	}
	if c.claim.kind == claimHostDevice && c.claim.use != c.rival.use {
		diags.AddAttributeError(at, "One card, two uses",
			fmt.Sprintf("%s is claimed for %s by %s and for %s by %s. A card has one use at a time: passed through whole to "+
				"one VM or split into SR-IOV virtual functions, or, a GPU, shared by the host's graphics (NVIDIA vGPU): keep one "+
				"of the two resources.", c.claim.what, c.rival.use, c.rival.owner, c.claim.use, c.claim.owner))
		return true
	}
	diags.AddAttributeError(at, "Claimed twice in this configuration",
		fmt.Sprintf("Two resource instances of this configuration claim %s: %s, and %s. Copied blocks, or count or for_each over "+
			"a list that names one object twice, make such pairs. %s", c.claim.what, c.rival.owner, c.claim.owner, claimFixes[c.claim.kind]))
	return true
}

// deviceInputs hands the planners what the instances planned so far turn on.
func (b *claimBook) deviceInputs() vsphere.PlannedHostDevices {
	b.mu.Lock()
	rebooting, vfs := map[string]bool{}, maps.Clone(b.plannedVFs)
	for hostID, reboots := range b.reboots {
		// A destroy's reboot puts devices back; it turns none on.
		rebooting[hostID] = slices.ContainsFunc(reboots, func(r *plannedReboot) bool { return !r.destroy })
	}
	b.mu.Unlock()
	b.mu.Lock()
	graphics, labels, leaving := maps.Clone(b.sharedDirect), maps.Clone(b.plannedLabels), maps.Clone(b.leavingSharedDirect)
	b.mu.Unlock()
	return vsphere.PlannedHostDevices{Passthrough: b.turnedOn(usePassthrough), SRIOV: b.turnedOn(useSRIOV), Rebooting: rebooting, VFs: vfs,
		Graphics: graphics, LeavingSharedDirect: leaving, Labels: labels}
}

// vgpusOfPlan records, when runs, that a VM resource of this walk gives a
// running VM vGPUs (planning it again replaces or, when it no longer runs,
// removes them), and returns the other
// running VMs of its host given vGPUs before, in one step under the book's
// lock: of two VMs planned at once, the later counts the earlier's.
func (b *claimBook) vgpusOfPlan(vm vsphere.PlannedVGPUs, runs bool) []vsphere.PlannedVGPUs {
	b.mu.Lock()
	defer b.mu.Unlock()
	var others []vsphere.PlannedVGPUs
	for moid, o := range b.vgpus[vm.HostID] {
		if moid != vm.MOID {
			others = append(others, o)
		}
	}
	if runs {
		if b.vgpus == nil {
			b.vgpus = map[string]map[string]vsphere.PlannedVGPUs{}
		}
		if b.vgpus[vm.HostID] == nil {
			b.vgpus[vm.HostID] = map[string]vsphere.PlannedVGPUs{}
		}
		b.vgpus[vm.HostID][vm.MOID] = vm
	} else {
		delete(b.vgpus[vm.HostID], vm.MOID)
	}
	return others
}

// plannedVGPUs are the running VMs VM resources of this walk give vGPUs,
// so far, on every host.
func (b *claimBook) plannedVGPUs() []vsphere.PlannedVGPUs {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []vsphere.PlannedVGPUs
	for _, vms := range b.vgpus {
		out = slices.AppendSeq(out, maps.Values(vms))
	}
	return out
}

// planSharedDirect records that a host graphics resource of this walk
// drives GPUs of a host as Shared Direct once its apply ends.
func (b *claimBook) planSharedDirect(hostID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sharedDirect == nil {
		b.sharedDirect = map[string]bool{}
	}
	b.sharedDirect[hostID] = true
}

// planLeavingSharedDirect records the GPUs (PCI ids) of a host that a host
// graphics resource of this walk takes out of Shared Direct, driven so once
// its apply's reboot ends.
func (b *claimBook) planLeavingSharedDirect(hostID string, pciIDs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.leavingSharedDirect == nil {
		b.leavingSharedDirect = map[string][]string{}
	}
	b.leavingSharedDirect[hostID] = pciIDs
}

// planVFs records the virtual functions a host resource of this walk gives
// a physical function ("host-id pci-id").
func (b *claimBook) planVFs(key string, vfs int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.plannedVFs == nil {
		b.plannedVFs = map[string]int{}
	}
	b.plannedVFs[key] = vfs
}

// planLabels records the hardware label a host resource of this walk gives
// devices ("host-id pci-id").
func (b *claimBook) planLabels(keys []string, label string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.plannedLabels == nil {
		b.plannedLabels = map[string]string{}
	}
	for _, key := range keys {
		b.plannedLabels[key] = label
	}
}

// planSwitchHosts records the member hosts a switch resource of this walk
// changes the switch of port group portGroupID to.
func (b *claimBook) planSwitchHosts(portGroupID string, hostIDs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.switchHosts == nil {
		b.switchHosts = map[string][]string{}
	}
	b.switchHosts[portGroupID] = hostIDs
}

// plannedSwitchHosts are the member hosts a switch resource of this walk
// changes the switch of port group portGroupID to; nil when none does.
func (b *claimBook) plannedSwitchHosts(portGroupID string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.switchHosts[portGroupID]
}

// rebootPlanned records that a host resource instance of this walk reboots
// its host (reboot_allowed), unless VM changes on the host planned before it
// stand in its way (all of them for a change, those whose VM runs with
// passthrough devices for a destroy, see host_reboot.go), which it returns
// instead.
func (b *claimBook) rebootPlanned(hostID string, r *plannedReboot) []plannedVMChange {
	b.mu.Lock()
	defer b.mu.Unlock()
	if slices.ContainsFunc(b.reboots[hostID], func(o *plannedReboot) bool { return o.key == r.key }) {
		// Planned again, as Terraform plans a replacement twice in a row:
		// the VM changes planned since wait for the reboot already
		// recorded, and stood beside it.
		return nil
	}
	var before []plannedVMChange
	for _, c := range b.vmChanges[hostID] {
		if !r.destroy || c.stuck() {
			before = append(before, c)
		}
	}
	if len(before) > 0 {
		return before
	}
	if b.reboots == nil {
		b.reboots = map[string][]*plannedReboot{}
	}
	b.reboots[hostID] = append(b.reboots[hostID], r)
	return nil
}

// vmChangePlanned records a VM change an instance of this walk plans and
// returns the reboots of the VM's host planned before it.
func (b *claimBook) vmChangePlanned(c plannedVMChange) []*plannedReboot {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.vmChanges == nil {
		b.vmChanges = map[string][]plannedVMChange{}
	}
	b.vmChanges[c.HostID] = append(slices.DeleteFunc(b.vmChanges[c.HostID], func(o plannedVMChange) bool { return o.token == c.token }), c)
	return slices.Clone(b.reboots[c.HostID])
}

// rebootsBefore are the reboots of this walk, not destroys', of the host of
// a VM (as the resource names it) whose change an instance planned: all
// planned before that change (rebootPlanned refuses the later ones).
func (b *claimBook) rebootsBefore(vmID string) []*plannedReboot {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*plannedReboot
	for hostID, changes := range b.vmChanges {
		if slices.ContainsFunc(changes, func(c plannedVMChange) bool { return c.vmID == vmID }) {
			for _, r := range b.reboots[hostID] {
				if !r.destroy {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// plannedRebootOf is the reboot a host resource of this walk planned, by
// its key; nil when none did.
func (b *claimBook) plannedRebootOf(key string) *plannedReboot {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, reboots := range b.reboots {
		for _, r := range reboots {
			if r.key == key {
				return r
			}
		}
	}
	return nil
}

// resourceData is what Configure hands resources: the vCenter client and
// the walk's claim book.
type resourceData struct {
	client *vsphere.Client
	claims *claimBook
}

// resourceDataFrom is the shared Configure step of resources.
func resourceDataFrom(providerData any, diags *diag.Diagnostics) (*vsphere.Client, *claimBook) {
	if providerData == nil {
		return nil, nil // the provider is not configured yet (validation, early plan)
	}
	d, ok := providerData.(*resourceData)
	if !ok {
		diags.AddError("Unexpected provider data",
			fmt.Sprintf("Expected *resourceData, got %T. Please report this issue to the provider developers.", providerData))
		return nil, nil
	}
	return d.client, d.claims
}
