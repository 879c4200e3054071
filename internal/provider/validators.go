package provider

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mmio"
)

// positiveDuration accepts Go durations greater than zero, such as "90s".
type positiveDuration struct{}

var _ validator.String = positiveDuration{}

func (positiveDuration) Description(context.Context) string {
	return `value must be a positive duration such as "90s" or "10m"`
}

func (v positiveDuration) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (positiveDuration) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil || d <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			req.Path.String()+` must be a positive duration such as "90s" or "10m", not `+strconv.Quote(req.ConfigValue.ValueString())+".")
	}
}

var (
	_ basetypes.ListTypable                    = unorderedListType{}
	_ basetypes.ListValuableWithSemanticEquals = unorderedList{}
)

// uniqueStrings refuses a list that repeats a value, in time linear in its
// length (listvalidator.UniqueValues compares every pair).
type uniqueStrings struct{}

var _ validator.List = uniqueStrings{}

func (uniqueStrings) Description(context.Context) string { return "each value at most once" }

func (v uniqueStrings) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (uniqueStrings) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	seen := make(map[string]bool, len(req.ConfigValue.Elements()))
	for i, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if seen[s.ValueString()] {
			resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(i), "Value listed twice",
				fmt.Sprintf("%s lists %q more than once: list each value once (distinct() drops repeats).", req.Path, s.ValueString()))
		}
		seen[s.ValueString()] = true
	}
}

// staticMAC accepts a MAC address vSphere takes as a static address of a VM
// adapter. The rule is VMware's ("Static MAC Addressing" and "VMware OUI in
// Static MAC Addresses", vSphere Networking 6.5 and later,
// docs.vmware.com/en/VMware-vSphere/6.5/com.vmware.vsphere.networking.doc/GUID-F9243FED-F081-498F-B4A9-EF950292AF77.html
// and GUID-ADFECCE5-19E7-4A81-B706-171E279ACBCD.html): within VMware's OUI
// 00:50:56 only 00:50:56:00:00:00 to 00:50:56:3F:FF:FF is for static
// addresses, the rest being reserved for the addresses vCenter generates and
// for VMkernel adapters; any other unique address is supported, though
// vCenter cannot check it against machines outside its inventory. An
// adapter's own address must be unicast: a set lowest bit of the first byte
// makes it a group (multicast or broadcast) address (IEEE 802).
type staticMAC struct{}

var _ validator.String = staticMAC{}

func (staticMAC) Description(context.Context) string {
	return "must be a unicast MAC address in lower case; with VMware's prefix 00:50:56, from 00:50:56:00:00:00 to 00:50:56:3f:ff:ff"
}

func (v staticMAC) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (staticMAC) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if problem := staticMACProblem(req.ConfigValue.ValueString()); problem != "" {
		resp.Diagnostics.AddAttributeError(
			req.Path,
			"Invalid static MAC address",
			fmt.Sprintf("%s = %q %s", req.Path, req.ConfigValue.ValueString(), problem),
		)
	}
}

// staticMACProblem says what is wrong with mac as a static adapter address,
// "" when nothing is.
func staticMACProblem(mac string) string {
	const fix = " Remove the argument to let vSphere generate an address."
	if !macPattern.MatchString(mac) {
		return "is not a MAC address in lower case, such as 00:50:56:0a:0b:0c." + fix
	}
	b := make([]byte, 6)
	for i := range b {
		n, _ := strconv.ParseUint(mac[3*i:3*i+2], 16, 8) // checked by macPattern
		b[i] = byte(n)
	}
	switch {
	case b[0]&1 == 1:
		return "is a multicast address (the lowest bit of its first byte is set), and an adapter needs a unicast address: " +
			"use one from VMware's range for static addresses, 00:50:56:00:00:00 to 00:50:56:3f:ff:ff." + fix
	case mac == "00:00:00:00:00:00":
		return "is not a usable address: use one from VMware's range for static addresses, 00:50:56:00:00:00 to 00:50:56:3f:ff:ff." + fix
	case b[0] == 0x00 && b[1] == 0x50 && b[2] == 0x56 && b[3] > 0x3f:
		return fmt.Sprintf("is in the part of VMware's prefix 00:50:56 that vSphere reserves for the addresses vCenter generates and "+
			"for VMkernel adapters: static addresses with that prefix go from 00:50:56:00:00:00 to 00:50:56:3f:ff:ff, e.g. 00:50:56:%02x:%s.",
			b[3]&0x3f, mac[12:]) + fix
	}
	return ""
}

// mmioSizeBound refuses an MMIO window no ESXi host can map (see
// mmio.MaxSizeGB); that it is a power of two is the GPU planner's check,
// which also suggests a size.
type mmioSizeBound struct{}

var _ validator.Int64 = mmioSizeBound{}

func (mmioSizeBound) Description(context.Context) string {
	return fmt.Sprintf("value must be from 1 to %d (GB)", mmio.MaxSizeGB)
}

func (v mmioSizeBound) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (mmioSizeBound) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	switch size := req.ConfigValue.ValueInt64(); {
	case size < 1:
		resp.Diagnostics.AddAttributeError(req.Path, "MMIO size out of range", fmt.Sprintf(
			"%s = %d: the window must be at least 1 GB. Leave %s unset to size it from the GPUs' memory.", req.Path, size, req.Path))
	case size > mmio.MaxSizeGB:
		resp.Diagnostics.AddAttributeError(req.Path, "MMIO size out of range", fmt.Sprintf(
			"%s = %d GB is more than any ESXi host can address: the most is %d GB (1 PiB, the maximum physical address of ESXi). "+
				"Leave %s unset to size the window from the GPUs' memory, or give a power of two up to %d.",
			req.Path, size, mmio.MaxSizeGB, req.Path, mmio.MaxSizeGB))
	}
}

// fullyKnown reports whether v holds no unknown value at any depth: a list
// or set can be known while an element is not.
func fullyKnown(ctx context.Context, v attr.Value) bool {
	tv, err := v.ToTerraformValue(ctx)
	return err == nil && tv.IsFullyKnown()
}

// The forms of vSphere's identifiers that arguments take, as vCenter writes
// them: lower-case hex, as the host's PCI and network views show.
var (
	vmknicPattern = regexp.MustCompile(`^vmk[0-9]+$`)                                  // a VMkernel adapter
	vmnicPattern  = regexp.MustCompile(`^vmnic[0-9]+$`)                                // a physical NIC
	pciIDPattern  = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`) // domain:bus:slot.function
	hexIDPattern  = regexp.MustCompile(`^[0-9a-f]{4}$`)                                // a PCI vendor or device id
	macPattern    = regexp.MustCompile(`^([0-9a-f]{2}:){5}[0-9a-f]{2}$`)
	// a vGPU profile as vSphere names it: "grid_a100-20c", "nvidia_h100xm-80c", "grid_a100-3-20c".
	vgpuProfilePattern = regexp.MustCompile(`^[a-z0-9]+_[a-z0-9]+(-[a-z0-9]+)+$`)
)

// notEmpty refuses "" where a look-up expects a name or an id, saying what to
// give (fix). Left to the look-up, "" reads as "not given" (the only
// datacenter) or searches vCenter for an object with no name.
type notEmpty string

func (notEmpty) Description(context.Context) string { return "not empty" }

func (v notEmpty) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v notEmpty) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || req.ConfigValue.ValueString() != "" {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Empty "+req.Path.String(), req.Path.String()+" is empty: "+string(v)+".")
}
