package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
)

// ErrNoPartitions is returned (wrapped) by Partition, Heal and
// NewClientEndpoint on a lab started without Config.Partitions: its
// processes share 127.0.0.1, so its proxies cannot tell who is talking.
var ErrNoPartitions = errors.New("lab: the lab runs without Config.Partitions")

// Endpoint is one party of a lab's network with an address of its own: a
// data node (*Node), a sentinel (*SentinelNode) or a client endpoint
// (*ClientEndpoint). Lab.Partition cuts the traffic between endpoints. Only
// a lab's own endpoints implement it.
type Endpoint interface {
	// Name is the endpoint's name in the lab: node0, sentinel1, or the
	// name a client endpoint was given.
	Name() string
	// IP is the endpoint's own loopback address: its connections come from
	// it and, for a server, its process and its proxy listen on it.
	IP() netip.Addr

	endpointLab() *Lab
}

var (
	_ Endpoint = (*Node)(nil)
	_ Endpoint = (*SentinelNode)(nil)
	_ Endpoint = (*ClientEndpoint)(nil)
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=CutMode -linecomment

// CutMode is how Lab.Partition cuts traffic.
type CutMode int

const (
	// Refuse resets the connections between the sides: those open when the
	// partition starts and every new one, as soon as it is accepted. A
	// client sees "connection reset by peer" at once, as from a firewall
	// that rejects.
	Refuse CutMode = iota + 1 // refuse
	// Drop swallows everything between the sides, in both directions, and
	// closes nothing: open connections stay open and new ones are accepted
	// but never reach the server, the way a real partition looks. Clients
	// notice only through their timeouts, Redis through repl-timeout and
	// Sentinel through down-after-milliseconds.
	Drop // drop
)

// cutSet is one proxy's share of a partition: the client addresses cut off
// from the endpoint behind it. Immutable once stored in Proxy.cut.
type cutSet struct {
	mode CutMode
	from map[netip.Addr]struct{}
}

// cutMode is how the proxy's current partition cuts connections from src:
// Refuse, Drop, or 0 when they pass.
func (p *Proxy) cutMode(src netip.Addr) CutMode {
	s := p.cut.Load()
	if s == nil {
		return 0
	}
	if _, ok := s.from[src]; ok {
		return s.mode
	}
	return 0
}

// setCut makes s the proxy's partition (nil: none) and brings the open
// connections in line: the ones s refuses are reset; the ones it drops stay
// open (their chunks are swallowed from now on); the ones it lets pass are
// reset if an earlier Drop swallowed some of their bytes or held them
// without an upstream. It returns how many it reset.
func (p *Proxy) setCut(s *cutSet) int {
	p.cut.Store(s)
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	reset := 0
	for _, c := range conns {
		switch p.cutMode(c.src) {
		case Refuse: // reset below
		case Drop:
			continue
		default:
			if !c.held.Load() && !c.cutLoss.Load() {
				continue
			}
		}
		if !c.isAborted() {
			reset++
		}
		c.abort()
	}
	return reset
}

// hostBase is the first address Config.Partitions hands out: 127.0.0.1
// stays the address of everyone who is no endpoint (the lab's own admin
// clients, a test's default clients), which no partition cuts.
const hostBase = 2

// maxHost is the last one: 127.0.0.254, which leaves 253 endpoints per lab.
const maxHost = 254

// hostAt is the address of the lab's k-th endpoint (servers first, nodes
// then sentinels, then client endpoints), or 127.0.0.1 without
// partitions.
func (l *Lab) hostAt(k int) netip.Addr {
	if !l.cfg.Partitions {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, byte(hostBase + k)})
}

// serverHosts are the addresses of every server the config describes, in
// the order hostAt hands them out.
func (l *Lab) serverHosts() []netip.Addr {
	n := l.cfg.Replicas + 1 + l.cfg.Sentinels
	if l.cfg.Shards > 0 {
		n = clusterHostSpan // with Partitions, every address a node may get
		if !l.cfg.Partitions {
			n = 1
		}
	}
	hosts := make([]netip.Addr, n)
	for k := range hosts {
		hosts[k] = l.hostAt(k)
	}
	return hosts
}

// checkLoopbackAliases fails when the system does not answer on the
// addresses Config.Partitions uses (Linux does on all of 127.0.0.0/8;
// macOS only on the aliases added to lo0).
func checkLoopbackAliases(c Config) error {
	k := c.Replicas + c.Sentinels
	if c.Shards > 0 {
		k = clusterHostSpan
	}
	last := netip.AddrFrom4([4]byte{127, 0, 0, byte(hostBase + k)})
	ln, err := net.Listen("tcp", netip.AddrPortFrom(last, 0).String())
	if err != nil {
		return fmt.Errorf("lab: Partitions needs 127.0.0.%d-%s on the loopback interface (Linux has all of 127.0.0.0/8; on macOS add them, e.g. sudo ifconfig lo0 alias %s): %w",
			hostBase, last, last, err)
	}
	return ln.Close()
}

// ClientEndpoint is an endpoint for a test's own clients: an address of its
// own, from which its connections come, so that a partition can put it on
// one side. Dial is a go-redis Dialer. Connections a test makes without it
// come from 127.0.0.1, which is no endpoint: no partition cuts them.
type ClientEndpoint struct {
	lab  *Lab
	name string
	ip   netip.Addr
}

// NewClientEndpoint adds a client endpoint named name (unique among the
// lab's endpoints, e.g. "app") with the next free address. It fails
// without Config.Partitions (ErrNoPartitions) and when the lab's 253
// addresses are taken.
func (l *Lab) NewClientEndpoint(name string) (*ClientEndpoint, error) {
	if !l.cfg.Partitions {
		return nil, fmt.Errorf("lab: NewClientEndpoint(%q): %w", name, ErrNoPartitions)
	}
	if name == "" {
		return nil, errors.New("lab: NewClientEndpoint needs a name")
	}
	l.partMu.Lock()
	defer l.partMu.Unlock()
	for _, e := range l.endpointsLocked() {
		if e.Name() == name {
			return nil, fmt.Errorf("lab: NewClientEndpoint: %q is taken by an endpoint at %s", name, e.IP())
		}
	}
	k := len(l.nodes) + len(l.sentinels) + len(l.clients)
	if l.IsCluster() {
		k = clusterHostSpan + len(l.clients) // after the nodes' addresses
	}
	if hostBase+k > maxHost {
		return nil, fmt.Errorf("lab: NewClientEndpoint(%q): all %d addresses of the lab are taken", name, maxHost-hostBase+1)
	}
	e := &ClientEndpoint{lab: l, name: name, ip: l.hostAt(k)}
	l.clients = append(l.clients, e)
	l.cfg.Logger.Info("lab: client endpoint", "name", name, "ip", e.ip)
	return e, nil
}

// Name is the name the endpoint was given.
func (e *ClientEndpoint) Name() string { return e.name }

// IP is the address the endpoint's connections come from.
func (e *ClientEndpoint) IP() netip.Addr { return e.ip }

func (e *ClientEndpoint) endpointLab() *Lab { return e.lab }

// String is the endpoint's name and address, e.g. "app@127.0.0.8".
func (e *ClientEndpoint) String() string { return e.name + "@" + e.ip.String() }

// endpointDialTimeout bounds Dial when ctx has no earlier deadline: a
// connection to a loopback proxy is accepted or refused at once, unless
// the listener's backlog is full.
const endpointDialTimeout = 2 * time.Second

// Dial connects from the endpoint's address (a net.Dialer with LocalAddr),
// bounded by ctx and by 2 s. Its signature is go-redis's Options.Dialer
// (and FailoverOptions.Dialer). It is plain TCP: go-redis does not add TLS
// to a Dialer of its own, so with Config.TLS use Options, or wrap it.
func (e *ClientEndpoint) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: endpointDialTimeout, LocalAddr: &net.TCPAddr{IP: e.ip.AsSlice()}}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: dial %s: %w", e.name, addr, err)
	}
	return conn, nil
}

// dialer is Dial followed by a TLS handshake when tlsConfig is set.
func (e *ClientEndpoint) dialer(tlsConfig *tls.Config) func(context.Context, string, string) (net.Conn, error) {
	if tlsConfig == nil {
		return e.Dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := e.Dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return redisopt.Handshake(ctx, conn, tlsConfig, addr)
	}
}

// Options are n.Options (the node's proxied address, the lab's credentials
// and TLS, no retries) with connections made from this endpoint.
func (e *ClientEndpoint) Options(n *Node) *redis.Options {
	o := n.Options()
	o.Dialer = e.dialer(o.TLSConfig)
	return o
}

// NewClient returns a go-redis client of n that connects from this
// endpoint. The caller closes it.
func (e *ClientEndpoint) NewClient(n *Node) *redis.Client { return redis.NewClient(e.Options(n)) }

// ClusterOptions are Lab.ClusterOptions (every node as a seed, the lab's
// credentials and TLS, no retries) with connections made from this
// endpoint, so a partition cuts the cluster client as it cuts the others.
func (e *ClientEndpoint) ClusterOptions() *redis.ClusterOptions {
	o := e.lab.ClusterOptions()
	o.Dialer = e.dialer(o.TLSConfig)
	return o
}

// SentinelOptions are go-redis options for a client of sentinel s through
// its proxy, from this endpoint, with the sentinels' credentials and the
// lab's TLS settings and no retries.
func (e *ClientEndpoint) SentinelOptions(s *SentinelNode) *redis.Options {
	c := e.lab.cfg
	o := redisopt.Inner(&redis.Options{
		Addr:         s.Addr(),
		Username:     c.SentinelUsername,
		Password:     c.SentinelPassword,
		TLSConfig:    e.lab.clientTLS(),
		DialTimeout:  2 * time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
	})
	o.Dialer = e.dialer(o.TLSConfig)
	return o
}

// Endpoints returns every endpoint of the lab: the data nodes, the
// sentinels, then the client endpoints, in order.
func (l *Lab) Endpoints() []Endpoint {
	l.partMu.Lock()
	defer l.partMu.Unlock()
	return l.endpointsLocked()
}

func (l *Lab) endpointsLocked() []Endpoint {
	out := make([]Endpoint, 0, len(l.nodes)+len(l.sentinels)+len(l.clients))
	for _, n := range l.nodes {
		out = append(out, n)
	}
	for _, s := range l.sentinels {
		out = append(out, s)
	}
	for _, e := range l.clients {
		out = append(out, e)
	}
	return out
}

// Partition cuts the traffic between endpoints of different groups, in
// both directions, the way mode says, and keeps it cut until Heal or the
// next Partition, which replaces this one. Endpoints in no group, and
// connections from addresses that are no endpoint (127.0.0.1: the lab's own
// admin clients and any client a test makes without a ClientEndpoint),
// still reach everyone. Connections already open between the sides are cut
// too: reset under Refuse, silenced under Drop.
//
// Every connection in the lab is made to a proxied endpoint, whose proxy
// knows the source by its address, so the proxy of endpoint X cutting
// "from S" when S and X are in different groups cuts both directions. The
// proxies take the new partition one after the other, within microseconds.
// Node.BlackHole and the other per-node faults are independent of it.
func (l *Lab) Partition(mode CutMode, groups ...[]Endpoint) error {
	if !l.cfg.Partitions {
		return fmt.Errorf("lab: Partition: %w", ErrNoPartitions)
	}
	if mode != Refuse && mode != Drop {
		return fmt.Errorf("lab: Partition: unknown %v; use lab.Refuse or lab.Drop", mode)
	}
	group := map[netip.Addr]int{}
	names := make([]string, len(groups))
	for gi, g := range groups {
		var ns []string
		for _, e := range g {
			if e == nil || e.endpointLab() != l {
				return fmt.Errorf("lab: Partition: group %d holds %v, which is no endpoint of this lab", gi, e)
			}
			if prev, dup := group[e.IP()]; dup {
				return fmt.Errorf("lab: Partition: %s is in groups %d and %d", e.Name(), prev, gi)
			}
			group[e.IP()] = gi
			ns = append(ns, e.Name())
		}
		names[gi] = "[" + strings.Join(ns, " ") + "]"
	}
	reset := l.applyCuts(func(x netip.Addr) *cutSet {
		gx, ok := group[x]
		if !ok {
			return nil
		}
		from := map[netip.Addr]struct{}{}
		for s, gs := range group {
			if gs != gx {
				from[s] = struct{}{}
			}
		}
		if len(from) == 0 {
			return nil
		}
		return &cutSet{mode: mode, from: from}
	})
	l.cfg.Logger.Info("lab: partition", "mode", mode, "groups", strings.Join(names, " | "), "reset", reset)
	return nil
}

// Heal ends the partition: every connection passes again. Connections a
// Drop partition swallowed bytes of, or accepted without reaching the
// server, are reset, as Proxy.Restore does: their request and reply
// streams no longer match (a partition long enough to matter ends that way
// in practice).
func (l *Lab) Heal() error {
	if !l.cfg.Partitions {
		return fmt.Errorf("lab: Heal: %w", ErrNoPartitions)
	}
	reset := l.applyCuts(func(netip.Addr) *cutSet { return nil })
	l.cfg.Logger.Info("lab: heal", "reset", reset)
	return nil
}

// applyCuts gives every server's proxy its share of a partition (cutFor of
// the server's address) and returns how many connections were reset.
// Partition and Heal run one at a time.
func (l *Lab) applyCuts(cutFor func(netip.Addr) *cutSet) int {
	l.partMu.Lock()
	defer l.partMu.Unlock()
	var proxies []*Proxy
	var hosts []netip.Addr
	for _, n := range l.nodes {
		proxies, hosts = append(proxies, n.proxy), append(hosts, n.host)
		if n.busProxy != nil {
			proxies, hosts = append(proxies, n.busProxy), append(hosts, n.host)
		}
	}
	for _, s := range l.sentinels {
		proxies, hosts = append(proxies, s.proxy), append(hosts, s.host)
	}
	reset := 0
	for i, p := range proxies {
		if p != nil {
			reset += p.setCut(cutFor(hosts[i]))
		}
	}
	return reset
}
