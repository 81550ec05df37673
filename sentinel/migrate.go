package sentinel

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/optconv"

	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/replica"
)

// Coming from go-redis. FromFailoverOptions and FromFailoverURL turn the
// options of go-redis's NewFailoverClient into a Config. Every field of
// redis.FailoverOptions has a rule in failoverRules: it is mapped to its
// counterpart, or its value is refused with the reason, because rediskit
// does not do what it asks (retries, above all) and converting it silently
// would change what the program does. A zero value always converts: it
// means go-redis's default, and rediskit's default applies (docs/go-redis.md
// says how the two differ). A field go-redis adds
// later, which no rule knows, is refused whenever it is set, and the test
// of the rules fails until one is written.

// FailoverOptionsError is the error of FromFailoverOptions and
// FromFailoverURL when some fields cannot be converted: each one, in the
// order of redis.FailoverOptions, and why.
type FailoverOptionsError struct {
	Refused []RefusedOption
}

// RefusedOption is one redis.FailoverOptions field FromFailoverOptions
// refused: its name, its value as an error may show it (never a secret),
// and why.
type RefusedOption = optconv.Refused

func (e *FailoverOptionsError) Error() string {
	return optconv.Message("sentinel", "redis.FailoverOptions", e.Refused)
}

// FromFailoverOptions converts go-redis's options for NewFailoverClient
// (and NewFailoverClusterClient) into a Config, field by field (docs/go-redis.md
// has the table). A field whose value rediskit
// cannot honour is refused: the error is a *FailoverOptionsError listing
// every such field and why, and the Config is zero. Zero values always
// convert, to rediskit's defaults. Settings that go-redis has no
// counterpart for (ReadFrom, Durable, FailoverHold, Observer, ...) are left
// zero, for the caller to set on the result.
//
// RouteByLatencyTolerance and RouteRandomly make a ReplicaSelector, which
// serves one client: convert once per client.
func FromFailoverOptions(fo *redis.FailoverOptions) (Config, error) {
	if fo == nil {
		return Config{}, fmt.Errorf("sentinel: FromFailoverOptions(nil)")
	}
	return convertFailover(fo, failoverRules)
}

// FromFailoverURL converts a URL in go-redis's failover form (what
// redis.ParseFailoverURL reads: redis://sentinelUser:sentinelPassword@host:port/db?master_name=…&addr=…)
// into a Config, as FromFailoverOptions converts what ParseFailoverURL
// returns. It is read with redisurl.ParseFailoverURL, whose errors never
// quote a password; the package documentation of redisurl, and its
// ParseFailoverURL, relate that form to rediskit's redis+sentinel:// URL
// (which NewClientFromURL takes).
//
// One thing is not copied: go-redis sets the TLS ServerName to the host
// of the first sentinel, so that every sentinel, the master and the
// replicas are verified against that one name. The Config verifies each
// server against the host the client dials, as NewClientFromURL does.
func FromFailoverURL(rawURL string) (Config, error) {
	fo, err := redisurl.ParseFailoverURL(rawURL)
	if err != nil {
		return Config{}, err
	}
	if fo.TLSConfig != nil {
		fo.TLSConfig.ServerName = ""
	}
	return FromFailoverOptions(fo)
}

// failoverRule converts one field of redis.FailoverOptions into o. It is
// given the whole struct, so that fields which depend on each other
// (ReplicaOnly, RouteByLatency, RouteRandomly) give the same result in
// any order; it returns "" when the field converted (or had nothing to
// convert), else the reason it is refused.
type failoverRule = optconv.Rule[redis.FailoverOptions, Config]

// convertFailover applies rules to every exported field of fo, in order.
// A field without a rule is refused when it is set.
func convertFailover(fo *redis.FailoverOptions, rules map[string]failoverRule) (Config, error) {
	var o Config
	if refused := optconv.Convert(fo, &o, rules); len(refused) > 0 {
		return Config{}, &FailoverOptionsError{Refused: refused}
	}
	return o, nil
}

// Reasons shared by several rules.
const (
	reasonRetries = "rediskit alone decides what is re-run: a read once on the re-resolved node, a write only when it provably did not run " +
		"(go-redis re-sends a write that timed out, which can then run twice); leave it 0 or set -1"
	reasonDialRetries = "rediskit dials once: a failed dial is a sign that the node moved, which starts a re-resolution " +
		"(and one re-run of the unsent work) instead of more attempts at the same address; leave it unset"
	reasonUnbounded = "rediskit bounds every data-node dial, read and write, so that a node that stops answering fails the call " +
		"and the failover rules can act on it; leave it 0 for rediskit's default or give a positive bound"
)

// failoverRules has a rule for every field of redis.FailoverOptions
// (go-redis v9.23); TestFailoverRulesCoverEveryField checks it.
var failoverRules = map[string]failoverRule{
	"MasterName": func(fo *redis.FailoverOptions, o *Config) string { o.MasterName = fo.MasterName; return "" },
	"SentinelAddrs": func(fo *redis.FailoverOptions, o *Config) string {
		o.SentinelAddrs = slices.Clone(fo.SentinelAddrs)
		return ""
	},
	// ClientName: go-redis also names its sentinel connections with it;
	// rediskit names the data-node connections only.
	"ClientName": func(fo *redis.FailoverOptions, o *Config) string { o.ClientName = fo.ClientName; return "" },
	"SentinelUsername": func(fo *redis.FailoverOptions, o *Config) string {
		o.SentinelUsername = fo.SentinelUsername
		return ""
	},
	"SentinelPassword": func(fo *redis.FailoverOptions, o *Config) string {
		o.SentinelPassword = fo.SentinelPassword
		return ""
	},

	// Where reads go. RouteByLatency and RouteRandomly work only with
	// NewFailoverClusterClient (NewFailoverClient panics on them): they
	// send read-only commands to the master or a replica, the nearest or
	// one at random. ReplicaOnly sends every command to a replica
	// (NewFailoverClient: a random one, the master when Sentinel lists
	// none; writes then fail with READONLY).
	"RouteByLatency": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.RouteByLatency && !fo.ReplicaOnly {
			o.ReadFrom = Nearest // the default selector is the latency-aware one
		}
		return ""
	},
	"RouteByLatencyTolerance": func(fo *redis.FailoverOptions, o *Config) string {
		switch tol := fo.RouteByLatencyTolerance; {
		case tol < 0:
			return "a negative tolerance has no meaning in go-redis (a negative replica.Config.LatencyWindow means no window: set that on a replica.Selector of your own)"
		case tol > 0 && fo.RouteByLatency && !fo.RouteRandomly:
			// Zero keeps rediskit's default window (2 ms), not go-redis's
			// strict minimum, which sends every client's reads to the
			// same replica. Without RouteByLatency it has no effect, in
			// go-redis as here.
			sel, err := replica.NewSelector(replica.Config{LatencyWindow: tol})
			if err != nil {
				return "replica.NewSelector refuses it as LatencyWindow: " + err.Error()
			}
			o.ReplicaSelector = sel
		}
		return ""
	},
	"RouteRandomly": func(fo *redis.FailoverOptions, o *Config) string {
		if !fo.RouteRandomly {
			return ""
		}
		if fo.RouteByLatency {
			return "RouteByLatency is set too, and takes precedence in go-redis: set one of them"
		}
		// Round robin over the healthy replicas: the reads spread evenly
		// whatever the latency, as with go-redis, but the master takes
		// none while a replica is healthy.
		o.ReplicaSelector = NewRoundRobinSelector()
		if !fo.ReplicaOnly {
			o.ReadFrom = ReplicaPreferred
		}
		return ""
	},
	"ReplicaOnly": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.ReplicaOnly {
			// Read-only work goes to a replica, never to the master, and
			// fails with a *NoReplicaError when none may serve it (go-redis
			// falls back to the master: ReplicaPreferred does); writes go
			// to the master (go-redis sends them to the replica, which
			// refuses them).
			o.ReadFrom = Replica
		}
		return ""
	},
	"UseDisconnectedReplicas": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.UseDisconnectedReplicas {
			return "rediskit never reads from a replica whose link to the master is down (its data can be arbitrarily old): " +
				"with no replica to read from, ReadFrom Replica fails with a *NoReplicaError and ReplicaPreferred reads the master"
		}
		return ""
	},

	"Dialer":    func(fo *redis.FailoverOptions, o *Config) string { o.Dialer = fo.Dialer; return "" },
	"OnConnect": func(fo *redis.FailoverOptions, o *Config) string { o.OnConnect = fo.OnConnect; return "" },
	"Protocol": func(fo *redis.FailoverOptions, o *Config) string {
		switch p := fo.Protocol; {
		case p < 2: // go-redis: RESP3
		case p <= 3:
			o.Protocol = p
		default:
			return "the RESP versions are 2 and 3"
		}
		return ""
	},
	"Username": func(fo *redis.FailoverOptions, o *Config) string { o.Username = fo.Username; return "" },
	"Password": func(fo *redis.FailoverOptions, o *Config) string { o.Password = fo.Password; return "" },
	// go-redis asks CredentialsProviderContext first, then
	// CredentialsProvider: so does the conversion.
	"CredentialsProvider": func(fo *redis.FailoverOptions, o *Config) string {
		if p := fo.CredentialsProvider; p != nil && fo.CredentialsProviderContext == nil {
			o.CredentialsProvider = func(context.Context) (string, string, error) {
				user, pass := p()
				return user, pass, nil
			}
		}
		return ""
	},
	"CredentialsProviderContext": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.CredentialsProviderContext != nil {
			o.CredentialsProvider = fo.CredentialsProviderContext
		}
		return ""
	},
	"StreamingCredentialsProvider": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.StreamingCredentialsProvider != nil {
			return "rediskit does not re-authenticate open connections: give CredentialsProviderContext (Config.CredentialsProvider, " +
				"asked for every new connection) and ConnMaxLifetime to bound how long a connection keeps its credentials"
		}
		return ""
	},
	"DB": func(fo *redis.FailoverOptions, o *Config) string { o.DB = fo.DB; return "" },

	"MaxRetries": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.MaxRetries > 0 {
			return reasonRetries
		}
		return ""
	},
	"MinRetryBackoff": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.MinRetryBackoff > 0 {
			return "rediskit re-runs work at once on the re-resolved node, without a backoff; leave it unset"
		}
		return ""
	},
	"MaxRetryBackoff": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.MaxRetryBackoff > 0 {
			return "rediskit re-runs work at once on the re-resolved node, without a backoff; leave it unset"
		}
		return ""
	},
	"DialTimeout": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.DialTimeout < 0 {
			return reasonUnbounded
		}
		o.DialTimeout = fo.DialTimeout
		return ""
	},
	"DialerRetries": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.DialerRetries > 1 {
			return reasonDialRetries
		}
		return ""
	},
	"DialerRetryTimeout": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.DialerRetryTimeout > 0 {
			return reasonDialRetries
		}
		return ""
	},
	"DialerRetryBackoff": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.DialerRetryBackoff != nil {
			return reasonDialRetries
		}
		return ""
	},
	"ReadTimeout": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.ReadTimeout < 0 {
			return reasonUnbounded
		}
		o.ReadTimeout = fo.ReadTimeout
		return ""
	},
	"WriteTimeout": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.WriteTimeout < 0 {
			return reasonUnbounded
		}
		o.WriteTimeout = fo.WriteTimeout
		return ""
	},
	// rediskit always lets the context's deadline bound socket reads and
	// writes (its own probes depend on it). false, go-redis's default,
	// converts: refusing it would refuse nearly every go-redis
	// configuration and URL, for a difference docs/go-redis.md states.
	"ContextTimeoutEnabled": func(*redis.FailoverOptions, *Config) string { return "" },

	"ReadBufferSize":  func(fo *redis.FailoverOptions, o *Config) string { o.ReadBufferSize = fo.ReadBufferSize; return "" },
	"WriteBufferSize": func(fo *redis.FailoverOptions, o *Config) string { o.WriteBufferSize = fo.WriteBufferSize; return "" },
	"PipelineReadBufferSize": func(fo *redis.FailoverOptions, o *Config) string {
		o.PipelineReadBufferSize = fo.PipelineReadBufferSize
		return ""
	},
	"PipelineWriteBufferSize": func(fo *redis.FailoverOptions, o *Config) string {
		o.PipelineWriteBufferSize = fo.PipelineWriteBufferSize
		return ""
	},
	"PipelinePoolSize": func(fo *redis.FailoverOptions, o *Config) string {
		o.PipelinePoolSize = fo.PipelinePoolSize
		return ""
	},
	"AutoPipelineOptions": func(fo *redis.FailoverOptions, o *Config) string {
		o.AutoPipelineOptions = fo.AutoPipelineOptions
		return ""
	},
	"PoolFIFO": func(fo *redis.FailoverOptions, o *Config) string { o.PoolFIFO = fo.PoolFIFO; return "" },
	"PoolSize": func(fo *redis.FailoverOptions, o *Config) string { o.PoolSize = fo.PoolSize; return "" },
	"MaxConcurrentDials": func(fo *redis.FailoverOptions, o *Config) string {
		o.MaxConcurrentDials = fo.MaxConcurrentDials
		return ""
	},
	"PoolTimeout":     func(fo *redis.FailoverOptions, o *Config) string { o.PoolTimeout = fo.PoolTimeout; return "" },
	"MinIdleConns":    func(fo *redis.FailoverOptions, o *Config) string { o.MinIdleConns = fo.MinIdleConns; return "" },
	"MaxIdleConns":    func(fo *redis.FailoverOptions, o *Config) string { o.MaxIdleConns = fo.MaxIdleConns; return "" },
	"MaxActiveConns":  func(fo *redis.FailoverOptions, o *Config) string { o.MaxActiveConns = fo.MaxActiveConns; return "" },
	"ConnMaxIdleTime": func(fo *redis.FailoverOptions, o *Config) string { o.ConnMaxIdleTime = fo.ConnMaxIdleTime; return "" },
	"ConnMaxLifetime": func(fo *redis.FailoverOptions, o *Config) string { o.ConnMaxLifetime = fo.ConnMaxLifetime; return "" },
	"ConnMaxLifetimeJitter": func(fo *redis.FailoverOptions, o *Config) string {
		o.ConnMaxLifetimeJitter = fo.ConnMaxLifetimeJitter
		return ""
	},

	"TLSConfig": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.TLSConfig != nil && fo.Dialer != nil {
			return "go-redis ignores TLSConfig when Dialer is set (it uses the Dialer's connections as they are), and rediskit " +
				"runs its TLS handshake over them: convert without TLSConfig if the Dialer does TLS itself, or set " +
				"Config.TLSConfig on the result if it returns plain connections"
		}
		o.TLSConfig = fo.TLSConfig
		return ""
	},
	// go-redis sends CLIENT SETINFO unless either is set; Identity says
	// the same.
	"DisableIndentity": func(fo *redis.FailoverOptions, o *Config) string {
		o.Identity = !fo.DisableIdentity && !fo.DisableIndentity //nolint:staticcheck // the deprecated spelling is still a field to map
		return ""
	},
	"DisableIdentity": func(fo *redis.FailoverOptions, o *Config) string {
		o.Identity = !fo.DisableIdentity && !fo.DisableIndentity //nolint:staticcheck // the deprecated spelling is still a field to map
		return ""
	},
	"IdentitySuffix": func(fo *redis.FailoverOptions, o *Config) string { o.IdentitySuffix = fo.IdentitySuffix; return "" },
	"FailingTimeoutSeconds": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.FailingTimeoutSeconds != 0 {
			return "it is NewFailoverClusterClient's time a failing node is avoided; rediskit leaves a replica out for as " +
				"long as its probes fail or a sentinel flags it, and has no such setting"
		}
		return ""
	},
	// A no-op in go-redis v9.23 (deprecated).
	"UnstableResp3": func(*redis.FailoverOptions, *Config) string { return "" },
	"PushNotificationProcessor": func(fo *redis.FailoverOptions, o *Config) string {
		if fo.PushNotificationProcessor != nil {
			return "rediskit's data-node clients come and go with the topology and handle their own push messages " +
				"(pub/sub goes through Subscribe): a processor of the caller's is not supported"
		}
		return ""
	},
}
