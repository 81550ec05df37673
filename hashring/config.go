package hashring

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/rediskit/rediskit/internal/configerr"
	"github.com/rediskit/rediskit/internal/zero"
)

// Defaults. The timings are redis-hashring's (POLL_INTERVAL, NODE_TIMEOUT,
// CLEANUP_INTERVAL, RING_REPLICAS) plus the seed's stricter additions. A
// ring shared with Python nodes must keep HeartbeatInterval and Expiry at
// these values, since Python's are constants.
const (
	// DefaultReplicas is the number of replicas (points) per node; more
	// replicas spread keys more evenly, and a node's weight is its number
	// of replicas.
	DefaultReplicas = 16
	// DefaultHeartbeatInterval is how often a node refreshes the scores of
	// its replicas and then re-reads the ring; also how often a Ring view
	// re-reads the ring when no notice arrives.
	DefaultHeartbeatInterval = 10 * time.Second
	// DefaultExpiry is how long after its last heartbeat a replica counts
	// as alive.
	DefaultExpiry = 60 * time.Second
	// DefaultOwnershipDeadline is how long after the last heartbeat that
	// was followed by a successful read a node keeps its keys. It must be
	// shorter than Expiry: the difference is the clock skew tolerated
	// between hosts (see the package documentation).
	DefaultOwnershipDeadline = 50 * time.Second
	// DefaultCleanupInterval is the least time between two removals of
	// expired replicas by one node.
	DefaultCleanupInterval = 120 * time.Second
	// DefaultSubscribeTimeout bounds the wait for Redis to confirm the
	// subscription to the ring's channel.
	DefaultSubscribeTimeout = 10 * time.Second
	// DefaultRetryWait is the longest random wait after the first failed
	// attempt; each further failure doubles it, up to DefaultMaxRetryWait.
	DefaultRetryWait = 1 * time.Second
	// DefaultMaxRetryWait caps the random wait between attempts.
	DefaultMaxRetryWait = 10 * time.Second
	// DefaultRemoveTimeout bounds the removal of a node's replicas when
	// Start fails and the caller's context has already ended.
	DefaultRemoveTimeout = 10 * time.Second
)

// Config configures a Node or a Ring view. The zero value means every
// default. Fields marked "node only" are ignored by a Ring view.
type Config struct {
	// Hash maps keys to points. Default XXHash. Every node and view of a
	// ring must use the same.
	Hash Hash
	// Logger receives the records: WARN for each failed attempt and each
	// malformed member (once per member), ERROR once when a node's
	// ownership deadline is observed passed, INFO when it is restored.
	// Default: discarded.
	Logger *slog.Logger
	// Observer, when set, receives every Event of a node (ranges changed,
	// deadline passed, ownership restored, attempt failed), for metrics,
	// in order, one call at a time per node (so it needs no lock of its
	// own for a node's events), from a goroutine of the node's own: a slow
	// Observer holds up neither the node's goroutine nor its ownership
	// deadline. Start and Stop return once it has received the events they
	// caused (waiting at most eventq.DefaultDrainTimeout, 1 s; Start not
	// past its ctx either), so it must not call them; it is not called
	// after Stop returns. Past
	// eventq.DefaultCapacity (1,024) waiting events, new ones are dropped
	// (Node.EventsDropped, a WARN). See "The Observer contract" in
	// internal/eventq's package documentation.
	Observer func(Event)

	// Replicas is the number of replicas of the node (node only). Default
	// DefaultReplicas (16).
	Replicas int
	// Hostname is the node's hostname in its members (node only). Default
	// os.Hostname(). It must not contain ':'.
	Hostname string
	// PID is the process id in the node's members (node only). Default
	// os.Getpid(). Two nodes in one process on one ring must differ in
	// Hostname or PID: the ring identifies a node by "<hostname>:<pid>".
	PID int

	// HeartbeatInterval is the time between heartbeats (node) or
	// periodic reads (view). Default DefaultHeartbeatInterval (10 s).
	HeartbeatInterval time.Duration
	// Expiry is how long a replica stays alive after its last heartbeat.
	// Default DefaultExpiry (60 s).
	Expiry time.Duration
	// OwnershipDeadline is how long a node keeps its keys after its last
	// heartbeat that was followed by a read (node only). Default
	// DefaultOwnershipDeadline (50 s);
	// must be shorter than Expiry.
	OwnershipDeadline time.Duration
	// CleanupInterval is the least time between two removals of expired
	// replicas (node only). Default DefaultCleanupInterval (120 s).
	CleanupInterval time.Duration
	// SubscribeTimeout bounds the wait for the subscription confirmation.
	// Default DefaultSubscribeTimeout (10 s).
	SubscribeTimeout time.Duration
	// RetryWait is the longest random wait after the first failed attempt;
	// it doubles after each further failure up to MaxRetryWait. Defaults
	// DefaultRetryWait (1 s) and DefaultMaxRetryWait (10 s).
	RetryWait    time.Duration
	MaxRetryWait time.Duration
}

// ConfigError reports a Config field NewNode or NewRing cannot use:
// "hashring: Config.<Field> <problem>". It matches ErrInvalidConfig with
// errors.Is, or ErrInvalidHostname for Hostname.
type ConfigError = configerr.Error

func configError(field, problem string) *ConfigError {
	return &ConfigError{Package: "hashring", Struct: "Config", Field: field, Problem: problem, Kind: ErrInvalidConfig}
}

// resolved returns the configuration with defaults filled in and checks it.
func (c Config) resolved(node bool) (Config, error) {
	r := c
	if !r.Hash.valid() {
		return r, configError("Hash", fmt.Sprintf("%d is unknown (want XXHash or CRC32)", int(r.Hash)))
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	zero.Default(&r.HeartbeatInterval, DefaultHeartbeatInterval)
	zero.Default(&r.Expiry, DefaultExpiry)
	zero.Default(&r.OwnershipDeadline, DefaultOwnershipDeadline)
	zero.Default(&r.CleanupInterval, DefaultCleanupInterval)
	zero.Default(&r.SubscribeTimeout, DefaultSubscribeTimeout)
	zero.Default(&r.RetryWait, DefaultRetryWait)
	zero.Default(&r.MaxRetryWait, DefaultMaxRetryWait)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"HeartbeatInterval", r.HeartbeatInterval}, {"Expiry", r.Expiry},
		{"OwnershipDeadline", r.OwnershipDeadline}, {"CleanupInterval", r.CleanupInterval},
		{"SubscribeTimeout", r.SubscribeTimeout}, {"RetryWait", r.RetryWait}, {"MaxRetryWait", r.MaxRetryWait},
	} {
		if d.v < 0 {
			return r, configError(d.name, fmt.Sprintf("must not be negative (got %v; 0 means the default)", d.v))
		}
	}
	if r.MaxRetryWait < r.RetryWait {
		return r, configError("MaxRetryWait", fmt.Sprintf("(%v) must not be shorter than RetryWait (%v)", r.MaxRetryWait, r.RetryWait))
	}
	if !node {
		return r, nil
	}
	if r.OwnershipDeadline >= r.Expiry {
		return r, configError("OwnershipDeadline", fmt.Sprintf("(%v) must be shorter than Expiry (%v), or two nodes can own a key at once", r.OwnershipDeadline, r.Expiry))
	}
	if r.HeartbeatInterval >= r.OwnershipDeadline {
		return r, configError("HeartbeatInterval", fmt.Sprintf("(%v) must be shorter than OwnershipDeadline (%v), or the node loses its keys between heartbeats", r.HeartbeatInterval, r.OwnershipDeadline))
	}
	zero.Default(&r.Replicas, DefaultReplicas)
	if r.Replicas < 0 {
		return r, configError("Replicas", fmt.Sprintf("must not be negative (got %d; 0 means the default, %d)", r.Replicas, DefaultReplicas))
	}
	if r.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return r, hostnameError(fmt.Sprintf("is empty and os.Hostname failed (%v): set it", err))
		}
		r.Hostname = h
	}
	if err := checkHostname(r.Hostname); err != nil {
		return r, err
	}
	zero.Default(&r.PID, os.Getpid())
	if r.PID < 0 {
		return r, configError("PID", fmt.Sprintf("must not be negative (got %d; 0 means os.Getpid())", r.PID))
	}
	return r, nil
}

func (c Config) pid() string { return strconv.Itoa(c.PID) }
