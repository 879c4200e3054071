// Package mmio holds the sizing rule for pciPassthru.64bitMMIOSizeGB.
//
// The rule is the one Earl Ruby's "Calculating the value for 64bitMMIOSizeGB"
// (earlruby.org) gives with four verified configurations: when the total GPU
// framebuffer memory is a power of two, take the next power of two; otherwise
// round up to a power of two and then once more. Both cases are the smallest
// power of two that is at least twice the total. Too small a window and the VM
// does not boot, with no error, so the rule errs on the large side.
package mmio

import (
	"fmt"
	"math"
	"strconv"
)

// The extraConfig keys a GPU passthrough VM needs.
const (
	Use64bitMMIOKey = "pciPassthru.use64bitMMIO"
	SizeGBKey       = "pciPassthru.64bitMMIOSizeGB"
)

// MaxSizeGB is the largest window: 1 PiB (2^20 GB), the maximum physical
// address of ESXi 6.7 and 7.0 hosts (Broadcom KB 320256, "Memory Addressing
// Limits for ESXi"). A window no host can map does not boot the VM.
const MaxSizeGB = int64(1) << 20

// DevicesOnlySizeGB is the window suggested where no GPU sizes one: for a
// size that is not a power of two and no GPU, and for passthrough devices
// without a GPU (an InfiniBand VF or ConnectX PF, whose BARs are megabytes)
// on a VM that has no window yet. 64 GB holds devices that map up to 16 GB,
// the most a device maps without needing the 64-bit window at all (the
// VMware KB on VMDirectPath I/O of large-BAR devices, 2142307).
const DevicesOnlySizeGB = 64

// VGPUMinSizeGB is the least window of a VM with NVIDIA vGPUs: "Because
// NVIDIA vGPU (C-Series) have large BAR memory settings ... 64-bit MMIO and
// EFI boot must be enabled for the VM ... The VM's MMIO space must be
// increased to 64 GB" (NVIDIA AI Enterprise 5.2, "Miscellaneous"; VMware KB
// 2142307). NVIDIA adds that a GPU that requires more than 64 GB needs what
// it requires; its per-GPU table is not applied here (mmio_size_gb takes it).
const VGPUMinSizeGB = 64

// WithVGPUs is the window of a VM whose GPUs' rule gives sizeGB (0: no
// GPUs) and that has NVIDIA vGPUs or not: with them, at least
// VGPUMinSizeGB.
func WithVGPUs(sizeGB int64, vgpus bool) int64 {
	if vgpus {
		return max(sizeGB, VGPUMinSizeGB)
	}
	return sizeGB
}

// MaxGPUMemoryGB bounds one GPU's framebuffer memory. The most shipping
// today is 288 GB (NVIDIA B300, AMD Instinct MI355X) and NVIDIA has announced
// 1 TB for Rubin Ultra; 2048 GB leaves room beyond that, yet still catches
// megabytes given for gigabytes on any GPU over 2 GB (81920 for an 80 GB H100
// would otherwise size a 524288 GB window without a word).
const MaxGPUMemoryGB = 2048

// Group is Count identical GPUs with MemoryGB of framebuffer each.
type Group struct {
	Count    int64
	MemoryGB float64
}

// CheckGroup refuses a group that cannot describe real GPUs.
func CheckGroup(g Group) error {
	if g.Count < 1 {
		return fmt.Errorf("GPU count %d must be at least 1", g.Count)
	}
	return CheckGPUMemoryGB(g.MemoryGB)
}

// TotalGB adds up the framebuffer memory of groups of GPUs, and counts them.
func TotalGB(groups []Group) (totalGB float64, gpus int64, err error) {
	if len(groups) == 0 {
		return 0, 0, fmt.Errorf("no GPUs given: list the framebuffer memory of each GPU in GB")
	}
	for i, g := range groups {
		if err := CheckGroup(g); err != nil {
			return 0, 0, fmt.Errorf("GPU entry %d: %w", i+1, err)
		}
		totalGB += float64(g.Count) * g.MemoryGB
		gpus += g.Count
	}
	return totalGB, gpus, nil
}

// SizeGB returns the smallest power of two that is at least twice totalGB.
func SizeGB(totalGB float64) (int64, error) {
	if err := CheckMemoryGB(totalGB); err != nil {
		return 0, err
	}
	size := int64(1)
	for float64(size) < 2*totalGB {
		if size >= MaxSizeGB {
			return 0, fmt.Errorf(
				"total GPU memory %s GB is too large: the MMIO size would exceed %d GB, the most an ESXi host can address",
				FormatGB(totalGB),
				MaxSizeGB,
			)
		}
		size <<= 1
	}
	return size, nil
}

// IsPowerOfTwo reports whether n is a positive power of two, as vSphere
// requires of the MMIO window.
func IsPowerOfTwo(n int64) bool {
	return n > 0 && n&(n-1) == 0
}

// ExtraConfig returns the VM advanced settings that enable a 64-bit MMIO
// window of sizeGB.
func ExtraConfig(sizeGB int64) map[string]string {
	return map[string]string{
		Use64bitMMIOKey: "TRUE",
		SizeGBKey:       strconv.FormatInt(sizeGB, 10),
	}
}

// FormatGB prints a size without a trailing ".0", as people write it.
func FormatGB(gb float64) string {
	return strconv.FormatFloat(gb, 'f', -1, 64)
}

// CheckMemoryGB refuses a size that cannot be the memory of a GPU.
func CheckMemoryGB(gb float64) error {
	switch {
	case math.IsNaN(gb) || math.IsInf(gb, 0):
		return fmt.Errorf("memory size %v GB is not a finite number", gb)
	case gb <= 0:
		return fmt.Errorf("memory size %s GB must be greater than zero", FormatGB(gb))
	}
	return nil
}

// CheckGPUMemoryGB refuses a size that cannot be the memory of one GPU:
// what CheckMemoryGB refuses, and more than MaxGPUMemoryGB, with a hint when
// the number reads as a real GPU's memory in megabytes or bytes.
func CheckGPUMemoryGB(gb float64) error {
	if err := CheckMemoryGB(gb); err != nil {
		return err
	}
	if gb <= MaxGPUMemoryGB {
		return nil
	}
	err := fmt.Errorf("memory size %s GB is beyond any GPU made (at most %d GB per GPU)", FormatGB(gb), MaxGPUMemoryGB)
	for _, u := range []struct {
		name, symbol string
		perGB        float64
	}{{"megabytes", "MB", 1 << 10}, {"bytes", "bytes", 1 << 30}} {
		if inGB := gb / u.perGB; inGB <= MaxGPUMemoryGB {
			return fmt.Errorf("%w: did you give %s? %s %s is %s GB", err, u.name, FormatGB(gb), u.symbol, aboutGB(inGB))
		}
	}
	return err
}

// aboutGB prints a size to a tenth of a GB, saying "about" when it rounds
// (nvidia-smi reports an 80 GB H100 as 81559 MiB).
func aboutGB(gb float64) string {
	if r := math.Round(gb*10) / 10; r != gb {
		return "about " + FormatGB(r)
	}
	return FormatGB(gb)
}
