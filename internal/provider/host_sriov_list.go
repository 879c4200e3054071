package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// NewHostSRIOVListResource lists physical functions with SR-IOV on for
// vspherehpc_host_sriov.
func NewHostSRIOVListResource() list.ListResource {
	return &listResource{typeName: "_host_sriov", what: "the physical functions with SR-IOV on", list: listHostSRIOV}
}

func listHostSRIOV(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, _ string) ([]listed, error) {
	hosts, err := c.ListHostPassthrough(ctx, scope)
	if err != nil {
		return nil, err
	}
	var out []listed
	for _, h := range hosts {
		if h.Unreadable != "" {
			out = append(out, leftOutOf("Host "+h.HostName, "The SR-IOV physical functions of host "+h.HostName+" are not listed: "+h.Unreadable))
			continue
		}
		for _, d := range h.Devices {
			if d.SRIOV == nil || !d.SRIOV.Enabled {
				continue
			}
			var diags diag.Diagnostics
			m := hostSRIOVModel{HostSystemID: types.StringValue(h.HostID), PCIID: types.StringValue(d.PCIID)}
			sriovToModel(ctx, h.HostPassthrough, &m, &diags)
			if diags.HasError() {
				return nil, fmt.Errorf("host %s: %v", h.HostName, diags)
			}
			out = append(out, listed{
				display:  fmt.Sprintf("%s %s %s (%d virtual functions)", h.HostName, d.PCIID, strings.TrimSpace(d.DeviceName), d.SRIOV.VFsRequested),
				identity: hostDeviceIdentityModel{HostSystemID: types.StringValue(h.HostID), PCIID: types.StringValue(d.PCIID)},
				resource: m,
			})
		}
	}
	return out, nil
}
