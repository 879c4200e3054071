package vcsimlab

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/vim25/types"
)

// A second VM of a name its folder holds is refused with DuplicateName
// naming the holder.
func TestVMNamesAreUniqueInTheirFolder(t *testing.T) {
	t.Parallel()
	l := startLab(t)
	ctx := context.Background()
	name := l.VMNames()[0]
	host := l.VMHostName(name)

	var dup *types.DuplicateName
	if _, ok := fault.As(l.CreateVM(ctx, name, host, 19), &dup); !ok || dup.Object.Value != l.VMID(name) {
		t.Fatalf("a second %s in its folder: %+v, want DuplicateName naming %s", name, dup, l.VMID(name))
	}
	if err := l.CreateVM(ctx, "gpu-node-50", host, 19); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateVM(ctx, "gpu-node-50", host, 19); !fault.Is(err, &types.DuplicateName{}) {
		t.Fatalf("a second gpu-node-50: %v, want DuplicateName", err)
	}
}
