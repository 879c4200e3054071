package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/acctest"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vcsimlab"
)

// manualClock is a batch clock whose time stands still and whose waits end
// only when the test ends them.
type manualClock struct {
	mu    sync.Mutex
	waits []chan time.Time
}

var manualNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (*manualClock) Now() time.Time { return manualNow }

func (m *manualClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- manualNow
		return ch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waits = append(m.waits, ch)
	return ch
}

// waiting is the number of waits begun and not ended.
func (m *manualClock) waiting() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waits)
}

// endWaits ends every wait begun so far.
func (m *manualClock) endWaits() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ch := range m.waits {
		ch <- manualNow
	}
	m.waits = nil
}

// manualBatch gives c's shared reads a manual clock, after a first read
// (which logs in): from then on a read waits for company until the test
// ends the waits (a read came lately, as the clock stands still).
func manualBatch(t *testing.T, c *Client, vmID string) *manualClock {
	t.Helper()
	clk := &manualClock{}
	c.batch.clock = clk
	if _, err := freshRead(c, vmID); err != nil {
		t.Fatal(err)
	}
	settle(c, clk)
	return clk
}

// freshRead reads a VM's name fresh: in a shared call, never from the
// command's prefetch (which answers refresh reads, see prefetch.go).
func freshRead(c *Client, vmID string) (*mo.VirtualMachine, error) {
	ctx := context.Background()
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	return c.readVMPropsAs(ctx, vc, "reading", vmID, []string{"name"}, fresh)
}

// settle ends the batch's waits until no call is in flight or due.
func settle(c *Client, clk *manualClock) {
	for {
		c.batch.mu.Lock()
		running := c.batch.running
		c.batch.mu.Unlock()
		if !running {
			return
		}
		clk.endWaits()
		time.Sleep(time.Millisecond)
	}
}

// waitPending returns once n reads wait for a call.
func waitPending(c *Client, n int) {
	for {
		c.batch.mu.Lock()
		pending := len(c.batch.pending)
		c.batch.mu.Unlock()
		if pending == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Reads made at the same moment share a RetrievePropertiesEx, and each
// still gets its own object.
func TestConcurrentReadsShareACall(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{VMs: 6})
	c := labClient(lab)
	names := lab.VMNames()
	clk := manualBatch(t, c, lab.VMID(names[0]))
	lab.ResetCalls()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vm, err := freshRead(c, lab.VMID(name))
			if err == nil && vm.Name != name {
				err = errors.New("read " + vm.Name + " for " + name)
			}
			errs[i] = err
		}()
	}
	waitPending(c, len(names))
	settle(c, clk)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", names[i], err)
		}
	}
	if n := lab.Calls()["RetrievePropertiesEx"]; n != 1 {
		t.Errorf("%d concurrent reads took %d RetrievePropertiesEx calls, want 1", len(names), n)
	}
	if got, want := c.batch.stats, (ReadStats{Calls: 2, Reads: 1 + len(names)}); got != want {
		t.Errorf("stats %+v, want %+v (the first read, then the shared call)", got, want)
	}
}

// A read whose reader gave up before its call left goes out with no call:
// the call carries the others, and none is made when none is left.
func TestAbandonedReadIsNotSent(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{VMs: 2})
	c := labClient(lab)
	names := lab.VMNames()
	clk := manualBatch(t, c, lab.VMID(names[0]))
	vc, err := c.vimClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	read := func(ctx context.Context, name string) error {
		_, err := c.readVMPropsAs(ctx, vc, "reading", lab.VMID(name), []string{"name"}, fresh)
		return err
	}
	lab.ResetCalls()
	abandoned, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- read(abandoned, names[0]) }()
	waitPending(c, 1)
	kept := make(chan error, 1)
	go func() { kept <- read(context.Background(), names[1]) }()
	waitPending(c, 2)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned read: %v, want context.Canceled", err)
	}
	settle(c, clk)
	if err := <-kept; err != nil {
		t.Fatal(err)
	}
	if got, want := c.batch.stats, (ReadStats{Calls: 2, Reads: 2}); got != want {
		t.Errorf("stats %+v, want %+v (the first read, then a call of the one kept)", got, want)
	}

	alone, cancelAlone := context.WithCancel(context.Background())
	go func() { gaveUp <- read(alone, names[0]) }()
	waitPending(c, 1)
	cancelAlone()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the read given up alone: %v, want context.Canceled", err)
	}
	settle(c, clk)
	if n := lab.Calls()["RetrievePropertiesEx"]; n != 1 {
		t.Errorf("%d RetrievePropertiesEx calls, want 1: none for a read whose reader gave up", n)
	}
}

// inOneCall's reads share one call although the second comes only after
// the call's wait for company has ended (the stats count it joined), and a
// function that returns without reading holds nothing up; errors come in
// the functions' order.
func TestInOneCallWaitsForEveryReader(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	c := labClient(lab)
	names := lab.VMNames()
	clk := manualBatch(t, c, lab.VMID(names[0]))
	lab.ResetCalls()
	gate := make(chan struct{})
	var first, second *mo.VirtualMachine
	done := make(chan error, 1)
	go func() {
		done <- c.inOneCall(context.Background(),
			func(context.Context) error { return nil },
			func(ctx context.Context) (err error) {
				first, err = readAs(ctx, c, lab.VMID(names[0]))
				return err
			},
			func(ctx context.Context) (err error) {
				<-gate
				second, err = readAs(ctx, c, lab.VMID(names[1]))
				return err
			})
	}()
	waitPending(c, 1)
	for clk.waiting() == 0 { // the call's wait for company has begun
		time.Sleep(time.Millisecond)
	}
	clk.endWaits() // and is over: only the hold keeps the call back
	// Time for a call to leave, were the hold not kept; the verdict does
	// not depend on it.
	time.Sleep(20 * time.Millisecond)
	close(gate)
	settle(c, clk)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if first.Name != names[0] || second.Name != names[1] {
		t.Fatalf("read %s and %s, want %s and %s", first.Name, second.Name, names[0], names[1])
	}
	if n := lab.Calls()["RetrievePropertiesEx"]; n != 1 {
		t.Errorf("inOneCall's two reads took %d RetrievePropertiesEx calls, want 1", n)
	}
	if stats := c.batch.stats; stats.Joined != 1 {
		t.Errorf("stats %+v, want 1 read joined: the second read shares the first's call even at parallelism 1", stats)
	}
	err := c.inOneCall(context.Background(),
		func(context.Context) error { return errors.New("first") },
		func(context.Context) error { return errors.New("second") })
	if err == nil || err.Error() != "first" {
		t.Errorf("inOneCall's error: %v, want the first function's", err)
	}
}

// readAs reads a VM's name fresh with ctx (which may carry an inOneCall hold).
func readAs(ctx context.Context, c *Client, vmID string) (*mo.VirtualMachine, error) {
	vc, err := c.vimClient(ctx)
	if err != nil {
		return nil, err
	}
	return c.readVMPropsAs(ctx, vc, "reading", vmID, []string{"name"}, fresh)
}

// A shared call that fails for one read (its object is gone) fails only that
// read: the others are answered, each read retried alone.
func TestSharedReadFailureIsPerRead(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	c := labClient(lab)
	existing := lab.VMID("hpc-node-0")
	clk := manualBatch(t, c, existing)
	lab.ResetCalls()
	var wg sync.WaitGroup
	var gone, there error
	for _, id := range []string{"vm-99999", existing, "vm-99998"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := freshRead(c, id)
			if id == existing {
				there = err
			} else if !errors.Is(err, ErrNotFound) {
				gone = err
			}
		}()
	}
	waitPending(c, 3)
	settle(c, clk)
	wg.Wait()
	if there != nil || gone != nil {
		t.Fatalf("existing VM: %v; missing VMs (want ErrNotFound): %v", there, gone)
	}
	if n := lab.Calls()["RetrievePropertiesEx"]; n != 4 {
		t.Errorf("3 reads took %d RetrievePropertiesEx calls, want 4: the shared call, then each alone", n)
	}
}

// Look-ups by name share one index of the datacenter's host and VM names
// per client: N hosts found by name cost two calls, the command's first
// prefetch, which holds the names with every VM (see prefetch_all.go), and
// the hosts' prefetch; the VMs' look-ups then make no call at all.
// A name the index lacks reads it once more (the host may be new).
func TestLookupsByNameShareOneIndex(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	if _, err := c.DatacenterByName(ForChange(ctx), lab.DatacenterName()); err != nil { // logs in, no prefetch
		t.Fatal(err)
	}
	lab.ResetCalls()
	for _, name := range lab.HostNames() {
		h, err := c.HostByName(ctx, lab.DatacenterID(), name)
		if err != nil || h.Name != name {
			t.Fatalf("HostByName(%s) = %+v, %v", name, h, err)
		}
	}
	if n, want := lab.Calls()["RetrievePropertiesEx"], 2; n != want {
		t.Errorf("%d look-ups took %d RetrievePropertiesEx calls, want %d", len(lab.HostNames()), n, want)
	}
	lab.ResetCalls()
	for _, name := range lab.VMNames() {
		if vm, err := c.VMByName(ctx, lab.DatacenterID(), name); err != nil || vm.Name != name {
			t.Fatalf("VMByName(%s) = %+v, %v", name, vm, err)
		}
	}
	if calls := lab.Calls(); len(calls) != 0 {
		t.Errorf("%d VM look-ups after the hosts' made %v, want no call", len(lab.VMNames()), calls)
	}
	lab.ResetCalls()
	if _, err := c.HostByName(ctx, lab.DatacenterID(), "esx-new"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing host: %v", err)
	}
	if n := lab.Calls()["RetrievePropertiesEx"]; n != 1 {
		t.Errorf("a missing name took %d RetrievePropertiesEx calls, want 1 (the index read again)", n)
	}
}

// A command resolves the UUIDs of all its VMs in one call, however many VMs
// and reads (vmuuid.go); a UUID the index lacks, such as a VM created
// since, is searched with FindAllByUuid, once.
func TestVMUUIDsResolvedInOneCall(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	c := labClient(lab)
	for range 2 {
		for _, name := range lab.VMNames() {
			if _, err := c.VM(ctx, lab.VMUUID(name)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GPUMMIO(ctx, lab.VMUUID(name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	calls := lab.Calls()
	if calls["FindAllByUuid"] != 0 || calls["RetrievePropertiesEx"] != 1 {
		t.Errorf("%d VMs read twice by UUID took %d FindAllByUuid and %d RetrievePropertiesEx calls, want 0 and 1 (the command's "+
			"first prefetch: the UUIDs, the VMs and the GPU setups' properties)", len(lab.VMNames()), calls["FindAllByUuid"], calls["RetrievePropertiesEx"])
	}

	if err := lab.CreateVM(ctx, "late-vm", lab.HostNames()[0], 19); err != nil {
		t.Fatal(err)
	}
	late, err := c.VMByName(ctx, lab.DatacenterID(), "late-vm")
	if err != nil {
		t.Fatal(err)
	}
	lab.ResetCalls()
	for range 3 {
		if _, err := c.VM(ctx, late.ID); err != nil {
			t.Fatalf("a VM created after the index was read: %v", err)
		}
	}
	if n := lab.Calls()["FindAllByUuid"]; n != 1 {
		t.Errorf("a VM the index lacks, read 3 times, was searched %d times, want 1", n)
	}
}

// A UUID two VMs share is refused as ambiguous, naming both, rather than
// resolved to whichever vCenter finds first; each VM is still found by its
// managed object id.
func TestSharedVMUUIDIsAmbiguous(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
	ctx := context.Background()
	vms := lab.VMNames()
	shared := lab.VMUUID(vms[0])
	if err := lab.SetVMUUID(ctx, vms[1], shared); err != nil {
		t.Fatal(err)
	}
	c := labClient(lab)
	_, err := c.VM(ctx, shared)
	for _, want := range []string{"2 virtual machines have BIOS UUID " + shared, lab.VMID(vms[0]), lab.VMID(vms[1]), "uuid.bios"} {
		if !errors.Is(err, ErrAmbiguous) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("a shared UUID: %v; want ErrAmbiguous naming %q", err, want)
		}
	}
	for _, name := range vms[:2] {
		if vm, err := c.VM(ctx, lab.VMID(name)); err != nil || vm.Name != name {
			t.Errorf("%s by its managed object id: %+v, %v", name, vm, err)
		}
	}
}

// Waiting for a task reads its state through the shared reads: no collector,
// filter or WaitForUpdatesEx of its own.
func TestTaskWaitUsesSharedReads(t *testing.T) {
	t.Parallel()
	lab := acctest.StartLab(t, vcsimlab.Options{})
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
