// Package redisurl parses the connection URLs users paste into a typed
// Config, formats a Config back into a URL, and never shows a password
// while doing either.
//
//	c, err := redisurl.Parse("redis+sentinel://app:s3cret@10.0.0.1,10.0.0.2:26380/mymaster/2?sentinelPassword=t0p&preferReplica=true")
//	// c.Kind == redisurl.Sentinel, c.Sentinels == ["10.0.0.1:26379" "10.0.0.2:26380"],
//	// c.MasterName == "mymaster", c.DB == 2, c.ReadFrom == redisurl.ReplicaPreferred
//	fmt.Println(c) // redis+sentinel://app:xxxxx@10.0.0.1:26379,10.0.0.2:26380/mymaster/2?sentinelPassword=xxxxx&readFrom=replicaPreferred
//
// # URLs
//
//	redis://[user:password@]host[:port][/db][?params]             port 6379
//	rediss://…                                                     the same over TLS
//	unix://[user:password@]/path/to/redis.sock[?db=N&params]
//	redis+sentinel://[user:password@]host1[:port],host2[:port],…/masterName[/db][?params]
//	rediss+sentinel://…                                            TLS to the sentinels and every data node
//	redis+cluster://[user:password@]host1[:port],host2[:port],…[?params]   a Redis Cluster's seed nodes, port 6379
//	rediss+cluster://…                                             TLS to every cluster node
//	redis://[user:password@]host[:port]?addr=host2:port[&addr=…][&params]  go-redis's cluster form (rediss:// for TLS)
//
// A redis:// or rediss:// URL with one addr parameter or more is a
// cluster URL in go-redis's form (what redis.ParseClusterURL reads): the
// host and then every addr, in order, are the seeds (Config.Addrs); without
// addr it is a single server, as always. Both forms give the same Config,
// which URL and String write as redis+cluster:// (rediss+cluster://): in
// go-redis's form a cluster of one seed would read back as a single
// server, and the host list holds every seed in one place, the way a
// sentinel URL lists its sentinels. Seeds, like sentinels, may not repeat;
// any node of the cluster will do as one. Redis Cluster has only database
// 0: a cluster URL takes no path but /0, and db only as 0.
//
// Sentinels without a port use 26379. IPv6 addresses go in brackets
// ([::1]:26379; a zone is written %25, as in [fe80::1%25eth0]). The scheme
// is matched in any letter case; leading and trailing white space is
// ignored; one trailing slash in the path is ignored. The database is the
// last path segment, or the db parameter (not both); it defaults to 0.
// Sentinel addresses may not repeat. The user and password in the URL are
// the data nodes' (Redis ACL user, or just a password for requirepass); a
// username needs a password.
//
// Characters with a meaning in URLs must be percent-encoded in names and
// passwords: '@' as %40, ':' (in the username) as %3A, '/' as %2F, '?' as
// %3F, '#' as %23, '&' as %26, '%' as %25, space as %20. '+' is a plus sign,
// not a space. URL encodes every byte outside A–Z a–z 0–9 - . _ ~ this way.
//
// # Parameters
//
// Names are case-sensitive; an unknown name is an error (with a "did you
// mean" hint for typos and go-redis's snake_case names), and so is a
// parameter given twice (but addr) or without a value, and a parameter on
// a kind of URL it does not apply to (the error says which it applies to).
// The kinds: S standalone (redis://, rediss://), U unix://, SE sentinel,
// C cluster (both forms).
//
//	sentinelUser, sentinelPassword  SE     the sentinels' own credentials, separate from the data nodes'
//	readFrom                        SE C   master (default), replica, replicaPreferred or nearest; in a cluster, per shard
//	preferReplica=true              SE     the same as readFrom=replicaPreferred; false leaves master (not with readFrom)
//	dialTimeout, readTimeout,
//	writeTimeout                    all    positive Go durations: 500ms, 2s, 1m30s; unset means go-redis's default
//	clientName                      all    CLIENT SETNAME on every connection (printable ASCII without spaces, as Redis requires)
//	caFile                          TLS    PEM certificates to trust instead of the system's (rediss://, rediss+sentinel://, rediss+cluster://)
//	certFile, keyFile               TLS    a client certificate and its key, together
//	serverName                      TLS    the name to verify the server's certificate against
//	insecureSkipVerify              TLS    true turns verification off; it is only ever set by an explicit true
//	db                              all    the database, instead of the path (only 0 on a cluster URL)
//	addr                            S      another cluster seed, host[:port] (go-redis's cluster form); repeat for more
//
// There is no password or username parameter: the data nodes' credentials
// go in the userinfo, so each secret has exactly one place. Booleans are
// true or false (any case).
//
// # Errors
//
// Every error is an *Error naming the part of the URL at fault, what is
// wrong with it and, when useful, what to write instead:
//
//	redisurl: unknown scheme "redis+sentinal" (did you mean redis+sentinel://?)
//	redisurl: sentinel address "10.0.0.1:abc": invalid port (a number from 1 to 65535)
//	redisurl: missing master name (redis+sentinel://host:26379/mymaster[/db])
//	redisurl: unknown parameter "dial_timeout" (did you mean dialTimeout? Names are case-sensitive)
//
// # Secrets
//
// Passwords appear only in URL (which exists to be handed to a program,
// not printed). Redacted, String, GoString (%#v) and LogValue (slog) write
// "xxxxx" for every password that is set, and their output does not depend
// on the passwords' values; the password fields are tagged json:"-".
//
// Errors never quote text that could be a password, even when the URL is
// broken because of one (a password with an unencoded '/' or '&'): before
// parsing, Parse marks everything between "://" and the last '@', and
// everything after the first "password=" (any case), and an error about
// text in those places names the field without quoting it. Errors about
// parameters that follow sentinelPassword therefore do not show their
// values either.
//
// # go-redis's failover URL
//
// go-redis reads another form for Sentinel (redis.ParseFailoverURL):
// redis://sentinelUser:sentinelPassword@host:port/db?master_name=…&addr=host2:port&username=…&password=…,
// where the userinfo is the sentinels' credentials, not the data nodes'.
// Parse refuses it (master_name is not a parameter here, and says whose it
// is); ParseFailoverURL reads it as go-redis does, with errors that never
// quote a password, and sentinel.FromFailoverURL turns it into the
// Sentinel client's options. ParseFailoverURL's documentation sets the two
// forms side by side.
//
// # Connecting
//
// Options returns go-redis options for redis://, rediss:// and unix:// URLs
// with rediskit's retry policy: MaxRetries -1 (no command is retried) and
// DialerRetries 1 (one dial attempt; go-redis's 0 means five). A sentinel
// URL names a master to discover rather than a server: give the Config to
// the Sentinel client. A cluster URL names seed nodes: ClusterOptions
// returns options for go-redis's ClusterClient under the same policy (and
// MaxRedirects -1: see its documentation), and cluster.NewClientFromURL
// returns rediskit's cluster client. TLSConfig builds the TLS configuration (TLS 1.2 or
// newer; it reads the files at each call, so rotated certificates are
// picked up by new clients).
package redisurl
