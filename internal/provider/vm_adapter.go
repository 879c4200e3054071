package provider

import (
	"context"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// adapterKind is what the Read and Update of the two network adapter
// resources (vspherehpc_vm_pvrdma_nic, vspherehpc_vm_sriov_nic) do alike,
// with what differs between them: the kind's name, how one adapter of a VM
// is read, and how an adapter read fills the model (M, the resource's
// model; N, the service layer's adapter).
type adapterKind[M adapterModel, N any] struct {
	name    string // "PVRDMA" or "SR-IOV"
	read    func(ctx context.Context, vmID string, key int32) (*N, error)
	vmOf    func(*N) vsphere.VMRef
	toModel func(*N, M)
	// unknownToNull sets the computed values a failed read back leaves
	// unknown to null: state holds no unknown value.
	unknownToNull func(M)
	// ids are the model's id and its VM's id, which a read follows when the
	// VM was registered again.
	ids func(M) (id *types.String, vm *types.String)
}

// readState is the resource's Read: the adapter by the VM's id, following a
// re-registered VM, or removed from state once it or its VM is gone.
func (k adapterKind[M, N]) readState(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse, m M) {
	vmDeviceIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics)
	defer vmDeviceIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	resp.Diagnostics.Append(getModel(ctx, req.State.Schema, req.State.Raw, m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, vm := k.ids(m)
	nic := readAdapter(ctx, req, resp, k.name, *id, vm, func(vmID string) (*N, error) {
		return k.read(ctx, vmID, int32(m.key()))
	}, k.vmOf)
	if nic == nil {
		return
	}
	k.toModel(nic, m)
	resp.Diagnostics.Append(setModelState(ctx, &resp.State, m)...)
}

// readInto reads the adapter back into m and sets state; when it cannot be
// read, state records the adapter as planned, its unknown values null.
func (k adapterKind[M, N]) readInto(ctx context.Context, m M, vmID string, p privateState, state stateSetter, diags *diag.Diagnostics) {
	nic, err := k.read(ctx, vmID, int32(m.key()))
	if err != nil {
		diags.Append(vsphereErrorDiag("Cannot read back the "+k.name+" adapter of virtual machine "+vmID, err))
		id, _ := k.ids(m)
		*id = types.StringValue(vmID + ":" + strconv.FormatInt(m.key(), 10))
		k.unknownToNull(m)
		diags.Append(state.Set(ctx, m)...)
		return
	}
	diags.Append(setPrivateJSON(ctx, p, privateVM, k.vmOf(nic).MOID)...)
	k.toModel(nic, m)
	diags.Append(state.Set(ctx, m)...)
}

// failedUpdate records, after a change vCenter refused part way, what the
// adapter is now if it can be read; else state stays as it was.
func (k adapterKind[M, N]) failedUpdate(ctx context.Context, m M, id types.String, vmID string, err error, resp *resource.UpdateResponse) {
	resp.Diagnostics.Append(vsphereErrorDiag("Cannot change "+k.name+" adapter "+id.ValueString(), err))
	if nic, rerr := k.read(ctx, vmID, int32(m.key())); rerr == nil {
		k.toModel(nic, m)
		resp.Diagnostics.Append(setModelState(ctx, &resp.State, m)...)
	}
}
