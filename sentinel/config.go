package sentinel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/callopt"
	"github.com/rediskit/rediskit/internal/configerr"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
	"github.com/rediskit/rediskit/internal/zero"
	"github.com/rediskit/rediskit/redisurl"
)

// ReadFrom says where read-only work may run.
type ReadFrom = redisurl.ReadFrom

// The read preferences.
const (
	// Master sends everything to the master (the default).
	Master = redisurl.Master
	// Replica sends read-only work to a replica, never to the master: when
	// no replica may serve the read (none healthy, or with the default
	// selector every one unreachable, link-down or stale), it fails with a
	// *NoReplicaError (ErrNoReplica) that says why for each replica.
	Replica = redisurl.Replica
	// ReplicaPreferred sends read-only work to a replica, or to the master
	// when none is healthy.
	ReplicaPreferred = redisurl.ReplicaPreferred
	// Nearest sends read-only work to the node the ReplicaSelector judges
	// nearest, the master included: with the default (latency-aware)
	// selector, the elected replicas, or the master when it is nearer
	// than all of them by more than the latency window, or before the
	// first probe round. With NewRoundRobinSelector (no latency data), it
	// behaves as ReplicaPreferred.
	Nearest = redisurl.Nearest
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=DurableScope -linecomment

// DurableScope says which replicas a durable write must be confirmed by
// (Config.DurableScope); see the package documentation, "Acknowledged
// writes that vanish, and durable writes", for what each one promises.
type DurableScope int

const (
	// DurableEveryKnownReplica (the default) counts every replica any
	// sentinel knows, down or not (all but those with replica-priority 0,
	// which Sentinel never promotes), and every replica the master has
	// connected: durable writes are refused while any known replica is
	// down, and no replica Sentinel knows can be promoted without the
	// writes it confirmed, whatever fails after them (a replica down when
	// they were confirmed, then promoted; the promoted master killed while
	// the old one is down, which then restarts stale and is promoted). A
	// replica that is gone for good is counted until the sentinels forget
	// it (SENTINEL RESET).
	DurableEveryKnownReplica DurableScope = iota // every known replica
	// DurablePromotable is the opt-in for availability: it counts every
	// replica the master has connected and every replica some sentinel
	// could promote now (not flagged down or disconnected, a non-zero
	// priority, its link to the master not down for too long), so durable
	// writes go on while a replica is down. A replica that is down when a
	// write is confirmed is not counted: if it comes back with older data
	// and is promoted (a second fault, such as the death of the master
	// that confirmed the write), that write is lost.
	DurablePromotable // promotable
)

// Defaults for the zero fields of Config.
const (
	DefaultSentinelPort     = 26379
	DefaultDialTimeout      = 2 * time.Second
	DefaultReadTimeout      = 3 * time.Second
	DefaultSentinelTimeout  = 500 * time.Millisecond
	DefaultProbeTimeout     = 1 * time.Second
	DefaultDiscoveryTimeout = 2 * time.Second
	DefaultRefreshInterval  = 2 * time.Second
	DefaultFailoverHold     = 3 * time.Second
	DefaultDurableTimeout   = 1 * time.Second
	// DefaultMaxSentinels is the default of Config.MaxSentinels:
	// deployments run three or five sentinels.
	DefaultMaxSentinels = 10
	// DefaultMaxReplicas is the default of Config.MaxReplicas: far above
	// the few replicas a Sentinel deployment runs (Redis itself has no
	// limit, but each replica costs its master a replication stream), and
	// far below what would make the client's refreshes dial thousands of
	// addresses one sentinel lists.
	DefaultMaxReplicas = 256
	// DefaultSentinelPollInterval is how often every sentinel is asked
	// SENTINEL MASTER: a quarter of a second catches a master cut off from
	// the sentinels within about half a second of its replicas' losing it,
	// at the cost of four small queries per second to each sentinel from
	// each client.
	DefaultSentinelPollInterval = 250 * time.Millisecond
	// DefaultProtocol is the RESP version of the caller's data-node
	// connections (Config.Protocol): RESP3, go-redis's default.
	DefaultProtocol = 3
	// DefaultConnMaxIdleTime is how long a caller's data-node connection
	// may sit idle in its pool before it is closed (Config.ConnMaxIdleTime):
	// go-redis's default, well under the idle timeouts of the load
	// balancers and NAT tables that drop connections silently.
	DefaultConnMaxIdleTime = 30 * time.Minute
)

// Config configures a Client. Only MasterName and SentinelAddrs are
// required (or Primary instead of both); every other zero field takes the
// default named next to it.
type Config struct {
	// MasterName is the name in the sentinels' "sentinel monitor" line.
	MasterName string
	// SentinelAddrs are the sentinels to ask, in order. A host without a
	// port uses 26379. The client learns further sentinels from them.
	SentinelAddrs []string
	// Primary, instead of MasterName and SentinelAddrs, is the host:port
	// of a primary no Sentinel manages (a standalone server, a managed
	// service's primary endpoint; a host without a port uses 6379), or the
	// absolute path of its Unix socket (its replicas, from ROLE, are
	// reached over TCP): see
	// "Standalone primary" in the package documentation. The client routes
	// to it as to a Sentinel master, and finds its replicas with ROLE on
	// it, or takes Replicas.
	Primary string
	// Replicas, with Primary, are the primary's replicas (host:port; a
	// managed service's read-replica endpoints), used instead of those
	// the primary's ROLE lists, for reads and durable writes.
	Replicas []string
	// SentinelUsername and SentinelPassword authenticate to the sentinels,
	// which have their own credentials, separate from the data nodes'.
	SentinelUsername string
	SentinelPassword string

	// Username and Password authenticate to the master and the replicas.
	Username string
	Password string
	// CredentialsProvider, when set, is called for every new data-node
	// connection instead of Username/Password, so a rotated token is used
	// for the new master after a failover.
	CredentialsProvider func(ctx context.Context) (username, password string, err error)
	// DB is the database selected on data nodes.
	DB int
	// ClientName is sent with CLIENT SETNAME on every data-node connection.
	ClientName string
	// TLSConfig enables TLS to the data nodes.
	TLSConfig *tls.Config
	// SentinelTLSConfig enables TLS to the sentinels. Default: TLSConfig.
	SentinelTLSConfig *tls.Config

	// ReadFrom is where read-only work runs by default (Master). A call can
	// override it with WithReadFrom.
	ReadFrom ReadFrom
	// ReplicaSelector chooses the replica for each read. Default: a
	// latency-aware replica.Selector made with replica.Config{}
	// (the nearest healthy replica, by probed round-trip time, sharing
	// the reads with replicas within 2 ms of it; see package replica).
	// NewRoundRobinSelector gives the healthy replicas in turn.
	ReplicaSelector ReplicaSelector
	// Classifier decides which commands are read-only. Default:
	// classify.New(), the built-in table generated from the COMMAND
	// replies of Redis 7 and Valkey 8 (see package classify).
	Classifier *classify.Classifier

	// StrictWrites forbids re-running any write, even one that provably
	// did not execute (it was refused with READONLY, MASTERDOWN or LOADING,
	// or never sent). Such writes then fail with a *MasterChangedError whose
	// MayHaveExecuted is false.
	StrictWrites bool
	// Durable makes every write wait for WAIT to confirm it on every
	// replica the master has connected and every replica DurableScope
	// counts (by default every replica any sentinel knows, down or not),
	// reachable from the client or not (see the package documentation for
	// which replicas and why every one), within DurableTimeout; a call can
	// override it with WithDurable.
	Durable bool
	// DurableScope says which replicas a durable write must reach:
	// DurableEveryKnownReplica (the zero value, the default: every replica
	// any sentinel knows, down or not) or DurablePromotable (the opt-in for
	// availability: only the replicas Sentinel could promote now, which
	// loses acknowledged writes to a double fault). The package
	// documentation's table says what each survives and costs.
	DurableScope DurableScope
	// DurableAOF makes durable writes also wait for the append-only file:
	// each is confirmed with WAITAOF 1 N instead of WAIT N, which counts
	// the master only once it has fsynced the write to its own AOF and a
	// replica only once it has fsynced it to its AOF (N is the same count
	// of replicas as for WAIT). A write acknowledged so survives a failover
	// and a restart of every server it was counted on. It needs WAITAOF
	// (Redis 7.2 or newer, Valkey 7.2 or newer) and appendonly yes on the
	// master and on every counted replica (a replica without an AOF never
	// counts, so durable writes fail, and say so). WAITAOF follows a WAIT
	// on the same connection, which makes the replicas' fsyncs known in
	// about a round trip instead of a second. On a master without WAITAOF
	// or without an AOF, durable writes are refused before they are sent
	// with a *NotDurableError wrapping ErrAOFUnavailable (checked once per
	// master, and again every second while it fails). It applies
	// to the writes that are durable (Durable, or WithDurable per call);
	// it does not make writes durable by itself.
	DurableAOF bool
	// DurableTimeout bounds the WAIT after each durable write (and, with
	// DurableAOF, the WAITAOF after it). It must be shorter than
	// ReadTimeout, which bounds WAIT's reply (with DurableAOF, twice it
	// must be: both replies come within one ReadTimeout). Default
	// DefaultDurableTimeout (1 s), or half of ReadTimeout when that is
	// shorter (a third with DurableAOF).
	DurableTimeout time.Duration

	// Cache turns on client-side caching: reads whose context asks for it
	// (clientcache.WithTTL) are served from replies the server promised to
	// invalidate, per node (see package clientcache). Nil: no cache.
	Cache *clientcache.Config

	// ExactlyOnce makes writes exactly-once (package exactlyonce): each
	// write the path can take runs as a script with a token, so that a
	// write whose outcome is unknown (a connection lost after sending, a
	// timeout, a failover) is sent again, to whichever master serves then,
	// within FailoverHold and the caller's context, and runs once: the
	// caller gets its reply, not a may-have-executed error. Nil: plain
	// writes, unless a call asks (exactlyonce.With), which then fails.
	ExactlyOnce *exactlyonce.Config

	// AutoPipeline makes the client auto-pipeline its single commands:
	// commands that concurrent callers run on the same node at the same
	// time share round trips, sent as one pipeline while the previous one
	// is on the wire (see the package documentation, "Auto-pipelining").
	// Each command is still routed on its own (a read to a replica, the
	// write beside it to the master), held, re-run or refused by the same
	// rules as without it; durable writes of one batch are confirmed by
	// one WAIT. A lone caller's command is sent at once, alone, as
	// without it. Pipelines, transactions, blocking commands and SCAN are
	// not batched.
	AutoPipeline bool
	// AutoPipelineMaxBatch bounds the commands of one auto-pipelined
	// round trip. Default routing.DefaultMaxBatch (256).
	AutoPipelineMaxBatch int
	// AutoPipelineInflight bounds the auto-pipelined batches on the wire
	// to one near node at once, each on a connection of its own. Default
	// 2. A near node's batches beyond the first go out only while the
	// client has fewer than AutoPipelineInflight on the wire in all (with
	// reads on a replica and writes on the master, the two share it): the
	// second batch hides the turnaround between batches, which batches to
	// another node hide already. A far node (its round trips all took
	// routing.DefaultFarRoundTrip, 1 ms, or more lately) gets up to
	// PoolSize: there a command waiting for another's batch would wait a
	// whole round trip, so each caller sends at once, as without
	// auto-pipelining, until the pool runs out.
	AutoPipelineInflight int
	// AutoPipelineOptions are go-redis's options for the auto-pipeliners
	// AutoPipeline and AsyncAutoPipeline return (their batching, before
	// the client takes the batches apart). Default: go-redis's.
	AutoPipelineOptions *redis.AutoPipelineOptions

	// DialTimeout bounds connecting to a data node. Default
	// DefaultDialTimeout (2 s).
	DialTimeout time.Duration
	// ReadTimeout and WriteTimeout bound each data-node socket read and
	// write. Default DefaultReadTimeout (3 s) each.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// PoolSize, MinIdleConns, MaxIdleConns and PoolTimeout size each
	// data node's connection pool (go-redis defaults: 10 per CPU, 0, 0,
	// ReadTimeout + 1 s).
	PoolSize     int
	MinIdleConns int
	MaxIdleConns int
	PoolTimeout  time.Duration

	// Dialer, when set, opens every connection the client makes: to the
	// data nodes and to the sentinels, the caller's connections and the
	// client's own (ROLE checks, probes, event subscriptions). It is given
	// the address to reach ("host:port", after MapAddr) and a context
	// whose deadline bounds the dial (DialTimeout for a data node,
	// SentinelTimeout for a sentinel, or a probe's shorter bound), and
	// returns the plain connection. rediskit then does what it does with
	// its own dialer's connections: checks the peer against
	// AllowedNetworks, runs the TLS handshake (TLSConfig, or
	// SentinelTLSConfig for a sentinel) over it, and bounds the replies to
	// its own commands. So a Dialer that does TLS itself must be used
	// without TLSConfig. Default: a net.Dialer. A panic in it fails the
	// dial.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnConnect, when set, runs on every new connection that carries the
	// caller's commands (to the master and the replicas, and
	// subscriptions), once go-redis has authenticated it and selected DB;
	// an error (or a panic) closes the connection and fails the call that
	// needed it, with that error. It does not run on the sentinels'
	// connections nor on the client's own connections to the data nodes:
	// those carry only rediskit's commands, and an OnConnect that fails or
	// is slow must not make a healthy node look down. (go-redis's
	// NewFailoverClient runs it on its sentinel connections too.)
	OnConnect func(ctx context.Context, cn *redis.Conn) error
	// Protocol is the RESP version of the caller's data-node connections:
	// 2 or 3 (DefaultProtocol). The client's own connections are not
	// affected.
	Protocol int
	// Identity sends CLIENT SETINFO (go-redis's library name, with
	// IdentitySuffix, and version) on every new caller's data-node
	// connection, as go-redis does unless DisableIdentity is set. Off by
	// default: it is two commands more per connection (which Redis before
	// 7.2 answers with an error, that go-redis ignores). The client's own
	// connections never send it.
	Identity bool
	// IdentitySuffix is added to the library name Identity sends
	// (go-redis(<suffix>,<Go version>)).
	IdentitySuffix string

	// The settings below are go-redis's, for the pools of the caller's
	// data-node connections (one pool per node); zero means go-redis's
	// default, and the client's own connections keep theirs.
	//
	// PoolFIFO hands out the connection that has been idle longest
	// instead of the one used last (LIFO, the default): traffic spreads
	// over every pooled connection, where LIFO lets the surplus ones go
	// idle until ConnMaxIdleTime closes them.
	PoolFIFO bool
	// MaxActiveConns bounds the connections open to one node at a time,
	// pooled or held (Conn, Watch): a call that needs one more fails at
	// once with redis.ErrPoolExhausted, unsent. go-redis v9.23 counts a
	// connection only once it is open, so concurrent dials can overshoot
	// the bound by one; its pipeline pool (PipelinePoolSize) adds
	// connections of its own, and subscriptions have their own pool.
	// Default 0: no bound of its own.
	MaxActiveConns int
	// MaxConcurrentDials bounds how many connections to one node are
	// being opened at once (default PoolSize): after a failover, every
	// caller needs a connection to the new master at the same moment.
	MaxConcurrentDials int
	// ConnMaxIdleTime closes a connection idle for longer
	// (DefaultConnMaxIdleTime; negative: never).
	ConnMaxIdleTime time.Duration
	// ConnMaxLifetime closes a connection older than this when it is next
	// taken from the pool, and opens a new one (with a fresh
	// CredentialsProvider answer): for load balancers, rotated
	// credentials and server-side timeouts. ConnMaxLifetimeJitter spreads
	// the expiries by up to plus or minus that much, so the connections
	// opened together after a failover are not all replaced at once.
	// Default 0: no age limit.
	ConnMaxLifetime       time.Duration
	ConnMaxLifetimeJitter time.Duration
	// ReadBufferSize and WriteBufferSize are each connection's buffers
	// (go-redis default 32 KiB).
	ReadBufferSize  int
	WriteBufferSize int
	// PipelinePoolSize, PipelineReadBufferSize and
	// PipelineWriteBufferSize size go-redis's separate pool for pipelines
	// on each node (default 10 connections of 128 KiB buffers; negative
	// PipelinePoolSize: pipelines use the main pool).
	PipelinePoolSize        int
	PipelineReadBufferSize  int
	PipelineWriteBufferSize int
	// ReplyLimits bound every reply on the connections that carry the
	// caller's commands (to the master and replicas, pub/sub included): a
	// reply over a limit (a header declaring 2^31 elements, a string
	// longer than Redis allows, a line without an end) fails its command
	// with a *ReplyLimitError naming the node and the limit, and closes
	// the connection, instead of reaching go-redis's reader, which would
	// allocate what it declares or crash the process. Zero (or negative)
	// fields take the DefaultReply… constants (a 512 MiB string,
	// 16,777,216 elements a header, 128 levels, 1 GiB a reply); a field
	// set higher than 2^60 is 2^60, unbounded in effect. The client's own
	// connections keep their tighter bounds.
	ReplyLimits ReplyLimits

	// MaxSentinels bounds how many sentinels the client knows: the ones in
	// SentinelAddrs and those it learns from them (SENTINEL SENTINELS),
	// each of which it subscribes to and asks in discovery. A peer is
	// learned only when most of the sentinels that answered list it, so
	// one sentinel cannot fill the set with addresses of its own. Default
	// DefaultMaxSentinels, and never fewer than len(SentinelAddrs).
	MaxSentinels int
	// MaxReplicas bounds how many replicas the client keeps from what the
	// sentinels list (SENTINEL REPLICAS): the addresses it checks with
	// ROLE at each refresh, reads from, probes, and counts for durable
	// writes. Past it, the client keeps the replicas listed by the most
	// sentinels, ties in the order first listed (the sentinels asked in
	// order, each's list in its order), addresses it refuses
	// (AllowedNetworks, MapAddr, malformed) last; it reports the cut once
	// (EventReplicasLimited, a WARN log) until the lists fit again. While
	// more are listed than kept, durable writes are refused unsent
	// (NotDurableError.Unconfirmable says so): the replicas left out could
	// be promoted without the writes. Default DefaultMaxReplicas; it
	// cannot be negative.
	MaxReplicas int
	// AllowedNetworks, when set, are the only networks the client
	// connects to: an address a sentinel names outside them (a master, a
	// replica, another sentinel) is refused with an *AddressError, and a
	// host name that resolves outside them is refused when dialled, before
	// any credential is sent. The configured SentinelAddrs are always
	// allowed. See the package documentation for the trust model. A host
	// name is judged by the peer its connection reports (RemoteAddr): with
	// a Dialer that goes through a proxy or a tunnel, which reports the
	// proxy, have the sentinels announce IP addresses (or MapAddr names to
	// them).
	AllowedNetworks []netip.Prefix
	// MapAddr, when set, is given every address a sentinel or a ROLE reply
	// names ("host:port", validated) and returns the address to dial
	// instead: for NAT and port forwarding, where servers announce
	// addresses the client cannot reach. An error refuses the address.
	MapAddr func(addr string) (string, error)

	// SentinelTimeout bounds each question to one sentinel, so a slow
	// sentinel is skipped rather than waited for. Default
	// DefaultSentinelTimeout (0.5 s).
	SentinelTimeout time.Duration
	// ProbeTimeout bounds each ROLE check the client makes on a data node
	// (verifying a master, a replica, a promotion). Default
	// DefaultProbeTimeout (1 s).
	ProbeTimeout time.Duration
	// DiscoveryTimeout bounds finding a verified master when no sentinel
	// agrees at first (mid-failover), on top of the caller's context.
	// Default DefaultDiscoveryTimeout (2 s).
	DiscoveryTimeout time.Duration
	// RefreshInterval is how often the topology is checked even without
	// events (events can be missed). Default DefaultRefreshInterval (2 s).
	RefreshInterval time.Duration
	// SentinelPollInterval is how often the client asks every sentinel
	// about the master (SENTINEL MASTER), to see a failover whose events
	// it missed and a master the sentinels cannot reach while the client
	// can (then it checks whether the master still reaches its replicas,
	// and holds writes if not: see the package documentation). Default
	// DefaultSentinelPollInterval (250 ms); negative turns polling off.
	SentinelPollInterval time.Duration
	// FailoverHold bounds how long a write waits while a failover is under
	// way (the old master is about to be demoted) for the new master to be
	// confirmed. After it, the write fails with ErrFailoverInProgress,
	// unsent. Default DefaultFailoverHold (3 s).
	FailoverHold time.Duration

	// Observer, when set, receives every Event, in order, one call at a
	// time, from a goroutine of the client's own: a slow Observer never
	// delays the client's reaction to a failover, and it may call the
	// client's methods (not Close). Past eventq.DefaultCapacity (1,024)
	// waiting events, new ones are dropped (Stats.EventsDropped, a WARN);
	// Close delivers the queued ones, waiting at most
	// eventq.DefaultDrainTimeout (1 s) for a stuck Observer. See "The
	// Observer contract" in internal/eventq's package documentation.
	Observer func(Event)
	// Logger receives the client's records. Default: discarded.
	Logger *slog.Logger
	// InternalHook, when set, sees the client's own traffic, which the
	// hooks of AddHook and the clients of OnNewNode never carry: the
	// sentinels' connections (discovery, polls, event subscriptions), the
	// ROLE and INFO checks on the data nodes, and the CLIENT ID and
	// CLIENT UNBLOCK that let a blocking call follow a failover. It is for
	// debugging and for counting that traffic; it must not change what it
	// sees. The replica selector's probes are not included: its prober is
	// shared by every client of a deployment (replica.Selector reports
	// them through its own Observer). A durable write's WAIT is part of
	// the caller's pipeline, so AddHook's hooks see it, not this one.
	InternalHook redis.Hook
	// NodeOptions, when set, may adjust the go-redis options of every
	// data-node client after rediskit filled them in (for settings not
	// covered here), the client's own as well as the caller's. Turning
	// retries back on defeats the failover rules; replacing the Dialer
	// drops rediskit's checks and TLS (set Dialer instead).
	NodeOptions func(*redis.Options)

	// deaf (tests only) keeps the client from subscribing to sentinel
	// events, to reproduce a client that missed a failover.
	deaf bool
}

// ConfigError reports a Config field NewClient (or Diagnose) cannot use:
// "sentinel: Config.<Field> <problem>". It never contains a password.
type ConfigError = configerr.Error

func configError(field, problem string) *ConfigError {
	return &ConfigError{Package: "sentinel", Struct: "Config", Field: field, Problem: problem}
}

func (o Config) withDefaults() (Config, error) {
	if o.Primary != "" || len(o.Replicas) > 0 {
		if err := o.primaryDefaults(); err != nil {
			return o, err
		}
	}
	if o.MasterName == "" {
		return o, configError("MasterName", "is required (the name in the sentinels' \"sentinel monitor\" line)")
	}
	if len(o.SentinelAddrs) == 0 && o.Primary == "" {
		return o, configError("SentinelAddrs", "is required (at least one sentinel, \"host:port\"), or Primary for a primary no Sentinel manages")
	}
	addrs := make([]string, 0, len(o.SentinelAddrs))
	seen := map[string]bool{}
	for _, a := range o.SentinelAddrs {
		norm, err := normalizeSentinelAddr(a)
		if err != nil {
			return o, err
		}
		if !seen[norm] {
			seen[norm] = true
			addrs = append(addrs, norm)
		}
	}
	o.SentinelAddrs = addrs
	if o.ReadFrom == "" {
		o.ReadFrom = Master
	}
	switch o.ReadFrom {
	case Master, Replica, ReplicaPreferred, Nearest:
	default:
		return o, configError("ReadFrom", fmt.Sprintf("%q is unknown (want master, replica, replicaPreferred or nearest)", o.ReadFrom))
	}
	switch o.DurableScope {
	case DurableEveryKnownReplica, DurablePromotable:
	default:
		return o, configError("DurableScope", fmt.Sprintf("%d is unknown (want DurableEveryKnownReplica or DurablePromotable)", int(o.DurableScope)))
	}
	if o.AutoPipelineMaxBatch < 0 || o.AutoPipelineInflight < 0 {
		return o, configError("AutoPipelineMaxBatch", fmt.Sprintf("AutoPipelineMaxBatch (%d) and AutoPipelineInflight (%d) cannot be negative (0: the default)", o.AutoPipelineMaxBatch, o.AutoPipelineInflight))
	}
	if o.SentinelTLSConfig == nil {
		o.SentinelTLSConfig = o.TLSConfig
	}
	zero.Default(&o.MaxSentinels, DefaultMaxSentinels)
	o.MaxSentinels = max(o.MaxSentinels, len(o.SentinelAddrs))
	if o.MaxReplicas < 0 {
		return o, configError("MaxReplicas", fmt.Sprintf("%d cannot be negative (0: the default, %d)", o.MaxReplicas, DefaultMaxReplicas))
	}
	zero.Default(&o.MaxReplicas, DefaultMaxReplicas)
	for _, p := range o.AllowedNetworks {
		if !p.IsValid() {
			return o, configError("AllowedNetworks", fmt.Sprintf("holds an invalid prefix %v", p))
		}
	}
	if o.Classifier == nil {
		o.Classifier = classify.New()
	}
	switch o.Protocol {
	case 0:
		o.Protocol = DefaultProtocol
	case 2, 3:
	default:
		return o, configError("Protocol", fmt.Sprintf("%d is unknown (want 2 or 3: RESP2 or RESP3)", o.Protocol))
	}
	zero.Default(&o.ConnMaxIdleTime, DefaultConnMaxIdleTime)
	o.ReplyLimits = o.ReplyLimits.ForData()
	zero.Default(&o.DialTimeout, DefaultDialTimeout)
	zero.Default(&o.ReadTimeout, DefaultReadTimeout)
	// WAIT's reply must come within ReadTimeout, which bounds every read.
	// With DurableAOF, WAIT and then WAITAOF: both replies within it.
	var problem string
	if o.DurableTimeout, problem = routing.DurableTimeout(o.DurableTimeout, o.ReadTimeout, DefaultDurableTimeout, o.DurableAOF); problem != "" {
		return o, configError("DurableTimeout", problem)
	}
	zero.Default(&o.WriteTimeout, o.ReadTimeout)
	zero.Default(&o.SentinelTimeout, DefaultSentinelTimeout)
	zero.Default(&o.ProbeTimeout, DefaultProbeTimeout)
	zero.Default(&o.DiscoveryTimeout, DefaultDiscoveryTimeout)
	zero.Default(&o.RefreshInterval, DefaultRefreshInterval)
	zero.Default(&o.FailoverHold, DefaultFailoverHold)
	zero.Default(&o.SentinelPollInterval, DefaultSentinelPollInterval)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var field string
	if o.Cache, field, problem = o.Cache.Resolved(); field != "" {
		return o, configError("Cache."+field, problem)
	}
	return o, nil
}

// primaryDefaults checks a standalone primary's fields and names the
// deployment by the primary's address (MasterName, in logs and errors).
// It leaves SentinelAddrs empty: the topology then asks no sentinel.
func (o *Config) primaryDefaults() error {
	switch {
	case o.Primary == "":
		return configError("Replicas", "is set without Primary (the replicas of a Sentinel master are found through the sentinels)")
	case o.MasterName != "" || len(o.SentinelAddrs) > 0:
		return configError("Primary", "is set with MasterName or SentinelAddrs: give a Sentinel deployment or a standalone primary, not both")
	}
	norm, err := normalizeAddr("Primary", o.Primary, DefaultPrimaryPort)
	if socketPath(o.Primary) {
		norm, err = filepath.Clean(o.Primary), nil
	}
	if err != nil {
		return err
	}
	o.Primary, o.MasterName = norm, norm
	replicas := make([]string, 0, len(o.Replicas))
	for _, r := range o.Replicas {
		norm, err := normalizeAddr("Replicas", r, DefaultPrimaryPort)
		if err != nil {
			return err
		}
		if norm != o.Primary && !slices.Contains(replicas, norm) {
			replicas = append(replicas, norm)
		}
	}
	o.Replicas = replicas
	return nil
}

// DefaultPrimaryPort is the port of a Primary or Replicas address that
// gives none: Redis's.
const DefaultPrimaryPort = 6379

func normalizeSentinelAddr(a string) (string, error) {
	return normalizeAddr("SentinelAddrs", a, DefaultSentinelPort)
}

// normalizeAddr is a as host:port, the port defaulting to port; field
// names the Config field in errors.
func normalizeAddr(field, a string, defaultPort int) (string, error) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		// No port: the whole string is the host (an IPv6 literal may come
		// in brackets).
		host, port = a, strconv.Itoa(defaultPort)
		if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
			host = host[1 : len(host)-1]
		}
	}
	if host == "" {
		return "", configError(field, fmt.Sprintf("holds %q, which has no host", a))
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return "", configError(field, fmt.Sprintf("holds %q: invalid port (want 1 to 65535)", a))
	}
	return net.JoinHostPort(host, port), nil
}

// nodeOptions are the go-redis options of the client for one data node
// that carries the caller's commands: the connection settings of Config
// (OnConnect, Protocol, identity, the pool's) apply to it. Retries are
// off: this package alone decides what is re-run. Its replies are bounded
// by ReplyLimits (respguard.GuardData).
func (o *Config) nodeOptions(addr string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *redis.Options {
	opt := o.baseNodeOptions(addr, dial)
	if o.OnConnect != nil {
		opt.OnConnect = o.onConnect
	}
	opt.Protocol = o.Protocol
	// redisopt.Inner turned identity off; the caller may want it back on
	// their own connections.
	opt.DisableIdentity = !o.Identity
	opt.IdentitySuffix = o.IdentitySuffix
	opt.PoolFIFO = o.PoolFIFO
	opt.MaxActiveConns = o.MaxActiveConns
	opt.MaxConcurrentDials = o.MaxConcurrentDials
	opt.ConnMaxIdleTime = o.ConnMaxIdleTime
	opt.ConnMaxLifetime = o.ConnMaxLifetime
	opt.ConnMaxLifetimeJitter = o.ConnMaxLifetimeJitter
	opt.ReadBufferSize = o.ReadBufferSize
	opt.WriteBufferSize = o.WriteBufferSize
	opt.PipelinePoolSize = o.PipelinePoolSize
	opt.PipelineReadBufferSize = o.PipelineReadBufferSize
	opt.PipelineWriteBufferSize = o.PipelineWriteBufferSize
	if o.NodeOptions != nil {
		o.NodeOptions(opt)
	}
	// Bounded replies, whatever Dialer NodeOptions left: see ReplyLimits.
	return respguard.GuardData(opt, o.ReplyLimits)
}

// controlOptions are the go-redis options of the client's own connections
// to a data node (ROLE checks, replication probes, the replica prober's
// PINGs): the caller's Dialer, credentials, database and TLS, so that they
// reach the node the caller's connections reach, but none of the caller's
// connection settings. They carry only rediskit's commands, parsed by
// rediskit (so RESP3 whatever Protocol says), and what they measure must
// not depend on the caller's OnConnect or pool policy: a connection
// recycled by ConnMaxLifetime in the middle of a probe would be timed as
// a slow node. NodeOptions still applies (it is go-redis's, for every
// data-node client).
func (o *Config) controlOptions(addr string) *redis.Options {
	opt := o.baseNodeOptions(addr, dialer(o))
	if o.NodeOptions != nil {
		o.NodeOptions(opt)
	}
	return opt
}

// baseNodeOptions are the go-redis options every client of a data node
// shares.
func (o *Config) baseNodeOptions(addr string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *redis.Options {
	// No go-redis retries, context deadlines bound socket I/O (so a
	// caller's deadline and the client's own probe bounds hold against a
	// silent node): see redisopt.Inner.
	opt := redisopt.Inner(&redis.Options{
		Network:      network(addr),
		Addr:         addr,
		Dialer:       dial,
		Username:     o.Username,
		Password:     o.Password,
		DB:           o.DB,
		ClientName:   o.ClientName,
		TLSConfig:    o.TLSConfig,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
		PoolSize:     o.PoolSize,
		MinIdleConns: o.MinIdleConns,
		MaxIdleConns: o.MaxIdleConns,
		PoolTimeout:  o.PoolTimeout,
	})
	if o.CredentialsProvider != nil {
		opt.Username, opt.Password = "", ""
		opt.CredentialsProviderContext = o.CredentialsProvider
	}
	return opt
}

// onConnect runs the caller's OnConnect, a panic in it failing the
// connection rather than the process (go-redis may run it in a goroutine
// of its own).
func (o *Config) onConnect(ctx context.Context, cn *redis.Conn) (err error) {
	if perr := safe.Call(func() { err = o.OnConnect(ctx, cn) }); perr != nil {
		return callbackPanic(o.Logger, "OnConnect", perr)
	}
	return err
}

// callbackPanic is the error of a caller's callback that panicked: it
// names the callback; the stack goes to the log.
func callbackPanic(log *slog.Logger, name string, perr error) error {
	var pe *safe.PanicError
	if errors.As(perr, &pe) {
		if log != nil {
			log.Error("sentinel: a caller's callback panicked", "callback", "Config."+name, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		}
		return fmt.Errorf("sentinel: Config.%s panicked: %v", name, pe.Value)
	}
	return perr
}

// sentinelClient is the client for one sentinel, with InternalHook.
func (o *Config) sentinelClient(addr string, configured bool) *redis.Client {
	c := redis.NewClient(o.sentinelOptions(addr, configured))
	if o.InternalHook != nil {
		c.AddHook(o.InternalHook)
	}
	return c
}

// sentinelOptions are the go-redis options of the client for one sentinel
// (configured: one of SentinelAddrs, rather than learned). Its replies are
// bounded (redisopt.Guarded): nothing a sentinel sends may crash the
// process or make it allocate without bound.
func (o *Config) sentinelOptions(addr string, configured bool) *redis.Options {
	return respguard.Guard(redisopt.Inner(&redis.Options{
		Addr:         addr,
		Dialer:       o.sentinelDialer(configured),
		Username:     o.SentinelUsername,
		Password:     o.SentinelPassword,
		TLSConfig:    o.SentinelTLSConfig,
		DialTimeout:  o.SentinelTimeout,
		ReadTimeout:  o.SentinelTimeout,
		WriteTimeout: o.SentinelTimeout,
		PoolSize:     2,
	}))
}

// WithReadFrom overrides the client's ReadFrom for calls made with the
// returned context: e.g. WithReadFrom(ctx, Master) for a read that must see
// the caller's own write. It is the same option as rediskit.WithReadFrom
// and cluster.WithReadFrom: any of them sets it for every client.
func WithReadFrom(ctx context.Context, rf ReadFrom) context.Context {
	return callopt.WithReadFrom(ctx, rf)
}

// WithDurable overrides Config.Durable for writes made with the returned
// context. It is the same option as rediskit.WithDurable and
// cluster.WithDurable: any of them sets it for every client.
func WithDurable(ctx context.Context, durable bool) context.Context {
	return callopt.WithDurable(ctx, durable)
}

func (c *Client) readFrom(ctx context.Context) ReadFrom {
	return callopt.ReadFrom(ctx, c.opts.ReadFrom)
}

func (c *Client) durable(ctx context.Context) bool {
	return callopt.Durable(ctx, c.opts.Durable)
}
