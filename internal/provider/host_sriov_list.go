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
	return &listResource{typeName: "_host_sriov", what: "the physical functions with SR-IOV on", list: listHostSRIOV,
		adopts: " A result holds the count of virtual functions requested, also when it waits for the host's next reboot: on a host " +
			"that needs the reboot, its plan changes nothing; on a host that applies SR-IOV changes at once (the change was deferred), " +
			"a warning says that the plan applies it now."}
}

// listHostSRIOV lists functions as importing them leaves them: with the
// count requested, which a host that needs a reboot applies at it (the plan
// changes nothing, as it does for a count waiting for a reboot), and a host
// that applies changes at once would apply now (a change deferred with
// applyNow off): the plan does so, and a warning says it.
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
			item := listed{
				display:  fmt.Sprintf("%s %s %s (%d virtual functions)", h.HostName, d.PCIID, strings.TrimSpace(d.DeviceName), d.SRIOV.VFsRequested),
				identity: hostDeviceIdentityModel{HostSystemID: types.StringValue(h.HostID), PCIID: types.StringValue(d.PCIID)},
				resource: m,
			}
			if waiting := !d.SRIOV.Active || d.SRIOV.VFs != d.SRIOV.VFsRequested; waiting && h.AppliesWithoutReboot {
				item.warnings = append(item.warnings, fmt.Sprintf("SR-IOV of %s on host %s waits for the host's next reboot (%d virtual "+
					"functions requested, %d active), though the host applies SR-IOV changes at once: the change was deferred. The plan of "+
					"the generated configuration applies it now (active_virtual_functions %d -> %d), as vspherehpc_host_sriov does with a "+
					"count it can apply. To keep it for the reboot, remove this function's resource and import block from the generated "+
					"configuration and adopt it after the reboot.", d.PCIID, h.HostName, d.SRIOV.VFsRequested, d.SRIOV.VFs, d.SRIOV.VFs, d.SRIOV.VFsRequested))
			}
			out = append(out, item)
		}
	}
	return out, nil
}
