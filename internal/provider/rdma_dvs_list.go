package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// NewRDMADVSListResource lists distributed switches for vspherehpc_rdma_dvs.
func NewRDMADVSListResource() list.ListResource {
	return &listResource{typeName: "_rdma_dvs", what: "distributed switches", byName: "the switch with this name", list: listSwitches,
		adopts: " A host joined with several uplinks (NIC teaming, which PVRDMA does not support) keeps its first in the result, " +
			"and a switch with no port group or several gets a new one named `<switch>-pvrdma`: the plan shows that change; " +
			"to adopt an existing port group instead, set its key as `port_group_key` in the import block's identity."}
}

// listSwitches lists switches as vspherehpc_rdma_dvs would manage them. A
// host joined with more than one uplink breaks the resource's one-uplink
// rule: the result keeps its first NIC, so the plan shows that change.
func listSwitches(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, name string) ([]listed, error) {
	switches, err := c.ListDVS(ctx, scope, name)
	if err != nil {
		return nil, err
	}
	out := make([]listed, 0, len(switches))
	for _, d := range switches {
		// A switch with no port group or several is adopted alone, with the
		// empty key; its next apply creates the configuration's port group.
		identity := switchIdentityModel{ID: types.StringValue(d.UUID), PortGroupKey: types.StringValue("")}
		if d.PortGroup != nil {
			identity.PortGroupKey = types.StringValue(d.PortGroup.Key)
		}
		item := listed{display: d.Name, identity: identity}
		for i, h := range d.Hosts {
			if first, _, teamed := strings.Cut(h.Vmnic, ","); teamed {
				item.warnings = append(item.warnings, fmt.Sprintf("Host %s joins switch %s with the uplinks %s: PVRDMA supports no NIC "+
					"teaming, so vspherehpc_rdma_dvs keeps one uplink per host. The generated configuration keeps %s; its plan "+
					"takes the others off the switch.", h.HostID, d.Name, h.Vmnic, first))
				d.Hosts[i].Vmnic = first
			}
		}
		m := rdmaDVSModel{}
		if diags := dvsToModel(ctx, d, &m); diags.HasError() {
			return nil, fmt.Errorf("switch %s: %v", d.Name, diags)
		}
		if d.PortGroup == nil {
			// The resource manages one port group: with none or several to
			// choose from, the generated configuration asks for a new one.
			name := d.Name + "-pvrdma"
			item.warnings = append(item.warnings, fmt.Sprintf("Switch %s has %d port groups; vspherehpc_rdma_dvs manages exactly one. "+
				"The generated configuration asks for a new one, %s, which its plan creates. To adopt one of the switch's port groups "+
				"instead, set its key as port_group_key in the import block's identity, or import the switch by id `%s:<port group name>`.",
				d.Name, len(d.PortGroups), name, d.UUID))
			m.PortGroup = &portGroupModel{Name: types.StringValue(name), VLANID: types.Int64Value(0), PortCount: types.Int64Value(8),
				AutoExpand: types.BoolValue(true)}
		}
		item.resource = m
		out = append(out, item)
	}
	return out, nil
}
