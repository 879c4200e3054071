package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// NewHostPVRDMASettingsListResource lists hosts with PVRDMA settings for
// vspherehpc_host_pvrdma_settings.
func NewHostPVRDMASettingsListResource() list.ListResource {
	return &listResource{typeName: "_host_pvrdma_settings", list: listHostPVRDMASettings,
		what: "the hosts with PVRDMA set up (`" + vsphere.PVRDMAVmknicOption + "` set, or the `" + vsphere.PVRDMARuleset + "` firewall ruleset on)"}
}

func listHostPVRDMASettings(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, _ string) ([]listed, error) {
	hosts, err := c.ListHostPVRDMA(ctx, scope)
	if err != nil {
		return nil, err
	}
	out := make([]listed, 0, len(hosts))
	for _, h := range hosts {
		if h.Unreadable != "" {
			out = append(out, leftOutOf("Host "+h.HostName, "The PVRDMA settings of host "+h.HostName+" are not listed: "+h.Unreadable))
			continue
		}
		m := hostPVRDMASettingsModel{}
		if diags := settingsToModel(ctx, h.HostID, h.Settings, &m); diags.HasError() {
			return nil, fmt.Errorf("host %s: %v", h.HostName, diags)
		}
		firewall := "off"
		if h.Settings.FirewallEnabled {
			firewall = "on"
		}
		out = append(out, listed{
			display:  fmt.Sprintf("%s (vmknic %s, firewall %s)", h.HostName, cmpOr(h.Settings.Vmknic, "unset"), firewall),
			identity: hostIdentityModel{HostSystemID: types.StringValue(h.HostID)},
			resource: m,
		})
	}
	return out, nil
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
