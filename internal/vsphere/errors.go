package vsphere

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"
)

// Errors callers branch on. Every error from this package that stems from a
// vSphere fault wraps one of these, so the provider never has to know govmomi.
var (
	ErrNotFound      = errors.New("not found")
	ErrAmbiguous     = errors.New("more than one object matches")
	ErrInvalidState  = errors.New("invalid state")
	ErrInUse         = errors.New("in use")
	ErrAlreadyExists = errors.New("already exists")
	ErrConcurrent    = errors.New("changed concurrently")
	ErrInvalidArg    = errors.New("invalid argument")
	ErrNoPermission  = errors.New("permission denied")
	ErrNotConfigured = errors.New("no vCenter connection configured")
	ErrLogin         = errors.New("login failed")
	ErrUntrustedCert = errors.New("certificate not trusted")
	ErrUnreachable   = errors.New("vCenter unreachable")
	// ErrConnectionLost: the connection closed before vCenter's answer
	// came, so what it did of the request is not known.
	ErrConnectionLost = errors.New("connection to vCenter lost")
	ErrNotImplemented = errors.New("not supported by this vCenter")
	ErrNeedsVCenter   = errors.New("needs vCenter, not a standalone ESXi host")
	// ErrNoSuchVmknic is the Cause of an ErrNotFound for a host's VMkernel
	// adapter named to probe from.
	ErrNoSuchVmknic = errors.New("no such VMkernel adapter")
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

// Error is a failure translated for people: what was being done, the kind of
// failure, what it concerns and what was said about it, in vSphere's terms.
// The provider adds how to fix it in Terraform's terms.
type Error struct {
	Op      string   // e.g. "reading host host-21"
	Kind    error    // one of the Err* values
	Message string   // vCenter's localized message (the fault type when it gave none), or this package's own
	Object  Object   // the kind of object it concerns, when known
	ID      string   // that object's id as it was given (ids, comma-separated)
	IDs     []string // on ErrNotFound for ids given: each id that names nothing
	Looks   []Shape  // what each of IDs looks like
	Cause   error    // a finer reason callers may match, e.g. mtu.ErrBelowMin; not printed
}

// Object is a kind of vSphere object named in an error.
type Object string

// The objects errors name.
const (
	ObjectDatacenter     Object = "datacenter"
	ObjectHost           Object = "host"
	ObjectVirtualMachine Object = "virtual machine"
	ObjectSwitch         Object = "distributed switch"
	ObjectPortGroup      Object = "distributed port group"
	ObjectNetwork        Object = "network"
)

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s", e.Op, e.Kind)
	}
	return fmt.Sprintf("%s: %s", e.Op, e.Message)
}

func (e *Error) Unwrap() []error { return []error{e.Kind, e.Cause} }

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
	if isFault(err) { // one with no kind of its own: vCenter's words, not govmomi's "ServerFaultCode: ..."
		return &faultError{op: op, msg: faultMessage(err), err: err}
	}
	var netErr net.Error
	if answerLost(err) && (!errors.As(err, &netErr) || !netErr.Timeout()) {
		return &Error{Op: op, Kind: ErrConnectionLost, Cause: err, Message: fmt.Sprintf(
			"the connection to vCenter closed before its answer came (%v)", err)}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isFault reports whether err carries a vSphere fault.
func isFault(err error) bool {
	found := false
	fault.In(err, func(types.BaseMethodFault, string, []types.LocalizableMessage) bool {
		found = true
		return true
	})
	return found
}

// faultError is a vSphere fault of no kind, worded by translate.
type faultError struct {
	op, msg string
	err     error
}

func (e *faultError) Error() string { return e.op + ": " + e.msg }
func (e *faultError) Unwrap() error { return e.err }

// faultWithoutMessage words a fault vCenter sent with no message (govmomi
// then says its Go type, "*types.InvalidArgument"): its vSphere name and the
// argument it names, when it names one.
func faultWithoutMessage(err error) string {
	name, property := faultName(err), ""
	fault.In(err, func(f types.BaseMethodFault, _ string, _ []types.LocalizableMessage) bool {
		if ia, ok := f.(*types.InvalidArgument); ok {
			property = ia.InvalidProperty
		}
		return true
	})
	if name == "" {
		return "vCenter refused the request without saying why"
	}
	if property != "" {
		return fmt.Sprintf("vCenter refused the request as invalid (%s, property %s) without saying more", name, property)
	}
	return fmt.Sprintf("vCenter refused the request (%s) without saying why", name)
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
	// No message, or only the fault's name ("HostNotConnected").
	if msg == "" || strings.HasPrefix(msg, "*types.") || msg == faultName(err) {
		msg = faultWithoutMessage(err)
	}
	return msg
}

// faultName is the vSphere name of err's fault, "" when it carries none.
func faultName(err error) string {
	var name string
	fault.In(err, func(f types.BaseMethodFault, _ string, _ []types.LocalizableMessage) bool {
		name = reflect.TypeOf(f).Elem().Name()
		return true
	})
	return name
}

func notFound(op, format string, args ...any) error {
	return &Error{Op: op, Kind: ErrNotFound, Message: fmt.Sprintf(format, args...)}
}

// errNeedsVCenter is the error for what a standalone ESXi host cannot do.
func errNeedsVCenter(op string) error {
	return &Error{Op: op, Kind: ErrNeedsVCenter, Message: "this needs vCenter, and the server is a standalone ESXi host"}
}

// ConnectError is a failure to reach vCenter or to log in, with the facts
// that tell which connection setting to change.
type ConnectError struct {
	Op        string
	Kind      error  // ErrLogin, ErrUntrustedCert or ErrUnreachable
	Server    string // host[:port]
	User      string // on ErrLogin
	CAFile    string // set when the CA bundle could not be used
	Pinned    string // the pinned thumbprint the certificate does not match
	Presented string // the certificate's SHA-1 thumbprint, when it could be read
	Cause     error
}

func (e *ConnectError) Error() string {
	switch {
	case e.Kind == ErrLogin:
		return fmt.Sprintf("%s: vCenter rejected the user name or password for %q", e.Op, e.User)
	case e.CAFile != "":
		return fmt.Sprintf("%s: cannot use CA bundle %s: %v", e.Op, e.CAFile, e.Cause)
	case e.Pinned != "":
		return fmt.Sprintf("%s: the certificate of %s does not match thumbprint %s: it presents %s", e.Op, e.Server, e.Pinned, e.Presented)
	case e.Kind == ErrUntrustedCert:
		msg := fmt.Sprintf("%s: the TLS certificate of %s is not trusted (%v)", e.Op, e.Server, e.Cause)
		if e.Presented != "" {
			msg += fmt.Sprintf("; the server presents thumbprint %s", e.Presented)
		}
		return msg
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Cause)
}

func (e *ConnectError) Unwrap() error { return e.Kind }
