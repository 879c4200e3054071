package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// BenchmarkRDMADVSRead measures the provider's share of one refresh of a
// vspherehpc_rdma_dvs whose switch has n hosts, against the lab. After a
// read, the framework compares the prior and the new state for semantic
// equality, and for a set it compares every element of one with every
// element of the other (internal/fwschemadata's
// ValueSemanticEqualitySetElements, v1.19.0): n² comparisons of host blocks,
// each with its path built for the log. The time must grow linearly with n:
// compare ns/op across the sizes.
//
//	go test -run '^$' -bench BenchmarkRDMADVSRead ./internal/provider/
func BenchmarkRDMADVSRead(b *testing.B) {
	for _, n := range []int{16, 64, 200} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			ctx := context.Background()
			lab, err := vcsimlab.Start(ctx, vcsimlab.Options{Hosts: n, VMs: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(lab.Close)
			hosts := lab.HostNames()
			if err := lab.CreateSwitch(ctx, "bench-dvs", hosts[0], "vmnic4"); err != nil {
				b.Fatal(err)
			}
			for _, h := range hosts[1:] {
				if err := lab.AddSwitchHost(ctx, "bench-dvs", h, "vmnic4"); err != nil {
					b.Fatal(err)
				}
			}
			server, err := providerserver.NewProtocol6WithError(New("bench")())()
			if err != nil {
				b.Fatal(err)
			}
			schema, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
			if err != nil {
				b.Fatal(err)
			}
			configured, err := server.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: labProviderConfig(b, lab, schema)})
			failed(b, err, configured.Diagnostics)

			const typeName = "vspherehpc_rdma_dvs"
			imported, err := server.ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{
				TypeName: typeName, ID: "/" + lab.DatacenterName() + "/network/bench-dvs:",
			})
			failed(b, err, imported.Diagnostics)
			if len(imported.ImportedResources) != 1 {
				b.Fatalf("imported %d resources, want 1", len(imported.ImportedResources))
			}
			first := imported.ImportedResources[0]
			read, err := server.ReadResource(ctx, &tfprotov6.ReadResourceRequest{
				TypeName: typeName, CurrentState: first.State, Private: first.Private,
			})
			failed(b, err, read.Diagnostics)
			objType := objectType(b, schema.ResourceSchemas[typeName])
			state, err := read.NewState.Unmarshal(objType)
			if err != nil {
				b.Fatal(err)
			}
			var attrs map[string]tftypes.Value
			if err := state.As(&attrs); err != nil {
				b.Fatal(err)
			}
			var members []tftypes.Value
			if err := attrs["host"].As(&members); err != nil || len(members) != n {
				b.Fatalf("the switch's state has %d hosts (%v), want %d", len(members), err, n)
			}

			b.ResetTimer()
			for range b.N {
				r, err := server.ReadResource(ctx, &tfprotov6.ReadResourceRequest{
					TypeName: typeName, CurrentState: read.NewState, Private: read.Private,
				})
				failed(b, err, r.Diagnostics)
			}
		})
	}
}
