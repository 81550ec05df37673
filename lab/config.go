package lab

import (
	"log/slog"
	"time"
)

// Defaults used where a Config field is left zero.
const (
	DefaultMasterName      = "mymaster"
	DefaultSentinels       = 3 // used by the Sentinel constructor
	DefaultDownAfter       = 1 * time.Second
	DefaultFailoverTimeout = 5 * time.Second
	DefaultStartTimeout    = 15 * time.Second
	// DefaultSentinelInfoPeriod is how often the lab's sentinels poll INFO
	// from the nodes. Redis uses 10 s; the lab uses 1 s so that a demoted
	// master is noticed (and turned into a replica) within about a second
	// of a failover instead of ten, and consecutive failovers can follow
	// each other quickly.
	DefaultSentinelInfoPeriod = 1 * time.Second
	// DefaultSentinelPublishPeriod is how often the lab's sentinels publish
	// hello messages. Redis uses 2 s. Sentinel waits four publish periods
	// before it turns a node that wrongly claims to be master (the old
	// master after a failover) into a replica: 8 s with Redis's default,
	// 2 s in the lab.
	DefaultSentinelPublishPeriod = 500 * time.Millisecond
	// DefaultPartitionReplTimeout is the repl-timeout of the data nodes of
	// a lab with Config.Partitions (and the master pings its replicas every
	// second, repl-ping-replica-period 1, so that an idle link does not time
	// out). Redis's own 60 s would hide a Drop partition between a master
	// and its replicas for a minute: neither side notices a silent link
	// before repl-timeout. ExtraConfig lines come later in redis.conf and
	// override both.
	DefaultPartitionReplTimeout = 3 * time.Second
)

// Config describes a topology. The zero value is one standalone server;
// Standalone, Replicated and Sentinel return the common shapes, ready to
// adjust.
type Config struct {
	// Replicas is the number of replicas of the master (of each master, in
	// a cluster). Zero starts a standalone server.
	Replicas int
	// Sentinels is the number of sentinels monitoring the master. Zero
	// starts none.
	Sentinels int
	// MasterName is the name the sentinels monitor the master under.
	// Default "mymaster".
	MasterName string
	// Quorum is the number of sentinels that must agree the master is down.
	// Default: a majority of Sentinels.
	Quorum int
	// DownAfter is the sentinels' down-after-milliseconds. Default 1 s, so a
	// failover after a crash completes in a few seconds.
	DownAfter time.Duration
	// FailoverTimeout is the sentinels' failover-timeout. Default 5 s.
	FailoverTimeout time.Duration
	// SentinelInfoPeriod is how often sentinels poll INFO from the master
	// and replicas (set with SENTINEL DEBUG info-period). Default 1 s;
	// Redis's own default, the one production runs with, is 10 s: set that
	// to reproduce production timelines (a demoted master then keeps
	// accepting writes for up to ten seconds after a failover).
	SentinelInfoPeriod time.Duration
	// SentinelPublishPeriod is how often sentinels publish hello messages
	// (SENTINEL DEBUG publish-period). Default 0.5 s; Redis's is 2 s.
	SentinelPublishPeriod time.Duration

	// Username and Password protect the data nodes. With only a password,
	// it is the default user's (requirepass). With a username, an ACL user
	// with every permission is created and the default user is disabled,
	// so a client that forgets the username is refused.
	Username string
	Password string
	// SentinelUsername and SentinelPassword protect the sentinels
	// themselves (sentinels also use them with each other).
	SentinelUsername string
	SentinelPassword string

	// TLS serves every node and sentinel over TLS only, with a throwaway CA
	// (see Lab.TLS). Replication and Sentinel traffic use TLS too.
	TLS bool
	// TLSClientAuth makes the servers require a client certificate.
	TLSClientAuth bool

	// Proxy puts every data node behind a latency proxy and makes the node
	// announce the proxy's address, so Sentinel and replication use it as
	// clients do. It is implied when any node has a Latency.
	Proxy bool

	// Shards makes the lab a Redis Cluster of Shards masters, each with
	// Replicas replicas (see Cluster): every node behind a proxy for its
	// client port and another for its cluster bus, both announced. Zero:
	// no cluster. It implies Proxy and excludes Sentinels.
	Shards int
	// ClusterNodeTimeout is a cluster's cluster-node-timeout. Default
	// DefaultClusterNodeTimeout (1 s).
	ClusterNodeTimeout time.Duration

	// Partitions gives every process of the lab (data nodes and sentinels)
	// an address of its own in 127.0.0.0/8 (127.0.0.2, 127.0.0.3, ...:
	// they bind it and connect from it), puts a proxy in front of each,
	// sentinels included, and lets a test cut the network between them
	// (Lab.Partition, Lab.Heal) and add client endpoints of its own
	// (Lab.NewClientEndpoint). It implies Proxy. Linux answers on every
	// 127.0.0.0/8 address without configuration; elsewhere Start fails
	// unless the addresses were added to the loopback interface. The data
	// nodes run with short replication timeouts (see
	// DefaultPartitionReplTimeout).
	Partitions bool

	// ExtraConfig lines are appended to every data node's redis.conf.
	ExtraConfig []string
	// Nodes holds per-node settings by index: 0 is the initial master,
	// 1..Replicas the replicas. It may be shorter than the topology.
	Nodes []NodeConfig
	// SentinelExtraConfig lines are appended to every sentinel's config.
	SentinelExtraConfig []string

	// Dir is where the lab keeps configs, logs and certificates. Default: a
	// new temporary directory, removed by Close.
	Dir string
	// Server is which server implementation runs: ServerRedis,
	// ServerValkey, or (the zero value) the one the environment variable
	// ServerEnv names, Redis when it is unset. Lab.ServerVersion says what
	// actually runs.
	Server ServerKind
	// RedisServer and RedisSentinel are the binaries to run. Default: the
	// Server kind's on PATH (redis-server and redis-sentinel, or
	// valkey-server and valkey-sentinel).
	RedisServer   string
	RedisSentinel string
	// StartTimeout bounds Start when the caller's context has no earlier
	// deadline. Default 15 s (DefaultStartTimeout), plus ClusterNodeTimeout
	// for a cluster whose node timeout is longer than the default.
	StartTimeout time.Duration
	// Logger receives the lab's own records (what it started, stopped,
	// injected). Default: discarded.
	Logger *slog.Logger
}

// NodeConfig holds one data node's settings.
type NodeConfig struct {
	// Latency is the round-trip delay the node's proxy adds from the start.
	Latency time.Duration
	// ReplicaPriority sets replica-priority (lower is promoted first). Zero
	// keeps Redis's default of 100; use NeverPromote for priority 0.
	ReplicaPriority int
	// NeverPromote sets replica-priority 0: Sentinel never promotes the node.
	NeverPromote bool
	// ExtraConfig lines are appended to this node's redis.conf.
	ExtraConfig []string
}

// Standalone is one Redis server.
func Standalone() Config { return Config{} }

// Replicated is a master with n replicas.
func Replicated(n int) Config { return Config{Replicas: n} }

// Sentinel is a master with n replicas monitored by three sentinels
// (quorum 2) under the name "mymaster".
func Sentinel(replicas int) Config {
	return Config{Replicas: replicas, Sentinels: DefaultSentinels}
}

func (c Config) withDefaults() Config {
	if c.MasterName == "" {
		c.MasterName = DefaultMasterName
	}
	if c.Quorum == 0 {
		c.Quorum = c.Sentinels/2 + 1
	}
	if c.DownAfter == 0 {
		c.DownAfter = DefaultDownAfter
	}
	if c.FailoverTimeout == 0 {
		c.FailoverTimeout = DefaultFailoverTimeout
	}
	if c.SentinelInfoPeriod == 0 {
		c.SentinelInfoPeriod = DefaultSentinelInfoPeriod
	}
	if c.SentinelPublishPeriod == 0 {
		c.SentinelPublishPeriod = DefaultSentinelPublishPeriod
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
		// A cluster's nodes ping each other at least every half node
		// timeout: with a long one, a new replica's role can take about a
		// node timeout to reach every node, and Start waits until all
		// agree (seen: 20 s, a node still without a shard's replica after
		// 15 s).
		if c.Shards > 0 && c.ClusterNodeTimeout > DefaultClusterNodeTimeout {
			c.StartTimeout += c.ClusterNodeTimeout
		}
	}
	// An unknown ServerEnv value leaves ServerAuto, which validate reports.
	if kind, err := c.Server.resolve(); err == nil {
		c.Server = kind
	}
	server, sentinel := c.Server.binaries()
	if c.RedisServer == "" {
		c.RedisServer = server
	}
	if c.RedisSentinel == "" {
		c.RedisSentinel = sentinel
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	for _, n := range c.Nodes {
		if n.Latency > 0 {
			c.Proxy = true
		}
	}
	if c.Partitions || c.Shards > 0 {
		c.Proxy = true
	}
	if c.Shards > 0 && c.ClusterNodeTimeout == 0 {
		c.ClusterNodeTimeout = DefaultClusterNodeTimeout
	}
	return c
}

func (c Config) node(i int) NodeConfig {
	if i < len(c.Nodes) {
		return c.Nodes[i]
	}
	return NodeConfig{}
}
