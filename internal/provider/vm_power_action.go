package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var _ action.ActionWithConfigure = (*vmPowerAction)(nil)

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
		MarkdownDescription: "Powers a VM on, off (a guest shutdown, then a hard power off only if `power_off_allowed`), or restarts " +
			"it (off, then on), with progress messages. A VM already as asked is left alone, and the message says so. Terraform " +
			"1.14+: `terraform apply -invoke=action.vspherehpc_vm_power.NAME`, or from `lifecycle.action_trigger`.",
		Attributes: map[string]schema.Attribute{
			"virtual_machine_id": schema.StringAttribute{
				Required: true, MarkdownDescription: "The VM's UUID (`vsphere_virtual_machine.id`) or managed object id (`vm-42`).",
				Validators: []validator.String{notEmpty("give the VM's UUID or managed object id")},
			},
			"power": schema.StringAttribute{
				Required: true, MarkdownDescription: "`on`, `off` or `restart`.",
				Validators: []validator.String{stringvalidator.OneOf(string(vsphere.PowerActionOn), string(vsphere.PowerActionOff), string(vsphere.PowerActionRestart))},
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

func (a *vmPowerAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m vmPowerModel
	if resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &m)...); resp.Diagnostics.HasError() || !requireVCenter(a.client, &resp.Diagnostics) {
		return
	}
	wait, _ := time.ParseDuration(cmpOr(m.ShutdownTimeout.ValueString(), defaultShutdownTimeout)) // validated by positiveDuration
	vmID := m.VirtualMachineID.ValueString()
	err := a.client.SetVMPower(ctx, vmID, vsphere.PowerAction(m.Power.ValueString()), wait, m.PowerOffAllowed.ValueBool(),
		func(step string) { resp.SendProgress(action.InvokeProgressEvent{Message: step}) })
	if err != nil {
		resp.Diagnostics.Append(vsphereErrorDiag("Cannot power virtual machine "+vmID+" "+m.Power.ValueString(), err))
	}
}
