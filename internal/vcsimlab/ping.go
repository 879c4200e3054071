package vcsimlab

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/cli/esx"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/xml"
)

// esxcli "network diag ping" through the vSphere API, as ESXi answers it,
// over the fabric model of the lab's hosts (fabric.go). vcsim has no network.diag
// namespace; the lab answers both the command's metadata and the command.
//
// Parameters (all optional in the metadata; host is needed unless debug):
// count, debug, df, host, interface, interval, ipv4, ipv6, netstack,
// nexthop, size (the ICMP payload: an IPv4 packet is size+28), ttl, wait.
// Sources: Broadcom's ESXCLI reference, esxcli_network namespace,
// https://developer.broadcom.com/xapis/esxcli-command-reference/latest/namespace/esxcli_network.html
// and the PowerCLI Get-EsxCli signature of network.diag.ping (count, debug,
// df, host, interface, interval, ipv4, ipv6, netstack, nexthop, size, ttl,
// wait; long/boolean/string types).
//
// Output: a PingOutput with a Summary (HostAddr, Transmitted, Recieved
// [sic], Duplicated, PacketLost, RoundtripMinMS/AvgMS/MaxMS) and a Trace
// per reply (ReceivedBytes, Host, ICMPSeq, TTL, RoundtripTimeMS, Dup,
// Detail), as VMware's own vmkping client (vRack HMS, VmkPingOutputSpec)
// decodes it. A don't-fragment packet larger than the source vmknic's MTU
// fails locally with the CLI fault "sendto() failed (Message too long)"; one
// that fits there but not on the path is lost silently (Recieved 0), and
// answers only after the wait.
//
// Settled, and not: vmkping prints "sendto() failed (Message too long)" for
// each such packet, then 100% loss (public vmkping transcripts for jumbo
// frame tests); through the API VMware's HMS client (VmkPing.java) reads an
// esxcli fault whose detail holds the errMsg list, one message here. Whether
// ESXi repeats it per packet, and whether it sits in faultMsg or errMsg, no
// public source shows: the provider matches the text in either. interval
// and wait are strings in the command's metadata (PowerCLI's signature) and
// "in seconds"; whether ESXi takes fractions is unverified, so the provider
// sends whole seconds.

// The esxcli namespaces the lab answers itself on every host's managed
// method executer (ExecuteSoap); vcsim answers the others. This file's
// network.diag and those other files register. The executer's caller (govmomi's esx.Executor,
// as govc host.esxcli uses it) first fetches a namespace's metadata
// (vim.CLIInfo.FetchCLIInfo with typeName "vim.EsxCLI.<namespace>") to parse
// the command line, then calls "vim.EsxCLI.<namespace>.<command>" with the
// arguments named by the metadata's parameter names.
const (
	cliInfoMethod = "vim.CLIInfo.FetchCLIInfo"
	esxcliPrefix  = "vim.EsxCLI."
)

// esxcliCommand answers one esxcli command on the host of the executer.
type esxcliCommand func(x *extension, ctx *simulator.Context, call soapCall) *soapResult

// esxcliNamespace is a namespace the lab answers: its metadata and its
// commands, by name.
type esxcliNamespace struct {
	info     func() *esx.CommandInfo
	commands map[string]esxcliCommand
}

// esxcliNamespaces are the namespaces the lab answers, by name
// ("network.diag"). Files register theirs at init, read-only afterwards.
var esxcliNamespaces = map[string]esxcliNamespace{}

// registerEsxcli adds a namespace the lab answers.
func registerEsxcli(info func() *esx.CommandInfo, commands map[string]esxcliCommand) {
	esxcliNamespaces[info().Name] = esxcliNamespace{info: info, commands: commands}
}

func init() {
	registerEsxcli(diagInfo, map[string]esxcliCommand{"ping": (*extension).ping})
}

// soapCall is an ExecuteSoap request, read by reflection: its type lives in
// a govmomi internal package.
type soapCall struct {
	hostID string // the managed method executer's id is its host's
	method string
	args   map[string][]string
}

func readSoapCall(body any) (call soapCall, ok bool) {
	// An argument that is not well-formed XML makes govmomi's decoder of
	// argument values panic: such a call is not one the lab answers.
	defer func() {
		if recover() != nil {
			call, ok = soapCall{}, false
		}
	}()
	v := reflect.ValueOf(body)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return soapCall{}, false
	}
	v = v.Elem()
	method, this, args := v.FieldByName("Method"), v.FieldByName("This"), v.FieldByName("Argument")
	if !method.IsValid() || !this.IsValid() || !args.IsValid() {
		return soapCall{}, false
	}
	call = soapCall{method: method.String(), hostID: this.FieldByName("Value").String(), args: map[string][]string{}}
	for i := 0; i < args.Len(); i++ {
		a := args.Index(i)
		name := a.FieldByName("Name").String()
		if val, ok := a.Addr().Interface().(interface{ Value() []string }); ok {
			call.args[name] = val.Value()
		}
	}
	return call, true
}

// namespace is the lab's namespace the call fetches the metadata of, or
// whose command it runs.
func (call soapCall) namespace() (esxcliNamespace, bool) {
	name := strings.TrimPrefix(first(call.args["typeName"]), esxcliPrefix)
	if call.method != cliInfoMethod {
		name = strings.TrimPrefix(call.method, esxcliPrefix)
		name = name[:max(strings.LastIndex(name, "."), 0)]
	}
	ns, ok := esxcliNamespaces[name]
	return ns, ok
}

// command is the lab's command the call runs, or nil. The command's name
// is matched regardless of case: govmomi's executor sends it as typed
// ("list"), older clients capitalized ("List", pyvisdk's handlers).
func (call soapCall) command() esxcliCommand {
	ns, ok := call.namespace()
	if !ok || call.method == cliInfoMethod {
		return nil
	}
	name := call.method[strings.LastIndex(call.method, ".")+1:]
	for n, cmd := range ns.commands {
		if strings.EqualFold(n, name) {
			return cmd
		}
	}
	return nil
}

// answersEsxcli reports whether an ExecuteSoap call is one the lab answers:
// the metadata or a command of one of its namespaces.
func answersEsxcli(body any) bool {
	call, ok := readSoapCall(body)
	switch {
	case !ok:
		return false
	case call.method == cliInfoMethod:
		_, ok := call.namespace()
		return ok
	}
	return strings.HasPrefix(call.method, esxcliPrefix) && call.command() != nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

type executeSoapBody struct {
	Res *executeSoapResponse `xml:"urn:vim25 ExecuteSoapResponse"`
}

func (*executeSoapBody) Fault() *soap.Fault { return nil }

type executeSoapResponse struct {
	Returnval *soapResult `xml:"returnval"`
}

type soapResult struct {
	Response string     `xml:"response,omitempty"`
	Fault    *soapFault `xml:"fault,omitempty"`
}

type soapFault struct {
	FaultMsg    string `xml:"faultMsg"`
	FaultDetail string `xml:"faultDetail,omitempty"`
}

// ExecuteSoap answers the esxcli calls of the lab's namespaces: their
// metadata and their commands.
func (x *extension) ExecuteSoap(ctx *simulator.Context, req any) soap.HasFault {
	call, _ := readSoapCall(req)
	if call.method == cliInfoMethod {
		ns, _ := call.namespace()
		var b bytes.Buffer
		if err := xml.NewEncoder(&b).Encode(ns.info()); err != nil {
			return &executeSoapBody{Res: &executeSoapResponse{Returnval: &soapResult{Fault: &soapFault{FaultMsg: err.Error()}}}}
		}
		return &executeSoapBody{Res: &executeSoapResponse{Returnval: &soapResult{Response: b.String()}}}
	}
	return &executeSoapBody{Res: &executeSoapResponse{Returnval: call.command()(x, ctx, call)}}
}

// vnic is a vmknic's address and MTU.
type vnic struct {
	hostID, device, ip string
	mtu                int
}

// vnics reads every host's vmknics live, so changes to them count.
func (x *extension) vnics(ctx *simulator.Context) []vnic {
	var out []vnic
	for _, obj := range ctx.Map.All("HostSystem") {
		h, ok := obj.(*simulator.HostSystem)
		if !ok {
			continue
		}
		ctx.WithLock(h, func() {
			if h.Config == nil || h.Config.Network == nil {
				return
			}
			for _, v := range h.Config.Network.Vnic {
				if v.Spec.Ip != nil {
					out = append(out, vnic{hostID: h.Self.Value, device: v.Device, ip: v.Spec.Ip.IpAddress, mtu: int(v.Spec.Mtu)})
				}
			}
		})
	}
	return out
}

// ping answers one esxcli ping from the host of the executer over the fabric.
func (x *extension) ping(ctx *simulator.Context, call soapCall) *soapResult {
	count := atoiOr(first(call.args["count"]), 3)
	size := atoiOr(first(call.args["size"]), 56)
	df := first(call.args["df"]) == "true"
	target, iface := first(call.args["host"]), first(call.args["interface"])
	var src, dst *vnic
	vnics := x.vnics(ctx)
	for i := range vnics {
		v := &vnics[i]
		// The source: the named vmknic, else the host's first.
		if v.hostID == call.hostID && (v.device == iface || (iface == "" && src == nil)) {
			src = v
		}
		// The target: the vmknic with that address, another host's first
		// (the stock vmk0s all share 127.0.0.1).
		if v.ip == target && (dst == nil || dst.hostID == call.hostID) {
			dst = v
		}
	}
	if src == nil {
		return cliFault(fmt.Sprintf("Invalid interface %s: no such VMkernel adapter on this host", iface))
	}
	if df && size+ipICMPHeaders > src.mtu {
		return cliFault("sendto() failed (Message too long)")
	}
	dstHost, dstMTU := "", 0
	if dst != nil {
		dstHost, dstMTU = dst.hostID, dst.mtu
	}
	received := x.fabric.deliver(Ping{SourceHost: call.hostID, Interface: src.device, Target: target, Size: size, DF: df}, dstHost, dstMTU)
	return &soapResult{Response: pingOutput(target, count, size, received)}
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

// pingOutput is the PingOutput ESXi returns, as XML.
func pingOutput(target string, count, size int, received bool) string {
	got, lost := count, 0
	if !received {
		got, lost = 0, 100
	}
	var b strings.Builder
	b.WriteString(`<obj xmlns="urn:vim25" xmlns:xsd="http://www.w3.org/2001/XMLSchema" ` +
		`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="ArrayOfDataObject">`)
	b.WriteString("\n <DataObject xsi:type=\"VimEsxCLInetworkdiagpingPingOutput\">\n  <Summary>\n")
	fmt.Fprintf(&b, "   <HostAddr>%s</HostAddr>\n   <Transmitted>%d</Transmitted>\n   <Recieved>%d</Recieved>\n", xmlText(target), count, got)
	fmt.Fprintf(&b, "   <Duplicated>0</Duplicated>\n   <PacketLost>%d</PacketLost>\n", lost)
	b.WriteString("   <RoundtripMinMS>0</RoundtripMinMS>\n   <RoundtripAvgMS>0</RoundtripAvgMS>\n   <RoundtripMaxMS>0</RoundtripMaxMS>\n  </Summary>\n")
	for i := range got {
		fmt.Fprintf(
			&b,
			"  <Trace>\n   <ReceivedBytes>%d</ReceivedBytes>\n   <Host>%s</Host>\n   <ICMPSeq>%d</ICMPSeq>\n   <TTL>64</TTL>\n"+
				"   <RoundtripTimeMS>0</RoundtripTimeMS>\n   <Dup>false</Dup>\n   <Detail></Detail>\n  </Trace>\n",
			size+8,
			xmlText(target),
			i,
		)
	}
	b.WriteString(" </DataObject>\n</obj>")
	return b.String()
}

func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// cliFault is the esxcli fault a host returns inside a successful call.
func cliFault(msg string) *soapResult {
	detail := `<obj xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><fault xsi:type="VimEsxCLICLIFault"><errMsg>` +
		xmlText(msg) + `</errMsg></fault><localizedMessage></localizedMessage></obj>`
	return &soapResult{Fault: &soapFault{FaultMsg: "EsxCLI.CLIFault.summary", FaultDetail: detail}}
}

// cliBoolean is a command's boolean answer ("set", "add" and "remove"
// commands answer true), an xsd:boolean obj.
func cliBoolean(v bool) *soapResult {
	return &soapResult{
		Response: `<obj xmlns="urn:vim25" xmlns:xsd="http://www.w3.org/2001/XMLSchema" ` +
			`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="xsd:boolean">` +
			strconv.FormatBool(v) + `</obj>`,
	}
}

// cliField is one field of a structure a command answers: a list field
// (string[]) has any number of values.
type cliField struct {
	name   string
	values []string
}

// cliList is a command's list answer: an ArrayOfDataObject whose objects
// are of the type named kind ("VimEsxCLInetworkvmlistVM": "VimEsxCLI", the
// command's namespace and name, the structure's name), each field an
// element, a list field one element per value, as in ESXi's answers that
// govmomi keeps as fixtures (cli/esx/fixtures/network_vm_list.xml).
func cliList(kind string, objects [][]cliField) *soapResult {
	var b strings.Builder
	b.WriteString(`<obj xmlns="urn:vim25" xmlns:xsd="http://www.w3.org/2001/XMLSchema" ` +
		`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" versionId="5.0" xsi:type="ArrayOfDataObject">`)
	for _, fields := range objects {
		fmt.Fprintf(&b, "\n <DataObject xsi:type=%q>\n", kind)
		for _, f := range fields {
			for _, v := range f.values {
				fmt.Fprintf(&b, "  <%s>%s</%s>\n", f.name, xmlText(v), f.name)
			}
		}
		b.WriteString(" </DataObject>")
	}
	b.WriteString("\n</obj>")
	return &soapResult{Response: b.String()}
}

// diagInfo is the metadata of the network.diag namespace: ping's parameters
// with their aliases, booleans as flags, in the documented order.
func diagInfo() *esx.CommandInfo {
	param := func(name string, flag bool, aliases ...string) esx.CommandInfoParam {
		return esx.CommandInfoParam{CommandInfoItem: esx.CommandInfoItem{Name: name, DisplayName: name}, Aliases: aliases, Flag: flag}
	}
	return &esx.CommandInfo{
		CommandInfoItem: esx.CommandInfoItem{Name: "network.diag", DisplayName: "diag", Help: "Operations pertaining to network diagnostics"},
		Method: []esx.CommandInfoMethod{{
			CommandInfoItem: esx.CommandInfoItem{Name: "ping", DisplayName: "ping", Help: "Send ICMP echo requests to network hosts."},
			Param: []esx.CommandInfoParam{
				param("count", false, "-c", "--count"),
				param("debug", true, "-D", "--debug"),
				param("df", true, "-d", "--df"),
				param("host", false, "-H", "--host"),
				param("interface", false, "-I", "--interface"),
				param("interval", false, "-i", "--interval"),
				param("ipv4", true, "--ipv4"),
				param("ipv6", true, "--ipv6"),
				param("netstack", false, "--netstack"),
				param("nexthop", false, "-N", "--nexthop"),
				param("size", false, "-s", "--size"),
				param("ttl", false, "-t", "--ttl"),
				param("wait", false, "-W", "--wait"),
			},
		}},
	}
}
