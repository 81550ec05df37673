package rediskit

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/callopt"
	"github.com/rediskit/rediskit/internal/configerr"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/redisurl"
)

// ReadFrom says where read-only commands go: Master (the default),
// Replica, ReplicaPreferred or Nearest (see package redisurl).
type ReadFrom = redisurl.ReadFrom

// The ReadFrom values.
const (
	Master           = redisurl.Master
	Replica          = redisurl.Replica
	ReplicaPreferred = redisurl.ReplicaPreferred
	Nearest          = redisurl.Nearest
)

// WithReadFrom overrides Config.ReadFrom for the calls made with the
// returned context, whatever the topology: WithReadFrom(ctx, Master) for
// a read that must see the caller's own write. sentinel.WithReadFrom and
// cluster.WithReadFrom set the same option. A multidb client hands it to
// its active database: a Sentinel or cluster database applies it, a
// redis:// one (a plain go-redis client) reads from its server.
func WithReadFrom(ctx context.Context, rf ReadFrom) context.Context {
	return callopt.WithReadFrom(ctx, rf)
}

// WithDurable overrides Config.Durable for the writes made with the
// returned context, whatever the topology (standalone, Sentinel, Cluster):
// WithDurable(ctx, true) confirms this call's writes with WAIT even on a
// client made without Durable. sentinel.WithDurable and cluster.WithDurable
// set the same option. A multidb client hands it to its active database: a
// Sentinel or cluster database confirms the write, a redis:// one (a plain
// go-redis client) does not (Config.Durable, for every write, is refused
// there).
func WithDurable(ctx context.Context, durable bool) context.Context {
	return callopt.WithDurable(ctx, durable)
}

// ReplyLimits bound the replies on the connections that carry the
// caller's commands (the zero value: the defaults of package respguard).
type ReplyLimits = respguard.Limits

// ReplyLimitError is the error of a command whose reply went over a limit.
type ReplyLimitError = respguard.LimitError

// ConfigError is the error of a Config that cannot be used: it names the
// field and says what to do (see package internal/configerr).
type ConfigError = configerr.Error

// DefaultDetectTimeout bounds the probe that tells a cluster node from a
// standalone server behind a plain redis:// URL (dial and reply together).
const DefaultDetectTimeout = 2 * time.Second

// Config holds the settings common to every topology. The zero Config asks
// for every default: those of the typed package the URL leads to
// (sentinel, cluster, multidb), which its documentation lists. Settings
// one topology alone has (a Sentinel's FailoverHold, a cluster's
// WriteHoldTimeout, a multidb's health policy) are in the typed
// packages: use their constructors for them.
//
// Where the URL and the Config both say something, the URL wins
// (credentials, timeouts, TLS parameters, database, client name); the
// Config supplies what a URL cannot carry.
type Config struct {
	// URL is the deployment to connect to (see package redisurl for
	// every form): redis://, rediss://, unix://, redis+sentinel://,
	// rediss+sentinel://, redis+cluster://, rediss+cluster://, or
	// go-redis's redis://host1?addr=host2 cluster form.
	// NewClientFromURL sets it. Give either URL or Databases.
	URL string
	// Databases are the databases of a multidb client, one URL each,
	// highest Weight first in failover order (see package multidb).
	// Give either URL or Databases.
	Databases []Database

	// Kind forces the topology. KindAuto (the default) follows the URL,
	// and serves a plain redis:// or rediss:// URL naming one server as a
	// cluster when that server is a cluster node. A URL of another kind
	// than a forced one is refused with a *KindError, before anything is
	// dialled.
	Kind Kind
	// NoClusterDetection skips the probe of a plain redis:// or rediss://
	// URL: it is served as a standalone server without dialling anything
	// at NewClient. (Kind: KindStandalone does the same.)
	NoClusterDetection bool
	// DetectTimeout bounds the probe (default DefaultDetectTimeout).
	DetectTimeout time.Duration

	// Username and Password authenticate to the data nodes when the URL
	// carries no credentials (kept out of the URL, from a secret store).
	// Never printed.
	Username string
	Password string
	// TLSConfig is the TLS configuration to use instead of the one the
	// URL's parameters (caFile, certFile, ...) would make. It needs a
	// URL that asks for TLS (rediss://, rediss+sentinel://,
	// rediss+cluster://): with a plain one it is refused, so that TLS is
	// never on or off against what the URL says.
	TLSConfig *tls.Config

	// DialTimeout, ReadTimeout and WriteTimeout bound each dial, reply
	// and write, where the URL does not (default: the typed package's).
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// PoolSize is the connection pool size per node (default: the typed
	// package's).
	PoolSize int
	// ClientName is sent with CLIENT SETNAME where the URL does not name
	// the client.
	ClientName string

	// ReadFrom says where read-only commands go, where the URL does not
	// name one other than master (default Master). A multidb client
	// reads from its active database: only Master is accepted there.
	ReadFrom ReadFrom
	// Durable confirms every write on the replicas with WAIT before it
	// returns (see DurableTimeout and the typed packages' "Durable
	// writes"). Sentinel, cluster and standalone only.
	Durable bool
	// DurableAOF also waits for the write to reach the append-only files
	// (WAITAOF). Sentinel, cluster and standalone only.
	DurableAOF bool
	// DurableTimeout bounds the confirmation (default: the typed
	// package's, 1 s).
	DurableTimeout time.Duration
	// AutoPipeline shares round trips between concurrent calls (see
	// internal/routing.Batcher).
	AutoPipeline bool
	// ReplyLimits bound the replies of the caller's commands.
	ReplyLimits ReplyLimits
	// Cache turns on client-side caching, for every topology: reads
	// whose context asks for it (clientcache.WithTTL) are served from
	// replies the server promised to invalidate (see package
	// clientcache). A multidb client gives each database its own part.
	// Nil: no cache.
	Cache *clientcache.Config
	// ExactlyOnce makes writes exactly-once (see package exactlyonce): a
	// write whose outcome is unknown is sent again with its token and
	// runs once, on standalone, Sentinel and cluster deployments. A
	// multidb client's Sentinel and cluster databases make their writes
	// exactly-once within each database; a write whose database changed
	// is refused as before (*multidb.DatabaseChangedError: its token is
	// not in the other database). Nil: plain writes.
	ExactlyOnce *exactlyonce.Config

	// Observer, when set, receives the typed client's events (Event), in
	// order, from a goroutine the client owns; it must not block for long
	// (a slow Observer misses events: see internal/eventq).
	Observer func(Event)
	// Logger receives the client's logs (default: discarded).
	Logger *slog.Logger
}

// Database is one database of a multidb client.
type Database struct {
	// Name names the database in errors, logs and Stats (default: its
	// URL without password).
	Name string
	// URL is the database's URL, of any kind but multidb.
	URL string
	// Weight orders the databases: the highest healthy one is active.
	Weight float64
}

func configError(field, problem string) *ConfigError {
	return &ConfigError{Package: "rediskit", Struct: "Config", Field: field, Problem: problem}
}

// withDefaults fills in the defaults and checks what does not depend on
// the URL. Safe to run twice.
func (c Config) withDefaults() (Config, error) {
	if (c.URL == "") == (len(c.Databases) == 0) {
		return c, configError("URL", "and Databases: give exactly one of them (a URL for one deployment, Databases for a multidb client)")
	}
	if c.Kind < KindAuto || c.Kind > KindMultiDB {
		return c, configError("Kind", fmt.Sprintf("is %v, not a known kind", c.Kind))
	}
	if len(c.Databases) > 0 && c.Kind != KindAuto && c.Kind != KindMultiDB {
		return c, configError("Kind", fmt.Sprintf("is %v, but Databases make a multidb client", c.Kind))
	}
	if c.URL != "" && c.Kind == KindMultiDB {
		return c, configError("Kind", "is multidb, which needs Databases, not a URL")
	}
	for name, d := range map[string]time.Duration{"DetectTimeout": c.DetectTimeout, "DialTimeout": c.DialTimeout,
		"ReadTimeout": c.ReadTimeout, "WriteTimeout": c.WriteTimeout, "DurableTimeout": c.DurableTimeout} {
		if d < 0 {
			return c, configError(name, fmt.Sprintf("is negative (%v): give a positive bound, or 0 for the default", d))
		}
	}
	if c.PoolSize < 0 {
		return c, configError("PoolSize", fmt.Sprintf("is negative (%d): 0 means the default", c.PoolSize))
	}
	if c.ReadFrom != "" {
		if _, err := redisurl.ParseReadFrom(string(c.ReadFrom)); err != nil {
			return c, configError("ReadFrom", fmt.Sprintf("is %q: want master, replica, replicaPreferred or nearest", string(c.ReadFrom)))
		}
	}
	if c.Password == "" && c.Username != "" {
		return c, configError("Username", "needs a Password")
	}
	if err := c.checkDatabases(); err != nil {
		return c, err
	}
	if c.DetectTimeout == 0 {
		c.DetectTimeout = DefaultDetectTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// checkDatabases checks the settings of a multidb Config.
func (c Config) checkDatabases() error {
	if len(c.Databases) == 0 {
		return nil
	}
	if c.ReadFrom != "" && c.ReadFrom != Master {
		return configError("ReadFrom", "is not master: a multidb client reads from its active database (give each database's URL its own readFrom)")
	}
	if c.Durable || c.DurableAOF {
		return configError("Durable", "is set: a multidb client has no durable writes (its databases are independent deployments); leave Durable and DurableAOF false")
	}
	for i, d := range c.Databases {
		if d.URL == "" {
			return &ConfigError{Package: "rediskit", Struct: "Config", Field: fmt.Sprintf("Databases[%d].URL", i), Problem: "is required"}
		}
		if d.Weight < 0 || math.IsNaN(d.Weight) || math.IsInf(d.Weight, 0) {
			return &ConfigError{Package: "rediskit", Struct: "Config", Field: fmt.Sprintf("Databases[%d].Weight", i), Problem: "must be a finite number, not negative"}
		}
	}
	return nil
}
