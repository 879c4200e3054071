package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mtu"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/runnerprobe"
	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

// This file holds the wording shared by resources and data sources: every
// sentence that names a provider argument or environment variable for an
// error of the service layer, which speaks only vSphere.

// keptAsLastRead reports whether err says vCenter has no configuration for
// the object a resource is read from: a VM that is inaccessible, invalid or
// orphaned, or a host that is disconnected. It then warns that the state
// (what) is kept as last read: the devices and settings are unknown, not
// gone, and re-creating them would make them a second time once the object
// is back.
func keptAsLastRead(err error, what string, diags *diag.Diagnostics) bool {
	summary := "Virtual machine inaccessible"
	switch {
	case errors.Is(err, vsphere.ErrHostDisconnected):
		summary = "Host disconnected"
	case !errors.Is(err, vsphere.ErrVMInaccessible):
		return false
	}
	diags.AddWarning(summary, err.Error()+". "+what+" is kept in state as last read until vCenter can read it again.")
	return true
}

// diagText is the errors of diags in a sentence each, for a warning that
// tells of them.
func diagText(diags diag.Diagnostics) string {
	var out []string
	for _, d := range diags.Errors() {
		out = append(out, strings.TrimSuffix(d.Summary()+": "+d.Detail(), ".")+".")
	}
	return strings.Join(out, " ")
}

// vsphereErrorDiag turns a service-layer error into a diagnostic whose
// summary says what failed and whose detail says what vCenter said and, for
// the failures a user can fix, what to do.
func vsphereErrorDiag(summary string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic(summary, errorDetail(err))
}

// errorDetail is err's text with what to change in the configuration.
func errorDetail(err error) string {
	if err == nil {
		return "vCenter gave no reason."
	}
	var connect *vsphere.ConnectError
	var powerOn *vsphere.PowerOffNeeded
	var e *vsphere.Error
	switch {
	case errors.Is(err, vsphere.ErrNotConfigured):
		return "This needs vCenter, but the provider has no vCenter settings. Set vsphere_server, user and password " +
			"in the provider block, or the VSPHERE_SERVER, VSPHERE_USER and VSPHERE_PASSWORD environment variables."
	case errors.As(err, &connect):
		return connectDetail(connect)
	case errors.As(err, &powerOn):
		return err.Error() + ". " + powerOffFix
	case errors.Is(err, vsphere.ErrNoSuchVmknic):
		return err.Error() + "; set vmknic to one on the fabric to probe"
	case errors.Is(err, mtu.ErrBelowMin):
		return err.Error() + ": lower min_mtu, or raise the MTU of the path"
	case errors.Is(err, runnerprobe.ErrNotLinux):
		return err.Error() + "; use host_system_ids to probe between ESXi hosts"
	case timedOut(err):
		return err.Error() + ". " + apiTimeoutSpent + ", the bound of each operation: raise api_timeout in the provider block " +
			"if vCenter is slow, or check that it is healthy."
	case errors.Is(err, vsphere.ErrConnectionLost):
		return err.Error() + ". vCenter may or may not have done what was asked: run the command again, which reads what " +
			"vCenter has now and does what is left."
	case errors.Is(err, vsphere.ErrNeedsVCenter):
		return err.Error() + ": point vsphere_server at the vCenter that manages the host."
	case errors.As(err, &e) && e.Kind == vsphere.ErrNotFound && idHints[e.Object] != "":
		return err.Error() + "; " + idHints[e.Object]
	}
	return err.Error()
}

// idHints say where a configuration finds the id of each kind of object.
var idHints = map[vsphere.Object]string{
	vsphere.ObjectDatacenter:     "data.vspherehpc_datacenter looks one up by name",
	vsphere.ObjectCluster:        "data.vspherehpc_cluster looks one up by name",
	vsphere.ObjectHost:           "data.vspherehpc_host looks one up by name",
	vsphere.ObjectVirtualMachine: "use vsphere_virtual_machine's id, or data.vspherehpc_virtual_machine to look one up by name",
	vsphere.ObjectPortGroup:      "use the port_group_id of a vspherehpc_rdma_dvs, or vsphere_distributed_port_group's id",
	vsphere.ObjectSwitch:         "use the id of a vspherehpc_rdma_dvs or vsphere_distributed_virtual_switch",
}

func connectDetail(e *vsphere.ConnectError) string {
	switch {
	case errors.Is(e, vsphere.ErrLogin):
		return e.Error() + ". Check user and password in the provider block (or VSPHERE_USER and VSPHERE_PASSWORD)"
	case e.CAFile != "":
		return e.Error() + ". Check ca_file (or VSPHERE_CA_FILE)"
	case e.Pinned != "":
		return e.Error() + ". If the certificate was replaced on purpose, update thumbprint"
	case errors.Is(e, vsphere.ErrUntrustedCert):
		presented := ""
		if e.Presented != "" {
			presented = fmt.Sprintf(" (the server presents %s)", e.Presented)
		}
		return fmt.Sprintf("%s: the TLS certificate of %s is not trusted (%v). Either trust it, by setting ca_file (or VSPHERE_CA_FILE) "+
			"to a PEM bundle with the CA that issued it or thumbprint to the certificate's thumbprint%s; or set allow_unverified_ssl = true "+
			"(or VSPHERE_ALLOW_UNVERIFIED_SSL=true) to skip verification, which is not recommended", e.Op, e.Server, e.Cause, presented)
	case errors.Is(e, vsphere.ErrUnreachable) && timedOut(e.Cause):
		// A vCenter that is slow to answer and one that drops the packets
		// look alike here; both settings are named, the address first.
		return e.Error() + ". " + apiTimeoutSpent + " while connecting: check vsphere_server (or VSPHERE_SERVER) and that vCenter " +
			"is reachable from this machine; if it is, and only slow, raise api_timeout in the provider block"
	case errors.Is(e, vsphere.ErrUnreachable):
		return e.Error() + ". Check vsphere_server (or VSPHERE_SERVER) and that vCenter is reachable from this machine"
	}
	return e.Error()
}

// apiTimeoutSpent says which setting bounded an operation that timed out.
// api_timeout has no environment variable.
var apiTimeoutSpent = "vCenter did not finish within api_timeout (default " + vsphere.DefaultAPITimeout.String() + ")"

// timedOut reports whether err is an operation that ran out of time: the
// context's deadline, or a network timeout that did not say so.
func timedOut(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()
}

// serverProblem words what is wrong with vsphere_server.
func serverProblem(err error) string {
	if errors.Is(err, vsphere.ErrCredentialsInURL) {
		return err.Error() + ": give those in user and password instead"
	}
	return err.Error()
}

// powerOffFix is what to do when a change needs a running VM off.
const powerOffFix = "Power it off first, or set power_off_allowed = true to let the provider shut the guest down, " +
	"make the change and power it back on"

// requireVCenter refuses, at plan time, a resource that needs vCenter when
// the provider has no vCenter settings.
func requireVCenter(client *vsphere.Client, diags *diag.Diagnostics) bool {
	if client.Configured() {
		return true
	}
	diags.AddError("No vCenter configured", errorDetail(vsphere.ErrNotConfigured))
	return false
}

// notFoundDiag refuses an argument that names an object vCenter does not
// have, at plan time, with where the right id is found: "Not a host id"
// when the id given has another form (a name, another object's id), "No
// such host" when it has the form and its object is not there.
func notFoundDiag(at path.Path, err error) diag.Diagnostic {
	summary := "No such object in vCenter"
	var e *vsphere.Error
	if errors.As(err, &e) && e.Object != "" {
		summary = "No such " + string(e.Object)
		for _, looks := range e.Looks {
			if !looks.Fits(e.Object) {
				summary = "Not a " + string(e.Object) + " id"
			}
		}
	}
	return diag.NewAttributeErrorDiagnostic(at, summary, errorDetail(err)+".")
}

// argumentOf is the argument that names the object an error concerns; the
// resource as a whole when none does.
func argumentOf(err error, arguments map[vsphere.Object]string) path.Path {
	var e *vsphere.Error
	if errors.As(err, &e) && arguments[e.Object] != "" {
		return path.Root(arguments[e.Object])
	}
	return path.Empty()
}

// clientFrom is the shared Configure step of data sources.
func clientFrom(providerData any, diags *diag.Diagnostics) *vsphere.Client {
	if providerData == nil {
		return nil // the provider is not configured yet (validation, early plan)
	}
	client, ok := providerData.(*vsphere.Client)
	if !ok {
		diags.AddError("Unexpected provider data",
			fmt.Sprintf("Expected *vsphere.Client, got %T. Please report this issue to the provider developers.", providerData))
		return nil
	}
	return client
}

// unexpectedFinding words a finding the resource has no words for: an error,
// never silence (a new finding its wording has not caught up with).
func unexpectedFinding(diags *diag.Diagnostics, f vsphere.Finding) {
	diags.AddError("Unexpected finding", fmt.Sprintf("The plan found %T, which this resource has no words for. "+
		"Please report this issue to the provider developers.", f))
}
