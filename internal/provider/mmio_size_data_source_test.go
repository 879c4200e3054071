package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
)

// The rule, the smallest power of two at least twice the total GPU memory,
// on the four configurations verified to boot in the article "Calculating
// the value for 64bitMMIOSizeGB" and on its A100 example, as the table in
// docs/data-sources/mmio_size.md lists them; given both ways, with no
// provider settings at all: the data source needs no vCenter.
func TestAccMMIOSizeDataSource_verifiedConfigurations(t *testing.T) {
	t.Parallel()
	size := func(name string, gb int64) statecheck.StateCheck {
		return statecheck.ExpectKnownValue("data.vspherehpc_mmio_size."+name, tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(gb))
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
data "vspherehpc_mmio_size" "v100x2" {
  gpu_memory_gb = [16, 16]
}
data "vspherehpc_mmio_size" "p40x2" {
  gpu {
    count     = 2
    memory_gb = 24
  }
}
data "vspherehpc_mmio_size" "v100x8" {
  gpu {
    count     = 8
    memory_gb = 16
  }
}
data "vspherehpc_mmio_size" "v100x10" {
  gpu {
    count     = 8
    memory_gb = 16
  }
  gpu_memory_gb = [16, 16]
}
data "vspherehpc_mmio_size" "a100x2" {
  gpu_memory_gb = [40, 40]
}
data "vspherehpc_mmio_size" "vgpus" {
  vgpu_profiles = ["grid_a100-20c", "grid_a100-20c"]
}
data "vspherehpc_mmio_size" "gpu_and_vgpu" {
  gpu_memory_gb = [16]
  vgpu_profiles = ["grid_a100-20c"]
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				size("v100x2", 64),
				size("p40x2", 128),
				size("v100x8", 256),
				size("v100x10", 512),
				size("a100x2", 256),
				// NVIDIA vGPUs: at least 64 GB beside the GPUs' rule (32 GB for one 16 GB GPU).
				size("vgpus", 64),
				size("gpu_and_vgpu", 64),
				statecheck.ExpectKnownValue("data.vspherehpc_mmio_size.vgpus", tfjsonpath.New("gpu_count"), knownvalue.Int64Exact(0)),
				statecheck.ExpectKnownValue("data.vspherehpc_mmio_size.v100x10", tfjsonpath.New("gpu_count"), knownvalue.Int64Exact(10)),
				statecheck.ExpectKnownValue("data.vspherehpc_mmio_size.a100x2", tfjsonpath.New("total_gpu_memory_gb"), knownvalue.Float64Exact(80)),
				statecheck.ExpectKnownValue("data.vspherehpc_mmio_size.a100x2", tfjsonpath.New("extra_config"), knownvalue.MapExact(map[string]knownvalue.Check{
					"pciPassthru.use64bitMMIO":    knownvalue.StringExact("TRUE"),
					"pciPassthru.64bitMMIOSizeGB": knownvalue.StringExact("256"),
				})),
			},
		}},
	})
}

func TestAccMMIOSizeDataSource_invalid(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ config, want string }{
		"empty":     {`gpu_memory_gb = []`, `No GPUs given`},
		"nothing":   {``, `No GPUs given`},
		"no vGPUs":  {`vgpu_profiles = []`, `No GPUs given`},
		"vGPU name": {`vgpu_profiles = ["A100-20C"]`, `an NVIDIA vGPU profile as vSphere names it`},
		"vGPUs":     {`vgpu_profiles = [for i in range(9) : "grid_a100-4c"]`, `list must contain at most 8 elements`},
		"zero":      {`gpu_memory_gb = [16, 0]`, `memory size 0 GB must be greater than zero`},
		"negative":  {"gpu {\n count = 1\n memory_gb = -8\n}", `memory size -8 GB must be greater than zero`},
		"count":     {"gpu {\n count = 0\n memory_gb = 16\n}", `gpu[0].count value must be between 1 and 1024`},
		"huge":      {"gpu {\n count = 5000000\n memory_gb = 16\n}", `gpu[0].count value must be between 1 and 1024`},
		"null":      {`gpu_memory_gb = [16, null]`, `this one is null`},
		// Megabytes given for gigabytes: refused with a hint at the unit,
		// rather than a 524288 GB window.
		"megabytes": {`gpu_memory_gb = [81920, 81920]`,
			`Cannot size the MMIO window: memory size 81920 GB is beyond any GPU made (at most 2048 GB per GPU): did you give megabytes? 81920 MB is 80 GB.`},
		"megabytes in a block": {"gpu {\n count = 8\n memory_gb = 40960\n}",
			`memory size 40960 GB is beyond any GPU made (at most 2048 GB per GPU): did you give megabytes? 40960 MB is 40 GB.`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      "data \"vspherehpc_mmio_size\" \"x\" {\n" + tc.config + "\n}\n",
					PlanOnly:    true,
					ExpectError: acctest.Wording(tc.want),
				}},
			})
		})
	}
}

// GPU sizes known only at apply (here from a resource, as when they come from
// a host look-up of a host being created) are computed then, not refused.
func TestAccMMIOSizeDataSource_unknownAtPlan(t *testing.T) {
	t.Parallel()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
resource "terraform_data" "gpus" {
  input = [80, 80]
}
data "vspherehpc_mmio_size" "dynamic" {
  dynamic "gpu" {
    for_each = terraform_data.gpus.output
    content {
      count     = 1
      memory_gb = gpu.value
    }
  }
}
data "vspherehpc_mmio_size" "list" {
  gpu_memory_gb = terraform_data.gpus.output
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.vspherehpc_mmio_size.dynamic", tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(512)),
				statecheck.ExpectKnownValue("data.vspherehpc_mmio_size.list", tfjsonpath.New("mmio_size_gb"), knownvalue.Int64Exact(512)),
			},
		}},
	})
}

// Sizes the rule cannot serve and numbers the schema cannot hold (issue
// 12), refused at plan naming the argument: GPUs whose total memory is
// beyond any window an ESXi host addresses, a memory of 1e400 and a
// fractional count.
func TestAccMMIOSizeDataSource_bounds(t *testing.T) {
	t.Parallel()
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: `data "vspherehpc_mmio_size" "m" {
  gpu_memory_gb = [80]
  gpu {
    count     = 300
    memory_gb = 2000
  }
}`, PlanOnly: true, ExpectError: acctest.Wording(`total GPU memory 600080 GB is too large: the MMIO size would exceed 1048576 GB, ` +
				`the most an ESXi host can address. Check gpu_memory_gb and the gpu blocks`)},
			{Config: `data "vspherehpc_mmio_size" "m" {
  gpu {
    count     = 1024
    memory_gb = 1000
  }
}`, PlanOnly: true, ExpectError: acctest.Wording(`total GPU memory 1024000 GB is too large: the MMIO size would exceed 1048576 GB, ` +
				`the most an ESXi host can address`)},
			{Config: `data "vspherehpc_mmio_size" "m" {
  gpu {
    count     = 2
    memory_gb = 1e400
  }
}`, PlanOnly: true, ExpectError: acctest.Wording(`gpu[0].memory_gb must be a number of GB greater than 0 and at most 2048; 1e+400 is not.`)},
			{Config: `data "vspherehpc_mmio_size" "m" {
  gpu_memory_gb = [80, 1e400]
}`, PlanOnly: true, ExpectError: acctest.Wording(`gpu_memory_gb[1] must be a number of GB greater than 0 and at most 2048; 1e+400 is not.`)},
			{Config: `data "vspherehpc_mmio_size" "m" {
  gpu {
    count     = 2.5
    memory_gb = 80
  }
}`, PlanOnly: true, ExpectError: acctest.Wording(`gpu[0].count must be a whole number from 1 to 1024; 2.5 is not.`)},
		},
	})
}
