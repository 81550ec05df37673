package lab

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"

	"github.com/rediskit/rediskit/internal/redisinfo"
)

// Node is a data node: a redis-server that starts as the master or as a
// replica. When the lab runs with proxies, Addr is the proxy's address and
// the node announces it, so it is also the address Sentinel hands out. A
// Node is an Endpoint.
type Node struct {
	*Server
	index int
	proxy *Proxy // nil when the lab runs without proxies

	// In a cluster lab: the node's shard (-1 outside one), cluster node
	// ID, cluster bus port, and the proxy in front of the bus.
	shard     int
	clusterID string
	busPort   int
	busProxy  *Proxy
}

// Index is the node's position in the topology: 0 started as the master.
func (n *Node) Index() int { return n.index }

// Addr is the address clients use: the proxy's when there is one, else the
// server's own.
func (n *Node) Addr() string {
	if n.proxy != nil {
		return n.proxy.Addr()
	}
	return n.DirectAddr()
}

// Proxy is the node's latency proxy, or nil when the lab runs without.
func (n *Node) Proxy() *Proxy { return n.proxy }

// Options are go-redis options for a client of this node through its proxy,
// with the lab's credentials and TLS settings and without retries of any
// kind (no command retries, one dial attempt).
func (n *Node) Options() *redis.Options {
	return redisopt.Inner(&redis.Options{
		Addr:         n.Addr(),
		Username:     n.lab.cfg.Username,
		Password:     n.lab.cfg.Password,
		TLSConfig:    n.lab.clientTLS(),
		DialTimeout:  2 * time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
	})
}

// NewClient returns a go-redis client for Options. The caller closes it.
func (n *Node) NewClient() *redis.Client { return redis.NewClient(n.Options()) }

// SetLatency sets the round-trip delay the node's proxy adds. It panics
// when the lab runs without proxies (Config.Proxy), a programming error in
// the test.
func (n *Node) SetLatency(rtt time.Duration) {
	n.mustProxy().SetLatency(rtt)
	n.eachBus((*Proxy).SetLatency, rtt)
	n.lab.cfg.Logger.Info("lab: latency", "node", n.name, "rtt", rtt)
}

// Latency is the round-trip delay the node's proxy adds (0 without proxy).
func (n *Node) Latency() time.Duration {
	if n.proxy == nil {
		return 0
	}
	return n.proxy.Latency()
}

// BlackHole makes the node's proxy swallow all traffic (see Proxy.BlackHole).
func (n *Node) BlackHole() {
	n.mustProxy().BlackHole()
	n.eachBus(func(p *Proxy, _ time.Duration) { p.BlackHole() }, 0)
	n.lab.cfg.Logger.Info("lab: black hole", "node", n.name)
}

// ResetConnections resets every connection through the node's proxy.
func (n *Node) ResetConnections() {
	n.mustProxy().ResetConnections()
	n.eachBus(func(p *Proxy, _ time.Duration) { p.ResetConnections() }, 0)
	n.lab.cfg.Logger.Info("lab: reset connections", "node", n.name)
}

// Restore ends a black hole (see Proxy.Restore). Latency stays as set.
func (n *Node) Restore() {
	n.mustProxy().Restore()
	n.eachBus(func(p *Proxy, _ time.Duration) { p.Restore() }, 0)
	n.lab.cfg.Logger.Info("lab: restore", "node", n.name)
}

// eachBus applies a fault to the node's cluster bus proxy too, when it has
// one: in a cluster, latency and faults reach the bus as they reach the
// clients.
func (n *Node) eachBus(f func(*Proxy, time.Duration), d time.Duration) {
	if n.busProxy != nil {
		f(n.busProxy, d)
	}
}

func (n *Node) mustProxy() *Proxy {
	if n.proxy == nil {
		panic("lab: " + n.name + " has no proxy; start the lab with Config.Proxy")
	}
	return n.proxy
}

// Kill stops the server with SIGKILL. Its proxy stops listening too, so
// clients get "connection refused" as they would from a dead server.
func (n *Node) Kill() error {
	if n.proxy != nil {
		n.proxy.Suspend()
	}
	if n.busProxy != nil {
		n.busProxy.Suspend()
	}
	return n.Server.Kill()
}

// Restart starts a killed node again on the same addresses.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.Server.Restart(ctx); err != nil {
		return err
	}
	if n.busProxy != nil {
		if err := n.busProxy.Resume(); err != nil {
			return err
		}
	}
	if n.proxy != nil {
		return n.proxy.Resume()
	}
	return nil
}

// Role is a parsed ROLE reply.
type Role = redisinfo.Role

// ReplicaOffset is one replica in a master's ROLE reply.
type ReplicaOffset = redisinfo.ReplicaOffset

// Role runs ROLE on the node's own port.
func (n *Node) Role(ctx context.Context) (Role, error) {
	return redisinfo.ParseRole(n.Do(ctx, "ROLE"))
}

// ReplicationInfo returns the fields of INFO replication.
func (n *Node) ReplicationInfo(ctx context.Context) (map[string]string, error) {
	s, err := n.Do(ctx, "INFO", "replication").Text()
	if err != nil {
		return nil, err
	}
	return redisinfo.ParseInfo(s), nil
}

// ParseInfo parses an INFO reply into its key:value fields, e.g.
// ParseInfo(info)["master_link_status"].
func ParseInfo(s string) map[string]string { return redisinfo.ParseInfo(s) }

// ReplicaOf makes the node a replica of master (REPLICAOF with master's
// announced address).
func (n *Node) ReplicaOf(ctx context.Context, master *Node) error {
	host, port, _ := net.SplitHostPort(master.Addr())
	if err := n.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("lab: %s REPLICAOF %s: %w", n.name, master.name, err)
	}
	n.lab.cfg.Logger.Info("lab: replicaof", "node", n.name, "master", master.name)
	return nil
}

// Promote makes the node a master (REPLICAOF NO ONE) behind Sentinel's
// back, for split-brain tests.
func (n *Node) Promote(ctx context.Context) error {
	if err := n.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("lab: %s REPLICAOF NO ONE: %w", n.name, err)
	}
	return nil
}

// SetReplicaPriority sets replica-priority at run time: Sentinel promotes
// the replica with the lowest non-zero priority; 0 means never.
func (n *Node) SetReplicaPriority(ctx context.Context, priority int) error {
	if err := n.Do(ctx, "CONFIG", "SET", "replica-priority", strconv.Itoa(priority)).Err(); err != nil {
		return fmt.Errorf("lab: %s replica-priority: %w", n.name, err)
	}
	return nil
}

// renderNodeConfig writes the redis.conf of data node i.
func (l *Lab) renderNodeConfig(n *Node, masterAddr string) string {
	c := l.cfg
	nc := c.node(n.index)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("bind %s", n.host)
	if c.Partitions {
		// Redis 7.0 connects to its master from the address the kernel
		// picks (127.0.0.1 on loopback), not from its bind address, unless
		// told: the master's proxy must see the replica's own address.
		line("bind-source-addr %s", n.host)
		line("repl-ping-replica-period 1")
		line("repl-timeout %d", max(1, int(DefaultPartitionReplTimeout.Seconds())))
	}
	if c.TLS {
		line("port 0")
		line("tls-port %d", n.port)
		l.tlsLines(&b)
	} else {
		line("port %d", n.port)
	}
	line("protected-mode no")
	line("daemonize no")
	line("dir %s", confQuote(n.dir))
	line("logfile %s", confQuote(filepath.Join(n.dir, "server.log")))
	line(`save ""`)
	line("appendonly no")
	// Replicas sync at once instead of waiting for more replicas to share
	// one transfer (the default waits 5 s).
	line("repl-diskless-sync yes")
	line("repl-diskless-sync-delay 0")
	if n.proxy != nil {
		host, port, _ := net.SplitHostPort(n.proxy.Addr())
		line("replica-announce-ip %s", host)
		line("replica-announce-port %s", port)
	}
	switch {
	case nc.NeverPromote:
		line("replica-priority 0")
	case nc.ReplicaPriority > 0:
		line("replica-priority %d", nc.ReplicaPriority)
	}
	if c.Username != "" {
		line("user default off")
		line("user %s on %s ~* &* +@all", confQuote(c.Username), confQuote(">"+c.Password))
		line("masteruser %s", confQuote(c.Username))
		line("masterauth %s", confQuote(c.Password))
	} else if c.Password != "" {
		line("requirepass %s", confQuote(c.Password))
		line("masterauth %s", confQuote(c.Password))
	}
	if masterAddr != "" {
		host, port, _ := net.SplitHostPort(masterAddr)
		line("replicaof %s %s", host, port)
	}
	if n.shard >= 0 {
		l.clusterLines(&b, n)
	}
	for _, extra := range c.ExtraConfig {
		line("%s", extra)
	}
	for _, extra := range nc.ExtraConfig {
		line("%s", extra)
	}
	return b.String()
}

func (l *Lab) tlsLines(b *strings.Builder) {
	fmt.Fprintf(b, "tls-cert-file %s\n", confQuote(l.tlsFiles.CertFile))
	fmt.Fprintf(b, "tls-key-file %s\n", confQuote(l.tlsFiles.KeyFile))
	fmt.Fprintf(b, "tls-ca-cert-file %s\n", confQuote(l.tlsFiles.CAFile))
	fmt.Fprintf(b, "tls-replication yes\n")
	if l.cfg.TLSClientAuth {
		fmt.Fprintf(b, "tls-auth-clients yes\n")
	} else {
		fmt.Fprintf(b, "tls-auth-clients no\n")
	}
}

// confQuote writes a value for Redis's config file parser (the same for
// redis-server and redis-sentinel): in double quotes, with '"' and '\'
// escaped and control bytes written as escapes, so a password or path with
// a space, a quote or a '#' stays one argument.
func confQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Calls is how many times the node ran cmd (lower case, "get"; INFO
// commandstats), since it started or its stats were reset.
func (n *Node) Calls(ctx context.Context, cmd string) (int, error) {
	s, err := n.Do(ctx, "INFO", "commandstats").Text()
	if err != nil {
		return 0, err
	}
	prefix := "cmdstat_" + cmd + ":calls="
	for line := range strings.SplitSeq(s, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		}
	}
	return 0, nil
}
