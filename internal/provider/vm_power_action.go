package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ action.ActionWithConfigure  = (*vmPowerAction)(nil)
	_ action.ActionWithModifyPlan = (*vmPowerAction)(nil)
)

// vmPowerAction is vspherehpc_vm_power (Terraform 1.14+).
type vmPowerAction struct {
	client *vsphere.Client
}

type vmPowerModel struct {
	VirtualMachineID types.String `tfsdk:"virtual_machine_id"`
	Power            types.String `tfsdk:"power"`
	ShutdownTimeout  types.String `tfsdk:"shutdown_timeout"`
	PowerOffAllowed  types.Bool   `tfsdk:"power_off_allowed"`
}

// defaultShutdownTimeout bounds a guest shutdown, as the VM resources do.
var defaultShutdownTimeout = vsphere.GuestShutdownTimeout.String()

// NewVMPowerAction is the vspherehpc_vm_power action.
func NewVMPowerAction() action.Action {
	return &vmPowerAction{}
}

func (a *vmPowerAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm_power"
}

func (a *vmPowerAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Powers a VM on (a suspended VM resumes), off (a guest shutdown, then a hard power off only if " +
			"`power_off_allowed`), or restarts a running VM (off, then on), with progress messages. A VM already as asked is left " +
			"alone, and the message says so. A restart never starts a VM: one that is off or suspended is left so, and the plan " +
			"and the message say so (`on` starts it). A suspended VM's guest cannot shut down, and powering it off discards the " +
			"state its suspend kept, so `off` powers it off only with `power_off_allowed`. The VM is checked at plan: an id that " +
			"names no VM, or another kind of object, is an error. Terraform 1.14+: " +
			"`terraform apply -invoke=action.vspherehpc_vm_power.NAME`, or from `lifecycle.action_trigger`.",
		Attributes: map[string]schema.Attribute{
			"virtual_machine_id": schema.StringAttribute{
				Required: true, MarkdownDescription: "The VM's UUID (`vsphere_virtual_machine.id`) or managed object id (`vm-42`).",
				Validators: []validator.String{notEmpty("give the VM's UUID or managed object id")},
			},
			"power": schema.StringAttribute{
				Required: true, MarkdownDescription: "`on`, `off` or `restart`.",
				Validators: []validator.String{
					stringvalidator.OneOf(string(vsphere.PowerActionOn), string(vsphere.PowerActionOff), string(vsphere.PowerActionRestart)),
				},
			},
			"shutdown_timeout": schema.StringAttribute{
				Optional: true, MarkdownDescription: "How long to wait for the guest to shut down, as a duration; default `\"" + defaultShutdownTimeout + "\"`.",
				Validators: []validator.String{positiveDuration{}},
			},
			"power_off_allowed": schema.BoolAttribute{
				Optional: true, MarkdownDescription: "Power the VM off hard when its guest does not shut down in time (no VMware Tools, a " +
					"hung guest). Default `false`: the action fails instead, naming the VM.",
			},
		},
	}
}

func (a *vmPowerAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.client = clientFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan checks the VM at plan time, as the host reboot action checks
// its host: an id that names no VM, or no VM's id, is an error. What the
// action will not do to the VM in its power state now (a restart of a VM
// that is not running, an off of a suspended VM without power_off_allowed)
// is a warning: the apply may start or stop it before the action runs, and
// the invoke says what it does then.
func (a *vmPowerAction) ModifyPlan(ctx context.Context, req action.ModifyPlanRequest, resp *action.ModifyPlanResponse) {
	var m vmPowerModel
	if resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &m)...); resp.Diagnostics.HasError() ||
		m.VirtualMachineID.IsUnknown() || m.VirtualMachineID.IsNull() || !requireVCenter(a.client, &resp.Diagnostics) {
		return
	}
	vmID := m.VirtualMachineID.ValueString()
	// Unknown yet: no warning that its value may make wrong.
	allowed := m.PowerOffAllowed.IsUnknown() || m.PowerOffAllowed.ValueBool()
	f, err := a.client.PlanVMPowerAction(ctx, vmID, vsphere.PowerAction(m.Power.ValueString()), allowed)
	if d, ok := vmIDDiag(err); ok {
		resp.Diagnostics.Append(d)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot check virtual machine "+vmID, err))
		return
	}
	addPowerActionFinding(&resp.Diagnostics, f)
}

// addPowerActionFinding words, at plan, what the action will not do to the
// VM in its power state now.
func addPowerActionFinding(diags *diag.Diagnostics, f vsphere.Finding) {
	switch f := f.(type) {
	case nil:
	case *vsphere.NotRestarted:
		state, start := notRestarted(f)
		diags.AddAttributeWarning(path.Root("power"), "Virtual machine is "+state,
			fmt.Sprintf("Virtual machine %s is %s: a restart leaves it %s. %s.", f.VM, state, state, start))
	case *vsphere.NotShutDownSuspended:
		diags.AddAttributeWarning(path.Root("power_off_allowed"), "Virtual machine is suspended",
			f.Error()+`. The action refuses to power it off unless power_off_allowed = true; power = "on" resumes it.`)
	default:
		unexpectedFinding(diags, f)
	}
}

func (a *vmPowerAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m vmPowerModel
	if resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &m)...); resp.Diagnostics.HasError() ||
		!requireVCenter(a.client, &resp.Diagnostics) {
		return
	}
	wait, _ := time.ParseDuration(cmpOr(m.ShutdownTimeout.ValueString(), defaultShutdownTimeout)) // validated by positiveDuration
	vmID := m.VirtualMachineID.ValueString()
	say := func(msg string) { resp.SendProgress(action.InvokeProgressEvent{Message: msg}) }
	f, err := a.client.SetVMPower(ctx, vmID, vsphere.PowerAction(m.Power.ValueString()), wait, m.PowerOffAllowed.ValueBool(), say)
	var suspended *vsphere.NotShutDownSuspended
	switch d, ok := vmIDDiag(err); {
	case ok:
		resp.Diagnostics.Append(d)
	case errors.As(err, &suspended):
		resp.Diagnostics.AddAttributeError(path.Root("power_off_allowed"), "Virtual machine is suspended",
			err.Error()+`. Set power_off_allowed = true to power it off anyway, or power = "on" to resume it.`)
	case err != nil:
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot power virtual machine "+vmID+" "+m.Power.ValueString(), err))
	}
	if f, ok := f.(*vsphere.NotRestarted); ok {
		state, start := notRestarted(f)
		say(fmt.Sprintf("%s is %s: not restarted, left %s (%s)", f.VM, state, state, start))
	}
}

// notRestarted is the power state a restart left a VM in, and how to start
// it instead.
func notRestarted(f *vsphere.NotRestarted) (state, start string) {
	if f.State == vsphere.Suspended {
		return "suspended", `power = "on" resumes it; power = "off" with power_off_allowed = true powers it off, discarding the state its suspend kept`
	}
	return string(f.State), `power = "on" powers it on`
}

// vmIDDiag refuses, naming virtual_machine_id, an id that names no VM or is
// no VM's id (another kind of object's, a name); ok is false for any other
// error, a fault of a power task among them.
func vmIDDiag(err error) (d diag.Diagnostic, ok bool) {
	var e *vsphere.Error
	if !errors.As(err, &e) || e.Object != vsphere.ObjectVirtualMachine {
		return nil, false
	}
	at := path.Root("virtual_machine_id")
	switch e.Kind {
	case vsphere.ErrNotFound:
		return notFoundDiag(at, err), true
	case vsphere.ErrInvalidArg:
		return diag.NewAttributeErrorDiagnostic(at, "Not a virtual machine id", errorDetail(err)+"; "+idHints[vsphere.ObjectVirtualMachine]+"."), true
	}
	return nil, false
}
