package rediskit

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/zero"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/sentinel"
)

// Client is what every rediskit client is: a redis.UniversalClient (every
// go-redis command method, Pipeline, TxPipeline, Watch, Subscribe, AddHook,
// Close) routed by the topology's rules, plus the methods below.
type Client interface {
	redis.UniversalClient
	// OnNewNode calls fn with the go-redis client of every data node the
	// client sends the caller's work to, now and later (to instrument
	// them).
	OnNewNode(fn func(*redis.Client))
	// Stats returns the client's counters, common to every topology, and
	// the typed client's own (Stats.Typed).
	Stats() Stats
	// Kind is the topology chosen.
	Kind() Kind
	// Unwrap returns the typed client: a *sentinel.Client (Sentinel and
	// standalone), a *cluster.Client or a *multidb.Client.
	Unwrap() any
	// String says the kind chosen, why, and the typed client, without
	// passwords.
	String() string
}

// typed is what every typed client has beyond redis.UniversalClient.
type typed interface {
	redis.UniversalClient
	OnNewNode(fn func(*redis.Client))
	String() string
}

// client is the Client of every kind: the typed client, and what the
// front door knows about it.
type client struct {
	typed
	kind Kind
	// why says how the kind was chosen ("from the URL", "detected: ...").
	why string
	// url is the URL without passwords ("" for multidb).
	url string
	// stats maps the typed client's counters.
	stats func() Stats
	// owned are the clients made for a multidb client's databases, which
	// it does not close itself.
	owned []redis.UniversalClient
}

func (c *client) Kind() Kind   { return c.kind }
func (c *client) Unwrap() any  { return c.typed }
func (c *client) Stats() Stats { return c.stats() }

func (c *client) String() string {
	s := "rediskit.Client(" + c.kind.String()
	if c.url != "" {
		s += " " + c.url
	}
	return s + ", " + c.why + ": " + c.typed.String() + ")"
}

// Close closes the typed client, then the clients of a multidb client's
// databases. Safe to call twice.
func (c *client) Close() error {
	err := c.typed.Close()
	for _, o := range c.owned {
		err = errors.Join(err, o.Close())
	}
	return err
}

// NewClientFromURL is NewClient with cfg.URL set to rawURL.
func NewClientFromURL(rawURL string, cfg Config) (Client, error) {
	cfg.URL = rawURL
	return NewClient(cfg)
}

// NewClient returns a client for the deployment cfg.URL names, or for the
// databases cfg.Databases lists, of the kind the URL says (see "Choosing
// the topology" in the package documentation): a Sentinel URL makes a
// sentinel.Client, a cluster URL a cluster.Client, Databases a
// multidb.Client, and a redis://, rediss:// or unix:// URL a standalone
// client, or a cluster.Client when its one server answers as a cluster
// node. It returns once the kind is known; the typed client connects in
// the background.
//
// Errors: a *redisurl.Error for a URL that does not parse, a *ConfigError,
// a *KindError for a URL of another kind than cfg.Kind or a cluster seed
// that is not one, a *DetectError when the probe got no answer. None
// shows a password.
func NewClient(cfg Config) (Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(cfg.Databases) > 0 {
		return newMultiDB(cfg)
	}
	u, err := redisurl.Parse(cfg.URL)
	if err != nil {
		return nil, err
	}
	return newFromConfig(u, &cfg)
}

// plan is what newFromConfig does with one URL: the kind it makes, why,
// and whether the one probe runs first (to decide between standalone and
// cluster, or to check that a cluster seed is one).
type plan struct {
	kind  Kind
	why   string
	probe bool
}

// choose decides the plan of a URL from the URL and the Config alone,
// without dialling: a pure function (table-tested and fuzzed).
func choose(u *redisurl.Config, cfg *Config) (plan, error) {
	if cfg.TLSConfig != nil && !u.TLS {
		return plan{}, configError("TLSConfig", fmt.Sprintf("is set, but %s does not ask for TLS: write rediss:// (rediss+sentinel://, rediss+cluster://), or leave TLSConfig nil", u.Redacted()))
	}
	p := plan{kind: urlKind(u), why: "from the URL"}
	switch {
	case cfg.Kind == KindAuto:
	case cfg.Kind == p.kind:
		p.why = "Config.Kind"
	case cfg.Kind == KindCluster && u.Kind == redisurl.Standalone:
		p.kind, p.why = KindCluster, "Config.Kind" // a cluster of one seed, written redis://
	default:
		reason := "write the URL of the kind Config.Kind asks for, or leave Kind zero (KindAuto) to follow the URL"
		if cfg.Kind == KindCluster && u.Kind == redisurl.Unix {
			reason = "a cluster is reached over TCP: give its seeds as redis+cluster://host1,host2"
		}
		return plan{}, &KindError{URL: u.Redacted(), Want: cfg.Kind, Got: p.kind, Reason: reason}
	}
	// One probe of a single TCP seed whose kind is open (redis://, Kind
	// not forced) or must be checked (a cluster of one seed).
	oneSeed := u.Kind == redisurl.Standalone || (u.Kind == redisurl.Cluster && len(u.Addrs) == 1)
	p.probe = oneSeed && !cfg.NoClusterDetection && cfg.Kind != KindStandalone
	return p, nil
}

// newFromConfig makes the client of one URL, as choose plans it.
func newFromConfig(u *redisurl.Config, cfg *Config) (*client, error) {
	p, err := choose(u, cfg)
	if err != nil {
		return nil, err
	}
	if p.probe {
		found, err := detect(context.Background(), u, cfg)
		if err != nil {
			return nil, err
		}
		switch {
		case found.cluster && p.kind == KindStandalone:
			p.kind, p.why = KindCluster, "detected: the server answered CLUSTER INFO"
		case !found.cluster && p.kind == KindCluster:
			return nil, &KindError{URL: u.Redacted(), Want: KindCluster, Got: KindStandalone,
				Reason: "the seed is not a cluster node (it answered CLUSTER INFO with " + strconv.Quote(found.refusal) + "): use redis:// for a standalone server"}
		case !found.cluster:
			p.why = "detected: not a cluster node (" + found.refusal + ")"
		}
	}
	var c *client
	switch p.kind {
	case KindSentinel:
		c, err = newSentinel(u, cfg)
	case KindCluster:
		c, err = newCluster(u, cfg)
	default:
		c, err = newStandalone(u, cfg)
	}
	if err != nil {
		return nil, err
	}
	c.kind, c.why, c.url = p.kind, p.why, u.Redacted()
	return c, nil
}

// urlKind is the kind a URL names on its own.
func urlKind(u *redisurl.Config) Kind {
	switch u.Kind {
	case redisurl.Sentinel:
		return KindSentinel
	case redisurl.Cluster:
		return KindCluster
	}
	return KindStandalone
}

// withCredentials gives u the Config's credentials when it has none.
func withCredentials(u *redisurl.Config, cfg *Config) *redisurl.Config {
	cp := *u
	if cp.Username == "" && cp.Password == "" {
		cp.Username, cp.Password = cfg.Username, cfg.Password
	}
	if cfg.ReadFrom != "" && (cp.ReadFrom == "" || cp.ReadFrom == Master) {
		cp.ReadFrom = cfg.ReadFrom
	}
	if cp.ClientName == "" {
		cp.ClientName = cfg.ClientName
	}
	zero.Default(&cp.DialTimeout, cfg.DialTimeout)
	zero.Default(&cp.ReadTimeout, cfg.ReadTimeout)
	zero.Default(&cp.WriteTimeout, cfg.WriteTimeout)
	return &cp
}

// sentinelConfig maps the common settings onto a sentinel.Config (the
// URL's are applied by the sentinel package).
func sentinelConfig(cfg *Config, kind Kind) sentinel.Config {
	return sentinel.Config{
		TLSConfig: cfg.TLSConfig, SentinelTLSConfig: cfg.TLSConfig,
		PoolSize: cfg.PoolSize,
		Durable:  cfg.Durable, DurableAOF: cfg.DurableAOF, DurableTimeout: cfg.DurableTimeout,
		AutoPipeline: cfg.AutoPipeline, ReplyLimits: cfg.ReplyLimits, Cache: cfg.Cache, Logger: cfg.Logger,
		ExactlyOnce: cfg.ExactlyOnce,
		Observer:    sentinelObserver(cfg.Observer, kind),
	}
}

func newSentinel(u *redisurl.Config, cfg *Config) (*client, error) {
	u = withCredentials(u, cfg)
	if cfg.TLSConfig != nil {
		// The Config's TLS replaces what the URL's parameters would
		// make: the sentinel package keeps cfg.TLSConfig when the URL
		// asks for none.
		u.TLS, u.CAFile, u.CertFile, u.KeyFile, u.ServerName, u.InsecureSkipVerify = false, "", "", "", "", false
	}
	sc, err := sentinel.NewClientFromURL(u.URL(), sentinelConfig(cfg, KindSentinel))
	if err != nil {
		return nil, err
	}
	return &client{typed: sc, stats: func() Stats { return sentinelStats(KindSentinel, sc.Stats()) }}, nil
}

func newCluster(u *redisurl.Config, cfg *Config) (*client, error) {
	u = withCredentials(u, cfg)
	cc, err := cluster.NewClientFromConfig(u, cluster.Config{
		TLSConfig: cfg.TLSConfig, PoolSize: cfg.PoolSize,
		Durable: cfg.Durable, DurableAOF: cfg.DurableAOF, DurableTimeout: cfg.DurableTimeout,
		AutoPipeline: cfg.AutoPipeline, ReplyLimits: cfg.ReplyLimits, Cache: cfg.Cache, Logger: cfg.Logger,
		ExactlyOnce: cfg.ExactlyOnce,
		Observer:    clusterObserver(cfg.Observer),
	})
	if err != nil {
		return nil, err
	}
	return &client{typed: cc, stats: func() Stats { return clusterStats(cc.Stats()) }}, nil
}

// newMultiDB makes a multidb client over cfg.Databases: a redis://,
// rediss:// or unix:// database is given to multidb as go-redis options
// (multidb makes and owns its client, without cluster detection); a
// Sentinel or cluster one as the rediskit client of its URL, closed by
// Close after the multidb client.
func newMultiDB(cfg Config) (c *client, err error) {
	var owned []redis.UniversalClient
	var subs []*client // the databases that are rediskit clients
	defer func() {
		if err != nil {
			for _, o := range owned {
				_ = o.Close()
			}
		}
	}()
	mc := multidb.Config{AutoPipeline: cfg.AutoPipeline, ReplyLimits: cfg.ReplyLimits, Cache: cfg.Cache, Logger: cfg.Logger,
		Observer: multidbObserver(cfg.Observer)}
	one := cfg // each database's own client: its URL decides its kind
	one.Databases, one.Kind = nil, KindAuto
	for i, d := range cfg.Databases {
		u, err := redisurl.Parse(d.URL)
		if err != nil {
			return nil, fmt.Errorf("rediskit: Config.Databases[%d]: %w", i, err)
		}
		if _, err := choose(u, &one); err != nil {
			return nil, err
		}
		db := multidb.Database{Name: d.Name, Weight: d.Weight}
		if db.Name == "" {
			db.Name = u.Redacted()
		}
		switch u.Kind {
		case redisurl.Standalone, redisurl.Unix:
			o, err := withCredentials(u, &one).Options()
			if err != nil {
				return nil, err
			}
			if cfg.TLSConfig != nil {
				o.TLSConfig = cfg.TLSConfig.Clone()
			}
			if cfg.PoolSize > 0 {
				o.PoolSize = cfg.PoolSize
			}
			db.Options = o
		default:
			sub, err := newFromConfig(u, &one)
			if err != nil {
				return nil, err
			}
			owned, subs = append(owned, sub), append(subs, sub)
			db.Client = sub.typed
		}
		mc.Databases = append(mc.Databases, db)
	}
	m, err := multidb.NewClient(mc)
	if err != nil {
		return nil, err
	}
	return &client{typed: m, kind: KindMultiDB, why: "Config.Databases", owned: owned,
		stats: func() Stats { return multidbStats(m.Stats(), subs) }}, nil
}
