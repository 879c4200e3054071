package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
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
// change needs a reboot (what names the change).
func rebootAttributes(what string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"reboot_allowed": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Whether the apply may reboot the host when " + what + " waits for a reboot (hosts without " +
				"`deviceRebindWithoutRebootSupported`): it puts the host in maintenance mode (the cluster's fully automated DRS moves " +
				"its running VMs), reboots it, waits for it and takes it out of maintenance mode, so what becomes active is known in " +
				"the same apply. The plan names each host it reboots, and refuses when running VMs could not move (VMs with " +
				"passthrough or SR-IOV devices, or DRS not fully automated for the cluster or, in its VM Overrides, for the VM; " +
				"vSphere Cluster Services and other ESX Agent Manager VMs, which vCenter stops itself, do not count); " +
				"the apply checks again when the host's turn comes, and fails naming the VMs before maintenance mode. " +
				"Hosts of one cluster reboot one at a time; a host " +
				"whose change another resource's reboot in the same apply has made active is not rebooted again, and a host " +
				"in maintenance mode before stays in it. With `false` (default), `reboot_required` says the host waits for a reboot.",
		},
		"reboot_timeout": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString(defaultRebootTimeout),
			MarkdownDescription: "How long a reboot may take, from entering maintenance mode to the host back, as a duration " +
				"(`\"45m\"`), from `\"1m\"` to `\"24h\"`; default `\"" + defaultRebootTimeout + "\"`. The wait for the other reboots of the host's cluster does " +
				"not count. A host not back by then fails the apply, naming it; it stays in maintenance mode, and state records " +
				"what was applied. A reboot that fails once the host is in maintenance mode takes it out again, or says it could not.",
			Validators: []validator.String{rebootTimeoutRange{}},
		},
	}
}

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
// not be moved, and warns naming the host it will reboot.
func planReboot(ctx context.Context, client *vsphere.Client, hostID, what string, diags *diag.Diagnostics) bool {
	return planRebootFor(ctx, client, hostID, diags, func(r *vsphere.HostReboot) string {
		return fmt.Sprintf("This apply would reboot host %s (%s) to apply %s, but its running virtual machines %s would keep it from "+
			"entering maintenance mode: %s. Power them off or move them first, or set reboot_allowed = false and reboot the "+
			"host yourself.", r.HostName, hostID, what, stuckNames(r), r.Why)
	}, fmt.Sprintf("applies %s only when it reboots", what))
}

// planDestroyReboot is planReboot for a destroy that puts back what it
// changed (what: "the passthrough"). Its advice works with the command
// that destroys: terraform destroy takes reboot_allowed from state, so
// setting it in the configuration alone changes nothing.
func planDestroyReboot(ctx context.Context, client *vsphere.Client, hostID, what string, diags *diag.Diagnostics) bool {
	return planRebootFor(ctx, client, hostID, diags, func(r *vsphere.HostReboot) string {
		return fmt.Sprintf("Destroying this resource would reboot host %s (%s) to put back %s it changed, but its running virtual machines %s "+
			"would keep it from entering maintenance mode: %s. Power them off or move them, then run the destroy again. To put %s "+
			"back without a reboot instead, set reboot_allowed = false and run terraform apply first (terraform destroy uses the "+
			"value in state), then destroy: the host then waits for a reboot.", r.HostName, hostID, what, stuckNames(r), r.Why, what)
	}, fmt.Sprintf("puts back %s only when it reboots", what))
}

func planRebootFor(ctx context.Context, client *vsphere.Client, hostID string, diags *diag.Diagnostics, stuck func(*vsphere.HostReboot) string,
	needs string) bool {
	r, err := client.PlanHostReboot(ctx, hostID)
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot check a reboot of host "+hostID, err))
		return false
	}
	if !r.Needed {
		return false
	}
	if len(r.Stuck) > 0 {
		diags.AddAttributeError(path.Root("reboot_allowed"), "Host cannot enter maintenance mode", stuck(r))
		return false
	}
	diags.AddAttributeWarning(path.Root("reboot_allowed"), "Host rebooted by this apply",
		fmt.Sprintf("Host %s (%s) %s: this apply puts it in maintenance mode, reboots it, waits for "+
			"it and takes it out of maintenance mode. Hosts of one cluster reboot one at a time.", r.HostName, hostID, needs))
	return true
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

// rebootIfPending reboots a host, with the opt-in, when a change to any of
// the devices waits for its reboot: what destroy restores.
func rebootIfPending(ctx context.Context, client *vsphere.Client, hostID string, allowed types.Bool, timeout types.String, pciIDs []string, diags *diag.Diagnostics) {
	if !allowed.ValueBool() {
		return
	}
	pending, err := client.PendingDeviceChanges(ctx, hostID)
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read host "+hostID, err))
		return
	}
	for _, id := range pciIDs {
		if slices.Contains(pending, id) {
			rebootHost(ctx, client, hostID, timeout, pciIDs, diags)
			return
		}
	}
}

// rebootHost reboots a host after a change to the devices pciIDs that waits
// for it, logging the steps; a host another resource's reboot of the apply
// has made the change active on is not rebooted again.
func rebootHost(ctx context.Context, client *vsphere.Client, hostID string, timeout types.String, pciIDs []string, diags *diag.Diagnostics) bool {
	bound, _ := time.ParseDuration(timeout.ValueString()) // validated by rebootTimeoutRange
	progress := func(step string) {
		tflog.Info(ctx, "Rebooting host", map[string]any{"host_system_id": hostID, "step": step})
	}
	if err := client.RebootHost(ctx, hostID, bound, pciIDs, progress); err != nil {
		diags.Append(rebootErrorDiag(hostID, "reboot_timeout", err))
		return false
	}
	return true
}

// rebootErrorDiag words a failed reboot. One that ran out of its time names
// the argument that gave it (argument), not api_timeout, which bounds each
// call to vCenter.
func rebootErrorDiag(hostID, argument string, err error) diag.Diagnostic {
	if errors.Is(err, vsphere.ErrRebootTimedOut) {
		return diag.NewErrorDiagnostic("Cannot reboot host "+hostID, err.Error()+". "+argument+" bounds the reboot, from "+
			"maintenance mode to the host back: raise it if the host needs longer (a server with GPUs and large memory takes 5 to "+
			"15 minutes to boot), or check the host in vCenter.")
	}
	return vsphereErrorDiag("Cannot reboot host "+hostID, err)
}
