package vsphere

import (
	"context"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

// esxcli runs esxcli commands on a host through vCenter, as govc host.esxcli
// does: the host's ReflectManagedMethodExecuter (HostSystem's
// RetrieveManagedMethodExecuter) executes the command's method on its CLI
// handler (ExecuteSoap, moid "ha-cli-handler-<namespace>", method
// "vim.EsxCLI.<namespace>.<command>"). govmomi's esx.Executor asks the host
// for its dynamic type manager and the command's CLI metadata first, three
// calls per host before the first command; this client makes one, and
// passes the arguments by name as the metadata would have.
type esxcli struct {
	vc  *vim25.Client
	mme types.ManagedObjectReference
}

// esxcliFault is a command's own failure, as esxcli prints it.
type esxcliFault struct {
	Message, Detail string
}

func (f *esxcliFault) Error() string {
	if f.Detail != "" {
		return f.Message + " " + f.Detail
	}
	return f.Message
}

// esxcliArg is one named argument: its values are sent as
// <name>value</name>, repeated for a list.
type esxcliArg struct {
	Name   string
	Values []string
}

func newESXCLI(ctx context.Context, vc *vim25.Client, hostID string) (*esxcli, error) {
	var req, res retrieveMMEBody
	req.Req = &retrieveMMERequest{This: types.ManagedObjectReference{Type: "HostSystem", Value: hostID}}
	if err := vc.RoundTrip(ctx, &req, &res); err != nil {
		return nil, err
	}
	if res.Res == nil || res.Res.Returnval == nil {
		return nil, fmt.Errorf("host %s returned no esxcli executer", hostID)
	}
	return &esxcli{vc: vc, mme: *res.Res.Returnval}, nil
}

// run executes esxcli <namespace...> <command> with args and decodes the
// command's answer into out.
func (e *esxcli) run(ctx context.Context, namespace []string, command string, args []esxcliArg, out any) error {
	sreq := &executeSoapRequest{
		This: e.mme, Version: "urn:vim25/5.0",
		Moid:   "ha-cli-handler-" + strings.Join(namespace, "-"),
		Method: "vim.EsxCLI." + strings.Join(namespace, ".") + "." + command,
	}
	for _, a := range args {
		var val strings.Builder
		for _, v := range a.Values {
			val.WriteString("<" + a.Name + ">")
			if err := xml.EscapeText(&val, []byte(v)); err != nil {
				return err
			}
			val.WriteString("</" + a.Name + ">")
		}
		sreq.Argument = append(sreq.Argument, esxcliSoapArgument{Name: a.Name, Val: val.String()})
	}
	var req, res executeSoapBody
	req.Req = sreq
	if err := e.vc.RoundTrip(ctx, &req, &res); err != nil {
		return err
	}
	if res.Res == nil || res.Res.Returnval == nil {
		return nil
	}
	if f := res.Res.Returnval.Fault; f != nil {
		return &esxcliFault{Message: f.FaultMsg, Detail: f.FaultDetail}
	}
	return xml.Unmarshal([]byte(res.Res.Returnval.Response), out)
}

// The SOAP bodies of the two internal methods, as vCenter's internal API
// (and govmomi's internal package, which cannot be imported) spells them.
type (
	retrieveMMERequest struct {
		This types.ManagedObjectReference `xml:"_this"`
	}
	retrieveMMEResponse struct {
		Returnval *types.ManagedObjectReference `xml:"urn:vim25 returnval"`
	}
	retrieveMMEBody struct {
		Req *retrieveMMERequest  `xml:"urn:vim25 RetrieveManagedMethodExecuter,omitempty"`
		Res *retrieveMMEResponse `xml:"urn:vim25 RetrieveManagedMethodExecuterResponse,omitempty"`
		// As govmomi's methods name it, beside Fault().
		Fault_ *soap.Fault `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"` //nolint:revive // see above
	}

	esxcliSoapArgument struct {
		Name string `xml:"name"`
		Val  string `xml:"val"`
	}
	executeSoapRequest struct {
		This     types.ManagedObjectReference `xml:"_this"`
		Moid     string                       `xml:"moid"`
		Version  string                       `xml:"version"`
		Method   string                       `xml:"method"`
		Argument []esxcliSoapArgument         `xml:"argument,omitempty"`
	}
	executeSoapResult struct {
		Response string `xml:"response,omitempty"`
		Fault    *struct {
			FaultMsg    string `xml:"faultMsg"`
			FaultDetail string `xml:"faultDetail,omitempty"`
		} `xml:"fault,omitempty"`
	}
	executeSoapResponse struct {
		Returnval *executeSoapResult `xml:"urn:vim25 returnval"`
	}
	executeSoapBody struct {
		Req *executeSoapRequest  `xml:"urn:vim25 ExecuteSoap,omitempty"`
		Res *executeSoapResponse `xml:"urn:vim25 ExecuteSoapResponse,omitempty"`
		// As govmomi's methods name it, beside Fault().
		Fault_ *soap.Fault `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"` //nolint:revive // see above
	}
)

func (b *retrieveMMEBody) Fault() *soap.Fault { return b.Fault_ }
func (b *executeSoapBody) Fault() *soap.Fault { return b.Fault_ }

// The methods as vCenter names them, for the call log and the prefetch
// (the type names are not).
func (*retrieveMMEBody) vsphereMethod() string { return "RetrieveManagedMethodExecuter" }
func (*executeSoapBody) vsphereMethod() string { return "ExecuteSoap" }

// readOnlyESXCLI are the esxcli commands that change nothing on a host; any
// other ends the command's prefetching, as a change through the API does.
var readOnlyESXCLI = map[string]bool{"vim.EsxCLI.network.diag.ping": true}

func (b *executeSoapBody) readOnly() bool { return b.Req != nil && readOnlyESXCLI[b.Req.Method] }
