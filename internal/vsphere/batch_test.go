package vsphere

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// Reads made at the same moment share a RetrievePropertiesEx: with the
// first call slowed down, every read that arrives meanwhile goes out in the
// next one. Each read still gets its own object.
func TestConcurrentReadsShareACall(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{VMs: 6})
	ctx := context.Background()
	c := labClient(lab)
	if _, err := c.DatacenterByName(ctx, lab.DatacenterName()); err != nil { // log in first
		t.Fatal(err)
	}
	lab.Delay("RetrievePropertiesEx", 100*time.Millisecond)
	lab.ResetCalls()
	names := lab.VMNames()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vm, err := c.VM(ctx, lab.VMID(name))
			if err == nil && vm.Name != name {
				err = errors.New("read " + vm.Name + " for " + name)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", names[i], err)
		}
	}
	if n := lab.Calls()["RetrievePropertiesEx"]; n > 2 {
		t.Errorf("%d concurrent reads took %d RetrievePropertiesEx calls, want at most 2", len(names), n)
	}
}

// A shared call that fails for one read (its object is gone) fails only that
// read: the others are answered.
func TestSharedReadFailureIsPerRead(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	if _, err := c.DatacenterByName(ctx, lab.DatacenterName()); err != nil {
		t.Fatal(err)
	}
	lab.Delay("RetrievePropertiesEx", 50*time.Millisecond)
	var wg sync.WaitGroup
	var gone, there error
	for _, id := range []string{"vm-99999", lab.VMID("hpc-node-0"), "vm-99998"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.VM(ctx, id)
			if id == lab.VMID("hpc-node-0") {
				there = err
			} else if !errors.Is(err, ErrNotFound) {
				gone = err
			}
		}()
	}
	wg.Wait()
	if there != nil || gone != nil {
		t.Fatalf("existing VM: %v; missing VMs (want ErrNotFound): %v", there, gone)
	}
}

// Look-ups by name share one index of the datacenter's names per client: N
// hosts found by name cost one read of the names, plus each host's own read.
// A name the index lacks reads it once more (the host may be new).
func TestLookupsByNameShareOneIndex(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	if _, err := c.DatacenterByName(ctx, lab.DatacenterName()); err != nil {
		t.Fatal(err)
	}
	lab.ResetCalls()
	for _, name := range lab.HostNames() {
		h, err := c.HostByName(ctx, lab.DatacenterID(), name)
		if err != nil || h.Name != name {
			t.Fatalf("HostByName(%s) = %+v, %v", name, h, err)
		}
	}
	if n, want := lab.Calls()["RetrievePropertiesEx"], 1+len(lab.HostNames()); n != want {
		t.Errorf("%d look-ups took %d RetrievePropertiesEx calls, want %d", len(lab.HostNames()), n, want)
	}
	lab.ResetCalls()
	if _, err := c.HostByName(ctx, lab.DatacenterID(), "esx-new"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing host: %v", err)
	}
	if n := lab.Calls()["RetrievePropertiesEx"]; n != 1 {
		t.Errorf("a missing name took %d RetrievePropertiesEx calls, want 1 (the index read again)", n)
	}
}

// A VM's UUID is searched once per client, however often the VM is read.
func TestVMUUIDSearchedOncePerClient(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	uuid := lab.VMUUID("hpc-node-0")
	for range 3 {
		if _, err := c.VM(ctx, uuid); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GPUMMIO(ctx, uuid); err != nil {
			t.Fatal(err)
		}
	}
	if n := lab.Calls()["FindByUuid"]; n != 1 {
		t.Errorf("6 reads by UUID searched it %d times, want 1", n)
	}
}

// Waiting for a task reads its state through the shared reads: no collector,
// filter or WaitForUpdatesEx of its own.
func TestTaskWaitUsesSharedReads(t *testing.T) {
	t.Parallel()
	lab := startLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	if err := c.ApplyGPUMMIO(ctx, lab.VMUUID("hpc-node-0"), GPUMMIOSpec{GPUs: []GPURequest{{PCIID: "0000:3b:00.0"}}, MMIOSizeGB: 256}); err != nil {
		t.Fatal(err)
	}
	calls := lab.Calls()
	for _, m := range []string{"CreatePropertyCollector", "CreateFilter", "WaitForUpdatesEx", "DestroyPropertyFilter", "DestroyPropertyCollector"} {
		if calls[m] != 0 {
			t.Errorf("%s called %d times: %v", m, calls[m], calls)
		}
	}
	if calls["ReconfigVM_Task"] != 1 {
		t.Errorf("ReconfigVM_Task called %d times, want 1", calls["ReconfigVM_Task"])
	}
}
