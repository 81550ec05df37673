package rediskit

import (
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/rediskit/rediskit/internal/optconv"

	"github.com/rediskit/rediskit/redisurl"
)

// Coming from go-redis's NewUniversalClient. FromUniversalOptions turns
// its options into a Config. Every field of redis.UniversalOptions has a
// rule in universalRules: mapped to its counterpart, or its value refused
// with the reason, because the Config has no such setting (the typed
// packages have more: sentinel.FromFailoverOptions converts
// redis.FailoverOptions field by field) or rediskit does not do what it
// asks (retries, above all). A zero value always converts, to rediskit's
// default. A field go-redis adds later, which no rule knows, is refused
// whenever it is set, and the test of the rules fails until one is
// written.

// UniversalOptionsError is the error of FromUniversalOptions when some
// fields cannot be converted: each one, in the order of
// redis.UniversalOptions, and why.
type UniversalOptionsError struct {
	Refused []RefusedOption
}

// RefusedOption is one redis.UniversalOptions field FromUniversalOptions
// refused: its name, its value as an error may show it (never a secret),
// and why.
type RefusedOption = optconv.Refused

func (e *UniversalOptionsError) Error() string {
	return optconv.Message("rediskit", "redis.UniversalOptions", e.Refused)
}

// FromUniversalOptions converts go-redis's options for NewUniversalClient
// into a Config, field by field (the table in docs/go-redis.md). It chooses the kind
// as NewUniversalClient does: MasterName set, a Sentinel client (Addrs
// are the sentinels); IsClusterMode or several Addrs, a cluster; else one
// server (Addrs[0], default 127.0.0.1:6379), which NewClient probes as it
// probes any redis:// URL (set Kind to KindStandalone on the result to
// keep go-redis's choice without the probe). Config.URL is written with
// the sentinels' credentials; the data nodes' are in Config.Username and
// Password. A field whose value the Config cannot honour is refused: the
// error is a *UniversalOptionsError listing every such field and why,
// and the Config is zero.
func FromUniversalOptions(uo *redis.UniversalOptions) (Config, error) {
	if uo == nil {
		return Config{}, fmt.Errorf("rediskit: FromUniversalOptions(nil)")
	}
	return convertUniversal(uo, universalRules)
}

// conversion is what the rules build: the Config and its URL.
type conversion struct {
	cfg Config
	url redisurl.Config
}

type universalRule = optconv.Rule[redis.UniversalOptions, conversion]

func convertUniversal(uo *redis.UniversalOptions, rules map[string]universalRule) (Config, error) {
	var c conversion
	if refused := optconv.Convert(uo, &c, rules); len(refused) > 0 {
		return Config{}, &UniversalOptionsError{Refused: refused}
	}
	c.cfg.URL = c.url.URL()
	return c.cfg, nil
}

// reasonTyped refuses a setting only the typed packages have.
const reasonTyped = "rediskit.Config has only the settings common to every topology: make the client with the typed package " +
	"(sentinel.FromFailoverOptions and cluster.FromClusterOptions convert this field; multidb.Config), or leave it unset"

// typedOnly refuses a field when it is set.
func typedOnly(field func(uo *redis.UniversalOptions) bool) universalRule {
	return optconv.RefusedWhen[redis.UniversalOptions, conversion](reasonTyped, field)
}

// refusedWith refuses a field with reason when it is set.
func refusedWith(reason string, field func(uo *redis.UniversalOptions) bool) universalRule {
	return optconv.RefusedWhen[redis.UniversalOptions, conversion](reason, field)
}

// universalRules has a rule for every field of redis.UniversalOptions
// (go-redis v9.23); TestUniversalRulesCoverEveryField checks it.
var universalRules = map[string]universalRule{
	// Addrs, MasterName and IsClusterMode choose the kind, as
	// NewUniversalClient does.
	"Addrs": func(uo *redis.UniversalOptions, c *conversion) string {
		addrs := slices.Clone(uo.Addrs)
		switch {
		case uo.MasterName != "":
			if len(addrs) == 0 {
				addrs = []string{"127.0.0.1:26379"}
			}
			c.url.Kind, c.url.Sentinels, c.url.MasterName = redisurl.Sentinel, addrs, uo.MasterName
		case uo.IsClusterMode || len(addrs) > 1:
			if len(addrs) == 0 {
				addrs = []string{"127.0.0.1:6379"}
			}
			c.url.Kind, c.url.Addrs = redisurl.Cluster, addrs
			c.cfg.Kind = KindCluster
		default:
			if len(addrs) == 0 {
				addrs = []string{"127.0.0.1:6379"}
			}
			c.url.Kind, c.url.Addr = redisurl.Standalone, addrs[0]
		}
		return ""
	},
	"MasterName":    func(*redis.UniversalOptions, *conversion) string { return "" }, // with Addrs
	"IsClusterMode": func(*redis.UniversalOptions, *conversion) string { return "" }, // with Addrs
	"ClientName":    func(uo *redis.UniversalOptions, c *conversion) string { c.cfg.ClientName = uo.ClientName; return "" },
	"DB": func(uo *redis.UniversalOptions, c *conversion) string {
		if uo.DB != 0 && uo.MasterName == "" && (uo.IsClusterMode || len(uo.Addrs) > 1) {
			return "Redis Cluster has only database 0 (go-redis ignores DB for a cluster); leave it 0"
		}
		c.url.DB = uo.DB
		return ""
	},
	"Username": func(uo *redis.UniversalOptions, c *conversion) string { c.cfg.Username = uo.Username; return "" },
	"Password": func(uo *redis.UniversalOptions, c *conversion) string { c.cfg.Password = uo.Password; return "" },
	"SentinelUsername": func(uo *redis.UniversalOptions, c *conversion) string {
		c.url.SentinelUsername = uo.SentinelUsername
		return ""
	},
	"SentinelPassword": func(uo *redis.UniversalOptions, c *conversion) string {
		c.url.SentinelPassword = uo.SentinelPassword
		return ""
	},
	"TLSConfig": func(uo *redis.UniversalOptions, c *conversion) string {
		if uo.TLSConfig != nil {
			if uo.Dialer != nil {
				return "go-redis ignores TLSConfig when Dialer is set; leave it unset"
			}
			c.url.TLS, c.cfg.TLSConfig = true, uo.TLSConfig
		}
		return ""
	},
	"DialTimeout": func(uo *redis.UniversalOptions, c *conversion) string {
		if uo.DialTimeout < 0 {
			return optconv.ReasonUnbounded
		}
		c.cfg.DialTimeout = uo.DialTimeout
		return ""
	},
	"ReadTimeout": func(uo *redis.UniversalOptions, c *conversion) string {
		if uo.ReadTimeout < 0 {
			return optconv.ReasonUnbounded
		}
		c.cfg.ReadTimeout = uo.ReadTimeout
		return ""
	},
	"WriteTimeout": func(uo *redis.UniversalOptions, c *conversion) string {
		if uo.WriteTimeout < 0 {
			return optconv.ReasonUnbounded
		}
		c.cfg.WriteTimeout = uo.WriteTimeout
		return ""
	},
	// rediskit always lets the context's deadline bound socket reads and
	// writes; false, go-redis's default, converts.
	"ContextTimeoutEnabled": func(*redis.UniversalOptions, *conversion) string { return "" },
	"PoolSize": func(uo *redis.UniversalOptions, c *conversion) string {
		if uo.PoolSize < 0 {
			return "a negative pool size has no meaning; leave it 0 for the default"
		}
		c.cfg.PoolSize = uo.PoolSize
		return ""
	},

	// Where reads go (go-redis: cluster and failover-cluster clients).
	"ReadOnly": func(uo *redis.UniversalOptions, c *conversion) string {
		if uo.ReadOnly && !uo.RouteByLatency && !uo.RouteRandomly {
			c.cfg.ReadFrom = ReplicaPreferred // a replica of the shard, the master when none answers
		}
		return ""
	},
	"RouteByLatency": func(uo *redis.UniversalOptions, c *conversion) string {
		if uo.RouteByLatency {
			c.cfg.ReadFrom = Nearest
		}
		return ""
	},
	"RouteByLatencyTolerance": typedOnly(func(uo *redis.UniversalOptions) bool { return uo.RouteByLatencyTolerance != 0 }),
	"RouteRandomly": refusedWith("rediskit reads from the nearest node (Nearest) or a replica first (ReplicaPreferred), not at random: "+
		"set Config.ReadFrom on the result", func(uo *redis.UniversalOptions) bool { return uo.RouteRandomly }),

	"MaxRetries": refusedWith(optconv.ReasonRetries, func(uo *redis.UniversalOptions) bool { return uo.MaxRetries > 0 }),
	"MinRetryBackoff": refusedWith(optconv.ReasonRetryBackoff,
		func(uo *redis.UniversalOptions) bool { return uo.MinRetryBackoff > 0 }),
	"MaxRetryBackoff": refusedWith(optconv.ReasonRetryBackoff,
		func(uo *redis.UniversalOptions) bool { return uo.MaxRetryBackoff > 0 }),
	"DialerRetries":      refusedWith(optconv.ReasonDialRetries, func(uo *redis.UniversalOptions) bool { return uo.DialerRetries > 1 }),
	"DialerRetryTimeout": refusedWith(optconv.ReasonDialRetries, func(uo *redis.UniversalOptions) bool { return uo.DialerRetryTimeout > 0 }),
	"MaxRedirects": refusedWith("rediskit follows a cluster's redirects itself (cluster.Config.MaxRedirects, default 5); leave it unset",
		func(uo *redis.UniversalOptions) bool { return uo.MaxRedirects != 0 }),
	"FailingTimeoutSeconds": refusedWith(optconv.ReasonFailingTimeout,
		func(uo *redis.UniversalOptions) bool { return uo.FailingTimeoutSeconds != 0 }),
	"StreamingCredentialsProvider": refusedWith("rediskit does not re-authenticate open connections: use the typed package's "+
		"CredentialsProvider (sentinel.Config)", func(uo *redis.UniversalOptions) bool { return uo.StreamingCredentialsProvider != nil }),
	"PushNotificationProcessor": refusedWith(optconv.ReasonPushNotifications,
		func(uo *redis.UniversalOptions) bool { return uo.PushNotificationProcessor != nil }),
	"MaintNotificationsConfig": refusedWith(optconv.ReasonMaintNotifications,
		func(uo *redis.UniversalOptions) bool {
			return uo.MaintNotificationsConfig != nil && uo.MaintNotificationsConfig.Mode != "" && uo.MaintNotificationsConfig.Mode != maintnotifications.ModeDisabled
		}),
	// A no-op in go-redis v9.23 (deprecated).
	"UnstableResp3": func(*redis.UniversalOptions, *conversion) string { return "" },
	// rediskit never sends CLIENT SETINFO from the root Config: setting
	// either only asks for what it does.
	"DisableIndentity": func(*redis.UniversalOptions, *conversion) string { return "" },
	"DisableIdentity":  func(*redis.UniversalOptions, *conversion) string { return "" },

	"ClientSideCacheConfig":                  refusedWith(optconv.ReasonCache, func(uo *redis.UniversalOptions) bool { return uo.ClientSideCacheConfig != nil }),
	"ClientSideCache":                        refusedWith(optconv.ReasonCache, func(uo *redis.UniversalOptions) bool { return uo.ClientSideCache != nil }),
	"ClientSideCacheStrategy":                refusedWith(optconv.ReasonCache, func(uo *redis.UniversalOptions) bool { return uo.ClientSideCacheStrategy != 0 }),
	"ClientSideCacheRefreshOnInvalidate":     refusedWith(optconv.ReasonCache, func(uo *redis.UniversalOptions) bool { return uo.ClientSideCacheRefreshOnInvalidate }),
	"ClientSideCacheCoalesceMisses":          refusedWith(optconv.ReasonCache, func(uo *redis.UniversalOptions) bool { return uo.ClientSideCacheCoalesceMisses }),
	"ClientSideCacheInvalidationBatchWindow": refusedWith(optconv.ReasonCache, func(uo *redis.UniversalOptions) bool { return uo.ClientSideCacheInvalidationBatchWindow != 0 }),

	// The typed packages' settings.
	"Dialer":                     typedOnly(func(uo *redis.UniversalOptions) bool { return uo.Dialer != nil }),
	"OnConnect":                  typedOnly(func(uo *redis.UniversalOptions) bool { return uo.OnConnect != nil }),
	"Protocol":                   typedOnly(func(uo *redis.UniversalOptions) bool { return uo.Protocol != 0 }),
	"CredentialsProvider":        typedOnly(func(uo *redis.UniversalOptions) bool { return uo.CredentialsProvider != nil }),
	"CredentialsProviderContext": typedOnly(func(uo *redis.UniversalOptions) bool { return uo.CredentialsProviderContext != nil }),
	"ReadBufferSize":             typedOnly(func(uo *redis.UniversalOptions) bool { return uo.ReadBufferSize != 0 }),
	"WriteBufferSize":            typedOnly(func(uo *redis.UniversalOptions) bool { return uo.WriteBufferSize != 0 }),
	"PipelineReadBufferSize":     typedOnly(func(uo *redis.UniversalOptions) bool { return uo.PipelineReadBufferSize != 0 }),
	"PipelineWriteBufferSize":    typedOnly(func(uo *redis.UniversalOptions) bool { return uo.PipelineWriteBufferSize != 0 }),
	"PipelinePoolSize":           typedOnly(func(uo *redis.UniversalOptions) bool { return uo.PipelinePoolSize != 0 }),
	"PoolFIFO":                   typedOnly(func(uo *redis.UniversalOptions) bool { return uo.PoolFIFO }),
	"MaxConcurrentDials":         typedOnly(func(uo *redis.UniversalOptions) bool { return uo.MaxConcurrentDials != 0 }),
	"PoolTimeout":                typedOnly(func(uo *redis.UniversalOptions) bool { return uo.PoolTimeout != 0 }),
	"MinIdleConns":               typedOnly(func(uo *redis.UniversalOptions) bool { return uo.MinIdleConns != 0 }),
	"MaxIdleConns":               typedOnly(func(uo *redis.UniversalOptions) bool { return uo.MaxIdleConns != 0 }),
	"MaxActiveConns":             typedOnly(func(uo *redis.UniversalOptions) bool { return uo.MaxActiveConns != 0 }),
	"ConnMaxIdleTime":            typedOnly(func(uo *redis.UniversalOptions) bool { return uo.ConnMaxIdleTime != 0 }),
	"ConnMaxLifetime":            typedOnly(func(uo *redis.UniversalOptions) bool { return uo.ConnMaxLifetime != 0 }),
	"ConnMaxLifetimeJitter":      typedOnly(func(uo *redis.UniversalOptions) bool { return uo.ConnMaxLifetimeJitter != 0 }),
	"IdentitySuffix":             typedOnly(func(uo *redis.UniversalOptions) bool { return uo.IdentitySuffix != "" }),
	"AutoPipelineOptions":        typedOnly(func(uo *redis.UniversalOptions) bool { return uo.AutoPipelineOptions != nil }),
}
