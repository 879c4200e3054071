package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// A host reboot inside the apply, for vspherehpc_host_pci_passthrough and
// vspherehpc_host_sriov when reboot_allowed is set: hosts without
// capability.deviceRebindWithoutRebootSupported apply device changes only
// when they reboot. The plan says which hosts it reboots and refuses one
// whose running VMs maintenance mode could not move; the apply records what
// it applied, then reboots (vsphere.Client.RebootHost: maintenance mode,
// reboot, back, out of maintenance mode; one host per cluster at a time)
// and reads what is active.

// defaultRebootTimeout bounds a reboot: maintenance mode, the boot, the
// host back in vCenter. A server with GPUs and large memory takes 5 to 15
// minutes to boot.
const defaultRebootTimeout = "30m"

// The range a reboot's bound may take: no ESXi host reboots in less than a
// minute, and a day is far beyond the slowest; outside it the value is a
// mistake ("1ns", "10000h"), and vCenter's own bound on maintenance mode is
// whole seconds in an int32.
const (
	minRebootTimeout = time.Minute
	maxRebootTimeout = 24 * time.Hour
)

// rebootTimeoutRange accepts durations from minRebootTimeout to
// maxRebootTimeout.
type rebootTimeoutRange struct{}

var _ validator.String = rebootTimeoutRange{}

func (rebootTimeoutRange) Description(context.Context) string {
	return `value must be a duration from "1m" to "24h", such as "45m"`
}

func (v rebootTimeoutRange) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (rebootTimeoutRange) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil || d < minRebootTimeout || d > maxRebootTimeout {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid reboot timeout",
			fmt.Sprintf(`%s must be a duration from "1m" to "24h", such as "45m", not %q: a host reboot, from maintenance mode to `+
				"the host back, takes minutes (5 to 15 for a server with GPUs and large memory).", req.Path, req.ConfigValue.ValueString()))
	}
}

// rebootAttributes are the opt-in and its bound, for a resource whose
// change needs a reboot (what names the change, and which says on which
// hosts).
func rebootAttributes(what, which string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"reboot_allowed": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Whether the apply may reboot the host when " + what + " waits for a reboot (" + which + "): it puts " +
				"the host in maintenance mode (the cluster's fully automated DRS moves " +
				"its running VMs), reboots it, waits for it and takes it out of maintenance mode, so what becomes active is known in " +
				"the same apply. The plan names each host it reboots, and refuses when running VMs could not move (VMs with " +
				"passthrough or SR-IOV devices, or DRS not fully automated for the cluster or, in its VM Overrides, for the VM; " +
				"VMs with vGPUs unless vCenter's `vgpu.hotmigrate.enabled` is true, the cluster's DRS advanced option " +
				"`VgpuMMAutomationTimeoutSecs` is `-1` and another host offers their profiles with room; " +
				"vSphere Cluster Services and other ESX Agent Manager VMs, which vCenter stops itself, do not count); " +
				"the apply checks again when the host's turn comes, and fails naming the VMs before maintenance mode. " +
				"Hosts of one cluster reboot one at a time, whichever Terraform run, provider alias or vSphere client takes them " +
				"down: before maintenance mode the apply waits until no other host of the cluster is in it or entering it, as " +
				"vCenter shows, and logs (INFO) which host it waits for. A host " +
				"whose change another resource's reboot in the same apply has made active is not rebooted again, and a host " +
				"in maintenance mode before stays in it. Changes of the same plan to the host's VMs (`vspherehpc_vm_gpu_mmio`, " +
				"`vspherehpc_vm_pvrdma_nic`, `vspherehpc_vm_sriov_nic`) are applied after the reboot: give their resources " +
				"`depends_on` this one (or refer to it), as a change Terraform plans before this resource is refused; one planned " +
				"after it waits for its apply, and fails if the reboot fails. A VM left running with passthrough or SR-IOV " +
				"devices of the host by a change of the same plan is refused: maintenance mode could not move it. " +
				"With `false` (default), `reboot_required` says the host waits for a reboot.",
		},
		"reboot_timeout": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(defaultRebootTimeout),
			MarkdownDescription: "How long a reboot may take, from entering maintenance mode to the host back, as a duration " +
				"(`\"45m\"`), from `\"1m\"` to `\"24h\"`; default `\"" + defaultRebootTimeout + "\"`. It also bounds, separately, the wait for the " +
				"host's turn in its cluster (another host in maintenance mode, for as long as it stays there); the reboot's own time " +
				"starts once its turn has come. A host not back by then fails the apply, naming it; it stays in maintenance mode, and " +
				"state records what was applied. A reboot that fails once the host is in maintenance mode takes it out again, or says " +
				"it could not.",
			Validators: []validator.String{rebootTimeoutRange{}},
		},
	}
}

// deviceRebootHosts are the hosts on which a passthrough or SR-IOV change
// waits for a reboot.
const deviceRebootHosts = "hosts without `deviceRebindWithoutRebootSupported`"

// rebootWhen is which hosts a change waits for a reboot on.
type rebootWhen bool

const (
	// withoutRebind: hosts that cannot rebind devices without a reboot
	// (passthrough and SR-IOV; vsphere.HostReboot.Needed).
	withoutRebind rebootWhen = false
	// always: every host (graphics, which ESXi applies when its graphics
	// restart).
	always rebootWhen = true
)

// rebootDefaults fills the opt-in and its bound where state has none (an
// import, state from before they existed).
func rebootDefaults(allowed *types.Bool, timeout *types.String) {
	if allowed.IsNull() || allowed.IsUnknown() {
		*allowed = types.BoolValue(false)
	}
	if timeout.IsNull() || timeout.IsUnknown() {
		*timeout = types.StringValue(defaultRebootTimeout)
	}
}

// planReboot decides, at plan time, whether this apply reboots the host to
// apply what (a change that waits for a reboot): only with the opt-in, and
// only on a host that needs it. It refuses a host whose running VMs could
// not be moved (beside the vGPUs claims's plan gives VMs), and warns naming
// the host it will reboot, which it returns (nil: no reboot).
func planReboot(ctx context.Context, client *vsphere.Client, claims *claimBook, hostID, what string, when rebootWhen,
	diags *diag.Diagnostics) *vsphere.HostReboot {
	return planRebootFor(ctx, client, claims, hostID, when, diags, func(r *vsphere.HostReboot) string {
		return fmt.Sprintf("This apply would reboot host %s (%s) to apply %s, but its running virtual machines %s would keep it from "+
			"entering maintenance mode: %s. Power them off or move them first, or set reboot_allowed = false and reboot the "+
			"host yourself.", r.HostName, hostID, what, stuckNames(r), r.Why)
	}, fmt.Sprintf("applies %s only when it reboots", what))
}

// planDestroyReboot is planReboot for a destroy that puts back what it
// changed (what: "the passthrough"). Its advice works with the command
// that destroys: terraform destroy takes reboot_allowed from state, so
// setting it in the configuration alone changes nothing.
func planDestroyReboot(ctx context.Context, client *vsphere.Client, claims *claimBook, hostID, what string, when rebootWhen,
	diags *diag.Diagnostics) *vsphere.HostReboot {
	return planRebootFor(ctx, client, claims, hostID, when, diags, func(r *vsphere.HostReboot) string {
		return fmt.Sprintf("Destroying this resource would reboot host %s (%s) to put back %s it changed, but its running virtual machines %s "+
			"would keep it from entering maintenance mode: %s. Power them off or move them, then run the destroy again. To put %s "+
			"back without a reboot instead, set reboot_allowed = false and run terraform apply first (terraform destroy uses the "+
			"value in state), then destroy: the host then waits for a reboot.", r.HostName, hostID, what, stuckNames(r), r.Why, what)
	}, fmt.Sprintf("puts back %s only when it reboots", what))
}

func planRebootFor(ctx context.Context, client *vsphere.Client, claims *claimBook, hostID string, when rebootWhen, diags *diag.Diagnostics,
	stuck func(*vsphere.HostReboot) string, needs string) *vsphere.HostReboot {
	r, err := client.PlanHostReboot(ctx, hostID, claims.plannedVGPUs()...)
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot check a reboot of host "+hostID, err))
		return nil
	}
	if !r.Needed && when != always {
		return nil
	}
	if len(r.Stuck) > 0 {
		diags.AddAttributeError(path.Root("reboot_allowed"), "Host cannot enter maintenance mode", stuck(r))
		return nil
	}
	diags.AddAttributeWarning(path.Root("reboot_allowed"), "Host rebooted by this apply",
		fmt.Sprintf("Host %s (%s) %s: this apply puts it in maintenance mode, reboots it, waits for "+
			"it and takes it out of maintenance mode. Hosts of one cluster reboot one at a time.", r.HostName, hostID, needs))
	return r
}

// stuckNames lists the running VMs that would keep a host from
// maintenance mode.
func stuckNames(r *vsphere.HostReboot) string {
	names := make([]string, len(r.Stuck))
	for i, vm := range r.Stuck {
		names[i] = vm.Name
	}
	return strings.Join(names, ", ")
}

// deviceReboot is a host's reboot for a change to its devices pciIDs, as
// the reboot_allowed and reboot_timeout of the resource that made it allow.
type deviceReboot struct {
	hostID  string
	allowed types.Bool
	timeout types.String
	pciIDs  []string
}

// ifPending reboots the host, with the opt-in, when a change to any of the
// devices waits for its reboot: what destroy restores.
func (r deviceReboot) ifPending(ctx context.Context, client *vsphere.Client, diags *diag.Diagnostics) {
	if !r.allowed.ValueBool() {
		return
	}
	pending, err := client.PendingDeviceChanges(ctx, r.hostID)
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read host "+r.hostID, err))
		return
	}
	if slices.ContainsFunc(r.pciIDs, func(id string) bool { return slices.Contains(pending, id) }) {
		r.run(ctx, client, diags)
	}
}

// run reboots the host after the change that waits for it, logging the
// steps; a host another resource's reboot of the apply has made the change
// active on is not rebooted again. It reports whether the reboot went
// through.
func (r deviceReboot) run(ctx context.Context, client *vsphere.Client, diags *diag.Diagnostics) bool {
	bound, _ := time.ParseDuration(r.timeout.ValueString()) // validated by rebootTimeoutRange
	progress := func(step string) {
		tflog.Info(ctx, "Rebooting host", map[string]any{"host_system_id": r.hostID, "step": step})
	}
	if err := client.RebootHost(ctx, r.hostID, bound, r.pciIDs, progress); err != nil {
		diags.Append(rebootErrorDiag(r.hostID, "reboot_timeout", err))
		return false
	}
	return true
}

// rebootErrorDiag words a failed reboot. One that ran out of its time names
// the argument that gave it (argument), not api_timeout, which bounds each
// call to vCenter.
func rebootErrorDiag(hostID, argument string, err error) diag.Diagnostic {
	if errors.Is(err, vsphere.ErrRebootTurnTimedOut) {
		return diag.NewErrorDiagnostic("Cannot reboot host "+hostID, err.Error()+". "+argument+" bounds this wait too: take that host "+
			"out of maintenance mode once what put it there is done (in vCenter, right-click the host > Maintenance Mode > Exit "+
			"Maintenance Mode), or raise "+argument+" to wait longer, then apply again.")
	}
	if errors.Is(err, vsphere.ErrRebootTimedOut) {
		return diag.NewErrorDiagnostic("Cannot reboot host "+hostID, err.Error()+". "+argument+" bounds the reboot, from "+
			"maintenance mode to the host back: raise it if the host needs longer (a server with GPUs and large memory takes 5 to "+
			"15 minutes to boot), or check the host in vCenter.")
	}
	return vsphereErrorDiag("Cannot reboot host "+hostID, err)
}

// A reboot and the VM changes of the same plan. Terraform plans a resource
// after those it refers to (by value or depends_on) and applies it after
// them; it plans and applies unrelated resources in any order, at once, and
// the provider cannot see whether one refers to another. What the claim
// book sees, in one walk, is what was planned before. So:
//
//   - A host resource planning a reboot after a VM change on that host (a
//     vspherehpc_vm_gpu_mmio, vspherehpc_vm_pvrdma_nic or
//     vspherehpc_vm_sriov_nic): that VM's resource does not refer to the
//     host's, and the two would run in any order, at once. Refused, naming
//     both; the fix is that reference (depends_on), which applies the
//     reboot first.
//   - A VM change planned after the reboot: at apply it waits for that host
//     resource's apply to end, in this process (one per provider
//     configuration), and fails if it failed. The plan walk's private state
//     never reaches the apply: Terraform plans each resource again just
//     before applying it, in the apply walk (so in the apply walk's book),
//     with the prior state's private state, and the framework gives a
//     create none at all. So the apply finds the reboots to wait for in the
//     apply walk's book: those of the VM's host recorded there, all recorded
//     before the VM's change was (a later one is refused, above). With a
//     reference the host's apply has ended by then.
//   - Whatever the order, a VM running on the host with passthrough or
//     SR-IOV devices once changed: maintenance mode cannot move it (or, the
//     reboot first, moves it off before the change gives it the host's
//     devices). Refused.
//
// Destroys are not planned again at apply, so a destroy's reboot or VM
// change is not ordered this way; the client keeps them apart (it never
// changes a host's VMs while it reboots the host).

// plannedReboot is a host reboot an instance of the walk plans.
type plannedReboot struct {
	key        string        // the host resource's change: its type, host and devices (see rebootKey)
	owner      string        // "the vspherehpc_host_sriov of host esx-01 (host-18)"
	bound      time.Duration // its reboot_timeout: how long a VM change waits for its apply to start
	destroy    bool          // a destroy's reboot: it puts devices back, and is not planned again at apply
	started    chan struct{} // closed when its apply starts
	done       chan struct{} // closed when its apply ends
	failure    string        // why its apply failed, set before done is closed
	startOnce  sync.Once
	finishOnce sync.Once
}

// rebootKey tells a host resource's reboot from another's in the book, from
// what both its plan and its apply see (a create gets no private state):
// its type, host and devices, which claims keep apart.
func rebootKey(resourceType, hostID string, devices []string) string {
	return resourceType + " " + hostID + " " + strings.Join(devices, ",")
}

// plannedVMChange is a VM change an instance of the walk plans.
type plannedVMChange struct {
	token string // the VM resource instance's, as claims tells instances apart
	vmID  string // as the resource names it
	owner string // "the vspherehpc_vm_gpu_mmio of virtual machine hpc-0 (4223…)"
	vsphere.VMOnHost
}

// stuck: the VM runs with passthrough or SR-IOV devices once changed, so
// maintenance mode could not move it.
func (c plannedVMChange) stuck() bool { return c.Running && c.Passthrough }

// besideReboots is the VM side of the rule above, for the plan of a VM
// resource (resourceType, its VM as configured) whose change runs where on
// says: it records the change, and refuses one whose VM could not go
// through a reboot of its host planned before.
func (b *claimBook) besideReboots(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, resourceType string,
	vmID types.String, on vsphere.VMOnHost) {
	if b == nil || on.HostID == "" {
		return
	}
	change := plannedVMChange{token: b.instance(ctx, req, resp).token, vmID: strings.ToLower(vmID.ValueString()),
		owner: fmt.Sprintf("the %s of virtual machine %s", resourceType, on.VM), VMOnHost: on}
	for _, r := range b.vmChangePlanned(change) {
		if change.stuck() {
			addStuckThroughReboot(&resp.Diagnostics, r, change)
		}
	}
}

// rebootBesideVMChanges is the host side of the rule above: it records the
// reboot a host resource instance plans (resourceType, its devices, r as
// the planner read the host, timeout its reboot_timeout), or refuses it for
// the VM changes on the host planned before, and reports whether it
// recorded it.
func (b *claimBook) rebootBesideVMChanges(resourceType string, devices []string, r *vsphere.HostReboot, timeout types.String, destroy bool,
	diags *diag.Diagnostics) bool {
	if b == nil {
		return true
	}
	bound, err := time.ParseDuration(timeout.ValueString())
	if err != nil {
		bound, _ = time.ParseDuration(defaultRebootTimeout)
	}
	key := rebootKey(resourceType, r.HostID, devices)
	if destroy {
		key += " destroyed" // not the reboot of a resource created with those devices
	}
	reboot := &plannedReboot{key: key, owner: fmt.Sprintf("the %s of host %s (%s)", resourceType, r.HostName, r.HostID),
		bound: bound, destroy: destroy, started: make(chan struct{}), done: make(chan struct{})}
	before := b.rebootPlanned(r.HostID, reboot)
	for _, c := range before {
		if c.stuck() {
			addStuckThroughReboot(diags, reboot, c)
			continue
		}
		diags.AddAttributeError(path.Root("reboot_allowed"), "Host reboot planned after a change of its virtual machine",
			fmt.Sprintf("This apply reboots host %[1]s (%[2]s) for %[3]s, and this configuration also changes virtual machine %[4]s on "+
				"that host: %[5]s, planned before this resource. Terraform plans a resource after those it refers to, so %[5]s does not "+
				"refer to this %[6]s, and the two would be applied in any order, at once: the VM's change fails while the host is in "+
				"maintenance mode or down, or holds the host out of it. Make the VM's resource depend on this one (add this %[6]s to its "+
				"depends_on), so that the reboot is applied first and the VM's change after it.",
				r.HostName, r.HostID, reboot.owner, c.VM, c.owner, resourceType))
	}
	return len(before) == 0
}

// addStuckThroughReboot refuses a VM change that leaves its VM running with
// passthrough or SR-IOV devices or vGPUs on a host a reboot of the same
// plan takes down.
func addStuckThroughReboot(diags *diag.Diagnostics, r *plannedReboot, c plannedVMChange) {
	diags.AddError("Virtual machine cannot stay up through its host's reboot",
		fmt.Sprintf("This apply reboots the host of virtual machine %s, for %s, and %s leaves the VM running with passthrough or "+
			"SR-IOV devices or vGPUs of that host. Maintenance mode moves no running VM with passthrough or SR-IOV devices, and "+
			"this plan does not tell whether it would move one whose vGPUs change in the same apply, so the host could not enter it "+
			"(and with the reboot first, the VM would be moved off before its change). Power the VM off before this apply (the "+
			"vspherehpc_vm_power action, or the vSphere Client), or apply the host's resource alone first (terraform apply "+
			"-target=<its address>), then the rest.", c.VM, r.owner, c.owner))
}

// awaitReboots is the apply of a VM resource's change (vmID as the resource
// names the VM): it waits for the host reboots of this apply recorded
// before the change was to end, and reports whether the change may go on.
// A reboot that failed, or whose apply did not start within its
// reboot_timeout (Terraform did not apply it), stops it, as does the
// apply's cancellation.
func (b *claimBook) awaitReboots(ctx context.Context, vmID string, diags *diag.Diagnostics) bool {
	if b == nil {
		return true
	}
	for _, r := range b.rebootsBefore(strings.ToLower(vmID)) {
		tflog.Info(ctx, "Waiting for a host reboot of this apply", map[string]any{"virtual_machine_id": vmID, "reboot_by": r.owner})
		interrupted := func() bool {
			diags.AddError("Interrupted", fmt.Sprintf("Virtual machine %s was not changed: the apply was interrupted while its change "+
				"waited for the host reboot planned by %s.", vmID, r.owner))
			return false
		}
		notStarted := time.NewTimer(r.bound)
		select {
		case <-r.started:
			notStarted.Stop()
		case <-notStarted.C:
			diags.AddError("Host reboot not applied", fmt.Sprintf("Virtual machine %s was not changed: its change waits for the host "+
				"reboot planned by %s, whose apply has not started after %s (its reboot_timeout): Terraform did not apply that resource "+
				"(one it depends on failed, or its own plan did). Apply again once it has been applied.", vmID, r.owner, r.bound))
			return false
		case <-ctx.Done():
			notStarted.Stop()
			return interrupted()
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return interrupted()
		}
		if r.failure != "" {
			diags.AddError("Host reboot failed", fmt.Sprintf("Virtual machine %s was not changed: its change waits for the host reboot "+
				"planned by %s, and that apply failed: %s", vmID, r.owner, r.failure))
			return false
		}
	}
	return true
}

// applyingReboot is the apply of a host resource's change (resourceType,
// host and devices as rebootKey takes them): when it planned a reboot in
// this walk, the VM changes waiting for it learn that it started, and,
// from the returned func, that it ended and how.
func (b *claimBook) applyingReboot(resourceType, hostID string, devices []string) func(diag.Diagnostics) {
	r := b.plannedRebootOf(rebootKey(resourceType, hostID, devices))
	if r == nil {
		return func(diag.Diagnostics) {}
	}
	r.startOnce.Do(func() { close(r.started) })
	return func(diags diag.Diagnostics) {
		r.finishOnce.Do(func() {
			for _, d := range diags.Errors() {
				r.failure = strings.TrimSuffix(d.Summary(), ".") + ": " + d.Detail()
				break
			}
			close(r.done)
		})
	}
}
