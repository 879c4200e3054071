package vsphere

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"
)

// Errors callers branch on. Every error from this package that stems from a
// vSphere fault wraps one of these, so the provider never has to know govmomi.
var (
	ErrNotFound       = errors.New("not found")
	ErrAmbiguous      = errors.New("more than one object matches")
	ErrInvalidState   = errors.New("invalid state")
	ErrInUse          = errors.New("in use")
	ErrAlreadyExists  = errors.New("already exists")
	ErrConcurrent     = errors.New("changed concurrently")
	ErrInvalidArg     = errors.New("invalid argument")
	ErrNoPermission   = errors.New("permission denied")
	ErrNotConfigured  = errors.New("no vCenter connection configured")
	ErrLogin          = errors.New("login failed")
	ErrUntrustedCert  = errors.New("certificate not trusted")
	ErrUnreachable    = errors.New("vCenter unreachable")
	ErrNotImplemented = errors.New("not supported by this vCenter")
)

// faultKinds maps vSphere faults to the errors above. fault.Is matches the
// exact fault type (or a fault's cause), so subtypes are listed on their own.
var faultKinds = []struct {
	fault types.BaseMethodFault
	kind  error
}{
	{&types.ManagedObjectNotFound{}, ErrNotFound},
	{&types.NotFound{}, ErrNotFound},
	{&types.InvalidLogin{}, ErrLogin},
	{&types.NotAuthenticated{}, ErrLogin},
	{&types.NoPermission{}, ErrNoPermission},
	{&types.ResourceInUse{}, ErrInUse},
	{&types.DuplicateName{}, ErrAlreadyExists},
	{&types.AlreadyExists{}, ErrAlreadyExists},
	{&types.ConcurrentAccess{}, ErrConcurrent},
	{&types.InvalidPowerState{}, ErrInvalidState},
	{&types.InvalidState{}, ErrInvalidState},
	{&types.InvalidArgument{}, ErrInvalidArg},
	{&types.InvalidName{}, ErrInvalidArg},
	{&types.InvalidDeviceBacking{}, ErrInvalidArg},
	{&types.DeviceUnsupportedForVmVersion{}, ErrInvalidArg},
	{&types.InvalidVmConfig{}, ErrInvalidArg},
	{&types.NotSupported{}, ErrNotImplemented},
	{&types.MethodNotFound{}, ErrNotImplemented},
}

// Error is a vSphere fault translated for people: what was being done, the
// kind of failure, and vCenter's own message.
type Error struct {
	Op      string // e.g. "reading host host-21"
	Kind    error  // one of the Err* values
	Message string // vCenter's localized message, or the fault type when it gave none
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s", e.Op, e.Kind)
	}
	return fmt.Sprintf("%s: %s", e.Op, e.Message)
}

func (e *Error) Unwrap() error { return e.Kind }

// translate wraps err as an *Error describing op. Errors that are not vSphere
// faults keep their text and gain the op.
func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	var nf *find.NotFoundError
	if errors.As(err, &nf) {
		return &Error{Op: op, Kind: ErrNotFound, Message: nf.Error()}
	}
	var denied *types.NoPermission
	if _, ok := fault.As(err, &denied); ok && denied.PrivilegeId != "" {
		object := "the object"
		if denied.Object != nil {
			object = denied.Object.Value
		}
		return &Error{Op: op, Kind: ErrNoPermission, Message: fmt.Sprintf(
			"the vCenter user lacks the privilege %s on %s; add it to the user's role", denied.PrivilegeId, object)}
	}
	for _, fk := range faultKinds {
		if fault.Is(err, fk.fault) {
			return &Error{Op: op, Kind: fk.kind, Message: faultMessage(err)}
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// faultMessage prefers vCenter's localized message, which names the object
// and reason, over govmomi's "ServerFaultCode: ..." wrapping.
func faultMessage(err error) string {
	var msg string
	fault.In(err, func(_ types.BaseMethodFault, localizedMessage string, _ []types.LocalizableMessage) bool {
		msg = localizedMessage
		return msg != ""
	})
	if msg == "" {
		msg = strings.TrimPrefix(err.Error(), "ServerFaultCode: ")
	}
	return msg
}

func notFound(op, format string, args ...any) error {
	return &Error{Op: op, Kind: ErrNotFound, Message: fmt.Sprintf(format, args...)}
}

// errNeedsVCenter is the error for what a standalone ESXi host cannot do.
func errNeedsVCenter(op string) error {
	return &Error{Op: op, Kind: ErrNotImplemented, Message: "this needs vCenter; vsphere_server names a standalone ESXi host"}
}
