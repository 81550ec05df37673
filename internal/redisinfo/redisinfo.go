package redisinfo

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Role is a parsed ROLE reply.
type Role struct {
	// Role is "master", "slave" or "sentinel".
	Role string
	// Offset is the replication offset: the master's own, or the offset a
	// replica has processed.
	Offset int64
	// Replicas lists, on a master, each connected replica's announced
	// address and acknowledged offset.
	Replicas []ReplicaOffset
	// MasterAddr is, on a replica, the address of its master.
	MasterAddr string
	// LinkState is, on a replica, the state of the link to the master:
	// "connect", "connecting", "sync" or "connected".
	LinkState string
}

// ReplicaOffset is one replica in a master's ROLE reply.
type ReplicaOffset struct {
	Addr   string
	Offset int64
}

// ParseRole parses the reply of ROLE.
func ParseRole(cmd *redis.Cmd) (Role, error) {
	v, err := cmd.Slice()
	if err != nil {
		return Role{}, err
	}
	if len(v) == 0 {
		return Role{}, fmt.Errorf("empty ROLE reply")
	}
	r := Role{Role: fmt.Sprint(v[0])}
	switch r.Role {
	case "master":
		if len(v) < 3 {
			return r, fmt.Errorf("short ROLE reply %v", v)
		}
		r.Offset = toInt64(v[1])
		list, _ := v[2].([]any)
		for _, item := range list {
			fields, ok := item.([]any)
			if !ok || len(fields) < 3 {
				continue
			}
			r.Replicas = append(r.Replicas, ReplicaOffset{
				Addr:   net.JoinHostPort(fmt.Sprint(fields[0]), fmt.Sprint(fields[1])),
				Offset: toInt64(fields[2]),
			})
		}
	case "slave":
		if len(v) < 5 {
			return r, fmt.Errorf("short ROLE reply %v", v)
		}
		r.MasterAddr = net.JoinHostPort(fmt.Sprint(v[1]), strconv.FormatInt(toInt64(v[2]), 10))
		r.LinkState = fmt.Sprint(v[3])
		r.Offset = toInt64(v[4])
	}
	return r, nil
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		i, _ := strconv.ParseInt(x, 10, 64)
		return i
	}
	return 0
}

// ParseInfo parses an INFO reply into its key:value fields.
func ParseInfo(s string) map[string]string {
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// ParseTable parses a SENTINEL REPLICAS / SENTINELS / MASTERS reply: a
// list of flat field/value lists (RESP2) or maps (RESP3).
func ParseTable(cmd *redis.Cmd) ([]map[string]string, error) {
	v, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	out := make([]map[string]string, 0, len(v))
	for _, item := range v {
		out = append(out, parseFields(item))
	}
	return out, nil
}

// ParseFields parses one SENTINEL MASTER reply.
func ParseFields(cmd *redis.Cmd) (map[string]string, error) {
	v, err := cmd.Result()
	if err != nil {
		return nil, err
	}
	return parseFields(v), nil
}

func parseFields(item any) map[string]string {
	m := map[string]string{}
	switch x := item.(type) {
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			m[fmt.Sprint(x[i])] = fmt.Sprint(x[i+1])
		}
	case map[any]any:
		for k, val := range x {
			m[fmt.Sprint(k)] = fmt.Sprint(val)
		}
	}
	return m
}

// Addr joins the "ip" and "port" fields of a SENTINEL table row.
func Addr(row map[string]string) string {
	return net.JoinHostPort(row["ip"], row["port"])
}

// HasFlag reports whether a comma-separated SENTINEL flags field has flag.
func HasFlag(flags, flag string) bool {
	for f := range strings.SplitSeq(flags, ",") {
		if f == flag {
			return true
		}
	}
	return false
}

// ServerVersion is a server's implementation and version, from INFO
// server. Valkey reports server_name:valkey and valkey_version (its
// redis_version is the Redis version it is compatible with, 7.2.4 for
// Valkey 8); Redis reports only redis_version.
type ServerVersion struct {
	// Name is "redis" or "valkey".
	Name string
	// Version is the implementation's own version, e.g. "8.0.1".
	Version string
	// Major, Minor and Patch are Version's numbers.
	Major, Minor, Patch int
}

// ParseServerVersion reads the server's name and version from the fields
// of INFO server.
func ParseServerVersion(info map[string]string) (ServerVersion, error) {
	v := ServerVersion{Name: "redis", Version: info["redis_version"]}
	if name := info["server_name"]; name != "" {
		v.Name = strings.ToLower(name)
	}
	if own := info[v.Name+"_version"]; own != "" {
		v.Version = own
	}
	if v.Version == "" {
		return v, fmt.Errorf("INFO server has no version field")
	}
	parts := strings.SplitN(v.Version, ".", 3)
	nums := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, fmt.Errorf("INFO server: version %q is not numeric", v.Version)
		}
		*nums[i] = n
	}
	return v, nil
}

// AtLeast reports whether the version is major.minor or newer.
func (v ServerVersion) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// String is the name and version, "Valkey 8.0.1" or "Redis 7.0.15".
func (v ServerVersion) String() string {
	if v.Name == "" {
		return "unknown server"
	}
	return strings.ToUpper(v.Name[:1]) + v.Name[1:] + " " + v.Version
}

// ReplicaLink is one replica as its master's INFO replication lists it
// (the slaveN lines).
type ReplicaLink struct {
	Addr string
	// State is the master's state for the replica: "online" once it
	// streams, "wait_bgsave" or "send_bulk" during a full sync.
	State string
	// Offset is the offset the replica last acknowledged (once a second).
	Offset int64
	// Lag is the time since the master heard from the replica, in whole
	// seconds as the server reports it; -1 when not reported.
	Lag time.Duration
}

// ParseMasterReplication reads a master's INFO replication fields (from
// ParseInfo): its role and offset, in ROLE's form, and each listed
// replica's link. Lines it cannot read are skipped; a reply without a role
// or an offset is an error.
func ParseMasterReplication(fields map[string]string) (Role, []ReplicaLink, error) {
	r := Role{Role: fields["role"]}
	if r.Role == "" {
		return r, nil, fmt.Errorf("INFO replication without a role")
	}
	if r.Role != "master" {
		return r, nil, nil
	}
	off, err := strconv.ParseInt(fields["master_repl_offset"], 10, 64)
	if err != nil {
		return r, nil, fmt.Errorf("INFO replication: master_repl_offset %q", fields["master_repl_offset"])
	}
	r.Offset = off
	n, _ := strconv.Atoi(fields["connected_slaves"])
	var links []ReplicaLink
	for i := range min(max(n, 0), maxListedReplicas) {
		kv := map[string]string{}
		for part := range strings.SplitSeq(fields["slave"+strconv.Itoa(i)], ",") {
			if k, v, ok := strings.Cut(part, "="); ok {
				kv[k] = v
			}
		}
		if kv["ip"] == "" || kv["port"] == "" {
			continue
		}
		l := ReplicaLink{Addr: net.JoinHostPort(kv["ip"], kv["port"]), State: kv["state"], Lag: -1}
		l.Offset, _ = strconv.ParseInt(kv["offset"], 10, 64)
		if s, err := strconv.ParseInt(kv["lag"], 10, 64); err == nil && s >= 0 {
			l.Lag = time.Duration(s) * time.Second
		}
		links = append(links, l)
		r.Replicas = append(r.Replicas, ReplicaOffset{Addr: l.Addr, Offset: l.Offset})
	}
	return r, links, nil
}

// maxListedReplicas bounds the slaveN lines read: a server's word on how
// many replicas it has must not size an allocation.
const maxListedReplicas = 1024
