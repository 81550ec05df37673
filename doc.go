// Package rediskit is the front door: one client for every Redis
// deployment, chosen from its URL, with rediskit's routing promises.
//
// NewClientFromURL (or NewClient with Config.URL) returns a Client, a
// redis.UniversalClient, for any URL package redisurl reads:
//
//	redis://[user:password@]host[:port][/db]     one server (or a cluster: see below)
//	rediss://...                                 the same over TLS
//	unix://[user:password@]/path/to/socket       one server over a Unix socket
//	redis+sentinel://host1,host2/masterName[/db] a Sentinel deployment (rediss+sentinel:// for TLS)
//	redis+cluster://host1,host2                  a Redis Cluster (rediss+cluster:// for TLS)
//	redis://host1?addr=host2&addr=host3          go-redis's cluster form
//
// and Config.Databases (a list of URLs with weights) makes a multidb
// client that fails over between them. The typed packages stay for those
// who want their full configuration: the Client is one of their clients
// (Unwrap returns it) behind one interface.
//
// # Choosing the topology
//
// The URL says the kind: a Sentinel URL makes a *sentinel.Client, a cluster
// URL (several seeds, or redis+cluster://) a *cluster.Client, Databases a
// *multidb.Client. A standalone server is served by package sentinel's
// client with the server as its primary (sentinel.Config.Primary: the
// same routing, holds and re-run rules as for a Sentinel master, the
// replicas found with ROLE); a unix:// URL is such a server reached over
// its socket (its replicas, from ROLE, over TCP). A plain redis:// or
// rediss:// URL names one server that may be a cluster node, as in most
// managed services' "configuration endpoint": NewClient probes it once
// (one connection, one CLUSTER INFO, bounded by Config.DetectTimeout,
// default DefaultDetectTimeout) and serves it as a cluster when it answers,
// as a standalone server when it refuses the command (cluster support
// disabled, or an ACL without CLUSTER). A redis+cluster:// URL of one seed
// gets the same probe, and a seed that is not a cluster node is refused
// with a *KindError. Client.Kind and String say which kind was chosen and
// why.
//
// When the probe gets no answer (the server is down, unreachable, or
// slower than DetectTimeout), NewClient fails with a *DetectError naming
// the URL without its password: no client is made, since serving a
// cluster as one server (or the reverse) would fail every command later
// in a less clear way. To start without Redis being up, say what the
// server is: Config.Kind (KindStandalone or KindCluster) or
// Config.NoClusterDetection skip the probe, and NewClient then dials
// nothing. Bad input never dials: a URL that does not parse (a
// *redisurl.Error), a URL of another kind than Config.Kind (a *KindError),
// a Config that cannot be used (a *ConfigError) are refused first; and
// a refused seed has been dialled once, by the probe.
//
// # Configuration
//
// Config holds the settings every topology has (credentials and TLS when
// the URL carries none, timeouts, pool size, ReadFrom, durable writes,
// auto-pipelining, reply limits, an Observer of the typed client's events,
// the Logger), each mapped onto the typed
// package's configuration; the URL's own settings win over the Config's.
// Every zero field means the typed package's default. FromUniversalOptions
// converts go-redis's redis.UniversalOptions, and FromOptions the
// redis.Options of redis.NewClient, field by field, and refuse with a
// reason what rediskit does not do (retries, above all).
//
// Per call, WithReadFrom and WithDurable override ReadFrom and Durable for
// the calls made with the context they return, on every topology (the
// typed packages' functions of the same names set the same option):
//
//	c.Get(rediskit.WithReadFrom(ctx, rediskit.Master), "cart:42") // read your own write
//	c.Set(rediskit.WithDurable(ctx, true), "order:7", "paid", 0) // confirmed by WAIT
//
// # Stats
//
// Client.Stats maps each topology's counters onto one Stats: the masters
// writes go to, the commands per node, master changes, reads retried,
// writes re-run, refused, held and not durable; Stats.Typed has the typed
// client's own Stats.
package rediskit
