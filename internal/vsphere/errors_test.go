package vsphere

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os"
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
			LocalizedMethodFault: &types.LocalizedMethodFault{
				Fault:            &types.InvalidArgument{InvalidProperty: "spec.deviceChange"},
				LocalizedMessage: localized,
			},
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

// A fault of no kind of its own (HostNotConnected) is worded as vCenter
// words it, or by its vSphere name when vCenter said nothing more, never as
// govmomi's "ServerFaultCode: ...", and keeps the fault for callers.
func TestTranslateFaultOfNoKind(t *testing.T) {
	for localized, want := range map[string]string{
		"":                           "vCenter refused the request (HostNotConnected) without saying why",
		"HostNotConnected":           "vCenter refused the request (HostNotConnected) without saying why",
		"The host is not connected.": "The host is not connected.",
	} {
		err := translate("reading host host-21", task.Error{
			LocalizedMethodFault: &types.LocalizedMethodFault{Fault: &types.HostNotConnected{}, LocalizedMessage: localized},
		})
		if err.Error() != "reading host host-21: "+want {
			t.Errorf("vCenter's message %q: %q, want %q", localized, err, "reading host host-21: "+want)
		}
		var kept task.Error
		if !errors.As(err, &kept) {
			t.Errorf("vCenter's message %q: the fault is not kept in %#v", localized, err)
		}
	}
}

// A connection closed before vCenter's answer came is said as such, keeping
// the transport's error for callers; a network timeout is not (the provider
// names api_timeout for it).
func TestTranslateConnectionLost(t *testing.T) {
	lost := &url.Error{Op: "Post", URL: "https://vc/sdk", Err: io.EOF}
	err := translate("setting SR-IOV", lost)
	if !errors.Is(err, ErrConnectionLost) || !errors.Is(err, io.EOF) ||
		err.Error() != `setting SR-IOV: the connection to vCenter closed before its answer came (Post "https://vc/sdk": EOF)` {
		t.Errorf("translate(%v) = %q (%#v); want ErrConnectionLost, worded, keeping the EOF", lost, err, err)
	}
	timeout := &url.Error{Op: "Post", URL: "https://vc/sdk", Err: &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}}
	if err := translate("setting SR-IOV", timeout); errors.Is(err, ErrConnectionLost) {
		t.Errorf("translate(%v) = %q: a timeout taken for a lost connection", timeout, err)
	}
}
