package vcsimlab

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/types"
)

// Ten goroutines wait for tasks on the session's one property collector,
// as the vSphere provider does (govmomi's Task.WaitForResultEx, each with a
// filter of its own created and destroyed around its wait), while the
// filters of finished waits are destroyed. vSphere allows such waits to
// block until their context ends; the lab must never crash the call (the
// client would see the connection drop) nor keep Close waiting.
func TestConcurrentWaitsOnOneCollector(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, l)
	vms := l.VMNames()
	// Alone, a wait on the session's collector sees its task end.
	task, err := object.NewVirtualMachine(c.Client, vmRef(l, vms[0])).
		Reconfigure(context.Background(), types.VirtualMachineConfigSpec{Annotation: "alone"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.WaitForResultEx(context.Background()); err != nil {
		t.Fatalf("a lone wait: %v", err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vm := object.NewVirtualMachine(c.Client, vmRef(l, vms[i%len(vms)]))
			for range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: "wait"})
				if err == nil {
					_, err = task.WaitForResultEx(ctx)
				}
				cancel()
				// Blocking until the context ends is allowed; anything else is not.
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					errs <- err
				}
			}
		}()
	}
	// Filters made and destroyed on the same collector during the waits.
	wg.Add(1)
	go func() {
		defer wg.Done()
		pc := property.DefaultCollector(c.Client)
		for range 50 {
			f, err := pc.CreateFilter(context.Background(), types.CreateFilter{Spec: types.PropertyFilterSpec{
				ObjectSet: []types.ObjectSpec{{Obj: vmRef(l, vms[0])}},
				PropSet:   []types.PropertySpec{{Type: "VirtualMachine", PathSet: []string{"config.annotation"}}},
			}})
			if err != nil {
				errs <- err
				return
			}
			if err := f.Destroy(context.Background()); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a wait on the shared collector failed: %v", err)
	}
	// The collector still answers: a wait for one update calculation
	// (maxWaitSeconds 0) returns, however many waits still block. Whether a
	// blocked wait sees its task end depends on which poll takes the update,
	// so on timing; the lone wait above is what must see it.
	zero := int32(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := property.DefaultCollector(c.Client).WaitForUpdatesEx(ctx, &property.WaitOptions{
		Options: &types.WaitOptions{MaxWaitSeconds: &zero},
	}, func([]types.ObjectUpdate) bool { return true }); err != nil {
		t.Errorf("a wait of maxWaitSeconds 0 on the collector after the concurrent waits: %v", err)
	}
	l.Close() // returns although waits may still block: the test would time out otherwise
}
