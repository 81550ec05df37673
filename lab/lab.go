package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisinfo"
)

// Lab is a running topology of real redis-server and redis-sentinel
// processes on loopback. Create it with Start (or New in a test) and stop
// it with Close.
type Lab struct {
	cfg       Config
	dir       string
	ownDir    bool
	tlsFiles  *TLSFiles
	tlsConfig *tls.Config

	version ServerVersion // of node0, read when it started

	nodes     []*Node
	sentinels []*SentinelNode
	events    *eventLog
	// pickPort picks a port free on a server's address (freePort, or a
	// test's).
	pickPort func(host netip.Addr) (int, error)
	// picked are the ports of the servers of the current start attempt.
	picked map[netip.AddrPort]bool

	// nextIndex is the index of the next data node made (a cluster's
	// AddShard continues after the last).
	nextIndex int

	// partMu serialises Partition and Heal and guards clients.
	partMu  sync.Mutex
	clients []*ClientEndpoint // Config.Partitions' client endpoints

	closeOnce sync.Once
	closeErr  error
}

// New starts a lab for a test. It fails the test if the lab cannot start,
// logs the lab's actions to the test's output, and on cleanup prints the
// tail of every server's log if the test failed, then stops everything.
func New(t testing.TB, cfg Config) *Lab {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.withDefaults().StartTimeout)
	defer cancel()
	l, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("lab logs:\n%s", l.LogTails(30))
		}
		if err := l.Close(); err != nil {
			t.Errorf("lab: close: %v", err)
		}
	})
	return l
}

// Start starts the topology cfg describes and returns when every node
// answers, every replica has synced, and every sentinel knows the master,
// its replicas and its peers. On error, whatever was started is stopped.
func Start(ctx context.Context, cfg Config) (*Lab, error) {
	if errPlatform != nil {
		return nil, errPlatform
	}
	return startWith(ctx, cfg, freePort)
}

// startWith is Start with the function that picks each server's port.
func startWith(ctx context.Context, cfg Config, pickPort func(netip.Addr) (int, error)) (*Lab, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	l := &Lab{cfg: cfg, dir: cfg.Dir, events: newEventLog(), pickPort: pickPort}
	if l.dir == "" {
		dir, err := os.MkdirTemp("", "rediskit-lab-")
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		l.dir, l.ownDir = dir, true
	}
	began := time.Now()
	if err := l.start(ctx); err != nil {
		// The directory goes with Close: keep what the servers said.
		if tails := l.LogTails(15); tails != "" {
			err = fmt.Errorf("%w\nserver logs:\n%s", err, tails)
		}
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	cfg.Logger.Info("lab: ready", "server", l.version.String(), "nodes", len(l.nodes), "sentinels", len(l.sentinels), "took", time.Since(began))
	return l, nil
}

func (c Config) validate() error {
	switch {
	case c.Replicas < 0 || c.Sentinels < 0:
		return errors.New("lab: Replicas and Sentinels cannot be negative")
	case c.Sentinels > 0 && (c.Quorum < 1 || c.Quorum > c.Sentinels):
		return fmt.Errorf("lab: Quorum %d is not between 1 and Sentinels (%d)", c.Quorum, c.Sentinels)
	case c.Username != "" && c.Password == "":
		return errors.New("lab: Username needs a Password")
	case c.SentinelUsername != "" && c.SentinelPassword == "":
		return errors.New("lab: SentinelUsername needs a SentinelPassword")
	case c.TLSClientAuth && !c.TLS:
		return errors.New("lab: TLSClientAuth needs TLS")
	case c.Shards < 0:
		return errors.New("lab: Shards cannot be negative")
	case c.Shards > 0 && c.Sentinels > 0:
		return errors.New("lab: a cluster (Shards) has no sentinels; set one of Shards and Sentinels")
	case c.Partitions && c.Shards*(c.Replicas+1) > clusterHostSpan:
		return fmt.Errorf("lab: Partitions gives a cluster's nodes %d addresses: %d shards of %d nodes do not fit",
			clusterHostSpan, c.Shards, c.Replicas+1)
	case c.Partitions && hostBase+c.Replicas+c.Sentinels > maxHost:
		return fmt.Errorf("lab: Partitions gives each server an address in 127.0.0.%d-%d: %d servers do not fit",
			hostBase, maxHost, c.Replicas+1+c.Sentinels)
	}
	if c.Partitions {
		if err := checkLoopbackAliases(c); err != nil {
			return err
		}
	}
	if _, err := c.Server.resolve(); err != nil {
		return err
	}
	for _, bin := range []string{c.RedisServer, c.RedisSentinel} {
		if bin == c.RedisSentinel && c.Sentinels == 0 {
			continue
		}
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("lab: %s not found (%s): %w", bin, c.Server.installHint(), err)
		}
	}
	return nil
}

// maxStartAttempts bounds how many times Start starts the topology: a port
// can be taken by another process between freePort and the server's bind,
// and then the whole topology starts again on fresh ports.
const maxStartAttempts = 3

func (l *Lab) start(ctx context.Context) error {
	c := l.cfg
	if c.TLS {
		// Clients check the servers' addresses against the certificate.
		files, err := generateTLS(l.dir, l.serverHosts())
		if err != nil {
			return err
		}
		l.tlsFiles = &files
		if l.tlsConfig, err = files.ClientConfig(); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		err := l.startTopology(ctx)
		if err == nil || !errors.Is(err, errPortInUse) || attempt == maxStartAttempts || ctx.Err() != nil {
			return err
		}
		// Every config names other servers' ports (replicaof, the
		// sentinels' monitor, known-replica and known-sentinel lines):
		// a new port for one server means new configs for all.
		c.Logger.Info("lab: a port was taken before its server bound it; starting again on fresh ports",
			"attempt", attempt, "err", err)
		if err := l.stopTopology(); err != nil {
			return err
		}
	}
}

// startTopology starts the data nodes, then the sentinels, each on a port
// picked before any config is rendered. Ports are fixed from then on: the
// configs are rendered before the servers start in parallel.
func (l *Lab) startTopology(ctx context.Context) error {
	c := l.cfg
	if c.Shards > 0 {
		return l.startCluster(ctx)
	}
	hosts := l.serverHosts()
	for i := 0; i <= c.Replicas; i++ {
		n := &Node{index: i, shard: -1}
		l.nextIndex++
		n.Server = l.newServer(fmt.Sprintf("node%d", i), c.RedisServer, c.Username, c.Password, hosts[i])
		l.nodes = append(l.nodes, n)
		if err := n.allocatePort(); err != nil {
			return err
		}
		if c.Proxy {
			p, err := n.newProxy()
			if err != nil {
				return err
			}
			p.SetLatency(c.node(i).Latency)
			n.proxy = p
		}
	}
	master := l.nodes[0]
	nodeConfs := make(map[*Node]string, len(l.nodes))
	for _, n := range l.nodes {
		masterAddr := ""
		if n != master {
			masterAddr = master.Addr()
		}
		nodeConfs[n] = l.renderNodeConfig(n, masterAddr)
	}
	if err := parallel(l.nodes, func(n *Node) error { return n.startWithConfig(ctx, nodeConfs[n]) }); err != nil {
		return err
	}
	if err := l.waitReplicasSynced(ctx); err != nil {
		return err
	}
	if err := l.readVersion(ctx, master); err != nil {
		return err
	}
	if c.Sentinels == 0 {
		return nil
	}

	for i := 0; i < c.Sentinels; i++ {
		s := &SentinelNode{index: i, myID: newSentinelID()}
		s.Server = l.newServer(fmt.Sprintf("sentinel%d", i), c.RedisSentinel, c.SentinelUsername, c.SentinelPassword,
			hosts[len(l.nodes)+i])
		l.sentinels = append(l.sentinels, s)
		if err := s.allocatePort(); err != nil {
			return err
		}
		// Only with Partitions: a sentinel's proxy is there to cut it off.
		if c.Partitions {
			p, err := s.newProxy()
			if err != nil {
				return err
			}
			s.proxy = p
		}
	}
	sentinelConfs := make(map[*SentinelNode]string, len(l.sentinels))
	for _, s := range l.sentinels {
		sentinelConfs[s] = l.renderSentinelConfig(s, master, l.nodes[1:])
	}
	if err := parallel(l.sentinels, func(s *SentinelNode) error {
		if err := s.startWithConfig(ctx, sentinelConfs[s]); err != nil {
			return err
		}
		return s.applyTiming(ctx)
	}); err != nil {
		return err
	}
	if err := l.waitSentinelsReady(ctx); err != nil {
		return err
	}
	return l.events.watch(ctx, l)
}

// readVersion reads the server's version from n's INFO server.
func (l *Lab) readVersion(ctx context.Context, n *Node) error {
	info, err := n.Do(ctx, "INFO", "server").Text()
	if err != nil {
		return fmt.Errorf("lab: %s INFO server: %w", n.name, err)
	}
	if l.version, err = redisinfo.ParseServerVersion(redisinfo.ParseInfo(info)); err != nil {
		return fmt.Errorf("lab: %s: %w", n.name, err)
	}
	return nil
}

// stopTopology stops whatever startTopology started (processes, admin
// clients, proxies) and removes the servers' directories, for a fresh
// start.
func (l *Lab) stopTopology() error {
	errs := []error{l.stopServers()}
	for _, s := range l.servers() {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	l.nodes, l.sentinels = nil, nil
	l.picked = nil
	l.nextIndex = 0
	return errors.Join(errs...)
}

// stopServers kills every server by its PID, closes the lab's clients of
// them and the proxies.
func (l *Lab) stopServers() error {
	err := parallel(l.servers(), func(s *Server) error {
		err := s.Kill()
		s.closeAdmin()
		return err
	})
	for _, n := range l.nodes {
		if n.proxy != nil {
			_ = n.proxy.Close()
		}
		if n.busProxy != nil {
			_ = n.busProxy.Close()
		}
	}
	for _, s := range l.sentinels {
		if s.proxy != nil {
			_ = s.proxy.Close()
		}
	}
	return err
}

func (l *Lab) newServer(name, binary, user, pass string, host netip.Addr) *Server {
	return &Server{
		lab:      l,
		name:     name,
		binary:   binary,
		dir:      filepath.Join(l.dir, name),
		conf:     filepath.Join(l.dir, name, "redis.conf"),
		host:     host,
		username: user,
		password: pass,
	}
}

// newProxy starts the proxy in front of the server, on a free port of the
// server's address. With Partitions it dials the server from each client's
// own address, so the server sees who is talking.
func (s *Server) newProxy() (*Proxy, error) {
	return newProxy(netip.AddrPortFrom(s.host, 0).String(), s.DirectAddr(), s.lab.cfg.Partitions)
}

// allocatePort creates the server's directory and picks its port. It runs
// before the server's config, or any other server's, is rendered.
func (s *Server) allocatePort() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	port, err := s.pickPort()
	if err != nil {
		return err
	}
	s.port = port
	return nil
}

// pickPort picks a free port on the server's address that no other server
// of the lab was given.
func (s *Server) pickPort() (int, error) {
	// The kernel may hand the port it just freed to the next bind: a port
	// picked for another server of this lab is picked again, so that two
	// servers never share one (the second would fail to listen while the
	// first answered its readiness check).
	for range maxPortPicks {
		port, err := s.lab.pickPort(s.host)
		if err != nil {
			return 0, fmt.Errorf("lab: find a free port: %w", err)
		}
		addr := netip.AddrPortFrom(s.host, uint16(port)) //nolint:gosec // a port from the kernel, below 65536
		if s.lab.picked[addr] {
			continue
		}
		if s.lab.picked == nil {
			s.lab.picked = map[netip.AddrPort]bool{}
		}
		s.lab.picked[addr] = true
		return port, nil
	}
	return 0, fmt.Errorf("lab: find a free port on %s: %d picks all gave ports other servers of the lab have", s.host, maxPortPicks)
}

// maxPortPicks bounds allocatePort's picks for one server.
const maxPortPicks = 20

// startWithConfig writes the server's config and starts it.
func (s *Server) startWithConfig(ctx context.Context, conf string) error {
	if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("lab: write %s: %w", s.conf, err)
	}
	return s.start(ctx)
}

func parallel[T any](items []T, f func(T) error) error {
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Go(func() { errs[i] = f(it) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitReplicasSynced waits until every replica has loaded the master's
// data and the replication stream demonstrably flows to it. After a
// diskless sync, Redis holds a replica's command stream back until the
// replica's first acknowledgement (sent once a second), so a replica can
// report its link "connected" and still receive nothing, and not count for
// WAIT, for up to a second. The lab publishes on a channel of its own
// (pub/sub messages are replicated; the keyspace is untouched) and waits
// until every replica has acknowledged that offset.
func (l *Lab) waitReplicasSynced(ctx context.Context) error {
	if len(l.nodes) == 1 {
		return nil
	}
	master := l.nodes[0]
	err := poll(ctx, "replicas to sync", func() error {
		for _, n := range l.nodes[1:] {
			r, err := n.Role(ctx)
			if err != nil {
				return err
			}
			if r.Role != "slave" || r.LinkState != "connected" {
				return fmt.Errorf("%s: role %s, link %s", n.name, r.Role, r.LinkState)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return master.waitAcknowledged(ctx, len(l.nodes)-1, "PUBLISH", "__rediskit_lab__", "sync")
}

// waitAcknowledged runs write, a replicated command that leaves the
// keyspace alone, on a connection of the master's, then WAIT on the same
// connection until want replicas have acknowledged it. WAIT asks the
// replicas for an acknowledgement at once (REPLCONF GETACK) instead of at
// their next once-a-second report. A connection that fails (a socket
// deadline on a starved machine leaves it unusable) is replaced, and the
// write made again on the new one: WAIT counts its own connection's writes.
func (n *Node) waitAcknowledged(ctx context.Context, want int, write ...any) error {
	var conn *redis.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	return poll(ctx, n.name+"'s replicas to acknowledge its offset", func() error {
		if conn == nil {
			conn = n.adminClient().Conn()
			if err := conn.Do(ctx, write...).Err(); err != nil {
				_ = conn.Close()
				conn = nil
				return fmt.Errorf("%s: %w", n.name, err)
			}
		}
		got, err := conn.Do(ctx, "WAIT", want, 100).Int()
		if err != nil {
			_ = conn.Close()
			conn = nil
			return err
		}
		if got < want {
			return fmt.Errorf("%d of %d replicas acknowledged", got, want)
		}
		return nil
	})
}

// waitSentinelsReady waits until every sentinel names the master, sees
// every replica healthy, and knows each of its peers at its address.
func (l *Lab) waitSentinelsReady(ctx context.Context) error {
	master := l.nodes[0].Addr()
	return poll(ctx, "sentinels to see the topology", func() error {
		for _, s := range l.sentinels {
			addr, err := s.MasterAddr(ctx)
			if err != nil {
				return err
			}
			if addr != master {
				return fmt.Errorf("%s names %s, not %s", s.name, addr, master)
			}
			if err := s.checkReplicas(ctx, master, l.nodes[1:]); err != nil {
				return err
			}
			if err := s.checkPeers(ctx, l.sentinels); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkPeers verifies that the sentinel counts the other sentinels
// (num-other-sentinels in SENTINEL MASTER) and lists each at its address.
func (s *SentinelNode) checkPeers(ctx context.Context, all []*SentinelNode) error {
	fields, err := redisinfo.ParseFields(s.Do(ctx, "SENTINEL", "MASTER", s.lab.cfg.MasterName))
	if err != nil {
		return err
	}
	if got, want := fields["num-other-sentinels"], strconv.Itoa(len(all)-1); got != want {
		return fmt.Errorf("%s knows %s other sentinels, want %s", s.name, got, want)
	}
	peers, err := redisinfo.ParseTable(s.Do(ctx, "SENTINEL", "SENTINELS", s.lab.cfg.MasterName))
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range peers {
		known[redisinfo.Addr(p)] = true
	}
	for _, peer := range all {
		if peer != s && !known[peer.Addr()] {
			return fmt.Errorf("%s does not list sentinel %s at %s", s.name, peer.name, peer.Addr())
		}
	}
	return nil
}

// checkReplicas verifies that the sentinel sees exactly the given replicas,
// healthy and linked to master.
func (s *SentinelNode) checkReplicas(ctx context.Context, master string, want []*Node) error {
	seen, err := s.Replicas(ctx)
	if err != nil {
		return err
	}
	byAddr := map[string]map[string]string{}
	for _, r := range seen {
		byAddr[net.JoinHostPort(r["ip"], r["port"])] = r
	}
	for _, n := range want {
		r, ok := byAddr[n.Addr()]
		if !ok {
			return fmt.Errorf("%s does not list replica %s", s.name, n.name)
		}
		if r["flags"] != "slave" || r["master-link-status"] != "ok" ||
			net.JoinHostPort(r["master-host"], r["master-port"]) != master {
			return fmt.Errorf("%s sees replica %s as flags=%s link=%s master=%s:%s",
				s.name, n.name, r["flags"], r["master-link-status"], r["master-host"], r["master-port"])
		}
	}
	return nil
}

// poll runs check every 10 ms until it returns nil or ctx ends.
func poll(ctx context.Context, what string, check func() error) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lab: waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// WaitSettled waits until the topology is quiet: every running sentinel
// names the same master, which answers ROLE master; every other running
// node is its connected replica; and every sentinel sees those replicas
// healthy. Paused and killed servers are left out. Use it between
// failovers: Sentinel refuses a failover while no replica qualifies. On a
// cluster it is ClusterReady.
func (l *Lab) WaitSettled(ctx context.Context) error {
	if l.IsCluster() {
		return l.ClusterReady(ctx)
	}
	return l.waitMasterSettled(ctx)
}

// waitMasterSettled is WaitSettled for a master with replicas (and
// sentinels).
func (l *Lab) waitMasterSettled(ctx context.Context) error {
	return poll(ctx, "the topology to settle", func() error {
		var master *Node
		if len(l.sentinels) > 0 {
			n, ok := l.agreedMaster(ctx)
			if !ok {
				return errors.New("sentinels do not agree on the master")
			}
			master = n
		} else {
			n, err := l.Master(ctx)
			if err != nil {
				return err
			}
			master = n
		}
		if r, err := master.Role(ctx); err != nil || r.Role != "master" {
			return fmt.Errorf("%s is named master but ROLE says %q (%v)", master.name, r.Role, err)
		}
		var replicas []*Node
		for _, n := range l.nodes {
			if n == master || !n.Running() || n.Paused() {
				continue
			}
			r, err := n.Role(ctx)
			if err != nil {
				return err
			}
			if r.Role != "slave" || r.MasterAddr != master.Addr() || r.LinkState != "connected" {
				return fmt.Errorf("%s: role %s of %s, link %s", n.name, r.Role, r.MasterAddr, r.LinkState)
			}
			replicas = append(replicas, n)
		}
		for _, s := range l.runningSentinels() {
			if err := s.checkReplicas(ctx, master.Addr(), replicas); err != nil {
				return err
			}
		}
		return nil
	})
}

// Nodes returns the data nodes; index 0 started as the master.
func (l *Lab) Nodes() []*Node { return l.nodes }

// Node returns data node i.
func (l *Lab) Node(i int) *Node { return l.nodes[i] }

// Sentinels returns the sentinels (none without Config.Sentinels).
func (l *Lab) Sentinels() []*SentinelNode { return l.sentinels }

// SentinelAddrs returns the sentinels' addresses in order.
func (l *Lab) SentinelAddrs() []string {
	out := make([]string, len(l.sentinels))
	for i, s := range l.sentinels {
		out[i] = s.Addr()
	}
	return out
}

// MasterName is the name the sentinels monitor the master under.
func (l *Lab) MasterName() string { return l.cfg.MasterName }

// Config returns the configuration the lab runs with, defaults filled in.
func (l *Lab) Config() Config { return l.cfg }

// Dir is the lab's directory (configs, logs, certificates).
func (l *Lab) Dir() string { return l.dir }

// TLS returns the certificate files when the lab runs with TLS, else nil.
func (l *Lab) TLS() *TLSFiles { return l.tlsFiles }

// TLSConfig is a client TLS configuration for the lab (nil without TLS).
func (l *Lab) TLSConfig() *tls.Config { return l.clientTLS() }

func (l *Lab) clientTLS() *tls.Config {
	if l.tlsConfig == nil {
		return nil
	}
	return l.tlsConfig.Clone()
}

// NodeByAddr finds the data node with the given address (its proxy's or
// its own), or nil.
func (l *Lab) NodeByAddr(addr string) *Node {
	for _, n := range l.nodes {
		if n.Addr() == addr || n.DirectAddr() == addr {
			return n
		}
	}
	return nil
}

// Master returns the current master: the node the first answering sentinel
// names, or, without sentinels, the one node whose ROLE says master. A
// cluster has one per shard: it fails there (use ShardMaster).
func (l *Lab) Master(ctx context.Context) (*Node, error) {
	if l.IsCluster() {
		return nil, errors.New("lab: Master: a cluster has a master per shard; use ShardMaster")
	}
	if len(l.sentinels) > 0 {
		var errs []error
		for _, s := range l.runningSentinels() {
			addr, err := s.MasterAddr(ctx)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
				continue
			}
			if n := l.NodeByAddr(addr); n != nil {
				return n, nil
			}
			errs = append(errs, fmt.Errorf("%s names %s, which is not a lab node", s.name, addr))
		}
		return nil, fmt.Errorf("lab: no sentinel named the master: %w", errors.Join(errs...))
	}
	var masters []*Node
	for _, n := range l.nodes {
		if !n.Running() || n.Paused() {
			continue
		}
		if r, err := n.Role(ctx); err == nil && r.Role == "master" {
			masters = append(masters, n)
		}
	}
	if len(masters) != 1 {
		return nil, fmt.Errorf("lab: %d nodes answer ROLE master", len(masters))
	}
	return masters[0], nil
}

// URL is a connection URL for the lab, with its credentials:
// redis+sentinel:// (rediss+sentinel:// with TLS) listing the sentinels and
// the master name when the lab has sentinels, else redis:// (rediss://) to
// node 0. With TLS it carries caFile (and certFile/keyFile when servers
// require client certificates). Use Redacted to print it.
func (l *Lab) URL() string { return l.url(true) }

// Redacted is URL with every password replaced by "xxxxx".
func (l *Lab) Redacted() string { return l.url(false) }

func (l *Lab) url(secrets bool) string {
	c := l.cfg
	u := url.URL{Scheme: "redis"}
	if c.TLS {
		u.Scheme = "rediss"
	}
	pass := func(p string) string {
		if secrets {
			return p
		}
		return "xxxxx"
	}
	if c.Password != "" {
		u.User = url.UserPassword(c.Username, pass(c.Password))
	}
	q := url.Values{}
	if len(l.sentinels) > 0 {
		u.Scheme += "+sentinel"
		u.Host = strings.Join(l.SentinelAddrs(), ",")
		u.Path = "/" + c.MasterName
		if c.SentinelUsername != "" {
			q.Set("sentinelUser", c.SentinelUsername)
		}
		if c.SentinelPassword != "" {
			q.Set("sentinelPassword", pass(c.SentinelPassword))
		}
	} else {
		u.Host = l.nodes[0].Addr()
		// A cluster: go-redis's cluster URL, the other seeds as addr=.
		for _, n := range l.nodes[1:] {
			if l.IsCluster() {
				q.Add("addr", n.Addr())
			}
		}
	}
	if l.tlsFiles != nil {
		q.Set("caFile", l.tlsFiles.CAFile)
		if c.TLSClientAuth {
			q.Set("certFile", l.tlsFiles.CertFile)
			q.Set("keyFile", l.tlsFiles.KeyFile)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ServerStatus is one server of the lab as Describe lists it.
type ServerStatus struct {
	Name string // node0, ..., sentinel0, ...
	// Role is the data node's role from ROLE ("master", or "replica" for
	// Redis's "slave"), "paused" or "down" when it does not answer, and
	// "sentinel" for a sentinel.
	Role    string
	Addr    string        // the address clients use (the proxy's, when there is one)
	Server  string        // the process's own address
	PID     int           // 0 while the server is not running
	Latency time.Duration // the round trip the proxy adds; 0 for sentinels
	// Shard is the node's shard in a cluster lab (Node.Shard), -1 outside
	// a cluster and for sentinels.
	Shard int
}

// Status returns the data nodes' current state, then the sentinels'.
func (l *Lab) Status(ctx context.Context) []ServerStatus {
	var rows []ServerStatus
	for _, n := range l.nodes {
		role := "down"
		switch {
		case !n.Running(): // killed: no dial to a closed port
		case n.Paused():
			role = "paused"
		default:
			if r, err := n.Role(ctx); err == nil {
				role = r.Role
			}
			if role == "slave" {
				role = "replica"
			}
		}
		rows = append(rows, ServerStatus{Name: n.name, Role: role, Addr: n.Addr(), Server: n.DirectAddr(),
			PID: n.PID(), Latency: n.Latency(), Shard: n.shard})
	}
	for _, s := range l.sentinels {
		rows = append(rows, ServerStatus{Name: s.name, Role: "sentinel", Addr: s.Addr(), Server: s.DirectAddr(), PID: s.PID(), Shard: -1})
	}
	return rows
}

// WriteStatus writes rows as a table: name, role, address, the server's
// own address, PID and injected latency ("-" for sentinels). When a row is
// in a cluster (Shard >= 0), a SHARD column follows the name ("-" for a
// row outside one); otherwise the table has no such column.
func WriteStatus(w io.Writer, rows []ServerStatus) error {
	cluster := slices.ContainsFunc(rows, func(r ServerStatus) bool { return r.Shard >= 0 })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	shard := func(r ServerStatus) string {
		switch {
		case !cluster:
			return ""
		case r.Shard < 0:
			return "-\t"
		default:
			return strconv.Itoa(r.Shard) + "\t"
		}
	}
	header := "NODE\t"
	if cluster {
		header += "SHARD\t"
	}
	fmt.Fprintln(tw, header+"ROLE\tADDR\tSERVER\tPID\tLATENCY")
	for _, r := range rows {
		latency := r.Latency.String()
		if r.Role == "sentinel" {
			latency = "-"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%d\t%s\n", r.Name, shard(r), r.Role, r.Addr, r.Server, r.PID, latency)
	}
	return tw.Flush()
}

// describeMasterWait bounds how long Describe waits for a cluster's nodes
// to agree on each shard's master: a shard in the middle of a failover is
// reported as unknown rather than holding the description up.
const describeMasterWait = 2 * time.Second

// Describe writes the table of Status (see WriteStatus); for a cluster,
// its shape (shards × replicas) and each shard's current master as the
// running nodes agree (ShardMaster, waiting at most 2 s, within ctx); then
// the lab's URL with the passwords redacted.
func (l *Lab) Describe(ctx context.Context, w io.Writer) error {
	if err := WriteStatus(w, l.Status(ctx)); err != nil {
		return err
	}
	if l.IsCluster() {
		if _, err := fmt.Fprintln(w, l.describeCluster(ctx)); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "URL: %s\n", l.Redacted())
	return err
}

// describeCluster is Describe's cluster line: "Cluster: 3 shards × 1
// replica each; masters: shard 0 node0, shard 1 node3, shard 2 node4".
func (l *Lab) describeCluster(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, describeMasterWait)
	defer cancel()
	ids := l.ShardIDs()
	masters := make([]string, 0, len(ids))
	for _, id := range ids {
		m, err := l.ShardMaster(ctx, id)
		if err != nil {
			// The poll's last reason may span lines (two nodes' views).
			masters = append(masters, fmt.Sprintf("shard %d unknown (%s)", id, strings.ReplaceAll(err.Error(), "\n", "; ")))
			continue
		}
		masters = append(masters, fmt.Sprintf("shard %d %s", id, m.name))
	}
	return fmt.Sprintf("Cluster: %s × %s each; masters: %s", plural(len(ids), "shard"), plural(l.cfg.Replicas, "replica"),
		strings.Join(masters, ", "))
}

// plural is "1 shard", "3 shards".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// PIDs returns the PIDs of every running server.
func (l *Lab) PIDs() []int {
	var pids []int
	for _, s := range l.servers() {
		if pid := s.PID(); pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// LogTails returns the last lines of every server's log, with the lab's
// passwords replaced by "xxxxx".
func (l *Lab) LogTails(lines int) string {
	var b strings.Builder
	for _, s := range l.servers() {
		b.WriteString(s.LogTail(lines))
	}
	return b.String()
}

// redact replaces the lab's passwords in s with "xxxxx", as given and as
// written in the config files (confQuote's escapes), longest first.
func (l *Lab) redact(s string) string {
	var secrets []string
	for _, p := range []string{l.cfg.Password, l.cfg.SentinelPassword} {
		if p == "" {
			continue
		}
		q := confQuote(p)
		secrets = append(secrets, p, q[1:len(q)-1])
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, secret := range secrets {
		s = strings.ReplaceAll(s, secret, "xxxxx")
	}
	return s
}

func (l *Lab) servers() []*Server {
	var out []*Server
	for _, n := range l.nodes {
		out = append(out, n.Server)
	}
	for _, s := range l.sentinels {
		out = append(out, s.Server)
	}
	return out
}

// Close stops every process by its PID (SIGKILL: the lab keeps no data),
// closes the proxies and removes the lab's directory if Start created it.
// It is safe to call more than once.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		began := time.Now()
		l.events.close()
		errs := []error{l.stopServers()}
		if l.ownDir {
			if err := os.RemoveAll(l.dir); err != nil {
				errs = append(errs, err)
			}
		}
		l.closeErr = errors.Join(errs...)
		l.cfg.Logger.Info("lab: closed", "took", time.Since(began))
	})
	return l.closeErr
}
