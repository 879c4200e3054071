package vsphere

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// Every finding type of this package is in a planner's list, so the
// provider's wording tests see it (issue 22, item 5).
func TestFindingsListed(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, path := range paths {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "finding" {
				continue
			}
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			declared = append(declared, recv.(*ast.Ident).Name)
		}
	}
	var listed []string
	for _, list := range [][]Finding{DVSFindings, HostPVRDMAFindings, PassthroughFindings, HostSRIOVFindings, HostGraphicsFindings, PowerFindings,
		PowerActionFindings, GPUMMIOFindings, PVRDMANICFindings, SRIOVNICFindings} {
		for _, f := range list {
			ty := reflect.TypeOf(f)
			if ty.Kind() == reflect.Pointer {
				ty = ty.Elem()
			}
			listed = append(listed, ty.Name())
		}
	}
	if len(declared) < 40 {
		t.Fatalf("found only %d finding types: %v", len(declared), declared)
	}
	for _, name := range declared {
		if !slices.Contains(listed, name) {
			t.Errorf("finding %s is in no planner's list in plan.go", name)
		}
	}
}
