package replica

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/rediskit/rediskit/internal/configerr"
	"github.com/rediskit/rediskit/internal/zero"
)

// The defaults of Config, in one place. The package documentation explains
// each choice.
const (
	// DefaultProbeInterval is how often the master and every replica are
	// probed. See "Probing" in the package documentation for the choice.
	DefaultProbeInterval = 2 * time.Second
	// MinProbeInterval is the shortest ProbeInterval accepted.
	MinProbeInterval = 100 * time.Millisecond
	// DefaultProbeTimeout bounds each probe command (PING, ROLE, INFO).
	DefaultProbeTimeout = 1 * time.Second
	// DefaultExclusionFactor: a replica whose RTT exceeds 3 × the master's
	// is never elected.
	DefaultExclusionFactor = 3.0
	// DefaultLatencyWindow is the LatencyWindow of a zero Config, and so
	// of the Sentinel client's default selector: replicas within 2 ms of
	// the fastest share reads.
	DefaultLatencyWindow = 2 * time.Millisecond
	// DefaultEWMAAlpha is the weight of a new RTT sample in the average.
	DefaultEWMAAlpha = 0.75
)

// Config configures a Selector. Every zero field takes the default named
// next to it, so the zero Config is the configuration of the Sentinel
// client's default selector (sentinel.NewClient without
// Config.ReplicaSelector), and a Config that sets one field keeps the
// others as the client's default has them:
//
//	sel, err := replica.NewSelector(replica.Config{MaxStaleness: 5 * time.Second})
type Config struct {
	// ProbeInterval is how often the shared prober measures the
	// deployment's nodes. Default DefaultProbeInterval (2 s); at least
	// MinProbeInterval (100 ms). Selectors of one deployment share one
	// prober, which runs at the interval of the Selector that started it.
	ProbeInterval time.Duration
	// ProbeTimeout bounds each probe command; a PING that does not answer
	// within it marks the node unhealthy for election. Default
	// DefaultProbeTimeout (1 s).
	ProbeTimeout time.Duration
	// ExclusionFactor: a replica whose average RTT exceeds ExclusionFactor
	// × the master's is never elected, however small the RTTs (master
	// 0.5 ms, replica 2.4 ms: excluded). The rule is not applied while
	// the master's RTT is unknown (unreachable, not probed yet): there is
	// nothing to compare with. Default DefaultExclusionFactor (3.0); at
	// least 1; math.Inf(1) turns the rule off.
	ExclusionFactor float64
	// ExclusionMargin is an optional noise floor for the ExclusionFactor
	// rule: with it, a replica is excluded as slow only when its average
	// RTT also exceeds the master's by more than ExclusionMargin. Default
	// 0: no floor, the rule is strict. Set it only where RTTs are so small
	// that scheduling jitter is of their size (one host, loopback: 50 µs
	// against 200 µs is noise, not distance); on a network a margin lets
	// a replica several times farther than the master take reads. Must not
	// be negative.
	ExclusionMargin time.Duration
	// LatencyWindow: every eligible replica whose average RTT is within
	// LatencyWindow of the fastest one is elected (one already elected
	// stays within 1.5 × LatencyWindow), and reads are spread over them
	// by in-flight count. Default DefaultLatencyWindow (2 ms), as the
	// Sentinel client's default selector has it. Negative means no window:
	// a single winner, the fastest replica alone (replicas with exactly
	// the same average share), which follows every change in the ranking
	// of the averages.
	LatencyWindow time.Duration
	// MaxStaleness excludes replicas whose estimated replication lag
	// exceeds it, and replicas whose lag cannot be estimated (not attached
	// to the master). Zero (the default) sets no bound. When set, it must
	// be at least ProbeInterval: the lag is estimated to about one
	// interval (see "Staleness" in the package documentation).
	MaxStaleness time.Duration
	// EWMAAlpha is the weight of a new RTT sample in the node's moving
	// average, in (0, 1]. Default DefaultEWMAAlpha (0.75). The first sample
	// after a start or a failed probe seeds the average.
	EWMAAlpha float64
	// Observer, when set, receives an Event each time the election
	// changes, in order, from a goroutine of the Selector's own (the one
	// that also calls Env.Evict), never with the Selector's lock held: it
	// may call the Selector's methods (Table, WaitRound, Start) except
	// Close, and a slow Observer holds up neither the prober nor the
	// client's failover handling, only the later events and evictions.
	// Past eventq.DefaultCapacity (1,024) waiting changes, their events
	// are dropped (Selector.EventsDropped, a WARN; their evictions are
	// kept). See "The Observer contract" in internal/eventq's package
	// documentation; unlike the other packages' Close, the Selector's
	// drops the changes not yet reported.
	Observer func(Event)
	// Logger receives the selector's and prober's records. Default: the
	// logger of the client the Selector is bound to (Env.Logger), else
	// discarded.
	Logger *slog.Logger
}

// ConfigError reports a Config field NewSelector cannot use:
// "replica: Config.<Field> <problem> (got <value>)".
type ConfigError = configerr.Error

// configError reports field's value and what is wrong with it.
func configError(field string, value any, problem string) *ConfigError {
	return &ConfigError{Package: "replica", Struct: "Config", Field: field, Problem: fmt.Sprintf("%s (got %v)", problem, value)}
}

// withDefaults fills in the zero fields and validates the result. A
// negative LatencyWindow (no window) stays negative, so that filling in
// the defaults twice changes nothing.
func (c Config) withDefaults() (Config, error) {
	zero.Default(&c.ProbeInterval, DefaultProbeInterval)
	zero.Default(&c.ProbeTimeout, DefaultProbeTimeout)
	zero.Default(&c.ExclusionFactor, DefaultExclusionFactor)
	zero.Default(&c.EWMAAlpha, DefaultEWMAAlpha)
	zero.Default(&c.LatencyWindow, DefaultLatencyWindow)
	switch {
	case c.ProbeInterval < MinProbeInterval:
		return c, configError("ProbeInterval", c.ProbeInterval, fmt.Sprintf("must be at least %v", MinProbeInterval))
	case c.ProbeTimeout < 0:
		return c, configError("ProbeTimeout", c.ProbeTimeout, "must not be negative")
	case math.IsNaN(c.ExclusionFactor) || c.ExclusionFactor < 1:
		return c, configError("ExclusionFactor", c.ExclusionFactor, "must be at least 1 (math.Inf(1) turns the rule off)")
	case c.ExclusionMargin < 0:
		return c, configError("ExclusionMargin", c.ExclusionMargin, "must not be negative (0 sets no floor)")
	case c.MaxStaleness < 0:
		return c, configError("MaxStaleness", c.MaxStaleness, "must not be negative (0 sets no bound)")
	case c.MaxStaleness > 0 && c.MaxStaleness < c.ProbeInterval:
		return c, configError("MaxStaleness", c.MaxStaleness, fmt.Sprintf("must be at least ProbeInterval (%v): the lag is only known to about one interval", c.ProbeInterval))
	case math.IsNaN(c.EWMAAlpha) || c.EWMAAlpha <= 0 || c.EWMAAlpha > 1:
		return c, configError("EWMAAlpha", c.EWMAAlpha, "must be in (0, 1]")
	}
	return c, nil
}
