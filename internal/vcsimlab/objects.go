package vcsimlab

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Helpers on the simulator's inventory objects that several handlers share.

// newContext returns a fresh context for changing objects of the registry
// outside of a SOAP call. Locks are shared per context, so each change
// needs its own.
func newContext(reg *simulator.Registry) *simulator.Context {
	return &simulator.Context{Context: context.Background(), Map: reg}
}

// setMember adds ref to (or removes it from) the reference list property
// prop of the object obj, under obj's lock.
func setMember(ctx *simulator.Context, obj types.ManagedObjectReference, prop string, ref types.ManagedObjectReference, in bool) {
	o := ctx.Map.Get(obj)
	if o == nil {
		return
	}
	ctx.WithLock(o, func() {
		field := reflect.ValueOf(o).Elem().FieldByName(strings.ToUpper(prop[:1]) + prop[1:])
		if !field.IsValid() {
			return
		}
		refs, ok := field.Interface().([]types.ManagedObjectReference)
		if !ok {
			return
		}
		has := slices.Contains(refs, ref)
		switch {
		case in && !has:
			refs = append(slices.Clone(refs), ref)
		case !in && has:
			refs = slices.DeleteFunc(slices.Clone(refs), func(r types.ManagedObjectReference) bool { return r == ref })
		default:
			return
		}
		ctx.Update(o, []types.PropertyChange{{Name: prop, Val: refs}})
	})
}

// allVMs lists every VM of the inventory.
func allVMs(ctx *simulator.Context) []types.ManagedObjectReference {
	var vms []types.ManagedObjectReference
	for _, e := range ctx.Map.All("VirtualMachine") {
		vms = append(vms, e.Reference())
	}
	return vms
}

// vmsUsing names the VMs among vms with a network adapter on a distributed
// port that match accepts.
func vmsUsing(ctx *simulator.Context, vms []types.ManagedObjectReference, match func(*types.DistributedVirtualSwitchPortConnection) bool) []string {
	var names []string
	for _, ref := range vms {
		vm, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine)
		if !ok {
			continue
		}
		ctx.WithLock(vm, func() {
			if vm.Config == nil {
				return
			}
			for _, d := range vm.Config.Hardware.Device {
				nic, ok := d.(types.BaseVirtualEthernetCard)
				if !ok {
					continue
				}
				b, ok := nic.GetVirtualEthernetCard().Backing.(*types.VirtualEthernetCardDistributedVirtualPortBackingInfo)
				if ok && match(&b.Port) {
					names = append(names, vm.Name)
					return
				}
			}
		})
	}
	slices.Sort(names)
	return names
}

// checkName refuses a name that another child of the folder has.
func checkName(ctx *simulator.Context, parent *types.ManagedObjectReference, name string) *vimError {
	if parent == nil {
		return nil
	}
	f, ok := ctx.Map.Get(*parent).(*simulator.Folder)
	if !ok {
		return nil
	}
	var children []types.ManagedObjectReference
	ctx.WithLock(f, func() { children = slices.Clone(f.ChildEntity) })
	if e := ctx.Map.FindByName(name, children); e != nil {
		return refuse(&types.DuplicateName{Name: name, Object: e.Reference()}, "The name '%s' already exists.", name)
	}
	return nil
}

var errConcurrent = refuse(&types.ConcurrentAccess{}, "Cannot complete operation due to concurrent modification by another operation.")

// checkConfigVersion checks the configVersion of a reconfigure spec against
// the object's current one: required, and the same, or someone else changed
// the object since the client read it (vSphere API reference,
// DVSConfigSpec.configVersion and DVPortgroupConfigSpec.configVersion; the
// ConcurrentAccess fault lists ReconfigureDvs_Task and
// ReconfigureDVPortgroup_Task).
func checkConfigVersion(spec, current string) *vimError {
	if spec == "" {
		return invalidArgument("spec.configVersion")
	}
	if spec != current {
		return errConcurrent
	}
	return nil
}

// nextVersion bumps a configVersion, as vCenter does on every change.
func nextVersion(v string) string {
	n, _ := strconv.Atoi(v)
	return strconv.Itoa(n + 1)
}

// removeEntity removes a network entity from its folder, its datacenter's
// network list and the inventory.
func removeEntity(ctx *simulator.Context, ref types.ManagedObjectReference) {
	e, ok := ctx.Map.Get(ref).(mo.Entity)
	if !ok {
		return
	}
	if parent := e.Entity().Parent; parent != nil {
		if f, ok := ctx.Map.Get(*parent).(*simulator.Folder); ok {
			ctx.WithLock(f, func() {
				children := slices.DeleteFunc(slices.Clone(f.ChildEntity), func(r types.ManagedObjectReference) bool { return r == ref })
				ctx.Update(f, []types.PropertyChange{{Name: "childEntity", Val: children}})
			})
			if f.Parent != nil {
				setMember(ctx, *f.Parent, "network", ref, false)
			}
		}
	}
	ctx.Map.Remove(ctx, ref)
}

func names(es []entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.name
	}
	return out
}

func find(es []entry, name string) entry {
	for _, e := range es {
		if e.name == name {
			return e
		}
	}
	return entry{}
}

// ref is shorthand for a managed object reference.
func ref(kind, value string) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: kind, Value: value}
}
