package multidb

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/zero"
)

// Defaults for the zero fields of Config. The health-check, grace-period
// and failover defaults are redis-py's (MultiDbConfig); the traffic
// detection and failback defaults are ours (see the package documentation).
const (
	DefaultHealthCheckInterval  = 5 * time.Second
	DefaultProbes               = 3
	DefaultProbeDelay           = 500 * time.Millisecond
	DefaultProbeTimeout         = 1 * time.Second
	DefaultGracePeriod          = 60 * time.Second
	DefaultConsecutiveFailures  = 3
	DefaultFailureRateThreshold = 0.10
	DefaultMinFailures          = 10
	DefaultFailureWindow        = 2 * time.Second
	DefaultFailoverAttempts     = 10
	DefaultFailoverDelay        = 12 * time.Second
	DefaultFailbackInterval     = 5 * time.Second
	DefaultFailbackDwell        = 30 * time.Second
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=HealthPolicy -linecomment

// HealthPolicy decides from the probes of one health check whether a
// database is healthy.
type HealthPolicy int

const (
	// HealthyAll: every probe must pass; the check stops at the first
	// failure (the default, and the strictest).
	HealthyAll HealthPolicy = iota // healthy-all
	// HealthyMajority: more than half of the probes must pass (2 of 3).
	HealthyMajority // healthy-majority
	// HealthyAny: one passing probe is enough; the check stops at the
	// first success.
	HealthyAny // healthy-any
)

// Database is one Redis deployment the client may send traffic to.
type Database struct {
	// Name identifies the database in the API, events, errors and logs.
	// Required and unique.
	Name string
	// Weight orders the databases: the highest-weight healthy one is
	// active. Ties go to the database listed first. Must not be negative.
	Weight float64

	// Client is the go-redis client of the database: a *redis.Client, our
	// *sentinel.Client or *cluster.Client, a *redis.ClusterClient, anything that satisfies
	// redis.UniversalClient. Commands and subscriptions both go through
	// it. The caller keeps it: multidb never closes it. It must not retry
	// on its own (MaxRetries -1, DialerRetries 1) and must honour context
	// deadlines (ContextTimeoutEnabled); NewClient refuses a client whose
	// Options() say otherwise. multidb adds hooks to it (AddHook's, and a
	// dial hook of its own that only touches connections of multidb's
	// subscriptions: see the package documentation, Pub/Sub).
	Client redis.UniversalClient
	// Options, instead of Client, makes multidb build the client (and
	// close it). Retries are turned off (MaxRetries -1, DialerRetries 1),
	// context deadlines turned on, CLIENT SETINFO and maintenance
	// notifications off, whatever the options say.
	Options *redis.Options

	// GracePeriod is how long the database's breaker stays OPEN before a
	// health check may close it. Default Config.GracePeriod.
	GracePeriod time.Duration
	// Probe replaces Config.Probe for this database.
	Probe Probe
}

// Config configures a Client. Only Databases is required; every other
// zero field takes the default named next to it.
type Config struct {
	// Databases are the deployments, at least one.
	Databases []Database

	// HealthCheckInterval is how often every database is checked (from the
	// start of one check to the start of the next). Default
	// DefaultHealthCheckInterval (5 s).
	HealthCheckInterval time.Duration
	// Probes is how many probes one check runs. Default DefaultProbes (3).
	Probes int
	// ProbeDelay is the pause between two probes of a check. Default
	// DefaultProbeDelay (0.5 s).
	ProbeDelay time.Duration
	// ProbeTimeout bounds each probe. Default DefaultProbeTimeout (1 s).
	ProbeTimeout time.Duration
	// HealthPolicy decides a check from its probes. Default HealthyAll.
	HealthPolicy HealthPolicy
	// Probe is the check run on each database. Default PingProbe().
	Probe Probe

	// GracePeriod is how long a breaker stays OPEN before a health check
	// may close it (per database; Database.GracePeriod overrides).
	// Default DefaultGracePeriod (60 s).
	GracePeriod time.Duration

	// ConsecutiveFailures trips the active database's breaker after that
	// many failure events (connection failures or timeouts) in a row, the
	// fast path. The failures of calls in flight together when the first
	// of them was seen are one event, and such a burst asks at once for a
	// second sign, from a health check or the next calls (see the package
	// documentation), so a stalled database under concurrent traffic
	// trips after about two read timeouts, and one under sequential
	// traffic after ConsecutiveFailures. Default DefaultConsecutiveFailures
	// (3); negative turns the
	// fast path off (not the burst's second sign).
	ConsecutiveFailures int
	// FailureRateThreshold and MinFailures trip the breaker when, within
	// FailureWindow, at least MinFailures failure events happened and they
	// are at least FailureRateThreshold of all calls (the rate path; an
	// event is one call). Defaults DefaultFailureRateThreshold (0.10),
	// DefaultMinFailures (10) and DefaultFailureWindow (2 s); a negative
	// MinFailures turns the rate path off.
	FailureRateThreshold float64
	MinFailures          int
	FailureWindow        time.Duration

	// FailoverAttempts and FailoverDelay bound how long, when no database
	// is healthy, calls fail with ErrTemporarilyUnavailable: the client
	// looks for a healthy database every FailoverDelay, and after
	// FailoverAttempts looks calls fail with ErrNoHealthyDatabase (until a
	// database recovers). Defaults DefaultFailoverAttempts (10) and
	// DefaultFailoverDelay (12 s), as in redis-py.
	FailoverAttempts int
	FailoverDelay    time.Duration

	// FailbackInterval is how often the client looks for a database of
	// higher weight than the active one to go back to. Default
	// DefaultFailbackInterval (5 s);
	// negative turns failback off.
	FailbackInterval time.Duration
	// FailbackDwell is how long such a database must have passed every
	// health check, without a break, before traffic goes back to it.
	// Default DefaultFailbackDwell (30 s).
	FailbackDwell time.Duration

	// Cache turns on client-side caching for the databases on a
	// *redis.Client (built from Database.Options, or the caller's): reads
	// whose context asks for it (clientcache.WithTTL) are served from
	// replies the database promised to invalidate, each database's
	// entries its own (see package clientcache). A database on a rediskit
	// client caches by that client's own Config.Cache. Nil: no cache.
	Cache *clientcache.Config

	// AutoPipeline makes the client auto-pipeline its single commands:
	// commands concurrent callers run at the same time share round trips
	// to the active database, sent as one pipeline while the previous one
	// is on the wire. Each command keeps its own failure rules (a read
	// re-run once on the new database after a failover, a write only if
	// it provably did not run). For a database on a *redis.Client the
	// batching is the client's; a database on a rediskit client
	// (sentinel.Client) is asked to batch them per node itself. A lone
	// caller's command is sent at once, alone. Pipelines, transactions,
	// blocking commands (BLPOP, XREAD BLOCK, WAIT, ...) and SCAN are not
	// batched.
	AutoPipeline bool
	// AutoPipelineMaxBatch and AutoPipelineInflight bound a batch's
	// commands and the batches on the wire to a database at once.
	// Defaults 256 and 2 (routing.DefaultMaxBatch, DefaultMaxInflight),
	// the databases' batches counted together as in package sentinel; a
	// far database (round trips of routing.DefaultFarRoundTrip, 1 ms,
	// or more) gets up to its pool's size, as in package sentinel.
	AutoPipelineMaxBatch, AutoPipelineInflight int

	// ReplyLimits bound every reply on the connections of the databases
	// multidb builds from Database.Options (the caller's commands, pub/sub
	// and the health checks): a reply over a limit (a header declaring
	// 2^31 elements, a string longer than Redis allows, a line without an
	// end) fails its command with a *ReplyLimitError naming the server and
	// the limit, and closes the connection, instead of reaching go-redis's
	// reader, which would allocate what it declares or crash the process.
	// Zero (or negative) fields take the DefaultReply… constants (a
	// 512 MiB string, 16,777,216 elements a header, 128 levels, 1 GiB a
	// reply); a field set higher than 2^60 is 2^60, unbounded in effect. A
	// go-redis Database.Client (*redis.Client, *redis.ClusterClient,
	// *redis.Ring) is bounded by them too, on the connections it dials
	// after NewClient (multidb adds a dial hook); a rediskit client by its
	// own settings (sentinel.Config.ReplyLimits, cluster's ReplyLimits).
	ReplyLimits ReplyLimits

	// Classifier decides which work is read-only (retried once on the new
	// active database after a failover). Default classify.New().
	Classifier *classify.Classifier
	// Observer, when set, receives every Event, in order, from one
	// goroutine of the client's. It may call the client's methods (not
	// Close). Past eventq.DefaultCapacity (1,024) waiting events, new ones
	// are dropped (Stats.EventsDropped, a WARN); Close delivers the queued
	// ones, waiting at most eventq.DefaultDrainTimeout (1 s) for a stuck
	// Observer. See "The Observer contract" in internal/eventq's package
	// documentation.
	Observer func(Event)
	// Logger receives the client's records. Default: discarded.
	Logger *slog.Logger
	// InternalHook, when set, sees only the client's own calls (health
	// checks and burst checks), which the hooks of AddHook and the clients
	// given to OnNewNode do not see. For a database on a *redis.Client
	// (Database.Options, or a Database.Client of that type) the checks run
	// on a sibling client of the same options (at most 16 connections), which has
	// this hook; on any other client they run through that client, marked
	// internal (a sentinel.Client sends them on its control connections,
	// where its own Config.InternalHook sees them, not this one).
	InternalHook redis.Hook
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Databases) == 0 {
		return c, configError("Databases", "at least one database is required")
	}
	switch c.HealthPolicy {
	case HealthyAll, HealthyMajority, HealthyAny:
	default:
		return c, configError("HealthPolicy", fmt.Sprintf("unknown policy %d", int(c.HealthPolicy)))
	}
	c.ReplyLimits = c.ReplyLimits.ForData()
	var field, problem string
	if c.Cache, field, problem = c.Cache.Resolved(); field != "" {
		return c, configError("Cache."+field, problem)
	}
	if c.AutoPipelineMaxBatch < 0 || c.AutoPipelineInflight < 0 {
		return c, configError("AutoPipelineMaxBatch", fmt.Sprintf("AutoPipelineMaxBatch (%d) and AutoPipelineInflight (%d) cannot be negative (0: the default)", c.AutoPipelineMaxBatch, c.AutoPipelineInflight))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"HealthCheckInterval", c.HealthCheckInterval}, {"ProbeDelay", c.ProbeDelay},
		{"ProbeTimeout", c.ProbeTimeout}, {"GracePeriod", c.GracePeriod},
		{"FailureWindow", c.FailureWindow}, {"FailoverDelay", c.FailoverDelay},
		{"FailbackDwell", c.FailbackDwell},
	} {
		if d.v < 0 {
			return c, configError(d.name, "must not be negative")
		}
	}
	if c.Probes < 0 {
		return c, configError("Probes", "must not be negative")
	}
	if c.FailoverAttempts < 0 {
		return c, configError("FailoverAttempts", "must not be negative")
	}
	if c.FailureRateThreshold < 0 || c.FailureRateThreshold > 1 || math.IsNaN(c.FailureRateThreshold) {
		return c, configError("FailureRateThreshold", "must be between 0 and 1")
	}
	zero.Default(&c.HealthCheckInterval, DefaultHealthCheckInterval)
	zero.Default(&c.ProbeDelay, DefaultProbeDelay)
	zero.Default(&c.ProbeTimeout, DefaultProbeTimeout)
	zero.Default(&c.GracePeriod, DefaultGracePeriod)
	zero.Default(&c.FailureWindow, DefaultFailureWindow)
	zero.Default(&c.FailoverDelay, DefaultFailoverDelay)
	zero.Default(&c.FailbackInterval, DefaultFailbackInterval)
	zero.Default(&c.FailbackDwell, DefaultFailbackDwell)
	zero.Default(&c.Probes, DefaultProbes)
	zero.Default(&c.ConsecutiveFailures, DefaultConsecutiveFailures)
	zero.Default(&c.FailureRateThreshold, DefaultFailureRateThreshold)
	zero.Default(&c.MinFailures, DefaultMinFailures)
	zero.Default(&c.FailoverAttempts, DefaultFailoverAttempts)
	if c.Probe == nil {
		c.Probe = PingProbe()
	}
	if c.Classifier == nil {
		c.Classifier = classify.New()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// validate checks one database's settings (names are checked for
// uniqueness by the caller).
func (d Database) validate() error {
	switch {
	case d.Name == "":
		return &ConfigError{Package: "multidb", Struct: "Database", Field: "Name", Problem: "is required"}
	case d.Weight < 0 || math.IsNaN(d.Weight) || math.IsInf(d.Weight, 0):
		return databaseError(d.Name, "Weight", "must be a finite number, not negative")
	case d.GracePeriod < 0:
		return databaseError(d.Name, "GracePeriod", "must not be negative")
	case (d.Client == nil) == (d.Options == nil):
		return databaseError(d.Name, "Client/Options", "set exactly one of them")
	}
	if d.Client != nil {
		if o, ok := d.Client.(interface{ Options() *redis.Options }); ok {
			if opt := o.Options(); opt != nil {
				if err := checkClientOptions(d.Name, opt); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkClientOptions refuses a caller's client that would retry on its
// own or ignore context deadlines: rediskit's client policy, checked as
// guard.New checks it (package internal/redisopt). Options() reports
// go-redis's normalized values: MaxRetries -1 reads 0, DialerRetries 0
// reads 5.
func checkClientOptions(name string, opt *redis.Options) error {
	vs := redisopt.Check(opt)
	if len(vs) == 0 {
		return nil
	}
	return databaseError(name, "Client", vs.Explain(clientConsequence, "pass Database.Options and multidb builds the client"))
}

// clientConsequence says what each departure from the client policy would
// break in multidb.
var clientConsequence = map[string]string{
	"MaxRetries":            "it would re-send writes and slow failover",
	"DialerRetries":         "it delays detecting a dead database",
	"ContextTimeoutEnabled": "probe timeouts cannot bound its calls",
}

// clientOptions are the go-redis options multidb builds a database's
// client from: the caller's, under rediskit's inner-client policy (package
// internal/redisopt: no retries, context deadlines on sockets, no CLIENT
// SETINFO, no maintenance notifications). NewClient bounds their replies
// too (databaseOptions).
func clientOptions(in *redis.Options) *redis.Options {
	o := *in
	return redisopt.Inner(&o)
}

// databaseOptions are the go-redis options of a database multidb builds:
// clientOptions, with replies bounded by lim (Config.ReplyLimits,
// respguard.GuardData). The caller's Options are not changed.
func databaseOptions(in *redis.Options, lim ReplyLimits) *redis.Options {
	return respguard.GuardData(clientOptions(in), lim)
}
