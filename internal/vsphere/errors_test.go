package vsphere

import (
	"errors"
	"strings"
	"testing"

	"github.com/vmware/govmomi/task"
	"github.com/vmware/govmomi/vim25/types"
)

// A fault vCenter sends without a message is worded by its vSphere name and
// the argument it names, never by its Go type (issue 22, item 4: an SR-IOV
// adapter's apply failed with "*types.InvalidArgument").
// vcsim fills the message with the Go type (%T); vCenter may leave it empty.
func TestTranslateFaultWithoutMessage(t *testing.T) {
	for _, localized := range []string{"", "*types.InvalidArgument"} {
		err := translate("adding an SR-IOV adapter to virtual machine vm-81", task.Error{
			LocalizedMethodFault: &types.LocalizedMethodFault{Fault: &types.InvalidArgument{InvalidProperty: "spec.deviceChange"}, LocalizedMessage: localized},
		})
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalidArg) {
			t.Fatalf("%#v, want an *Error of kind ErrInvalidArg", err)
		}
		if strings.Contains(err.Error(), "*types.") || !strings.Contains(e.Message, "InvalidArgument, property spec.deviceChange") {
			t.Fatalf("message %q: want the fault's vSphere name and property, no Go type", err)
		}
	}
}
