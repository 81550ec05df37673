package sentinel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/safe"
)

// The trust model. The client dials whatever address a sentinel names
// (the master, the replicas, the other sentinels) and sends the data
// nodes' credentials to the nodes and the sentinel credentials to the
// sentinels: a sentinel that lies, or one an attacker controls, can
// redirect traffic and collect credentials. Three things bound that:
//
//   - Every address in a reply is validated before it is dialled (a host
//     of the characters a host name or an IP address has, a port from 1 to
//     65535); a malformed one is refused with an *AddressError naming the
//     server and the reply, and never dialled.
//   - Config.AllowedNetworks, when set, is the only place the client
//     connects to: an address outside it is refused the same way, and a
//     host name is checked once resolved, when dialled, before anything
//     is sent on the connection. The configured SentinelAddrs are always
//     allowed.
//   - Config.MapAddr translates announced addresses (for NAT or port
//     forwarding) and may refuse them.
//
// TLS with verification (TLSConfig, SentinelTLSConfig) is what proves a
// node is the one it claims to be; the policy only bounds where the
// client goes. Config.Dialer, the caller's own code, only replaces how
// the connection is opened: the address it is given has passed the
// checks above, and what it returns gets the same AllowedNetworks check,
// TLS and reply bounds as a connection rediskit opened itself.

// AddressError reports an address in a server's reply that the client
// refused to dial: malformed, outside Config.AllowedNetworks, or refused
// by Config.MapAddr.
type AddressError struct {
	// Source is the server whose reply named it (a sentinel or a node).
	Source string
	// Field is what the address was for: "master", "replica",
	// "sentinel", or the event that carried it.
	Field string
	// Reply is the address as the reply gave it (cut to failure.MaxBrief).
	Reply  string
	Reason string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("sentinel: %s named %s %q, which the client will not dial: %s", e.Source, e.Field, e.Reply, e.Reason)
}

// checkHostPort validates the host and port of an address a reply gave
// and returns "host:port". A host is at most 253 bytes of letters, digits,
// '.', '-', '_' and ':' (an IPv6 address; brackets are not part of it in
// Redis's replies); a port is a decimal number from 1 to 65535.
func checkHostPort(host, port string) (string, error) {
	switch {
	case host == "":
		return "", fmt.Errorf("no host")
	case len(host) > 253:
		return "", fmt.Errorf("a host of %d bytes", len(host))
	}
	for i := 0; i < len(host); i++ {
		switch b := host[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '.', b == '-', b == '_', b == ':', b == '%':
		default:
			return "", fmt.Errorf("a host with the byte %q", b)
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != port {
		return "", fmt.Errorf("port %q (want 1 to 65535)", failure.Brief(port))
	}
	return net.JoinHostPort(host, port), nil
}

// replyAddr validates, maps (Config.MapAddr) and checks against
// Config.AllowedNetworks an address source's reply gave for field, and
// returns the address to dial.
func (o *Config) replyAddr(source, field, host, port string) (string, error) {
	refuse := func(reason string) error {
		return &AddressError{Source: source, Field: field, Reply: failure.Brief(net.JoinHostPort(host, port)), Reason: reason}
	}
	addr, err := checkHostPort(host, port)
	if err != nil {
		return "", refuse(err.Error())
	}
	if o.MapAddr != nil {
		mapped, err := o.MapAddr(addr)
		if err != nil {
			return "", refuse("MapAddr refused it: " + failure.BriefErr(err))
		}
		h, p, err := net.SplitHostPort(mapped)
		if err == nil {
			mapped, err = checkHostPort(h, p)
		}
		if err != nil {
			return "", refuse(fmt.Sprintf("MapAddr mapped it to %q: %v", failure.Brief(mapped), err))
		}
		addr = mapped
	}
	if !o.allowedAddr(addr) {
		return "", refuse("outside Config.AllowedNetworks")
	}
	return addr, nil
}

// splitReplyAddr is replyAddr of a "host:port" string.
func (o *Config) splitReplyAddr(source, field, hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		i := strings.LastIndexByte(hostport, ':')
		if i < 0 {
			return "", &AddressError{Source: source, Field: field, Reply: failure.Brief(hostport), Reason: "not host:port"}
		}
		host, port = hostport[:i], hostport[i+1:]
	}
	return o.replyAddr(source, field, host, port)
}

// socketPath reports whether addr is a Unix socket's path (a standalone
// Primary may be one) rather than host:port.
func socketPath(addr string) bool { return strings.HasPrefix(addr, "/") }

// network is go-redis's Options.Network for addr.
func network(addr string) string {
	if socketPath(addr) {
		return "unix"
	}
	return "tcp"
}

// allowedAddr reports whether AllowedNetworks allows addr ("host:port"): a
// host name is allowed here and checked when dialled (allowedConn). A
// Unix socket's path is the caller's own, and always allowed.
func (o *Config) allowedAddr(addr string) bool {
	if len(o.AllowedNetworks) == 0 || socketPath(addr) {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return true // a host name: checked once resolved
	}
	return o.allowedIP(ip)
}

func (o *Config) allowedIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range o.AllowedNetworks {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// allowedConn checks a new connection's peer against AllowedNetworks,
// before anything is sent on it (AUTH comes later): nil, or an error that
// names the address dialled and the one reached. An IP address was
// checked before it was dialled (replyAddr), and is what the connection
// was asked to reach: it is judged as given, so that a Dialer through a
// proxy (whose connections report the proxy) can reach it. A host name is
// judged by the peer the connection reports, the only word on what it
// resolved to: a proxy's address then fails closed.
func (o *Config) allowedConn(conn net.Conn, addr string) error {
	if len(o.AllowedNetworks) == 0 {
		return nil
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if ip, err := netip.ParseAddr(host); err == nil {
			if o.allowedIP(ip) {
				return nil
			}
			return &AddressError{Source: "the client", Field: "address", Reply: addr, Reason: "outside Config.AllowedNetworks"}
		}
	}
	ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err == nil && o.allowedIP(ap.Addr()) {
		return nil
	}
	return &AddressError{Source: "the resolver", Field: "address", Reply: addr,
		Reason: fmt.Sprintf("it resolved to %s, outside Config.AllowedNetworks", conn.RemoteAddr())}
}

// dialWith connects with Config.Dialer (d when it is nil), checks the
// peer against AllowedNetworks when check is set, and runs the TLS
// handshake when tlsConfig is set: the caller's Dialer gets the same
// checks and TLS as rediskit's own. Every failure is a
// *failure.DialError: nothing was sent.
func (o *Config) dialWith(ctx context.Context, d *net.Dialer, netw, addr string, tlsConfig *tls.Config, check bool) (net.Conn, error) {
	if socketPath(addr) {
		// A standalone Primary's Unix socket: whatever network the
		// go-redis client was made with (a pub/sub client's is TCP).
		netw, check = "unix", false // the caller's own path, no IP to judge
	}
	conn, err := o.dialConn(ctx, d, netw, addr)
	if err != nil {
		return nil, &failure.DialError{Addr: addr, Err: err}
	}
	if check {
		if err := o.allowedConn(conn, addr); err != nil {
			_ = conn.Close()
			return nil, &failure.DialError{Addr: addr, Err: err}
		}
	}
	if tlsConfig == nil {
		return conn, nil
	}
	tc, err := redisopt.Handshake(ctx, conn, tlsConfig, addr)
	if err != nil {
		return nil, &failure.DialError{Addr: addr, Err: fmt.Errorf("TLS: %w", err)}
	}
	return tc, nil
}

// dialConn opens the plain connection: with Config.Dialer when set (a
// panic in it, or a nil connection, fails the dial), else with d.
func (o *Config) dialConn(ctx context.Context, d *net.Dialer, network, addr string) (conn net.Conn, err error) {
	if o.Dialer == nil {
		return d.DialContext(ctx, network, addr)
	}
	if perr := safe.Call(func() { conn, err = o.Dialer(ctx, network, addr) }); perr != nil {
		if conn != nil {
			_ = conn.Close()
		}
		return nil, callbackPanic(o.Logger, "Dialer", perr)
	}
	if err != nil {
		if conn != nil {
			_ = conn.Close()
		}
		return nil, err
	}
	if conn == nil {
		return nil, errors.New("Config.Dialer returned neither a connection nor an error")
	}
	return conn, nil
}

// sentinelDialer dials a sentinel (with Config.Dialer when set; TLS with
// SentinelTLSConfig), refusing a learned one whose address resolves
// outside AllowedNetworks; the configured ones are the caller's own choice
// and always allowed. Its connections are bounded by respguard
// (sentinelOptions), whoever dialled them.
func (o *Config) sentinelDialer(configured bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: o.SentinelTimeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return o.dialWith(ctx, d, network, addr, o.SentinelTLSConfig, !configured)
	}
}

// refusedField marks, in a row of a SENTINEL table, an address the client
// will not dial (see cleanRows).
const refusedField = "rediskit-refused"

// cleanRows validates and maps the address of every row of a SENTINEL
// table from source (see replyAddr), and returns the rows with "ip" and
// "port" set to the address to dial, and the errors of the refused ones.
// A refused row is kept, as given and marked (refusedField), when
// keepRefused is set: such a replica is never dialled, but still counted
// for durable writes (Sentinel could promote it whatever the client makes
// of its address); otherwise it is dropped.
func (o *Config) cleanRows(source, field string, rows []map[string]string, keepRefused bool) ([]map[string]string, []error) {
	var refused []error
	kept := rows[:0:0]
	for _, r := range rows {
		addr, err := o.replyAddr(source, field, r["ip"], r["port"])
		if err != nil {
			refused = append(refused, err)
			if keepRefused {
				r = maps.Clone(r)
				r[refusedField] = "1"
				kept = append(kept, r)
			}
			continue
		}
		host, port, _ := net.SplitHostPort(addr)
		if host != r["ip"] || port != r["port"] {
			r = maps.Clone(r)
			r["ip"], r["port"] = host, port
		}
		kept = append(kept, r)
	}
	return kept, refused
}

// refusedRow reports whether cleanRows marked r refused.
func refusedRow(r map[string]string) bool { return r[refusedField] != "" }
