package lab

import (
	"fmt"
	"os"
	"strings"

	"github.com/rediskit/rediskit/internal/redisinfo"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=ServerKind -linecomment

// ServerKind is which server implementation a lab runs.
type ServerKind int

const (
	// ServerAuto, the zero value, takes the kind from the environment
	// variable ServerEnv ("redis" or "valkey"); Redis when it is unset.
	ServerAuto ServerKind = iota // auto
	// ServerRedis runs redis-server and redis-sentinel.
	ServerRedis // redis
	// ServerValkey runs valkey-server and valkey-sentinel (Valkey 7.2 or
	// newer; on Debian 12: the valkey-server, valkey-sentinel and
	// valkey-tools packages of bookworm-backports, or make valkey).
	ServerValkey // valkey
)

// ServerEnv is the environment variable that chooses the server of a lab
// whose Config.Server is ServerAuto: "redis" (the default) or "valkey".
// make test runs the whole suite once with each.
const ServerEnv = "REDISKIT_LAB_SERVER"

// ParseServerKind parses "redis" or "valkey" (any case); "" and "auto" are
// ServerAuto.
func ParseServerKind(s string) (ServerKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return ServerAuto, nil
	case "redis":
		return ServerRedis, nil
	case "valkey":
		return ServerValkey, nil
	}
	return ServerAuto, fmt.Errorf("lab: unknown server %q (want redis or valkey)", s)
}

// resolve turns ServerAuto into the kind ServerEnv names.
func (k ServerKind) resolve() (ServerKind, error) {
	switch k {
	case ServerRedis, ServerValkey:
		return k, nil
	case ServerAuto:
	default:
		return ServerAuto, fmt.Errorf("lab: Config.Server is %v, not ServerAuto, ServerRedis or ServerValkey", k)
	}
	env, err := ParseServerKind(os.Getenv(ServerEnv))
	if err != nil {
		return ServerAuto, fmt.Errorf("%w (from $%s)", err, ServerEnv)
	}
	if env == ServerAuto {
		return ServerRedis, nil
	}
	return env, nil
}

// binaries are the server and sentinel programs of the kind.
func (k ServerKind) binaries() (server, sentinel string) {
	if k == ServerValkey {
		return "valkey-server", "valkey-sentinel"
	}
	return "redis-server", "redis-sentinel"
}

// installHint says how to install the kind's binaries.
func (k ServerKind) installHint() string {
	if k == ServerValkey {
		return "install Valkey: apt-get install -y -t bookworm-backports valkey-server valkey-sentinel valkey-tools, or run make valkey"
	}
	return "install Redis: apt-get install -y redis-server redis-sentinel redis-tools, or run make redis"
}

// ServerVersion is what a lab's data nodes run, read from INFO server when
// the lab started.
type ServerVersion = redisinfo.ServerVersion

// ServerVersion says which server and version the lab's data nodes run
// ("Valkey 8.0.1", "Redis 7.0.15"): tests name it when a behaviour differs
// between servers.
func (l *Lab) ServerVersion() ServerVersion { return l.version }
