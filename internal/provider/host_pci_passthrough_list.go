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

// NewHostPCIPassthroughListResource lists hosts with passthrough on for
// vspherehpc_host_pci_passthrough.
func NewHostPCIPassthroughListResource() list.ListResource {
	return &listResource{typeName: "_host_pci_passthrough", what: "the hosts with PCI passthrough on for any device, each with those devices",
		list: listHostPassthrough,
		adopts: " Each host is one result with every device whose passthrough is on, as importing the host by its id adopts them, " +
			"with `hardware_label` when they all carry the same one."}
}

// listHostPassthrough lists a host as importing it by its id adopts it:
// every device with passthrough on.
func listHostPassthrough(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, _ string) ([]listed, error) {
	hosts, err := c.ListHostPassthrough(ctx, scope)
	if err != nil {
		return nil, err
	}
	var out []listed
	for _, h := range hosts {
		if h.Unreadable != "" {
			out = append(out, leftOutOf("Host "+h.HostName, "The PCI passthrough of host "+h.HostName+" is not listed: "+h.Unreadable))
			continue
		}
		var ids, names []string
		for _, d := range h.Devices {
			if d.Enabled {
				ids = append(ids, d.PCIID)
				names = append(names, fmt.Sprintf("%s %s", d.PCIID, strings.TrimSpace(d.DeviceName)))
			}
		}
		if len(ids) == 0 {
			continue
		}
		var diags diag.Diagnostics
		pciIDs, ds := types.SetValueFrom(ctx, types.StringType, ids)
		diags.Append(ds...)
		m := hostPCIPassthroughModel{HostSystemID: types.StringValue(h.HostID), PCIIDs: pciIDs,
			Match: types.SetNull(passthroughMatchType), HardwareLabel: adoptedLabel(h.HostPassthrough, ids)}
		fillPassthrough(ctx, &m, h.HostPassthrough, ids, nil, &diags)
		identity := passthroughIdentityModel{HostSystemID: types.StringValue(h.HostID), PCIIDs: sortedPCIIDs(ctx, ids, &diags)}
		if diags.HasError() {
			return nil, fmt.Errorf("host %s: %v", h.HostName, diags)
		}
		out = append(out, listed{
			display:  h.HostName + ": " + strings.Join(names, ", "),
			identity: identity,
			resource: m,
		})
	}
	return out, nil
}
