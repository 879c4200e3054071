package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// NewHostGraphicsListResource lists hosts with graphics settings of their
// own for vspherehpc_host_graphics.
func NewHostGraphicsListResource() list.ListResource {
	return &listResource{typeName: "_host_graphics", list: listHostGraphics,
		what: "the hosts whose graphics settings are not ESXi's defaults (default graphics type *Shared*, assignment policy " +
			"*performance*, no GPU with a type of its own)"}
}

func listHostGraphics(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, _ string) ([]listed, error) {
	hosts, err := c.ListHostGraphics(ctx, scope)
	if err != nil {
		return nil, err
	}
	out := make([]listed, 0, len(hosts))
	for _, h := range hosts {
		if h.Unreadable != "" {
			out = append(out, leftOutOf("Host "+h.HostName, "The graphics settings of host "+h.HostName+" are not listed: "+h.Unreadable))
			continue
		}
		var m hostGraphicsModel
		graphicsToModel(ctx, h.HostGraphicsState, h.Pending, &m)
		details := []string{"default " + h.Settings.DefaultType, h.Settings.AssignmentPolicy}
		for _, id := range slices.Sorted(maps.Keys(h.Settings.Devices)) {
			details = append(details, id+" "+h.Settings.Devices[id])
		}
		out = append(out, listed{
			display:  fmt.Sprintf("%s (%s)", h.HostName, strings.Join(details, ", ")),
			identity: hostIdentityModel{HostSystemID: types.StringValue(h.HostID)},
			resource: m,
		})
	}
	return out, nil
}
