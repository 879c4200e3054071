package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
)

// mmioFunctionConfig calls one provider function; provider functions need the
// provider among the required providers (by its full address, which
// OpenTofu would otherwise resolve to its own registry), and no provider
// configuration.
func mmioFunctionConfig(call string) string {
	return acctest.RequiredProviders + fmt.Sprintf(`
output "result" {
  value = %s
}
`, call)
}

// Provider functions exist from Terraform 1.8: older versions skip, saying so.
var functionsTerraform = []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)}

func TestAccFunctionMMIOSizeGB(t *testing.T) {
	t.Parallel()
	for call, want := range map[string]int64{
		"[80, 80]":         512, // two H100 80GB: 160 -> 320 -> 512
		"[40]":             128, // the rule's verified A100 40GB case
		"[24, 24, 24, 24]": 256,
		"[0.5]":            1,
		"[64]":             128, // a power of two: the next one
		// NVIDIA vGPUs: at least 64 GB, beside the GPUs' rule.
		`[], "grid_a100-20c", "grid_a100-20c"`: 64,
		`[16], "grid_a100-20c"`:                64,
		`[80, 80], "nvidia_h100xm-10c"`:        512,
	} {
		resource.UnitTest(t, resource.TestCase{
			TerraformVersionChecks:   functionsTerraform,
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps: []resource.TestStep{{
				Config: mmioFunctionConfig("provider::vspherehpc::mmio_size_gb(" + call + ")"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("result", knownvalue.Int64Exact(want)),
				},
			}},
		})
	}
}

func TestAccFunctionMMIOExtraConfig(t *testing.T) {
	t.Parallel()
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   functionsTerraform,
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: mmioFunctionConfig("provider::vspherehpc::mmio_extra_config([80, 80])"),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("result", knownvalue.MapExact(map[string]knownvalue.Check{
					"pciPassthru.use64bitMMIO":    knownvalue.StringExact("TRUE"),
					"pciPassthru.64bitMMIOSizeGB": knownvalue.StringExact("512"),
				})),
			},
		}},
	})
}

// Bad input is the function's error, naming the GPU. (Terraform itself
// refuses 0/0, so no NaN reaches the function.)
func TestAccFunctionMMIORefusals(t *testing.T) {
	t.Parallel()
	for call, want := range map[string]string{
		"mmio_size_gb([])":                           "no GPUs given: list the framebuffer memory of each GPU in GB",
		"mmio_size_gb([80, -1])":                     "GPU entry 2: memory size -1 GB must be greater than zero",
		"mmio_size_gb([0])":                          "GPU entry 1: memory size 0 GB must be greater than zero",
		"mmio_size_gb([1/0])":                        "GPU entry 1: memory size +Inf GB is not a finite number",
		"mmio_size_gb([80, null])":                   "GPU 2: the memory size is null",
		"mmio_size_gb([for i in range(300) : 2048])": "the MMIO size would exceed 1048576 GB, the most an ESXi host can address",
		// Megabytes (or bytes) given for gigabytes: beyond any GPU made, with
		// a hint at the unit instead of a 524288 GB window.
		"mmio_size_gb([81920, 81920])": "GPU entry 1: memory size 81920 GB is beyond any GPU made (at most 2048 GB per GPU): " +
			"did you give megabytes? 81920 MB is 80 GB",
		"mmio_extra_config([40, 40960])": "GPU entry 2: memory size 40960 GB is beyond any GPU made (at most 2048 GB per GPU): " +
			"did you give megabytes? 40960 MB is 40 GB",
		"mmio_size_gb([85899345920])":      "did you give bytes? 85899345920 bytes is 80 GB",
		"mmio_size_gb([2049])":             "memory size 2049 GB is beyond any GPU made (at most 2048 GB per GPU)",
		"mmio_extra_config([-80])":         "GPU entry 1: memory size -80 GB must be greater than zero",
		"mmio_size_gb([pow(10, 400) / 1])": "not a finite number",
		`mmio_size_gb([], "A100-20C")`:     `vGPU 1: "A100-20C" is not an NVIDIA vGPU profile as vSphere names it`,
		`mmio_size_gb([], "grid_a100-5c", "grid_a100-5c", "grid_a100-5c", "grid_a100-5c", "grid_a100-5c", "grid_a100-5c", ` +
			`"grid_a100-5c", "grid_a100-5c", "grid_a100-5c")`: "9 vGPUs given: vSphere gives a VM at most 8",
	} {
		t.Run(call, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				TerraformVersionChecks:   functionsTerraform,
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      mmioFunctionConfig("provider::vspherehpc::" + call),
					ExpectError: acctest.Wording(want),
				}},
			})
		})
	}
}
