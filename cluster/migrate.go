package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rediskit/rediskit/internal/optconv"
)

// Coming from go-redis's NewClusterClient. FromClusterOptions turns its
// options into a Config. Every field of redis.ClusterOptions has a rule in
// clusterRules: mapped to its counterpart (a Config field, or, for the
// connection and pool settings Config does not restate, NodeOptions), or
// its value refused with the reason, because rediskit does not do what it
// asks (retries, above all) or does it itself (the slot map, redirects).
// A zero value always converts, to rediskit's default. A field go-redis
// adds later, which no rule knows, is refused whenever it is set, and
// TestClusterRulesCoverEveryField fails until one is written.

// ClusterOptionsError is the error of FromClusterOptions when some fields
// cannot be converted: each one, in the order of redis.ClusterOptions,
// and why.
type ClusterOptionsError struct {
	Refused []RefusedOption
}

// RefusedOption is one redis.ClusterOptions field FromClusterOptions
// refused: its name, its value as an error may show it (never a secret),
// and why.
type RefusedOption = optconv.Refused

func (e *ClusterOptionsError) Error() string {
	return optconv.Message("cluster", "redis.ClusterOptions", e.Refused)
}

// FromClusterOptions converts go-redis's options for NewClusterClient
// into a Config, field by field (the README's table): the seeds,
// credentials, TLS, timeouts and pool size to their Config fields,
// ReadOnly / RouteByLatency to ReadFrom (ReplicaPreferred / Nearest),
// ClusterStateReloadInterval to RefreshInterval, and the connection and
// pool settings Config does not restate (OnConnect, Dialer, Protocol,
// credentials providers, idle and lifetime limits, buffer sizes,
// AutoPipelineOptions) to NodeOptions, which sets them on every node
// client. A field whose value rediskit cannot honour is refused: the error
// is a *ClusterOptionsError listing every such field and why, and the
// Config is zero.
func FromClusterOptions(co *redis.ClusterOptions) (Config, error) {
	if co == nil {
		return Config{}, fmt.Errorf("cluster: FromClusterOptions(nil)")
	}
	return convertCluster(co, clusterRules)
}

// clusterConversion is what the rules build: the Config, and the node
// settings NodeOptions applies.
type clusterConversion struct {
	cfg  Config
	node []func(*redis.Options)
}

type clusterRule = optconv.Rule[redis.ClusterOptions, clusterConversion]

func convertCluster(co *redis.ClusterOptions, rules map[string]clusterRule) (Config, error) {
	var c clusterConversion
	if refused := optconv.Convert(co, &c, rules); len(refused) > 0 {
		return Config{}, &ClusterOptionsError{Refused: refused}
	}
	if len(c.node) > 0 {
		set := slices.Clone(c.node)
		c.cfg.NodeOptions = func(o *redis.Options) {
			for _, f := range set {
				f(o)
			}
		}
	}
	return c.cfg, nil
}

// onNodes maps a field onto every node client's options when it is set.
func onNodes(isSet func(*redis.ClusterOptions) bool, apply func(co *redis.ClusterOptions, o *redis.Options)) clusterRule {
	return func(co *redis.ClusterOptions, c *clusterConversion) string {
		if isSet(co) {
			c.node = append(c.node, func(o *redis.Options) { apply(co, o) })
		}
		return ""
	}
}

func refused(reason string, isSet func(*redis.ClusterOptions) bool) clusterRule {
	return optconv.RefusedWhen[redis.ClusterOptions, clusterConversion](reason, isSet)
}

// accepted is the rule of a field every value of which converts.
func accepted() clusterRule { return optconv.Accepted[redis.ClusterOptions, clusterConversion]() }

// bounded maps a timeout: negative (go-redis's "no timeout") is refused.
func bounded(get func(*redis.ClusterOptions) time.Duration, set func(*Config, time.Duration)) clusterRule {
	return func(co *redis.ClusterOptions, c *clusterConversion) string {
		if get(co) < 0 {
			return optconv.ReasonUnbounded
		}
		set(&c.cfg, get(co))
		return ""
	}
}

// clusterRules has a rule for every field of redis.ClusterOptions
// (go-redis v9.23); TestClusterRulesCoverEveryField checks it.
var clusterRules = map[string]clusterRule{
	"Addrs": func(co *redis.ClusterOptions, c *clusterConversion) string {
		if len(co.Addrs) == 0 {
			return "no seed: give at least one node of the cluster (host:port)"
		}
		c.cfg.Addrs = slices.Clone(co.Addrs)
		return ""
	},
	"ClientName": func(co *redis.ClusterOptions, c *clusterConversion) string {
		c.cfg.ClientName = co.ClientName
		return ""
	},
	"Username": func(co *redis.ClusterOptions, c *clusterConversion) string { c.cfg.Username = co.Username; return "" },
	"Password": func(co *redis.ClusterOptions, c *clusterConversion) string { c.cfg.Password = co.Password; return "" },
	"TLSConfig": func(co *redis.ClusterOptions, c *clusterConversion) string {
		if co.TLSConfig != nil && co.Dialer != nil {
			return "go-redis ignores TLSConfig when Dialer is set; leave one of them unset"
		}
		c.cfg.TLSConfig = co.TLSConfig
		return ""
	},
	"DialTimeout":  bounded(func(co *redis.ClusterOptions) time.Duration { return co.DialTimeout }, func(c *Config, d time.Duration) { c.DialTimeout = d }),
	"ReadTimeout":  bounded(func(co *redis.ClusterOptions) time.Duration { return co.ReadTimeout }, func(c *Config, d time.Duration) { c.ReadTimeout = d }),
	"WriteTimeout": bounded(func(co *redis.ClusterOptions) time.Duration { return co.WriteTimeout }, func(c *Config, d time.Duration) { c.WriteTimeout = d }),
	// rediskit always lets the context's deadline bound socket I/O.
	"ContextTimeoutEnabled": accepted(),
	"PoolSize": func(co *redis.ClusterOptions, c *clusterConversion) string {
		if co.PoolSize < 0 {
			return "a negative pool size has no meaning; leave it 0 for the default"
		}
		c.cfg.PoolSize = co.PoolSize
		return ""
	},
	"MaxRedirects": func(co *redis.ClusterOptions, c *clusterConversion) string {
		if co.MaxRedirects < 0 {
			return "rediskit follows MOVED and ASK (without them a slot migration fails every command of its slot); " +
				"leave it 0 for the default or give a positive bound"
		}
		c.cfg.MaxRedirects = co.MaxRedirects
		return ""
	},
	"ClusterStateReloadInterval": func(co *redis.ClusterOptions, c *clusterConversion) string {
		if co.ClusterStateReloadInterval < 0 {
			return "rediskit reads the slot map again at least every RefreshInterval; leave it 0 for the default or give a positive interval"
		}
		c.cfg.RefreshInterval = co.ClusterStateReloadInterval
		return ""
	},

	// Where reads go.
	"ReadOnly": func(co *redis.ClusterOptions, c *clusterConversion) string {
		if co.ReadOnly && !co.RouteByLatency && !co.RouteRandomly {
			c.cfg.ReadFrom = ReplicaPreferred // the shard's replica, its master when none answers
		}
		return ""
	},
	"RouteByLatency": func(co *redis.ClusterOptions, c *clusterConversion) string {
		if co.RouteByLatency {
			c.cfg.ReadFrom = Nearest
		}
		return ""
	},
	"RouteByLatencyTolerance": func(co *redis.ClusterOptions, c *clusterConversion) string {
		if co.RouteByLatencyTolerance < 0 {
			return "a negative tolerance has no meaning; leave it 0 for the default latency window"
		}
		c.cfg.Replica.LatencyWindow = co.RouteByLatencyTolerance
		return ""
	},
	"RouteRandomly": refused("rediskit reads from the nearest node (Nearest) or a replica first (ReplicaPreferred), not at random: "+
		"set Config.ReadFrom on the result", func(co *redis.ClusterOptions) bool { return co.RouteRandomly }),

	// What rediskit does itself.
	"NewClient": refused("rediskit makes each node's client itself (it carries the routing's bounds and checks): "+
		"adjust their options with Config.NodeOptions", func(co *redis.ClusterOptions) bool { return co.NewClient != nil }),
	"ClusterSlots": refused("rediskit reads the slot map from the cluster and follows its failovers and migrations; "+
		"a fixed map has none of that: leave it nil", func(co *redis.ClusterOptions) bool { return co.ClusterSlots != nil }),
	"ShardPicker": refused("rediskit sends a keyless command to a master of its choosing (ForEachMaster runs one on every master); leave it nil",
		func(co *redis.ClusterOptions) bool { return co.ShardPicker != nil }),
	// go-redis's request policies fan some keyless commands out to every
	// shard; rediskit routes by key, and ForEachMaster does the fan-out:
	// either value converts.
	"DisableRoutingPolicies": accepted(),

	"MaxRetries":         refused(optconv.ReasonRetries, func(co *redis.ClusterOptions) bool { return co.MaxRetries > 0 }),
	"MinRetryBackoff":    refused(optconv.ReasonRetryBackoff, func(co *redis.ClusterOptions) bool { return co.MinRetryBackoff > 0 }),
	"MaxRetryBackoff":    refused(optconv.ReasonRetryBackoff, func(co *redis.ClusterOptions) bool { return co.MaxRetryBackoff > 0 }),
	"DialerRetries":      refused(optconv.ReasonDialRetries, func(co *redis.ClusterOptions) bool { return co.DialerRetries > 1 }),
	"DialerRetryTimeout": refused(optconv.ReasonDialRetries, func(co *redis.ClusterOptions) bool { return co.DialerRetryTimeout > 0 }),
	"DialerRetryBackoff": refused(optconv.ReasonDialRetries, func(co *redis.ClusterOptions) bool { return co.DialerRetryBackoff != nil }),
	"FailingTimeoutSeconds": refused(optconv.ReasonFailingTimeout,
		func(co *redis.ClusterOptions) bool { return co.FailingTimeoutSeconds != 0 }),
	"StreamingCredentialsProvider": refused("rediskit does not re-authenticate open connections: give CredentialsProviderContext "+
		"(asked at each dial) instead", func(co *redis.ClusterOptions) bool { return co.StreamingCredentialsProvider != nil }),
	"PushNotificationProcessor": refused(optconv.ReasonPushNotifications,
		func(co *redis.ClusterOptions) bool { return co.PushNotificationProcessor != nil }),
	"MaintNotificationsConfig": refused(optconv.ReasonMaintNotifications, func(co *redis.ClusterOptions) bool {
		return co.MaintNotificationsConfig != nil && co.MaintNotificationsConfig.Mode != "" && co.MaintNotificationsConfig.Mode != maintnotifications.ModeDisabled
	}),
	// A no-op in go-redis v9.23 (deprecated).
	"UnstableResp3": accepted(),
	// rediskit sends no CLIENT SETINFO by default: disabling it asks for
	// what it does; an IdentitySuffix turns it on (below).
	"DisableIndentity": accepted(),
	"DisableIdentity":  accepted(),

	// The node clients' own settings, through NodeOptions.
	"Dialer": onNodes(func(co *redis.ClusterOptions) bool { return co.Dialer != nil },
		func(co *redis.ClusterOptions, o *redis.Options) { o.Dialer = co.Dialer }),
	"OnConnect": onNodes(func(co *redis.ClusterOptions) bool { return co.OnConnect != nil },
		func(co *redis.ClusterOptions, o *redis.Options) { o.OnConnect = co.OnConnect }),
	"Protocol": onNodes(func(co *redis.ClusterOptions) bool { return co.Protocol != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.Protocol = co.Protocol }),
	"CredentialsProvider": onNodes(func(co *redis.ClusterOptions) bool { return co.CredentialsProvider != nil },
		func(co *redis.ClusterOptions, o *redis.Options) { o.CredentialsProvider = co.CredentialsProvider }),
	"CredentialsProviderContext": onNodes(func(co *redis.ClusterOptions) bool { return co.CredentialsProviderContext != nil },
		func(co *redis.ClusterOptions, o *redis.Options) {
			o.CredentialsProviderContext = co.CredentialsProviderContext
		}),
	"IdentitySuffix": onNodes(func(co *redis.ClusterOptions) bool { return co.IdentitySuffix != "" },
		func(co *redis.ClusterOptions, o *redis.Options) {
			o.DisableIdentity, o.IdentitySuffix = false, co.IdentitySuffix
		}),
	"MaxConcurrentDials": onNodes(func(co *redis.ClusterOptions) bool { return co.MaxConcurrentDials != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.MaxConcurrentDials = co.MaxConcurrentDials }),
	"PoolFIFO": onNodes(func(co *redis.ClusterOptions) bool { return co.PoolFIFO },
		func(co *redis.ClusterOptions, o *redis.Options) { o.PoolFIFO = co.PoolFIFO }),
	"PoolTimeout": onNodes(func(co *redis.ClusterOptions) bool { return co.PoolTimeout != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.PoolTimeout = co.PoolTimeout }),
	"MinIdleConns": onNodes(func(co *redis.ClusterOptions) bool { return co.MinIdleConns != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.MinIdleConns = co.MinIdleConns }),
	"MaxIdleConns": onNodes(func(co *redis.ClusterOptions) bool { return co.MaxIdleConns != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.MaxIdleConns = co.MaxIdleConns }),
	"MaxActiveConns": onNodes(func(co *redis.ClusterOptions) bool { return co.MaxActiveConns != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.MaxActiveConns = co.MaxActiveConns }),
	"ConnMaxIdleTime": onNodes(func(co *redis.ClusterOptions) bool { return co.ConnMaxIdleTime != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.ConnMaxIdleTime = co.ConnMaxIdleTime }),
	"ConnMaxLifetime": onNodes(func(co *redis.ClusterOptions) bool { return co.ConnMaxLifetime != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.ConnMaxLifetime = co.ConnMaxLifetime }),
	"ConnMaxLifetimeJitter": onNodes(func(co *redis.ClusterOptions) bool { return co.ConnMaxLifetimeJitter != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.ConnMaxLifetimeJitter = co.ConnMaxLifetimeJitter }),
	"ReadBufferSize": onNodes(func(co *redis.ClusterOptions) bool { return co.ReadBufferSize != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.ReadBufferSize = co.ReadBufferSize }),
	"WriteBufferSize": onNodes(func(co *redis.ClusterOptions) bool { return co.WriteBufferSize != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.WriteBufferSize = co.WriteBufferSize }),
	"PipelineReadBufferSize": onNodes(func(co *redis.ClusterOptions) bool { return co.PipelineReadBufferSize != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.PipelineReadBufferSize = co.PipelineReadBufferSize }),
	"PipelineWriteBufferSize": onNodes(func(co *redis.ClusterOptions) bool { return co.PipelineWriteBufferSize != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) {
			o.PipelineWriteBufferSize = co.PipelineWriteBufferSize
		}),
	"PipelinePoolSize": onNodes(func(co *redis.ClusterOptions) bool { return co.PipelinePoolSize != 0 },
		func(co *redis.ClusterOptions, o *redis.Options) { o.PipelinePoolSize = co.PipelinePoolSize }),
	// The options of go-redis's auto-pipeliners (AutoPipeline()), made on
	// the client's front, whose options NodeOptions adjusts too.
	"AutoPipelineOptions": onNodes(func(co *redis.ClusterOptions) bool { return co.AutoPipelineOptions != nil },
		func(co *redis.ClusterOptions, o *redis.Options) { o.AutoPipelineOptions = co.AutoPipelineOptions }),
}
