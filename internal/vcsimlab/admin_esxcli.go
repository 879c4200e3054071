package vcsimlab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/cli/esx"
	"github.com/vmware/govmomi/vim25/xml"
)

// Esxcli runs an esxcli command on a host out of band, as an administrator
// does with govc host.esxcli: through the host's managed method executer
// over SOAP, with govmomi's esxcli executor (cli/esx), which fetches the
// command's metadata and parses the options by it, as govc does. args are
// the command line after "esxcli": the namespace and command, then options
// by long name or short alias, value separate or after "=":
//
//	l.Esxcli(ctx, host, "network", "firewall", "ruleset", "set", "--ruleset-id", "pvrdma", "--enabled", "false")
//
// A list command answers one row per structure, from field name to value,
// a list field's values joined with ", " as govc prints them
// (AllowedIPAddresses "192.0.2.7, 198.51.100.0/24"). A command that answers
// a single value (set, add and remove answer true) answers no row. The
// command's own failure (a CLI fault) is an error with its message; an
// unknown option, a missing value or an argument after the options is an
// error before the command is sent (govc's parser would exit the process).
func (l *Lab) Esxcli(ctx context.Context, hostName string, args ...string) ([]map[string]string, error) {
	host, err := l.adminHost(hostName)
	if err != nil {
		return nil, err
	}
	line := strings.Join(args, " ")
	fail := func(err error) error {
		var f *esx.Fault
		if errors.As(err, &f) {
			return &esxcliError{msg: fmt.Sprintf("vcsimlab: esxcli %s on host %s: %s", line, hostName, faultMessage(f)), fault: f}
		}
		return fmt.Errorf("vcsimlab: esxcli %s on host %s: %w", line, hostName, err)
	}
	words := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") })
	if words < 0 {
		words = len(args)
	}
	if words < 2 {
		return nil, fail(errors.New("name a namespace and a command"))
	}
	e, err := esx.NewExecutor(ctx, l.client.Client, host)
	if err != nil {
		return nil, fail(err)
	}
	info, err := e.CommandInfoMethod(ctx, esx.NewCommand(args))
	if err != nil {
		return nil, fail(err)
	}
	if err := checkOptions(args[words:], info.Param); err != nil {
		return nil, fail(err)
	}
	res, err := e.Run(ctx, args)
	if err != nil {
		return nil, fail(err)
	}
	var rows []map[string]string
	for _, v := range res.Values {
		row := make(map[string]string, len(v))
		for k, vals := range v {
			row[k] = strings.Join(vals, ", ")
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// esxcliError is the failure of an esxcli command, with the CLI fault it
// wraps.
type esxcliError struct {
	msg   string
	fault *esx.Fault
}

func (e *esxcliError) Error() string { return e.msg }
func (e *esxcliError) Unwrap() error { return e.fault }

// faultMessage is what esxcli prints of a fault: the CLI fault's errMsg
// lines, else the fault's message.
func faultMessage(f *esx.Fault) string {
	var detail struct {
		Fault struct {
			ErrMsg []string `xml:"errMsg"`
		} `xml:"fault"`
	}
	if xml.Unmarshal([]byte(f.Detail), &detail) == nil && len(detail.Fault.ErrMsg) > 0 {
		return strings.Join(detail.Fault.ErrMsg, " ")
	}
	return f.Message
}

// checkOptions refuses what govmomi's parser of esxcli options
// (esx.Command.Parse, a flag.FlagSet that exits the process on an error)
// would not take: every option must be an alias of a parameter, with a
// value, and nothing may follow the options.
func checkOptions(opts []string, params []esx.CommandInfoParam) error {
	known := map[string]bool{}
	for _, p := range params {
		for _, a := range p.Aliases {
			known[strings.TrimLeft(a, "-")] = true
		}
	}
	for i := 0; i < len(opts); i++ {
		opt := opts[i]
		name, hasValue := strings.TrimPrefix(strings.TrimPrefix(opt, "-"), "-"), false
		if !strings.HasPrefix(opt, "-") || name == "" || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "=") {
			return fmt.Errorf("unexpected argument %q: give options as --name value", opt)
		}
		name, _, hasValue = strings.Cut(name, "=")
		if !known[name] {
			return fmt.Errorf("unknown option %s", opt)
		}
		if !hasValue {
			if i+1 == len(opts) {
				return fmt.Errorf("option %s needs a value", opt)
			}
			i++
		}
	}
	return nil
}
