package guard

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/zero"
)

// Defaults of ClientConfig, used where a field is zero.
const (
	// DefaultPoolSize is the number of connections, and so the number of
	// concurrent commands, a client from ClientConfig allows.
	DefaultPoolSize = 10
	// DefaultDialTimeout bounds one connection attempt (there is one).
	DefaultDialTimeout = 100 * time.Millisecond
	// DefaultReadTimeout bounds the wait for a reply on the socket.
	DefaultReadTimeout = 100 * time.Millisecond
	// DefaultWriteTimeout bounds writing a command to the socket.
	DefaultWriteTimeout = 100 * time.Millisecond
)

// poolTimeout is the client's PoolTimeout. go-redis treats 0 as "use the
// default" (ReadTimeout + 1 s), so "do not wait" is the shortest positive
// wait: a command that finds every connection busy fails at once with
// redis.ErrPoolTimeout (FailurePoolFull).
const poolTimeout = time.Nanosecond

// ClientConfig describes a go-redis client that fails fast, for a Redis that
// may be down, and the Guard around it (Open). The zero value of every
// field but Addr and KeyPrefix means its default.
//
// What a client from ClientConfig does differently from go-redis's defaults:
//
//   - no command retries (go-redis retries a failed command 3 times by
//     default, with 10 ms to 1 s backoff), and one dial attempt per
//     connection (go-redis makes 5, 100 ms apart): a dead Redis costs one
//     timeout, not several, and a command whose reply was lost is not sent
//     twice;
//   - dial, read and write timeouts of 100 ms each (go-redis: 5 s, 5 s, 5
//     s), and context deadlines honoured (ContextTimeoutEnabled), so a
//     guarded call ends at its CallLimit;
//   - a pool that does not queue: go-redis lets a command wait up to
//     PoolTimeout (default ReadTimeout + 1 s) for a free connection; here
//     the (PoolSize+1)-th concurrent command fails at once with
//     FailurePoolFull. Size PoolSize for the process's concurrent Redis
//     calls (go-redis's default is 10 per GOMAXPROCS). Pipelines share the
//     same pool (go-redis would give them a second one of 10);
//   - no extra round trips when a connection is made: no CLIENT SETINFO
//     (DisableIdentity) and no CLIENT MAINT_NOTIFICATIONS (maintenance
//     notifications disabled), since each would spend part of a 100 ms
//     budget on every new connection;
//   - no health-check round trip on idle connections: go-redis never
//     PINGs a pooled connection before using it (it only checks locally,
//     without a round trip, that the server has not closed it), which is
//     what redis-py's health_check_interval=0 buys; nothing to turn off;
//   - a key prefix that is applied: every component of the Guard builds
//     its keys with Guard.Key;
//   - replies bounded (ReplyLimits): a reply go-redis would allocate
//     without bound for, or crash on, fails its command instead.
type ClientConfig struct {
	// Addr is "host:port", or the path of a Unix socket (starting with
	// '/'). Required.
	Addr string
	// Username and Password authenticate (Username empty: the default
	// user). The password never appears in String, errors or logs.
	Username string
	Password string
	// DB is the database number.
	DB int
	// TLSConfig, when set, makes the client use TLS.
	TLSConfig *tls.Config
	// ClientName is set on every new connection (go-redis sends it with
	// HELLO and again with CLIENT SETNAME: one more round trip per new
	// connection). Default: none.
	ClientName string

	// KeyPrefix goes in front of every key (see Config.KeyPrefix).
	// Required.
	KeyPrefix string
	// PoolSize is the most connections, and so the most concurrent
	// commands, the client allows. Default DefaultPoolSize (10).
	PoolSize int
	// DialTimeout, ReadTimeout and WriteTimeout bound one connection
	// attempt, the wait for a reply and a socket write. Defaults
	// DefaultDialTimeout, DefaultReadTimeout and DefaultWriteTimeout
	// (100 ms each).
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// CallLimit bounds every guarded call in total (Guard.Call). Default
	// DefaultCallLimit (150 ms).
	CallLimit time.Duration
	// ReplyLimits bound every reply the client reads: a reply over a limit
	// (a header declaring 2^31 elements, a string longer than Redis
	// allows, a line without an end) fails its command with a
	// *ReplyLimitError naming the server and the limit, and closes the
	// connection, instead of reaching go-redis's reader, which would
	// allocate what it declares or crash the process. Zero (or negative)
	// fields take the DefaultReply… constants (a 512 MiB string,
	// 16,777,216 elements a header, 128 levels, 1 GiB a reply).
	ReplyLimits ReplyLimits
	// Logger receives the guard's warnings. Default: discarded.
	Logger *slog.Logger
}

func (s ClientConfig) withDefaults() ClientConfig {
	zero.Default(&s.PoolSize, DefaultPoolSize)
	zero.Default(&s.DialTimeout, DefaultDialTimeout)
	zero.Default(&s.ReadTimeout, DefaultReadTimeout)
	zero.Default(&s.WriteTimeout, DefaultWriteTimeout)
	zero.Default(&s.CallLimit, DefaultCallLimit)
	s.ReplyLimits = s.ReplyLimits.ForData()
	return s
}

func (s ClientConfig) validate() error {
	switch {
	case s.Addr == "":
		return configError("ClientConfig", "Addr", `is required ("host:port" or a Unix socket path)`)
	case s.PoolSize < 0:
		return configError("ClientConfig", "PoolSize", "must not be negative")
	case s.DB < 0:
		return configError("ClientConfig", "DB", "must not be negative")
	case s.DialTimeout < 0:
		return configError("ClientConfig", "DialTimeout", "must not be negative (every wait is bounded here)")
	case s.ReadTimeout < 0:
		return configError("ClientConfig", "ReadTimeout", "must not be negative (every wait is bounded here)")
	case s.WriteTimeout < 0:
		return configError("ClientConfig", "WriteTimeout", "must not be negative (every wait is bounded here)")
	case s.CallLimit < 0:
		return configError("ClientConfig", "CallLimit", "must not be negative")
	case s.Username != "" && s.Password == "":
		return configError("ClientConfig", "Username", "needs a Password")
	}
	return checkPrefix("ClientConfig", s.KeyPrefix)
}

// Options returns the go-redis options for the client ClientConfig describes,
// with the defaults filled in.
func (s ClientConfig) Options() (*redis.Options, error) {
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	network := "tcp"
	if strings.HasPrefix(s.Addr, "/") {
		network = "unix"
	}
	// The retry, deadline and connect settings are rediskit's client
	// policy (package internal/redisopt), the same guard.New checks; the
	// pool settings below are ClientConfig's own; replies are bounded by
	// ReplyLimits (respguard.GuardData).
	return respguard.GuardData(redisopt.Inner(&redis.Options{
		Network:    network,
		Addr:       s.Addr,
		Username:   s.Username,
		Password:   s.Password,
		DB:         s.DB,
		TLSConfig:  s.TLSConfig,
		ClientName: s.ClientName,

		DialTimeout:  s.DialTimeout,
		ReadTimeout:  s.ReadTimeout,
		WriteTimeout: s.WriteTimeout,

		PoolSize:         s.PoolSize,
		PoolTimeout:      poolTimeout,
		PipelinePoolSize: -1, // pipelines use the same, non-queueing pool
	}), s.ReplyLimits), nil
}

// Open creates the client ClientConfig describes and the Guard around it. The
// guard owns the client: Guard.Close closes it. Open does not connect;
// the first command does (and fails fast if Redis is down).
func Open(s ClientConfig) (*Guard, error) {
	opt, err := s.Options()
	if err != nil {
		return nil, err
	}
	s = s.withDefaults()
	client := redis.NewClient(opt)
	g, err := New(client, Config{KeyPrefix: s.KeyPrefix, CallLimit: s.CallLimit, Server: s.Addr, Logger: s.Logger})
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	g.closer = client
	return g, nil
}

// String describes the settings with the password redacted.
func (s ClientConfig) String() string {
	pw := ""
	if s.Password != "" {
		pw = "xxxxx"
	}
	return fmt.Sprintf("guard.ClientConfig{Addr: %q, Username: %q, Password: %q, DB: %d, TLS: %t, KeyPrefix: %q, "+
		"PoolSize: %d, DialTimeout: %v, ReadTimeout: %v, WriteTimeout: %v, CallLimit: %v}",
		s.Addr, s.Username, pw, s.DB, s.TLSConfig != nil, s.KeyPrefix,
		s.PoolSize, s.DialTimeout, s.ReadTimeout, s.WriteTimeout, s.CallLimit)
}

// GoString is String, so that %#v does not print the password either.
func (s ClientConfig) GoString() string { return s.String() }
