package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ action.ActionWithConfigure  = (*hostRebootAction)(nil)
	_ action.ActionWithModifyPlan = (*hostRebootAction)(nil)
)

// hostRebootAction is vspherehpc_host_reboot (Terraform 1.14+): the reboot a
// passthrough or SR-IOV change waits for, on demand or from an
// action_trigger.
type hostRebootAction struct {
	client *vsphere.Client
}

type hostRebootModel struct {
	HostSystemID types.String `tfsdk:"host_system_id"`
	Force        types.Bool   `tfsdk:"force"`
	Timeout      types.String `tfsdk:"timeout"`
}

// NewHostRebootAction is the vspherehpc_host_reboot action.
func NewHostRebootAction() action.Action {
	return &hostRebootAction{}
}

func (a *hostRebootAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_reboot"
}

func (a *hostRebootAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reboots an ESXi host the way an administrator does for a passthrough, SR-IOV or graphics change that waits for " +
			"it: maintenance mode (the cluster's fully automated DRS moves the running VMs), reboot, wait for the host, leave " +
			"maintenance mode (a host in it before stays in it), with progress messages. Hosts of one cluster reboot one at a " +
			"time, whichever Terraform run or vSphere client takes them down: it first waits, saying for which host, until no other " +
			"host of the cluster is in maintenance mode or entering it, as vCenter shows, for at most `timeout`, which then starts " +
			"again for the reboot itself. With nothing pending it does " +
			"nothing and says so, unless `force`. Running VMs that could not move (passthrough or SR-IOV devices, DRS not fully " +
			"automated, vGPUs that DRS would not move or no other host has room for) are refused, named. Terraform 1.14+: " +
			"`terraform apply -invoke=action.vspherehpc_host_reboot.NAME`, or from " +
			"`lifecycle.action_trigger`.",
		Attributes: map[string]schema.Attribute{
			"host_system_id": schema.StringAttribute{
				Required: true, MarkdownDescription: "Managed object id of the host, e.g. `data.vspherehpc_host.esx.id`.",
				Validators: []validator.String{notEmpty("give the host's managed object id, such as host-12")},
			},
			"force": schema.BoolAttribute{
				Optional: true, MarkdownDescription: "Reboot even when no passthrough or SR-IOV change waits for it. Default `false`.",
			},
			"timeout": schema.StringAttribute{
				Optional: true, MarkdownDescription: "How long the reboot may take, from maintenance mode to the host back, as a duration; " +
					"from `\"1m\"` to `\"24h\"`; default `\"" + defaultRebootTimeout + "\"`.",
				Validators: []validator.String{rebootTimeoutRange{}},
			},
		},
	}
}

func (a *hostRebootAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan checks the host at plan time, as a resource's reboot is
// checked: a host that does not exist is an error. Running VMs that would
// keep it from maintenance mode are a warning, not an error: the apply may
// power them off or move them before the action runs (an action_trigger
// after their change), and the invoke refuses them if not.
func (a *hostRebootAction) ModifyPlan(ctx context.Context, req action.ModifyPlanRequest, resp *action.ModifyPlanResponse) {
	var hostID types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("host_system_id"), &hostID)...)
	if resp.Diagnostics.HasError() || hostID.IsUnknown() || hostID.IsNull() || !requireVCenter(a.client, &resp.Diagnostics) {
		return
	}
	r, err := a.client.PlanHostReboot(ctx, hostID.ValueString())
	if errors.Is(err, vsphere.ErrNotFound) {
		resp.Diagnostics.Append(notFoundDiag(path.Root("host_system_id"), err))
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check a reboot of host "+hostID.ValueString(), err))
		return
	}
	if len(r.Stuck) > 0 {
		resp.Diagnostics.AddAttributeWarning(path.Root("host_system_id"), "Host cannot enter maintenance mode now",
			fmt.Sprintf("Running virtual machines %s would keep host %s (%s) from entering maintenance mode: %s. The reboot is "+
				"refused unless they are powered off or moved by the time it runs.", stuckNames(r), r.HostName,
				hostID.ValueString(), r.Why))
	}
}

func (a *hostRebootAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m hostRebootModel
	if resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &m)...); resp.Diagnostics.HasError() ||
		!requireVCenter(a.client, &resp.Diagnostics) {
		return
	}
	hostID := m.HostSystemID.ValueString()
	say := func(msg string) { resp.SendProgress(action.InvokeProgressEvent{Message: msg}) }
	pending, err := a.client.PendingDeviceChanges(ctx, hostID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot reboot host "+hostID, err))
		return
	}
	if len(pending) == 0 && !m.Force.ValueBool() {
		say(fmt.Sprintf("Host %s has no passthrough, SR-IOV or graphics change waiting for a reboot: not rebooted (force = true "+
			"reboots it anyway).", hostID))
		return
	}
	if len(pending) > 0 {
		say(fmt.Sprintf("Host %s: %s wait for a reboot.", hostID, strings.Join(pending, ", ")))
	}
	r, err := a.client.PlanHostReboot(ctx, hostID)
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot reboot host "+hostID, err))
		return
	}
	if len(r.Stuck) > 0 {
		resp.Diagnostics.AddError("Host cannot enter maintenance mode", fmt.Sprintf("Host %s (%s) runs %s, which maintenance mode "+
			"would wait for: %s. Power them off or move them first.", r.HostName, hostID, stuckNames(r), r.Why))
		return
	}
	timeout := cmpOr(m.Timeout.ValueString(), defaultRebootTimeout)
	bound, _ := time.ParseDuration(timeout) // validated by rebootTimeoutRange
	err = a.client.RebootHost(ctx, hostID, bound, nil, func(step string) { say(fmt.Sprintf("Host %s: %s.", r.HostName, step)) })
	if err != nil {
		resp.Diagnostics.Append(rebootErrorDiag(hostID, "timeout", err))
		return
	}
	say(fmt.Sprintf("Host %s is back and out of maintenance mode.", r.HostName))
}
