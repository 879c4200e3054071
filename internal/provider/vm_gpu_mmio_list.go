package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// NewVMGPUMMIOListResource lists VMs with a GPU setup for
// vspherehpc_vm_gpu_mmio.
func NewVMGPUMMIOListResource() list.ListResource {
	return &listResource{typeName: "_vm_gpu_mmio", what: "the VMs with passthrough devices or the MMIO keys", list: listGPUMMIO,
		adopts: " Where a VM is not set up as the resource sets VMs up, the result holds what the resource asks for, with a warning " +
			"saying what the plan changes and why: an MMIO window its GPUs do not boot with is left to the rule (`mmio_size_gb` null); " +
			"a VM with devices but no GPU and no valid window gets `mmio_size_gb = " + fmt.Sprint(mmio.DevicesOnlySizeGB) + "` (or the " +
			"next power of two); BIOS firmware is switched to EFI, with `allow_firmware_change = true` where a guest OS is installed " +
			"(which then does not boot: the warning says so); the MMIO key and the memory reservation are set; and a Dynamic DirectPath " +
			"GPU that takes several models is replaced by one for its own model. A hardware label (a GPU pool) is kept, as `label`."}
}

// listGPUMMIO lists GPU setups as the resource would manage them. Where a
// hand-built VM breaks one of the resource's rules, the result asks for
// what the rule asks, with a warning saying why, so the plan shows that
// change and the generated configuration passes the resource's checks.
func listGPUMMIO(ctx context.Context, c *vsphere.Client, scope vsphere.Scope, _ string) ([]listed, error) {
	setups, err := c.ListGPUMMIO(ctx, scope)
	if err != nil {
		return nil, err
	}
	out := make([]listed, 0, len(setups))
	for _, s := range setups {
		if s.Unreadable != "" {
			out = append(out, leftOutOf("Virtual machine "+s.VM.Name, "The GPU setup of virtual machine "+s.VM.Name+" is not listed: "+s.Unreadable))
			continue
		}
		uuid := strings.ToLower(s.VM.ID)
		m := vmGPUMMIOModel{VirtualMachineID: types.StringValue(uuid), AllowFirmwareChange: types.BoolNull(), PowerOffAllowed: types.BoolNull(),
			TotalGPUMemoryGB: types.Float64Null(), PeerToPeer: peerToPeerFound(s.GPUMMIO), NUMANodeAffinity: numaAffinityFound(s.GPUMMIO)}
		var others map[string]bool
		if s.Sorted != nil {
			m.TotalGPUMemoryGB = types.Float64Value(s.Sorted.GPUMemoryGB)
			others = map[string]bool{}
			for _, d := range s.Sorted.Others {
				others[d.PCIID] = true
			}
		}
		setup, narrowed := byModel(s.GPUMMIO)
		diags := gpuMMIOToModel(ctx, setup, &m, others)
		if diags.HasError() {
			return nil, fmt.Errorf("virtual machine %s: %v", s.VM.Name, diags)
		}
		item := listed{
			display:  fmt.Sprintf("%s: %s, %s", s.VM.Name, passthroughDevices(len(s.Devices)), mmioWindow(s.MMIOSizeGB)),
			identity: vmIdentityModel{VirtualMachineID: types.StringValue(uuid)},
		}
		for _, w := range diags.Warnings() {
			item.warnings = append(item.warnings, w.Detail())
		}
		item.warnings = append(item.warnings, adoptGPUSetup(s, narrowed, &m)...)
		item.resource = m
		out = append(out, item)
	}
	return out, nil
}

// byModel is a setup with its narrowed Dynamic DirectPath GPUs (more models
// than their own) as plain ones of their model (and label), as the
// generated configuration asks for them, and those GPUs as found.
func byModel(g *vsphere.GPUMMIO) (*vsphere.GPUMMIO, []vsphere.PCIPassthrough) {
	var narrowed []vsphere.PCIPassthrough
	out := *g
	out.Devices = nil
	for _, d := range g.Devices {
		if d.Narrowed() {
			narrowed = append(narrowed, d)
			d.Models = 1
		}
		out.Devices = append(out.Devices, d)
	}
	return &out, narrowed
}

// adoptGPUSetup makes m, the setup as importing it leaves it, pass the
// resource's checks, and says what the plan then changes and why: the MMIO
// window, the firmware, the MMIO key, the memory reservation and narrowed
// Dynamic DirectPath GPUs. A running VM needs to be off for most of it.
func adoptGPUSetup(s vsphere.ListedGPUMMIO, narrowed []vsphere.PCIPassthrough, m *vmGPUMMIOModel) []string {
	var warnings, fixes []string
	name := s.VM.Name
	needsOff := len(narrowed) > 0
	for _, d := range narrowed {
		warnings = append(warnings, fmt.Sprintf("A Dynamic DirectPath GPU of virtual machine %s has %d models it may take, so it takes other "+
			"host GPUs than a gpu block by model gives it. The generated configuration asks for a GPU of its model (vendor_id %s, "+
			"device_id %s), and its plan replaces the device with one for the model alone.", name, d.Models, d.VendorID, d.DeviceID))
	}
	if w := adoptWindow(s, m); w != "" {
		warnings, needsOff = append(warnings, w), true
	}
	if s.Firmware != "efi" {
		needsOff = true
		if s.Guest != "" {
			m.AllowFirmwareChange = types.BoolValue(true)
			warnings = append(warnings, fmt.Sprintf("Virtual machine %s has %s firmware and a guest OS (%s). GPU passthrough needs EFI, so the "+
				"generated configuration sets allow_firmware_change = true and its plan switches the VM to EFI: a guest installed under "+
				"BIOS does not boot after that. Unless this guest boots under EFI, set allow_firmware_change = false and remove the VM's "+
				"resource and import block from the generated configuration; adopt it once its OS is installed under EFI.",
				name, strings.ToUpper(s.Firmware), s.Guest))
		} else {
			fixes = append(fixes, fmt.Sprintf("switches its firmware from %s to EFI (no guest OS is reported, so none is left unbootable)",
				strings.ToUpper(s.Firmware)))
		}
	}
	if !s.Use64bitMMIO {
		needsOff = true
		fixes = append(fixes, "sets "+mmio.Use64bitMMIOKey+" = TRUE")
	}
	if !s.MemoryLocked {
		fixes = append(fixes, "reserves all its guest memory (memory_reservation_locked_to_max), as passthrough needs")
	}
	if len(fixes) > 0 {
		warnings = append(warnings, fmt.Sprintf("Virtual machine %s is not set up for passthrough as vspherehpc_vm_gpu_mmio sets up every VM "+
			"it manages: the plan of the generated configuration %s.", name, strings.Join(fixes, ", and ")))
	}
	if needsOff && s.VM.PowerState == vsphere.PoweredOn {
		warnings = append(warnings, fmt.Sprintf("Virtual machine %s is powered on, and these changes need it off: power it off before the apply, "+
			"or set power_off_allowed = true in the generated configuration to let the apply shut it down and power it back on.", name))
	}
	return warnings
}

// adoptWindow gives m an MMIO window the resource accepts, and says why
// when it is not the VM's: with GPUs, one they boot with (a power of two,
// not below the rule's size, that an ESXi host can map), else the rule's;
// with devices and no GPU, the VM's own window when it is valid, else one
// (devices do not size it, and the resource needs one given). "" when the
// VM's window stays.
func adoptWindow(s vsphere.ListedGPUMMIO, m *vmGPUMMIOModel) string {
	if s.Sorted == nil {
		return "" // the host's devices unknown: as found
	}
	window := s.MMIOSizeGB
	valid := mmio.IsPowerOfTwo(window) && window <= mmio.MaxSizeGB
	if len(s.Sorted.GPUs) > 0 {
		rule, err := mmio.SizeGB(s.Sorted.GPUMemoryGB)
		switch {
		case err != nil && valid:
			return "" // the GPUs' memory is not known: the VM's window stands
		case err != nil:
			m.MMIOSizeGB = types.Int64Null()
			return fmt.Sprintf("Virtual machine %s has %s, and its host does not report the memory of its GPUs, so the rule cannot size "+
				"one: set mmio_size_gb in the generated configuration (vspherehpc_mmio_size computes it from the GPUs' memory), or its "+
				"plan is refused.", s.VM.Name, windowOrNone(window))
		case valid && window >= rule:
			return ""
		}
		m.MMIOSizeGB = types.Int64Null()
		problem := fmt.Sprintf("%s for %s GB of GPU memory: too small to boot (the rule asks for %d GB)", mmioWindowOf(window),
			mmio.FormatGB(s.Sorted.GPUMemoryGB), rule)
		switch {
		case window == 0:
			problem = fmt.Sprintf("no MMIO window (%s is not set) for %s GB of GPU memory: it does not boot so", mmio.SizeGBKey,
				mmio.FormatGB(s.Sorted.GPUMemoryGB))
		case !valid && window >= rule:
			problem = fmt.Sprintf("%s, which vSphere does not take: %s", mmioWindowOf(window), windowFault(window))
		}
		return fmt.Sprintf("Virtual machine %s has %s. The generated configuration leaves mmio_size_gb to the rule; its plan sets the "+
			"window to %d GB, the smallest power of two at least twice the GPUs' memory.", s.VM.Name, problem, rule)
	}
	if valid {
		return ""
	}
	size := int64(mmio.DevicesOnlySizeGB)
	for size < window && size < mmio.MaxSizeGB {
		size <<= 1
	}
	m.MMIOSizeGB = types.Int64Value(size)
	if window == 0 {
		devices := "passthrough devices but no GPU"
		if len(s.Devices) == 0 {
			devices = "no passthrough device"
		}
		return fmt.Sprintf("Virtual machine %s has %s, and no MMIO window (%s is not set). "+
			"vspherehpc_vm_gpu_mmio sets a window on every VM it manages, and with no GPU to size it from it takes mmio_size_gb: the "+
			"generated configuration gives %d GB, which holds the devices (a ConnectX function's BARs are megabytes), and its plan sets it.",
			s.VM.Name, devices, mmio.SizeGBKey, size)
	}
	return fmt.Sprintf("Virtual machine %s has %s, which vSphere does not take: %s. The generated configuration gives %d GB, and its "+
		"plan sets it.", s.VM.Name, mmioWindowOf(window), windowFault(window), size)
}

// windowFault says why vSphere does not take a window that is not 0.
func windowFault(gb int64) string {
	if gb > mmio.MaxSizeGB {
		return fmt.Sprintf("it is more than the %d GB an ESXi host addresses", mmio.MaxSizeGB)
	}
	return "it must be a power of two"
}

// passthroughDevices counts a VM's passthrough devices in words.
func passthroughDevices(n int) string {
	switch n {
	case 0:
		return "no passthrough device"
	case 1:
		return "1 passthrough device"
	}
	return fmt.Sprintf("%d passthrough devices", n)
}

// mmioWindow names a VM's MMIO window for its display name.
func mmioWindow(gb int64) string {
	if gb == 0 {
		return "no MMIO window"
	}
	return fmt.Sprintf("MMIO window %d GB", gb)
}

// mmioWindowOf names a window that is set, in a sentence.
func mmioWindowOf(gb int64) string {
	return fmt.Sprintf("an MMIO window of %d GB", gb)
}

// windowOrNone names a window, set or not, in a sentence.
func windowOrNone(gb int64) string {
	if gb == 0 {
		return "no MMIO window"
	}
	return mmioWindowOf(gb)
}
