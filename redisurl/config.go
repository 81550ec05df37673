package redisurl

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
)

// Kind is what a URL connects to.
type Kind string

// The kinds, by scheme.
const (
	Standalone Kind = "standalone" // redis://, rediss://
	Unix       Kind = "unix"       // unix://
	Sentinel   Kind = "sentinel"   // redis+sentinel://, rediss+sentinel://
	// Cluster is a Redis Cluster, named by seed nodes: redis+cluster://,
	// rediss+cluster://, or go-redis's redis://host1?addr=host2 form.
	Cluster Kind = "cluster"
)

// ReadFrom says where a Sentinel client sends read-only commands, and
// where a cluster client sends them within each shard.
type ReadFrom string

// The ReadFrom values, as written in the readFrom parameter.
const (
	// Master sends every command to the master (the default).
	Master ReadFrom = "master"
	// Replica sends read-only commands to a replica, and fails them when
	// no replica is healthy.
	Replica ReadFrom = "replica"
	// ReplicaPreferred sends read-only commands to a replica, and to the
	// master when no replica is healthy (preferReplica=true).
	ReplicaPreferred ReadFrom = "replicaPreferred"
	// Nearest sends read-only commands to the node (master or replica)
	// with the lowest round-trip time.
	Nearest ReadFrom = "nearest"
)

// ParseReadFrom reads a readFrom value, ignoring case.
func ParseReadFrom(s string) (ReadFrom, error) {
	for _, r := range []ReadFrom{Master, Replica, ReplicaPreferred, Nearest} {
		if strings.EqualFold(s, string(r)) {
			return r, nil
		}
	}
	return "", &Error{Field: "readFrom", Value: s, Reason: "unknown value", Hint: "want master, replica, replicaPreferred or nearest"}
}

// Config is a parsed connection URL. Parse fills it; URL formats it back
// (Parse(c.URL()) gives an equal Config), and Redacted, String, GoString
// and LogValue format it with every password replaced by "xxxxx".
//
// Durations left zero mean go-redis's defaults. Passwords are tagged
// json:"-".
type Config struct {
	// Kind is Standalone, Unix, Sentinel or Cluster (a zero Kind formats
	// and connects as Standalone).
	Kind Kind
	// TLS is set by rediss://, rediss+sentinel:// and rediss+cluster://:
	// TLS to the server, to the sentinels and to every data node, or to
	// every cluster node.
	TLS bool

	// Addr is the server's host:port (Standalone), always with a port
	// (default 6379). IPv6 addresses are in brackets.
	Addr string
	// SocketPath is the Unix socket's absolute path (Unix).
	SocketPath string
	// Sentinels are the sentinels' host:port addresses in URL order
	// (Sentinel), always with a port (default 26379).
	Sentinels []string
	// MasterName is the name the sentinels monitor the master under.
	MasterName string
	// Addrs are a cluster's seed nodes (Cluster), host:port in URL order,
	// always with a port (default 6379), without repeats; IPv6 addresses
	// are in brackets. Any node of the cluster will do as a seed: the
	// client learns the others from it.
	Addrs []string
	// DB is the database number (the path /db, /masterName/db, or ?db=).
	// Always 0 for a Cluster: Redis Cluster has only database 0.
	DB int

	// Username and Password authenticate to the data nodes (the URL's
	// userinfo). A username needs a password.
	Username string
	Password string `json:"-"`
	// SentinelUsername and SentinelPassword authenticate to the sentinels
	// themselves (sentinelUser, sentinelPassword), separately from the
	// data nodes.
	SentinelUsername string
	SentinelPassword string `json:"-"`

	// ReadFrom says where read-only commands go (readFrom, or
	// preferReplica=true for ReplicaPreferred). Parse sets Master when the
	// URL does not say; a zero ReadFrom formats as Master.
	ReadFrom ReadFrom

	// DialTimeout, ReadTimeout and WriteTimeout (dialTimeout, readTimeout,
	// writeTimeout) are positive when set; zero means go-redis's default.
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// ClientName is sent with CLIENT SETNAME on every connection
	// (clientName).
	ClientName string

	// CAFile is a PEM file of certificates to trust instead of the
	// system's (caFile). CertFile and KeyFile are a client certificate
	// and its key (certFile, keyFile), for servers that require one.
	CAFile   string
	CertFile string
	KeyFile  string
	// ServerName is the name to verify the server's certificate against
	// (serverName). Default: the host being dialled.
	ServerName string
	// InsecureSkipVerify turns off certificate verification. It is only
	// ever set by an explicit insecureSkipVerify=true.
	InsecureSkipVerify bool
}

const redactedPassword = "xxxxx"

func (c Config) kind() Kind {
	if c.Kind == "" {
		return Standalone
	}
	return c.Kind
}

func (c Config) scheme() string {
	switch {
	case c.kind() == Unix:
		return "unix"
	case c.kind() == Sentinel && c.TLS:
		return "rediss+sentinel"
	case c.kind() == Sentinel:
		return "redis+sentinel"
	case c.kind() == Cluster && c.TLS:
		return "rediss+cluster"
	case c.kind() == Cluster:
		return "redis+cluster"
	case c.TLS:
		return "rediss"
	}
	return "redis"
}

// URL formats the Config as a URL, with its passwords. Parse(c.URL())
// returns a Config equal to c for every c that Parse returned. Keep it out
// of logs; use Redacted.
//
// A Cluster is always written redis+cluster:// (rediss+cluster://), even
// when it was parsed from go-redis's redis://host1?addr=host2 form: in that
// form a cluster of one seed would read back as a single server, and the
// seeds would be split between the host and the query; the host list
// holds any number of seeds, in order, the way a sentinel URL lists its
// sentinels.
func (c Config) URL() string { return c.format(false) }

// Redacted is URL with every password replaced by "xxxxx": safe to log and
// print. It does not depend on the passwords, only on whether they are set.
func (c Config) Redacted() string { return c.format(true) }

// String is Redacted. (Config's formatting methods have value receivers so
// that a Config printed by value is redacted too.)
func (c Config) String() string { return c.Redacted() }

// GoString keeps %#v from printing the passwords.
func (c Config) GoString() string { return "redisurl.Config(" + strconv.Quote(c.Redacted()) + ")" }

// LogValue makes slog log the redacted URL.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.Redacted()) }

func (c Config) format(redact bool) string {
	secret := func(s string) string {
		if redact && s != "" {
			return redactedPassword
		}
		return s
	}
	var b strings.Builder
	b.WriteString(c.scheme())
	b.WriteString("://")
	if c.Username != "" || c.Password != "" {
		b.WriteString(escape(c.Username, false))
		if c.Password != "" {
			b.WriteString(":")
			b.WriteString(escape(secret(c.Password), false))
		}
		b.WriteString("@")
	}
	var q query
	switch c.kind() {
	case Unix:
		b.WriteString(escape(c.SocketPath, true))
		if c.DB != 0 {
			q.add("db", strconv.Itoa(c.DB))
		}
	case Sentinel:
		writeAddrs(&b, c.Sentinels)
		b.WriteString("/")
		b.WriteString(escape(c.MasterName, false))
		if c.DB != 0 {
			b.WriteString("/" + strconv.Itoa(c.DB))
		}
	case Cluster:
		writeAddrs(&b, c.Addrs)
		if c.DB != 0 { // Parse refuses it, and says why
			b.WriteString("/" + strconv.Itoa(c.DB))
		}
	default:
		b.WriteString(formatAddr(c.Addr))
		if c.DB != 0 {
			b.WriteString("/" + strconv.Itoa(c.DB))
		}
	}
	q.add("sentinelUser", c.SentinelUsername)
	q.add("sentinelPassword", secret(c.SentinelPassword))
	if c.ReadFrom != "" && c.ReadFrom != Master {
		q.add("readFrom", string(c.ReadFrom))
	}
	q.addDuration("dialTimeout", c.DialTimeout)
	q.addDuration("readTimeout", c.ReadTimeout)
	q.addDuration("writeTimeout", c.WriteTimeout)
	q.add("clientName", c.ClientName)
	q.add("caFile", c.CAFile)
	q.add("certFile", c.CertFile)
	q.add("keyFile", c.KeyFile)
	q.add("serverName", c.ServerName)
	if c.InsecureSkipVerify {
		q.add("insecureSkipVerify", "true")
	}
	b.WriteString(q.String())
	return b.String()
}

// query builds a query string in a fixed order, skipping empty values.
type query struct{ b strings.Builder }

func (q *query) add(name, value string) {
	if value == "" {
		return
	}
	if q.b.Len() == 0 {
		q.b.WriteString("?")
	} else {
		q.b.WriteString("&")
	}
	q.b.WriteString(name)
	q.b.WriteString("=")
	q.b.WriteString(escape(value, false))
}

func (q *query) addDuration(name string, d time.Duration) {
	if d != 0 {
		q.add(name, d.String())
	}
}

func (q *query) String() string { return q.b.String() }

// escape percent-encodes every byte but the unreserved characters of RFC
// 3986 (and '/' in paths), so any text survives Parse unchanged: '+' is
// written %2B, a space %20.
func escape(s string, path bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || (path && c == '/') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// writeAddrs writes a comma-separated host list.
func writeAddrs(b *strings.Builder, addrs []string) {
	for i, a := range addrs {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(formatAddr(a))
	}
}

// formatAddr writes an address for a URL: an IPv6 zone's '%' as %25.
func formatAddr(addr string) string {
	return strings.ReplaceAll(addr, "%", "%25")
}

// TLSConfig returns the TLS configuration the URL asks for, or nil, nil
// without TLS: TLS 1.2 or newer, the CA file's certificates as roots when
// caFile is set, the client certificate when certFile and keyFile are, the
// server name when serverName is (otherwise the dialled host is verified,
// as crypto/tls does), and InsecureSkipVerify only when the URL said so.
// Each call reads the files again.
func (c *Config) TLSConfig() (*tls.Config, error) {
	if !c.TLS {
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // only when the URL explicitly asks
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, &Error{Field: "caFile", Value: c.CAFile, Reason: "cannot be read", Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &Error{Field: "caFile", Value: c.CAFile, Reason: "holds no PEM certificate"}
		}
		cfg.RootCAs = pool
	} else if !c.InsecureSkipVerify {
		// Load the system's roots now rather than in the first handshake:
		// parsing a few hundred certificates takes 0.1-1.4 s on a busy
		// host, and inside the handshake it would count against the
		// connection's timeout, failing a healthy server with a deadline.
		if pool, err := x509.SystemCertPool(); err == nil {
			cfg.RootCAs = pool
		}
	}
	if c.CertFile != "" || c.KeyFile != "" {
		if c.CertFile == "" || c.KeyFile == "" {
			return nil, &Error{Field: "certFile", Reason: "certFile and keyFile go together"}
		}
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, &Error{Field: "certFile", Value: c.CertFile, Reason: "cannot load the key pair", Err: err}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Options returns go-redis options for a redis://, rediss:// or unix://
// URL: address, credentials, database, client name, timeouts and TLS,
// under rediskit's client policy (package internal/redisopt, the one
// guard.New and multidb.NewClient check): no hidden retries (MaxRetries
// -1: no command is retried; DialerRetries 1: one dial attempt, where
// go-redis's 0 would mean five), context deadlines honoured on the socket
// (ContextTimeoutEnabled), and no CLIENT SETINFO or maintenance
// notifications on connect. So guard.New(redis.NewClient(o)) accepts the
// client. Its Dialer bounds every reply (internal/respguard, with the
// data path's defaults: a 512 MiB string, 16,777,216 elements a header,
// 128 levels, 1 GiB a reply, as guard.ReplyLimits describes): a reply no
// Redis sends fails its command with a *guard.ReplyLimitError naming the
// server and closes the connection, instead of making go-redis allocate
// what it declares or crash the process. It dials as go-redis would
// (DialTimeout, TLS with TLSConfig); replace the Dialer to drop the bound. A sentinel URL names a master to discover rather than a server,
// so Options returns an error for it: the Sentinel client reads the Config
// itself. So does a cluster URL: use ClusterOptions, or give the Config's
// URL to cluster.NewClientFromURL.
func (c *Config) Options() (*redis.Options, error) {
	o := redisopt.Inner(&redis.Options{
		Username:     c.Username,
		Password:     c.Password,
		DB:           c.DB,
		ClientName:   c.ClientName,
		DialTimeout:  c.DialTimeout,
		ReadTimeout:  c.ReadTimeout,
		WriteTimeout: c.WriteTimeout,
	})
	switch c.kind() {
	case Standalone:
		if c.Addr == "" {
			return nil, &Error{Field: "address", Reason: ReasonMissing}
		}
		o.Network, o.Addr = "tcp", c.Addr
	case Unix:
		if c.SocketPath == "" {
			return nil, &Error{Field: "socket path", Reason: ReasonMissing}
		}
		o.Network, o.Addr = "unix", c.SocketPath
	case Sentinel:
		return nil, &Error{Field: "scheme", Value: c.scheme(), Reason: "Options needs a single server",
			Hint: "a sentinel URL names a master to discover: give the Config to the Sentinel client"}
	case Cluster:
		return nil, &Error{Field: "scheme", Value: c.scheme(), Reason: "Options needs a single server",
			Hint: "a cluster URL names seed nodes: use ClusterOptions for go-redis's ClusterClient, or cluster.NewClientFromURL"}
	default:
		return nil, &Error{Field: "Kind", Value: string(c.Kind), Reason: ReasonUnknown}
	}
	tlsConfig, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	o.TLSConfig = tlsConfig
	return respguard.GuardData(o, respguard.Limits{}), nil
}

// ClusterOptions returns go-redis options for a cluster URL
// (redis+cluster://, rediss+cluster:// or go-redis's
// redis://host1?addr=host2 form), for go-redis's own ClusterClient: the
// seeds, credentials, client name, timeouts and TLS (TLSConfig, so caFile
// and the rest apply), under rediskit's client policy as in Options: no
// command re-sent by go-redis (MaxRetries -1), one dial attempt
// (DialerRetries 1), context deadlines honoured on the socket, no CLIENT
// SETINFO or maintenance notifications; every node's replies bounded by
// the Dialer, as in Options.
//
// MaxRedirects is -1 too: go-redis's ClusterClient counts redirects and
// retries in the one MaxRedirects, and re-sends a command after a network
// error within it (a write that may already have run). With -1 a MOVED or
// ASK is returned to the caller, and the MOVED makes the client reload the
// slot map, so the caller's next attempt goes to the right node. Set
// MaxRedirects yourself to have go-redis follow redirects, knowing that it
// then re-sends on network errors too; cluster.Client follows redirects
// without re-sending what may have run.
//
// readFrom maps to go-redis's routing: master to neither ReadOnly nor
// RouteByLatency, replicaPreferred to ReadOnly (go-redis falls back to the
// master when a shard has no usable replica), nearest to RouteByLatency.
// replica is refused: go-redis always falls back to the master, and cannot
// fail a read when no replica is healthy. A URL that is not a cluster URL
// gets an *Error.
func (c *Config) ClusterOptions() (*redis.ClusterOptions, error) {
	if c.kind() != Cluster {
		return nil, &Error{Field: "scheme", Value: c.scheme(), Reason: "ClusterOptions needs a cluster URL",
			Hint: "redis+cluster://host1,host2, or redis://host1?addr=host2; use Options for a single server"}
	}
	if len(c.Addrs) == 0 {
		return nil, &Error{Field: "address", Reason: ReasonMissing}
	}
	if c.DB != 0 {
		return nil, &Error{Field: "db", Value: strconv.Itoa(c.DB), Reason: "Redis Cluster has only database 0"}
	}
	o := redisopt.InnerCluster(&redis.ClusterOptions{
		Addrs:        append([]string(nil), c.Addrs...),
		Username:     c.Username,
		Password:     c.Password,
		ClientName:   c.ClientName,
		DialTimeout:  c.DialTimeout,
		ReadTimeout:  c.ReadTimeout,
		WriteTimeout: c.WriteTimeout,
		MaxRedirects: -1,
	})
	switch c.ReadFrom {
	case "", Master:
	case ReplicaPreferred:
		o.ReadOnly = true
	case Nearest:
		o.RouteByLatency = true
	case Replica:
		return nil, &Error{Field: "readFrom", Value: string(Replica), Reason: "go-redis's ClusterClient cannot read from replicas only",
			Hint: "it falls back to the master when a shard has no usable replica: write readFrom=replicaPreferred to accept that"}
	default:
		return nil, &Error{Field: "readFrom", Value: string(c.ReadFrom), Reason: ReasonUnknown}
	}
	tlsConfig, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	o.TLSConfig = tlsConfig
	// Every node's replies bounded, as Options' are.
	node := respguard.GuardData(&redis.Options{DialTimeout: o.DialTimeout, TLSConfig: o.TLSConfig}, respguard.Limits{})
	o.Dialer = node.Dialer
	return o, nil
}
