package cluster

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/configerr"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/replica"
)

// Options is Config's former name.
//
// Deprecated: use Config (the name every rediskit package uses); Options
// stays until the first release.
type Options = Config

// Config configures a Client. Zero fields take the defaults below.
type Config struct {
	// Addrs are seed nodes (host:port): any node of the cluster will do;
	// the client learns the others from them.
	Addrs []string
	// Username and Password authenticate to every node.
	Username, Password string
	// TLSConfig, when set, makes every connection TLS.
	TLSConfig *tls.Config

	// DialTimeout, ReadTimeout and WriteTimeout bound each node
	// connection's dial and socket operations (also bounded by the
	// caller's context). Defaults DefaultDialTimeout, DefaultReadTimeout,
	// DefaultWriteTimeout.
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	// PoolSize is each node's connection pool. Default: go-redis's (10
	// per CPU).
	PoolSize int
	// ClientName is set with CLIENT SETNAME on every connection (to every
	// node, the client's map reads included), for CLIENT LIST.
	ClientName string
	// ReplyLimits bound every reply on the connections that carry the
	// caller's commands (to every node: masters, replica reads, pub/sub,
	// SCAN): a reply over a limit (a header declaring 2^31 elements, a
	// string longer than Redis allows, a line without an end) fails its
	// command with a *ReplyLimitError naming the node and the limit, and
	// closes the connection, instead of reaching go-redis's reader, which
	// would allocate what it declares or crash the process. Zero (or
	// negative) fields take the DefaultReply… constants (a 512 MiB string,
	// 16,777,216 elements a header, 128 levels, 1 GiB a reply); a field
	// set higher than 2^60 is 2^60, unbounded in effect. The client's own
	// connections (its map reads, probes) keep their tighter bounds.
	ReplyLimits ReplyLimits

	// RefreshInterval is how often the slot map is read again when nothing
	// suggests a change. Default DefaultRefreshInterval.
	RefreshInterval time.Duration
	// FailoverPollInterval is how often the slot map is read while a
	// shard's master is failing, until the cluster names a new one.
	// Default DefaultFailoverPollInterval.
	FailoverPollInterval time.Duration
	// SplitBrainPollInterval is how often the client asks every master
	// with replicas ROLE (and CLUSTER NODES while its writes are held)
	// and its replicas ROLE, to hold
	// the shard's writes from the first sign that the master is cut off
	// from its replicas and the majority of the masters while it still
	// answers (see "Split brain" in the package documentation). Default
	// DefaultSplitBrainPollInterval; negative turns the poll, and the
	// hold, off.
	SplitBrainPollInterval time.Duration
	// WriteHoldTimeout bounds how long a command waits for its shard to
	// serve it again: the writes of a shard whose master stopped answering,
	// until the cluster promotes another, and any command refused before it
	// ran (CLUSTERDOWN while another shard fails over, TRYAGAIN, LOADING),
	// within the caller's context. Default DefaultWriteHoldTimeout.
	WriteHoldTimeout time.Duration
	// MaxRedirects bounds the MOVED and ASK redirects one command
	// follows. Refusals that prove it did not run (TRYAGAIN, CLUSTERDOWN,
	// LOADING, a dial failure) are retried until WriteHoldTimeout instead.
	// Default DefaultMaxRedirects.
	MaxRedirects int

	// Cache turns on client-side caching: reads whose context asks for it
	// (clientcache.WithTTL) are served from replies the server promised to
	// invalidate, per node, masters and the replicas reads go to (see
	// package clientcache). Nil: no cache.
	Cache *clientcache.Config

	// ExactlyOnce makes writes exactly-once (package exactlyonce): each
	// write the path can take runs as a script with a token kept in its
	// slot, so that a write whose outcome is unknown (a connection lost
	// after sending, a timeout, its shard's failover) is sent again, to
	// whichever master serves the slot then, within WriteHoldTimeout and
	// the caller's context, and runs once: the caller gets its reply, not
	// a may-have-executed error. Nil: plain writes, unless a call asks
	// (exactlyonce.With), which then fails.
	ExactlyOnce *exactlyonce.Config

	// AutoPipeline makes the client auto-pipeline its single commands:
	// those that concurrent callers send to the same node while a batch
	// is on the wire share the next round trip (internal/routing's
	// Batcher, as in package sentinel). Each command is still routed,
	// redirected, held and judged on its own. Blocking commands (BLPOP,
	// XREAD BLOCK, WAIT, ...) are sent alone, never batched: they would
	// hold their batch-mates' replies until they return.
	AutoPipeline bool
	// AutoPipelineMaxBatch and AutoPipelineInflight bound a node's
	// batches (commands in one, and on the wire at once). Defaults:
	// routing.DefaultMaxBatch (256) and routing.DefaultMaxInflight (2).
	// A near node's batches beyond the first go out only while the
	// client has fewer than AutoPipelineInflight on the wire to all its
	// nodes (measured on a lab cluster of 3 masters, SET from 64
	// goroutines: 315k/s against 274k/s, 14.4 commands a batch against
	// 9.1: the nodes' batches overlap each other's turnarounds already).
	// A far node (round trips of routing.DefaultFarRoundTrip, 1 ms, or
	// more) gets up to PoolSize batches on the wire, as in package
	// sentinel.
	AutoPipelineMaxBatch, AutoPipelineInflight int

	// Durable makes every write wait, on the connection that made it, for
	// WAIT to confirm it on every replica of its shard that could be
	// promoted in its master's place and every one the master has
	// connected, within DurableTimeout; a call can override it with
	// WithDurable. A write that cannot be confirmed fails with a
	// *NotDurableError: see "Durable writes" in the package documentation
	// for the count and what it promises.
	Durable bool
	// DurableAOF makes durable writes also wait for the append-only file:
	// WAITAOF 1 N after the WAIT, counting the master once it has fsynced
	// the write to its AOF and a replica once it has fsynced it to its
	// own. It needs WAITAOF (Redis and Valkey 7.2 or newer) and appendonly
	// yes on the master and the counted replicas: without them durable
	// writes are refused unsent with a *NotDurableError wrapping
	// ErrAOFUnavailable. It applies to the writes that are durable; it
	// does not make writes durable by itself.
	DurableAOF bool
	// DurableTimeout bounds the WAIT after each durable write (and the
	// WAITAOF after it). WAIT's reply comes within ReadTimeout, so it must
	// be at most half of it (a third with DurableAOF). Default
	// DefaultDurableTimeout, or that fraction of ReadTimeout when it is
	// shorter.
	DurableTimeout time.Duration

	// ReadFrom is where read-only commands (package classify decides)
	// run by default: Master (the default), Replica, ReplicaPreferred or
	// Nearest, elected per shard (see "Reading from replicas" in the
	// package documentation). A call overrides it with WithReadFrom.
	// Writes, transactions, Watch, SCAN iterations and keyless commands
	// always go to a master.
	ReadFrom ReadFrom
	// Replica configures each shard's replica election (probe interval
	// and timeout, exclusion factor, latency window, MaxStaleness, ...).
	// The zero Config takes package replica's defaults: probes every 2 s,
	// a replica more than 3 x its master's RTT away is not elected,
	// replicas within 2 ms of the nearest share the reads, no staleness
	// bound. Its Observer receives every shard's election changes (with
	// MasterName "cluster:" and the sorted seeds); its Logger defaults to
	// Logger.
	Replica replica.Config

	// Logger receives the client's records. Default: discarded.
	Logger *slog.Logger

	// Observer, when set, receives every Event (masters changed, slots
	// moved, a master failing and recovering, refreshes failed, reads
	// retried, writes re-run and refused, durable writes not confirmed,
	// split-brain holds begun and ended),
	// in order, one call at a time, from a goroutine of the client's own:
	// a slow Observer holds up neither a failover nor a call; past
	// eventq.DefaultCapacity (1,024) waiting events new ones are dropped
	// and counted (Stats.EventsDropped). Close waits at most eventq.DefaultDrainTimeout
	// (1 s) for a stuck Observer. See "The Observer contract" in
	// internal/eventq's package documentation.
	Observer func(Event)

	// NodeOptions, when set, may adjust the go-redis options of every
	// node client after rediskit filled them in, for the settings not
	// covered here (OnConnect, Dialer, the pool's idle and lifetime
	// limits, buffer sizes, a credentials provider...): the clients of
	// the caller's commands and the client's own (map reads, probes)
	// alike, so that a Dialer or credentials reach every node. Replies
	// stay bounded (ReplyLimits) whatever Dialer it sets. Turning go-redis's
	// retries back on defeats the re-run rules. FromClusterOptions fills it
	// from a redis.ClusterOptions.
	NodeOptions func(*redis.Options)
}

// Defaults of Config.
const (
	DefaultDialTimeout  = 2 * time.Second
	DefaultReadTimeout  = 3 * time.Second
	DefaultWriteTimeout = 3 * time.Second
	// DefaultRefreshInterval keeps an idle client's map at most seconds
	// old; MOVED and failures refresh it at once anyway.
	DefaultRefreshInterval = 5 * time.Second
	// DefaultFailoverPollInterval: a cluster with a 1 s node timeout
	// promotes a replica one to three seconds after a master fails;
	// polling every 100 ms sees it within a tenth of a second.
	DefaultFailoverPollInterval = 100 * time.Millisecond
	// DefaultWriteHoldTimeout covers an automatic failover with Redis's
	// election delays (500 ms plus up to 500 ms plus rank) after a node
	// timeout of a few seconds; a longer one fails the held writes with a
	// *NoMasterError.
	DefaultWriteHoldTimeout = 10 * time.Second
	// DefaultSplitBrainPollInterval sees a replica stop receiving its
	// master's stream within two rounds: a fifth of a second.
	DefaultSplitBrainPollInterval = 100 * time.Millisecond
	// DefaultMaxRedirects is go-redis's ClusterOptions.MaxRedirects (3)
	// with room for a migration and a failover at once.
	DefaultMaxRedirects = 5
	// DefaultDurableTimeout lets a replica a few milliseconds away confirm
	// with room to spare, and fails a durable write within a second when
	// one cannot.
	DefaultDurableTimeout = 1 * time.Second
)

// ConfigError reports a Config field NewClient cannot use:
// "cluster: Config.<Field> <problem>". It never contains a password.
type ConfigError = configerr.Error

func configError(field, problem string) *ConfigError {
	return &ConfigError{Package: "cluster", Struct: "Config", Field: field, Problem: problem}
}

func (o Config) withDefaults() (Config, error) {
	if len(o.Addrs) == 0 {
		return o, configError("Addrs", "is empty: give at least one node of the cluster")
	}
	for _, a := range o.Addrs {
		if a == "" {
			return o, configError("Addrs", "holds an empty address")
		}
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&o.DialTimeout, DefaultDialTimeout)
	set(&o.ReadTimeout, DefaultReadTimeout)
	set(&o.WriteTimeout, DefaultWriteTimeout)
	set(&o.RefreshInterval, DefaultRefreshInterval)
	set(&o.FailoverPollInterval, DefaultFailoverPollInterval)
	set(&o.WriteHoldTimeout, DefaultWriteHoldTimeout)
	set(&o.SplitBrainPollInterval, DefaultSplitBrainPollInterval)
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	for name, d := range map[string]time.Duration{"DialTimeout": o.DialTimeout, "ReadTimeout": o.ReadTimeout,
		"WriteTimeout": o.WriteTimeout, "RefreshInterval": o.RefreshInterval,
		"FailoverPollInterval": o.FailoverPollInterval, "WriteHoldTimeout": o.WriteHoldTimeout} {
		if d < 0 {
			return o, configError(name, fmt.Sprintf("(%v) cannot be negative (0: the default)", d))
		}
	}
	if err := o.durableDefaults(); err != nil {
		return o, err
	}
	if o.AutoPipelineMaxBatch < 0 || o.AutoPipelineInflight < 0 {
		return o, configError("AutoPipelineMaxBatch/AutoPipelineInflight", fmt.Sprintf("(%d, %d) cannot be negative (0: the default)", o.AutoPipelineMaxBatch, o.AutoPipelineInflight))
	}
	if o.MaxRedirects < 0 {
		return o, configError("MaxRedirects", fmt.Sprintf("(%d) cannot be negative (0: the default, %d)", o.MaxRedirects, DefaultMaxRedirects))
	}
	o.ReplyLimits = o.ReplyLimits.ForData()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := o.checkReadFrom(); err != nil {
		return o, err
	}
	var field, problem string
	if o.Cache, field, problem = o.Cache.Resolved(); field != "" {
		return o, configError("Cache."+field, problem)
	}
	return o, nil
}

// nodeOptions are the go-redis options of the client of one node for the
// caller's commands: baseOptions, with replies bounded by ReplyLimits
// (respguard.GuardData). Its Dialer, guarded, is also what the pub/sub
// clients dial with.
func (o *Config) nodeOptions(addr string) *redis.Options {
	return respguard.GuardData(o.baseOptions(addr), o.ReplyLimits)
}

// controlOptions are the go-redis options of the client's own
// connections to one node (map reads, probes): baseOptions, with replies
// bounded by respguard's tighter defaults.
func (o *Config) controlOptions(addr string) *redis.Options {
	return respguard.Guard(o.baseOptions(addr))
}

// baseOptions are the go-redis options every client of a node shares:
// rediskit's inner-client policy (no retries of its own, context deadlines
// on sockets).
func (o *Config) baseOptions(addr string) *redis.Options {
	opt := redisopt.Inner(&redis.Options{
		Addr:         addr,
		Username:     o.Username,
		Password:     o.Password,
		TLSConfig:    o.TLSConfig,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
		PoolSize:     o.PoolSize,
		ClientName:   o.ClientName,
	})
	if o.NodeOptions != nil {
		o.NodeOptions(opt)
	}
	return opt
}
