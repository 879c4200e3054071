package vcsimlab

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/cli/esx"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
)

// pingSummary is the part of a PingOutput the tests read.
type pingSummary struct {
	DataObject []struct {
		Summary struct {
			HostAddr    string
			Transmitted int
			Recieved    int // sic, as ESXi spells it
			PacketLost  int
		}
		Trace []struct {
			ReceivedBytes int
		}
	}
}

// esxPing runs esxcli network diag ping on a host through govmomi's esxcli
// executor, as the provider does; it returns the replies, or the CLI fault.
func esxPing(t *testing.T, l *Lab, from int, target string, payload int) (int, error) {
	t.Helper()
	ctx := context.Background()
	e, err := esx.NewExecutor(ctx, l.Client().Client, object.NewHostSystem(l.Client().Client, hostRef(l, from)))
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := e.NewRequest(ctx, []string{"network", "diag", "ping", "--host=" + target, "--interface=vmk1",
		"--size=" + strconv.Itoa(payload), "--df=true", "--count=2", "--wait=1"})
	if err != nil {
		t.Fatal(err)
	}
	var out pingSummary
	if err := e.Execute(ctx, req, &out); err != nil {
		return 0, err
	}
	if len(out.DataObject) != 1 || out.DataObject[0].Summary.Transmitted != 2 || out.DataObject[0].Summary.HostAddr != target {
		t.Fatalf("ping output = %+v", out)
	}
	got := out.DataObject[0].Summary.Recieved
	if len(out.DataObject[0].Trace) != got || (got > 0 && out.DataObject[0].Trace[0].ReceivedBytes != payload+8) {
		t.Fatalf("traces = %+v for %d replies", out.DataObject[0].Trace, got)
	}
	return got, nil
}

// vmk1 is the address of a lab host's vmk1.
func vmk1(t *testing.T, l *Lab, i int) string {
	var h mo.HostSystem
	retrieve(t, l.Client(), hostRef(l, i), []string{"config.network.vnic"}, &h)
	for _, v := range h.Config.Network.Vnic {
		if v.Device == "vmk1" && v.Spec.Ip != nil {
			return v.Spec.Ip.IpAddress
		}
	}
	t.Fatalf("host %d has no vmk1", i)
	return ""
}

func TestEsxcliPingOverTheFabric(t *testing.T) {
	t.Parallel()
	l, err := Start(context.Background(), Options{Hosts: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	h1, h2, h3 := vmk1(t, l, 1), vmk1(t, l, 2), vmk1(t, l, 3)

	// A uniform 9000 fabric carries 9000-byte packets (payload 8972).
	if got, err := esxPing(t, l, 0, h1, 8972); err != nil || got != 2 {
		t.Fatalf("9000 on a 9000 fabric: %d replies, %v", got, err)
	}
	// Bigger than the source vmknic's MTU: refused locally, as ESXi does.
	var fault *esx.Fault
	if _, err := esxPing(t, l, 0, h1, 8973); !errors.As(err, &fault) || !strings.Contains(fault.MessageDetail(), "Message too long") {
		t.Fatalf("above the vmknic MTU: %v, want the Message too long fault", err)
	}

	// One slow link (7466) and one host behind a 1500 port: bigger
	// don't-fragment packets are lost, not refused, and answer after the wait.
	l.SetLinkMTU(l.HostNames()[0], l.HostNames()[1], 7466)
	l.SetPortMTU(l.HostNames()[2], 1500)
	l.SetLostProbeDelay(50 * time.Millisecond)
	for _, c := range []struct {
		target  string
		payload int
		want    int
	}{
		{h1, 7466 - 28, 2}, {h1, 7466 - 27, 0},
		{h2, 1472, 2}, {h2, 1473, 0},
		{h3, 8972, 2},
	} {
		start := time.Now()
		got, err := esxPing(t, l, 0, c.target, c.payload)
		if err != nil || got != c.want {
			t.Fatalf("ping %s with %d bytes: %d replies, %v; want %d", c.target, c.payload, got, err, c.want)
		}
		if took := time.Since(start); got == 0 && took < 50*time.Millisecond {
			t.Fatalf("a lost ping of %s answered after %v, before the wait", c.target, took)
		}
	}

	// A host that drops everything answers nothing, whatever the size.
	l.DropAll(l.HostNames()[3], true)
	if got, err := esxPing(t, l, 0, h3, 1000); err != nil || got != 0 {
		t.Fatalf("a dead host: %d replies, %v", got, err)
	}
	// The refused one was never sent.
	if pings := l.Pings(); len(pings) != 7 || !pings[0].DF || pings[0].Interface != "vmk1" || pings[0].Size != 8972 {
		t.Fatalf("recorded pings = %+v", pings)
	}
}
