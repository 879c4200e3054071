package provider

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// BenchmarkHostPVRDMASettingsAllowedIPs measures the provider's share of one
// `terraform plan` of vspherehpc_host_pvrdma_settings with n
// firewall_allowed_ips, against the lab: validate, plan on create, and plan
// against a prior state with the same set. Issue 12 measured 1k entries at
// 1.9 s and 4k at 15 s, because the framework's set type compares every pair
// of elements (terraform-plugin-framework issue 1322); the time must now grow
// linearly with n: compare ns/op across the sizes.
//
//	go test -run '^$' -bench BenchmarkHostPVRDMASettingsAllowedIPs ./internal/provider/
func BenchmarkHostPVRDMASettingsAllowedIPs(b *testing.B) {
	ctx := context.Background()
	lab, err := vcsimlab.Start(ctx, vcsimlab.Options{Hosts: 1, VMs: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(lab.Close)
	schemas, err := providerserver.NewProtocol6WithError(New("bench")())()
	if err != nil {
		b.Fatal(err)
	}
	schema, err := schemas.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		b.Fatal(err)
	}
	providerConfigValue := labProviderConfig(b, lab, schema)
	// One provider instance plans one configuration (it remembers the
	// claims of its resources), so each plan gets its own, as each terraform
	// command does; starting it is not timed.
	newServer := func() tfprotov6.ProviderServer {
		server, err := providerserver.NewProtocol6WithError(New("bench")())()
		if err != nil {
			b.Fatal(err)
		}
		configured, err := server.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: providerConfigValue})
		failed(b, err, configured.Diagnostics)
		return server
	}

	const typeName = "vspherehpc_host_pvrdma_settings"
	objType := objectType(b, schema.ResourceSchemas[typeName])
	hostID := lab.HostID(lab.HostNames()[0])
	for _, n := range []int{1000, 2000, 4000, 8000} {
		ips := make([]tftypes.Value, n)
		for i := range ips {
			ips[i] = tftypes.NewValue(tftypes.String, fmt.Sprintf("10.%d.%d.%d", i/65536, (i/256)%256, i%256))
		}
		values := nullValues(objType)
		values["host_system_id"] = tftypes.NewValue(tftypes.String, hostID)
		values["vmknic"] = tftypes.NewValue(tftypes.String, "vmk1")
		values["firewall_allowed_ips"] = tftypes.NewValue(objType.AttributeTypes["firewall_allowed_ips"], ips)
		config := dynamicValue(b, objType, values)
		state := maps.Clone(values)
		state["id"] = tftypes.NewValue(tftypes.String, hostID)
		state["firewall_enabled"] = tftypes.NewValue(tftypes.Bool, true)
		prior := dynamicValue(b, objType, state)
		none := dynamicValue(b, objType, nil)
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				server := newServer()
				b.StartTimer()
				v, err := server.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: typeName, Config: config})
				failed(b, err, v.Diagnostics)
				p, err := server.PlanResourceChange(
					ctx,
					&tfprotov6.PlanResourceChangeRequest{TypeName: typeName, Config: config, ProposedNewState: config, PriorState: none},
				)
				failed(b, err, p.Diagnostics)
				// The plan against a prior state is another command's: its
				// own provider instance, whose claims start empty.
				b.StopTimer()
				server = newServer()
				b.StartTimer()
				p, err = server.PlanResourceChange(
					ctx,
					&tfprotov6.PlanResourceChangeRequest{TypeName: typeName, Config: config, ProposedNewState: prior, PriorState: prior},
				)
				failed(b, err, p.Diagnostics)
			}
		})
	}
}

// labProviderConfig is the provider block that connects to lab.
func labProviderConfig(b *testing.B, lab *vcsimlab.Lab, schema *tfprotov6.GetProviderSchemaResponse) *tfprotov6.DynamicValue {
	b.Helper()
	providerType := objectType(b, schema.Provider)
	values := nullValues(providerType)
	values["vsphere_server"] = tftypes.NewValue(tftypes.String, lab.URL.Host)
	values["user"] = tftypes.NewValue(tftypes.String, lab.Username)
	values["password"] = tftypes.NewValue(tftypes.String, lab.Password)
	values["ca_file"] = tftypes.NewValue(tftypes.String, lab.CertFile)
	return dynamicValue(b, providerType, values)
}

func objectType(b *testing.B, s *tfprotov6.Schema) tftypes.Object {
	b.Helper()
	if s == nil {
		b.Fatal("no such schema")
	}
	t, ok := s.ValueType().(tftypes.Object)
	if !ok {
		b.Fatalf("schema of type %T, want an object", s.ValueType())
	}
	return t
}

// nullValues is every attribute of t, null.
func nullValues(t tftypes.Object) map[string]tftypes.Value {
	values := map[string]tftypes.Value{}
	for name, at := range t.AttributeTypes {
		values[name] = tftypes.NewValue(at, nil)
	}
	return values
}

// dynamicValue is an object of type t; nil values make it null.
func dynamicValue(b *testing.B, t tftypes.Object, values map[string]tftypes.Value) *tfprotov6.DynamicValue {
	b.Helper()
	var v tfprotov6.DynamicValue
	var err error
	if values == nil {
		v, err = tfprotov6.NewDynamicValue(t, tftypes.NewValue(t, nil))
	} else {
		v, err = tfprotov6.NewDynamicValue(t, tftypes.NewValue(t, values))
	}
	if err != nil {
		b.Fatal(err)
	}
	return &v
}

func failed(b *testing.B, err error, diags []*tfprotov6.Diagnostic) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			b.Fatalf("%s: %s", d.Summary, d.Detail)
		}
	}
}
