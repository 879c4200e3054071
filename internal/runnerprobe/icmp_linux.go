package runnerprobe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/mtu"
)

// icmpProber probes a path from this machine with ICMP echo requests that
// have the don't-fragment bit set.
//
// It opens an unprivileged ICMP socket when the process's group is in
// net.ipv4.ping_group_range, else a raw socket (CAP_NET_RAW). The socket uses
// IP_PMTUDISC_PROBE: DF is set, and the kernel neither fragments nor lets a
// path MTU it learnt earlier refuse a probe, so every probe measures the path
// as it is now. A probe bigger than the outgoing interface's MTU fails to
// send (EMSGSIZE), which counts as too big.
type icmpProber struct {
	conn    net.PacketConn
	dst     net.Addr
	raw     bool
	id      int
	seq     atomic.Int32
	timeout time.Duration
	token   [8]byte // marks our replies among everything a raw socket sees
}

var _ mtu.Prober = (*icmpProber)(nil)

// ErrNoPermission: the process may open neither kind of ICMP socket.
var ErrNoPermission = errors.New("no permission to send ICMP echo requests")

// newICMPProber opens a socket for probing ip (an IPv4 address); timeout is
// how long a probe waits for its reply.
func newICMPProber(ip net.IP, timeout time.Duration) (*icmpProber, error) {
	if ip.To4() == nil {
		return nil, fmt.Errorf("%s is not an IPv4 address; only IPv4 paths can be probed", ip)
	}
	p := &icmpProber{timeout: timeout, id: os.Getpid() & 0xffff}
	if _, err := rand.Read(p.token[:]); err != nil {
		return nil, err
	}
	conn, err := openICMP(unix.SOCK_DGRAM)
	if err == nil {
		p.conn, p.dst = conn, &net.UDPAddr{IP: ip}
		return p, nil
	}
	if !isPermission(err) {
		return nil, err
	}
	conn, rawErr := openICMP(unix.SOCK_RAW)
	if rawErr != nil {
		if isPermission(rawErr) {
			return nil, permissionError()
		}
		return nil, rawErr
	}
	p.conn, p.dst, p.raw = conn, &net.IPAddr{IP: ip}, true
	return p, nil
}

func openICMP(kind int) (net.PacketConn, error) {
	fd, err := unix.Socket(unix.AF_INET, kind|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("setsockopt IP_MTU_DISCOVER", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	f := os.NewFile(uintptr(fd), "icmp")
	defer f.Close() // FilePacketConn dups the descriptor
	return net.FilePacketConn(f)
}

func isPermission(err error) bool {
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// permissionError says which of the two permissions would do, and how to
// grant each.
func permissionError() error {
	groups := "unknown"
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ping_group_range"); err == nil {
		groups = strings.Join(strings.Fields(string(b)), " ")
	}
	return fmt.Errorf("%w: the process (gid %d) is outside net.ipv4.ping_group_range (now %q), which unprivileged ICMP "+
		"sockets need, and lacks CAP_NET_RAW, which raw ICMP sockets need. Grant one: "+
		"`sysctl -w net.ipv4.ping_group_range=\"%d %d\"` (add it to /etc/sysctl.d to persist), or "+
		"`setcap cap_net_raw+ep` on the provider binary (terraform-provider-vspherehpc_v*, under .terraform/providers), "+
		"or run Terraform as root",
		ErrNoPermission, os.Getgid(), groups, os.Getgid(), os.Getgid())
}

// Close releases the socket.
func (p *icmpProber) Close() error { return p.conn.Close() }

// Probe sends one echo request making an IP packet of size bytes and waits
// for its reply.
func (p *icmpProber) Probe(ctx context.Context, size int) (bool, error) {
	if size < mtu.HeaderBytes+len(p.token) {
		return false, fmt.Errorf("probe size %d is below the %d bytes of headers and marker", size, mtu.HeaderBytes+len(p.token))
	}
	seq := int(p.seq.Add(1) & 0xffff)
	data := make([]byte, size-mtu.HeaderBytes)
	copy(data, p.token[:])
	msg, err := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: p.id, Seq: seq, Data: data}}).Marshal(nil)
	if err != nil {
		return false, err
	}
	if _, err := p.conn.WriteTo(msg, p.dst); err != nil {
		if errors.Is(err, unix.EMSGSIZE) {
			return false, nil // bigger than the outgoing interface: too big
		}
		return false, fmt.Errorf("sending a %d-byte probe to %s: %w", size, p.dst, err)
	}

	deadline := time.Now().Add(p.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := p.conn.SetReadDeadline(deadline); err != nil {
		return false, err
	}
	buf := make([]byte, size+mtu.HeaderBytes)
	for {
		n, _, err := p.conn.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false, ctx.Err() // lost, or dropped on the way as too big
		}
		if err != nil {
			return false, fmt.Errorf("reading the reply from %s: %w", p.dst, err)
		}
		if p.isReply(buf[:n], seq, size) {
			return true, nil
		}
	}
}

// isReply matches the echo reply to probe seq: the kernel rewrites the ID of
// unprivileged sockets, so the sequence number and the marker identify it.
func (p *icmpProber) isReply(b []byte, seq, size int) bool {
	m, err := icmp.ParseMessage(1, b)
	if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
		return false
	}
	echo, ok := m.Body.(*icmp.Echo)
	if !ok || echo.Seq != seq || (p.raw && echo.ID != p.id) {
		return false
	}
	return len(echo.Data) == size-mtu.HeaderBytes && string(echo.Data[:len(p.token)]) == string(p.token[:])
}

// interfaceMTU is the MTU of the interface this machine would send to ip
// through: the most a probe can be. Finding the route sends nothing.
func interfaceMTU(ip net.IP) (int, error) {
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: ip, Port: 9})
	if err != nil {
		return 0, fmt.Errorf("no route to %s: %w", ip, err)
	}
	local := c.LocalAddr().(*net.UDPAddr).IP
	c.Close()
	ifaces, err := net.Interfaces()
	if err != nil {
		return 0, err
	}
	for _, ifc := range ifaces {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(local) {
				return ifc.MTU, nil
			}
		}
	}
	return 0, fmt.Errorf("no interface has %s, the local address towards %s", local, ip)
}
