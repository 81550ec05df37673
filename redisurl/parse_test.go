package redisurl

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestParse(t *testing.T) {
	tests := []struct {
		url  string
		want Config
	}{
		// Standalone.
		{"redis://localhost", Config{Kind: Standalone, Addr: "localhost:6379", ReadFrom: Master}},
		{"redis://10.0.0.1:6380", Config{Kind: Standalone, Addr: "10.0.0.1:6380", ReadFrom: Master}},
		{"REDIS://Cache.Example.com", Config{Kind: Standalone, Addr: "Cache.Example.com:6379", ReadFrom: Master}},
		{"  redis://h:1/2  \n", Config{Kind: Standalone, Addr: "h:1", DB: 2, ReadFrom: Master}},
		{"redis://h/", Config{Kind: Standalone, Addr: "h:6379", ReadFrom: Master}},
		{"redis://h/0", Config{Kind: Standalone, Addr: "h:6379", ReadFrom: Master}},
		{"redis://h/15/", Config{Kind: Standalone, Addr: "h:6379", DB: 15, ReadFrom: Master}},
		{"redis://h?db=3", Config{Kind: Standalone, Addr: "h:6379", DB: 3, ReadFrom: Master}},
		{"redis://h:06379", Config{Kind: Standalone, Addr: "h:6379", ReadFrom: Master}},
		{"redis://[::1]", Config{Kind: Standalone, Addr: "[::1]:6379", ReadFrom: Master}},
		{"redis://[::1]:7000/1", Config{Kind: Standalone, Addr: "[::1]:7000", DB: 1, ReadFrom: Master}},
		{"redis://[fe80::1%25eth0]:7000", Config{Kind: Standalone, Addr: "[fe80::1%eth0]:7000", ReadFrom: Master}},
		{"redis://:s3cret@h", Config{Kind: Standalone, Addr: "h:6379", Password: "s3cret", ReadFrom: Master}},
		{"redis://app:s3cret@h", Config{Kind: Standalone, Addr: "h:6379", Username: "app", Password: "s3cret", ReadFrom: Master}},
		{"redis://app:p%40ss%3Aw%2Frd%25%23%3F@h", Config{Kind: Standalone, Addr: "h:6379", Username: "app", Password: "p@ss:w/rd%#?", ReadFrom: Master}},
		{"redis://app:pa:ss@h", Config{Kind: Standalone, Addr: "h:6379", Username: "app", Password: "pa:ss", ReadFrom: Master}},
		{"redis://app:pa@ss@h", Config{Kind: Standalone, Addr: "h:6379", Username: "app", Password: "pa@ss", ReadFrom: Master}},
		{"redis://:a+b@h", Config{Kind: Standalone, Addr: "h:6379", Password: "a+b", ReadFrom: Master}},
		{"redis://:@h", Config{Kind: Standalone, Addr: "h:6379", ReadFrom: Master}},
		{"redis://h?dialTimeout=2s&readTimeout=500ms&writeTimeout=1m30s&clientName=billing-api", Config{
			Kind: Standalone, Addr: "h:6379", ReadFrom: Master,
			DialTimeout: 2 * time.Second, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 90 * time.Second, ClientName: "billing-api"}},
		{"redis://h?&&dialTimeout=1s&", Config{Kind: Standalone, Addr: "h:6379", ReadFrom: Master, DialTimeout: time.Second}},
		{"rediss://h", Config{Kind: Standalone, TLS: true, Addr: "h:6379", ReadFrom: Master}},
		{"rediss://h?caFile=/etc/ca.pem&certFile=/etc/c.pem&keyFile=/etc/k.pem&serverName=redis.internal&insecureSkipVerify=true", Config{
			Kind: Standalone, TLS: true, Addr: "h:6379", ReadFrom: Master,
			CAFile: "/etc/ca.pem", CertFile: "/etc/c.pem", KeyFile: "/etc/k.pem", ServerName: "redis.internal", InsecureSkipVerify: true}},
		{"rediss://h?insecureSkipVerify=false", Config{Kind: Standalone, TLS: true, Addr: "h:6379", ReadFrom: Master}},
		{"rediss://h?caFile=%2Fpath%20with%20spaces%2Fca.pem", Config{Kind: Standalone, TLS: true, Addr: "h:6379", ReadFrom: Master, CAFile: "/path with spaces/ca.pem"}},

		// Unix.
		{"unix:///run/redis.sock", Config{Kind: Unix, SocketPath: "/run/redis.sock", ReadFrom: Master}},
		{"unix:///run/redis%20x.sock?db=4&clientName=x", Config{Kind: Unix, SocketPath: "/run/redis x.sock", DB: 4, ClientName: "x", ReadFrom: Master}},
		{"unix://app:s3cret@/run/redis.sock", Config{Kind: Unix, SocketPath: "/run/redis.sock", Username: "app", Password: "s3cret", ReadFrom: Master}},

		// Sentinel.
		{"redis+sentinel://10.0.0.1/mymaster", Config{Kind: Sentinel, Sentinels: []string{"10.0.0.1:26379"}, MasterName: "mymaster", ReadFrom: Master}},
		{"redis+sentinel://app:s3cret@10.0.0.1:26379,10.0.0.2:26380,10.0.0.3/mymaster/2?sentinelPassword=t0ps3cret", Config{
			Kind: Sentinel, Sentinels: []string{"10.0.0.1:26379", "10.0.0.2:26380", "10.0.0.3:26379"}, MasterName: "mymaster", DB: 2,
			Username: "app", Password: "s3cret", SentinelPassword: "t0ps3cret", ReadFrom: Master}},
		{"redis+sentinel://[::1]:26379,[::2],h/my%2Fmaster%20x/", Config{
			Kind: Sentinel, Sentinels: []string{"[::1]:26379", "[::2]:26379", "h:26379"}, MasterName: "my/master x", ReadFrom: Master}},
		{"rediss+sentinel://h/m?sentinelUser=watcher&sentinelPassword=pw&readFrom=replica&caFile=/ca.pem", Config{
			Kind: Sentinel, TLS: true, Sentinels: []string{"h:26379"}, MasterName: "m",
			SentinelUsername: "watcher", SentinelPassword: "pw", ReadFrom: Replica, CAFile: "/ca.pem"}},
		{"redis+sentinel://h/m?readFrom=replicaPreferred", Config{Kind: Sentinel, Sentinels: []string{"h:26379"}, MasterName: "m", ReadFrom: ReplicaPreferred}},
		{"redis+sentinel://h/m?readFrom=NEAREST", Config{Kind: Sentinel, Sentinels: []string{"h:26379"}, MasterName: "m", ReadFrom: Nearest}},
		{"redis+sentinel://h/m?readFrom=master", Config{Kind: Sentinel, Sentinels: []string{"h:26379"}, MasterName: "m", ReadFrom: Master}},
		{"redis+sentinel://h/m?preferReplica=true", Config{Kind: Sentinel, Sentinels: []string{"h:26379"}, MasterName: "m", ReadFrom: ReplicaPreferred}},
		{"redis+sentinel://h/m?preferReplica=false", Config{Kind: Sentinel, Sentinels: []string{"h:26379"}, MasterName: "m", ReadFrom: Master}},
		{"redis+sentinel://h/m?db=7", Config{Kind: Sentinel, Sentinels: []string{"h:26379"}, MasterName: "m", DB: 7, ReadFrom: Master}},

		// Cluster, rediskit's form.
		{"redis+cluster://10.0.0.1", Config{Kind: Cluster, Addrs: []string{"10.0.0.1:6379"}, ReadFrom: Master}},
		{"REDIS+CLUSTER://app:s3cret@10.0.0.1:7000,10.0.0.2,[::1]:7002,[fe80::1%25eth0]/", Config{
			Kind: Cluster, Addrs: []string{"10.0.0.1:7000", "10.0.0.2:6379", "[::1]:7002", "[fe80::1%eth0]:6379"},
			Username: "app", Password: "s3cret", ReadFrom: Master}},
		{"redis+cluster://h/0", Config{Kind: Cluster, Addrs: []string{"h:6379"}, ReadFrom: Master}},
		{"redis+cluster://h?db=0", Config{Kind: Cluster, Addrs: []string{"h:6379"}, ReadFrom: Master}},
		{"redis+cluster://h1,h2?readFrom=replica&dialTimeout=1s&readTimeout=2s&writeTimeout=3s&clientName=api", Config{
			Kind: Cluster, Addrs: []string{"h1:6379", "h2:6379"}, ReadFrom: Replica,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 3 * time.Second, ClientName: "api"}},
		{"rediss+cluster://:pw@h1,h2:7001?caFile=/ca.pem&certFile=/c.pem&keyFile=/k.pem&serverName=redis.internal&insecureSkipVerify=true&readFrom=nearest", Config{
			Kind: Cluster, TLS: true, Addrs: []string{"h1:6379", "h2:7001"}, Password: "pw", ReadFrom: Nearest,
			CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem", ServerName: "redis.internal", InsecureSkipVerify: true}},

		// Cluster, go-redis's form: one addr parameter or more.
		{"redis://user:pass@h1:7000?addr=h2:7001&addr=h3:7002", Config{
			Kind: Cluster, Addrs: []string{"h1:7000", "h2:7001", "h3:7002"}, Username: "user", Password: "pass", ReadFrom: Master}},
		{"redis://h1?addr=h2&readFrom=replicaPreferred", Config{Kind: Cluster, Addrs: []string{"h1:6379", "h2:6379"}, ReadFrom: ReplicaPreferred}},
		{"redis://h1/0?addr=127.0.0.1%3A7001&addr=%5B::1%5D:7002&addr=[fe80::1%25eth0]:7003", Config{
			Kind: Cluster, Addrs: []string{"h1:6379", "127.0.0.1:7001", "[::1]:7002", "[fe80::1%eth0]:7003"}, ReadFrom: Master}},
		{"rediss://h1:7000?addr=h2:7001&caFile=%2Fca.pem", Config{Kind: Cluster, TLS: true, Addrs: []string{"h1:7000", "h2:7001"}, CAFile: "/ca.pem", ReadFrom: Master}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.url)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.url, err)
			continue
		}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("Parse(%q)\n got %#v\nwant %#v", tt.url, fields(*got), fields(tt.want))
		}
		again, err := Parse(got.URL())
		if err != nil {
			t.Errorf("Parse(%q).URL() = %q does not parse: %v", tt.url, got.URL(), err)
		} else if !reflect.DeepEqual(again, got) {
			t.Errorf("round trip of %q through %q: %#v", tt.url, got.URL(), fields(*again))
		}
	}
}

// fields prints a Config with its passwords, for test failures only.
type fields Config

func TestParseErrors(t *testing.T) {
	tests := []struct {
		url, field, reason, value string
		message                   string // a part of Error() that must be there
	}{
		{"", "scheme", ReasonMissing, "", "missing scheme"},
		{"localhost:6379", "scheme", ReasonMissing, "", "missing scheme"},
		{"redis:/h", "scheme", ReasonMissing, "", "missing scheme"},
		{"re dis://h", "scheme", ReasonMissing, "", "missing scheme"},
		{"redis+sentinal://h/m", "scheme", ReasonUnknown, "redis+sentinal", `unknown scheme "redis+sentinal" (did you mean redis+sentinel://?)`},
		{"http://h", "scheme", ReasonUnknown, "http", `unknown scheme "http"`},
		{"redis://", "address", ReasonMissing, "", "missing address"},
		{"redis://h1,h2", "address", "several addresses", "h1,h2", `address "h1,h2": several addresses`},
		{"redis://h:abc", "address", "invalid port", "h:abc", `address "h:abc": invalid port`},
		{"redis://h:0", "address", "invalid port", "h:0", "invalid port"},
		{"redis://h:65536", "address", "invalid port", "h:65536", "invalid port"},
		{"redis://h:-1", "address", "invalid port", "h:-1", "invalid port"},
		{"redis://h:+1", "address", "invalid port", "h:+1", "invalid port"},
		{"redis://h:", "address", "invalid port", "h:", "invalid port"},
		{"redis://:6379", "address", "missing host", ":6379", "missing host"},
		{"redis://h%20x", "address", "invalid host", "h%20x", "invalid host"},
		{"redis://::1", "address", "IPv6 address not in brackets", "::1", "not in brackets"},
		{"redis://[::1", "address", "unclosed '['", "[::1", "unclosed"},
		{"redis://[::1]x", "address", "unexpected text after ']'", "[::1]x", "after ']'"},
		{"redis://[1.2.3.4]", "address", "invalid IPv6 address", "[1.2.3.4]", "invalid IPv6 address"},
		{"redis://[zz::1]", "address", "invalid IPv6 address", "[zz::1]", "invalid IPv6 address"},
		{"redis://[fe80::1%25]", "address", "invalid IPv6 zone", "[fe80::1%25]", "invalid IPv6 zone"},
		{"redis://h/x", "db", "not a database number", "x", `db "x": not a database number`},
		{"redis://h/-1", "db", "not a database number", "-1", "not a database number"},
		{"redis://h/2147483648", "db", "not a database number", "2147483648", "not a database number"},
		{"redis://h/1/2", "path", "too many segments", "/1/2", "too many segments"},
		{"redis://h/1?db=1", "db", "given twice", "1", "given twice"},
		{"redis://h#x", "URL", "has a fragment ('#')", "", "%23"},
		{"redis://app@h", "userinfo", "a username needs a password", "", "needs a password"},
		{"redis://app:@h", "userinfo", "a username needs a password", "", "needs a password"},
		{"redis://:p%zz@h", "userinfo", "invalid percent-encoding in the password", "", "invalid percent-encoding"},
		{"redis://u%z:p@h", "userinfo", "invalid percent-encoding in the username", "", "invalid percent-encoding"},
		{"unix://h/run/redis.sock", "address", "a unix:// URL has no host", "h", "no host"},
		{"unix://", "socket path", ReasonMissing, "", "missing socket path"},
		{"unix:///", "socket path", ReasonMissing, "", "missing socket path"},
		{"unix:///run/%zz", "socket path", "invalid percent-encoding", "/run/%zz", "invalid percent-encoding"},
		{"redis+sentinel:///m", "sentinel address", ReasonMissing, "", "missing sentinel address"},
		{"redis+sentinel://10.0.0.1:abc/m", "sentinel address", "invalid port", "10.0.0.1:abc", `sentinel address "10.0.0.1:abc": invalid port`},
		{"redis+sentinel://a,,b/m", "sentinel address", "empty address in the list", "a,,b", "empty address"},
		{"redis+sentinel://a,/m", "sentinel address", "empty address in the list", "a,", "empty address"},
		{"redis+sentinel://a:26379,a/m", "sentinel address", "listed twice", "a", "listed twice"},
		{"redis+sentinel://a", "master name", ReasonMissing, "", "missing master name"},
		{"redis+sentinel://a/", "master name", ReasonMissing, "", "missing master name"},
		{"redis+sentinel://a//1", "master name", ReasonMissing, "", "missing master name"},
		{"redis+sentinel://a/m%z", "master name", "invalid percent-encoding", "m%z", "invalid percent-encoding"},
		{"redis+sentinel://a/m/1/2", "path", "too many segments", "/m/1/2", "too many segments"},
		{"redis+sentinel://a/m/x", "db", "not a database number", "x", "not a database number"},
		{"redis+sentinel://a/m?foo=1", "parameter", ReasonUnknown, "foo", `unknown parameter "foo"`},
		{"redis+sentinel://a/m?readfrom=replica", "parameter", ReasonUnknown, "readfrom", "did you mean readFrom?"},
		{"redis://h?dial_timeout=1s", "parameter", ReasonUnknown, "dial_timeout", "did you mean dialTimeout?"},
		{"redis://h?dialTimout=1s", "parameter", ReasonUnknown, "dialTimout", "did you mean dialTimeout?"},
		{"redis://h?password=x", "parameter", ReasonUnknown, "password", "redis://user:password@host"},
		{"redis://h:26379?master_name=mymaster", "parameter", ReasonUnknown, "master_name", "go-redis's failover URL (read it with ParseFailoverURL)"},
		{"redis+sentinel://a/m?sentinelUsername=x", "parameter", ReasonUnknown, "sentinelUsername", "did you mean sentinelUser?"},
		{"redis://h?dialTimeout", "dialTimeout", "needs a value", "", "dialTimeout: needs a value"},
		{"redis://h?dialTimeout=", "dialTimeout", "needs a value", "", "needs a value"},
		{"redis://h?dialTimeout=1s&dialTimeout=2s", "dialTimeout", "given twice", "2s", "given twice"},

		// Cluster.
		{"redis+clustr://h", "scheme", ReasonUnknown, "redis+clustr", "did you mean redis+cluster://?"},
		{"redis+cluster://", "address", ReasonMissing, "", "missing address (redis+cluster://host1:6379,host2:6379)"},
		{"redis+cluster://h1,,h2", "address", "empty address in the list", "h1,,h2", "empty address"},
		{"redis+cluster://h1:6379,h2,h1", "address", "listed twice", "h1", `address "h1": listed twice`},
		{"redis+cluster://h1,h2:x", "address", "invalid port", "h2:x", "invalid port"},
		{"redis+cluster://h1,::1", "address", "IPv6 address not in brackets", "::1", "not in brackets"},
		{"redis+cluster://h/3", "db", "Redis Cluster has only database 0", "3", `db "3": Redis Cluster has only database 0`},
		{"redis+cluster://h?db=1", "db", "Redis Cluster has only database 0", "1", "only database 0"},
		{"redis+cluster://h/0/1", "path", "too many segments", "/0/1", "Redis Cluster has only database 0"},
		{"redis+cluster://h/x", "db", "not a database number", "x", "not a database number"},
		{"redis+cluster://h/m", "db", "not a database number", "m", "not a database number"},
		{"redis+cluster://h?addr=h2", "addr", "only in go-redis's cluster URL form, redis://host1?addr=host2", "", "all go in its host list"},
		{"redis+cluster://h?sentinelPassword=x", "sentinelPassword", "only for sentinel URLs", "", "sentinelPassword: only for sentinel URLs"},
		{"redis+cluster://h?preferReplica=true", "preferReplica", "only for sentinel URLs", "", "on a cluster URL write readFrom=replicaPreferred"},
		{"redis+cluster://h?caFile=/ca.pem", "caFile", "needs TLS", "", "rediss+cluster://"},
		{"redis+cluster://h?route_by_latency=true", "parameter", ReasonUnknown, "route_by_latency", `unknown parameter "route_by_latency"`},
		{"redis+cluster://h?readfrom=replica", "parameter", ReasonUnknown, "readfrom", "did you mean readFrom?"},
		{"redis://h1:7000?addr=h2:7001&addr=h1:7000", "addr", "listed twice", "h1:7000", `addr "h1:7000": listed twice`},
		{"redis://h1?addr=h1:6379", "addr", "listed twice", "h1:6379", "listed twice"},
		{"redis://h1?addr=h2:0", "addr", "invalid port", "h2:0", "invalid port"},
		{"redis://h1?addr=%zz", "addr", "invalid percent-encoding", "%zz", "invalid percent-encoding"},
		{"redis://h1?addr=", "addr", "needs a value", "", "needs a value"},
		{"redis://h1/2?addr=h2", "db", "Redis Cluster has only database 0", "2", "only database 0"},
		{"redis://h1?addr=h2&dial_timeout=1s", "parameter", ReasonUnknown, "dial_timeout", "did you mean dialTimeout?"},
		{"redis://h1?addr=h2&preferReplica=true", "preferReplica", "only for sentinel URLs", "", "readFrom=replicaPreferred"},
		{"redis+sentinel://h/m?addr=h2", "addr", "only in go-redis's cluster URL form, redis://host1?addr=host2", "", "ParseFailoverURL"},
		{"unix:///s?addr=h2", "addr", "only in go-redis's cluster URL form, redis://host1?addr=host2", "", "names one server"},
		{"redis://h?readFrom=replica", "readFrom", "only for sentinel and cluster URLs", "", "redis+cluster://"},
	}
	for _, tt := range tests {
		c, err := Parse(tt.url)
		if err == nil {
			t.Errorf("Parse(%q) = %s, want an error", tt.url, c)
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q): %v is %T, not *Error", tt.url, err, err)
			continue
		}
		if e.Field != tt.field || e.Reason != tt.reason || e.Value != tt.value {
			t.Errorf("Parse(%q): Field %q Reason %q Value %q, want %q %q %q (%v)", tt.url, e.Field, e.Reason, e.Value, tt.field, tt.reason, tt.value, err)
		}
		if !strings.Contains(err.Error(), tt.message) {
			t.Errorf("Parse(%q): %q does not say %q", tt.url, err, tt.message)
		}
		if !strings.HasPrefix(err.Error(), "redisurl: ") {
			t.Errorf("Parse(%q): %q does not start with the package name", tt.url, err)
		}
	}
}

// TestParameters covers every query parameter: values it accepts, values
// it refuses, and the URLs it is not allowed in. (TestParse checks the
// values each one sets.)
func TestParameters(t *testing.T) {
	sentinel := "redis+sentinel://h/m?"
	tlsSentinel := "rediss+sentinel://h/m?"
	cluster := "redis+cluster://h1,h2?"
	tlsCluster := "rediss+cluster://h1,h2?"
	type bad struct{ url, field string }
	tests := []struct {
		param string
		ok    []string
		bad   []bad
	}{
		{"sentinelUser", []string{sentinel + "sentinelUser=w&sentinelPassword=p"}, []bad{
			{"redis://h?sentinelUser=w&sentinelPassword=p", "sentinelUser"},
			{"unix:///s?sentinelUser=w", "sentinelUser"},
			{cluster + "sentinelUser=w&sentinelPassword=p", "sentinelUser"},
			{sentinel + "sentinelUser=a%zz&sentinelPassword=p", "sentinelUser"},
			{sentinel + "sentinelUser=w", "sentinelPassword"}, // a user needs a password
		}},
		{"sentinelPassword", []string{sentinel + "sentinelPassword=p", tlsSentinel + "sentinelPassword=p%26q"}, []bad{
			{"redis://h?sentinelPassword=p", "sentinelPassword"},
			{"rediss://h?sentinelPassword=p", "sentinelPassword"},
			{tlsCluster + "sentinelPassword=p", "sentinelPassword"},
			{sentinel + "sentinelPassword=%zz", "sentinelPassword"},
			{sentinel + "sentinelPassword=", "sentinelPassword"},
		}},
		{"readFrom", []string{sentinel + "readFrom=master", sentinel + "readFrom=replica", sentinel + "readFrom=replicaPreferred", sentinel + "readFrom=nearest",
			cluster + "readFrom=master", cluster + "readFrom=replica", cluster + "readFrom=replicaPreferred", cluster + "readFrom=nearest", "redis://h?addr=h2&readFrom=replica"}, []bad{
			{sentinel + "readFrom=fastest", "readFrom"},
			{cluster + "readFrom=fastest", "readFrom"},
			{"redis://h?readFrom=replica", "readFrom"},
			{"unix:///s?readFrom=master", "readFrom"},
		}},
		{"preferReplica", []string{sentinel + "preferReplica=true", sentinel + "preferReplica=FALSE"}, []bad{
			{sentinel + "preferReplica=yes", "preferReplica"},
			{sentinel + "preferReplica=1", "preferReplica"},
			{sentinel + "preferReplica=true&readFrom=replicaPreferred", "preferReplica"},
			{sentinel + "readFrom=master&preferReplica=false", "preferReplica"},
			{"redis://h?preferReplica=true", "preferReplica"},
			{cluster + "preferReplica=true", "preferReplica"},
		}},
		{"dialTimeout", []string{"redis://h?dialTimeout=250ms", "unix:///s?dialTimeout=1h", sentinel + "dialTimeout=1.5s", cluster + "dialTimeout=2s"}, []bad{
			{"redis://h?dialTimeout=5", "dialTimeout"},
			{"redis://h?dialTimeout=0s", "dialTimeout"},
			{"redis://h?dialTimeout=-1s", "dialTimeout"},
			{"redis://h?dialTimeout=soon", "dialTimeout"},
		}},
		{"readTimeout", []string{"redis://h?readTimeout=3s", sentinel + "readTimeout=100us", cluster + "readTimeout=1s"}, []bad{
			{cluster + "readTimeout=1", "readTimeout"},
			{"redis://h?readTimeout=-1", "readTimeout"},
			{"redis://h?readTimeout=0", "readTimeout"},
		}},
		{"writeTimeout", []string{"redis://h?writeTimeout=3s", "unix:///s?writeTimeout=2m", cluster + "writeTimeout=1s"}, []bad{
			{"redis://h?writeTimeout=3", "writeTimeout"},
			{"redis://h?writeTimeout=-2s", "writeTimeout"},
		}},
		{"clientName", []string{"redis://h?clientName=billing-api", "redis://h?clientName=a%2Fb%21", sentinel + "clientName=x", cluster + "clientName=x"}, []bad{
			{cluster + "clientName=a%20b", "clientName"},
			{"redis://h?clientName=a%20b", "clientName"},
			{"redis://h?clientName=a%0Ab", "clientName"},
			{"redis://h?clientName=%C3%A9", "clientName"},
		}},
		{"caFile", []string{"rediss://h?caFile=/ca.pem", tlsSentinel + "caFile=/ca.pem", tlsCluster + "caFile=/ca.pem", "rediss://h?addr=h2&caFile=/ca.pem"}, []bad{
			{cluster + "caFile=/ca.pem", "caFile"},
			{"redis://h?addr=h2&caFile=/ca.pem", "caFile"},
			{"redis://h?caFile=/ca.pem", "caFile"},
			{sentinel + "caFile=/ca.pem", "caFile"},
			{"unix:///s?caFile=/ca.pem", "caFile"},
		}},
		{"certFile", []string{"rediss://h?certFile=/c.pem&keyFile=/k.pem", tlsCluster + "certFile=/c.pem&keyFile=/k.pem"}, []bad{
			{tlsCluster + "certFile=/c.pem", "keyFile"},
			{"rediss://h?certFile=/c.pem", "keyFile"},
			{"redis://h?certFile=/c.pem&keyFile=/k.pem", "certFile"},
		}},
		{"keyFile", []string{tlsSentinel + "keyFile=/k.pem&certFile=/c.pem"}, []bad{
			{"rediss://h?keyFile=/k.pem", "certFile"},
			{sentinel + "keyFile=/k.pem&certFile=/c.pem", "certFile"},
		}},
		{"serverName", []string{"rediss://10.0.0.1?serverName=redis.internal", tlsCluster + "serverName=redis.internal"}, []bad{
			{cluster + "serverName=redis.internal", "serverName"},
			{"redis://h?serverName=redis.internal", "serverName"},
		}},
		{"insecureSkipVerify", []string{"rediss://h?insecureSkipVerify=true", "rediss://h?insecureSkipVerify=false", tlsCluster + "insecureSkipVerify=true"}, []bad{
			{cluster + "insecureSkipVerify=true", "insecureSkipVerify"},
			{"rediss://h?insecureSkipVerify=yes", "insecureSkipVerify"},
			{"rediss://h?insecureSkipVerify=1", "insecureSkipVerify"},
			{"redis://h?insecureSkipVerify=true", "insecureSkipVerify"},
			{"redis://h?insecureSkipVerify=false", "insecureSkipVerify"},
		}},
		{"db", []string{"redis://h?db=0", "redis://h?db=15", "unix:///s?db=2", sentinel + "db=3", cluster + "db=0"}, []bad{
			{cluster + "db=1", "db"},
			{"redis+cluster://h/0?db=0", "db"},
			{"redis://h?db=x", "db"},
			{"redis://h?db=%31", "db"},
			{"redis://h/1?db=2", "db"},
			{"redis+sentinel://h/m/1?db=1", "db"},
		}},
		{"addr", []string{"redis://h?addr=h2", "redis://h?addr=h2:7000&addr=h3&addr=%5B::1%5D", "rediss://h?addr=h2&caFile=/ca.pem"}, []bad{
			{"redis://h?addr=h", "addr"},
			{"redis://h?addr=h2:abc", "addr"},
			{"redis://h?addr=h2,h3", "addr"},
			{cluster + "addr=h3", "addr"},
			{sentinel + "addr=h2", "addr"},
			{"unix:///s?addr=h2", "addr"},
		}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.param] = true
		for _, u := range tt.ok {
			c, err := Parse(u)
			if err != nil {
				t.Errorf("%s: Parse(%q): %v", tt.param, u, err)
				continue
			}
			if back, err := Parse(c.URL()); err != nil || !reflect.DeepEqual(back, c) {
				t.Errorf("%s: %q does not survive URL(): %q, %v", tt.param, u, c.URL(), err)
			}
		}
		for _, b := range tt.bad {
			c, err := Parse(b.url)
			var e *Error
			switch {
			case err == nil:
				t.Errorf("%s: Parse(%q) = %s, want an error", tt.param, b.url, c)
			case !errors.As(err, &e):
				t.Errorf("%s: Parse(%q): %T", tt.param, b.url, err)
			case e.Field != b.field || !strings.Contains(err.Error(), b.field):
				t.Errorf("%s: Parse(%q): %v (Field %q), want it about %s", tt.param, b.url, err, e.Field, b.field)
			}
		}
	}
	for _, name := range paramNames() {
		if !seen[name] {
			t.Errorf("parameter %s is not tested", name)
		}
	}
	// A URL with addr parameters is a Cluster; without one it stays Standalone.
	if c, err := Parse("redis://h?addr=h2"); err != nil || c.Kind != Cluster {
		t.Errorf("redis://h?addr=h2: %v, %v; want a Cluster", c, err)
	}
	if c, err := Parse("redis://h:7000"); err != nil || c.Kind != Standalone || c.Addrs != nil {
		t.Errorf("redis://h:7000: %#v, %v; want Standalone", c, err)
	}
	// preferReplica=true is readFrom=replicaPreferred.
	a, _ := Parse(sentinel + "preferReplica=true")
	b, _ := Parse(sentinel + "readFrom=replicaPreferred")
	if a == nil || b == nil || !reflect.DeepEqual(a, b) {
		t.Errorf("preferReplica=true %v and readFrom=replicaPreferred %v differ", a, b)
	}
}

func TestParseReadFrom(t *testing.T) {
	for in, want := range map[string]ReadFrom{"master": Master, "Replica": Replica, "REPLICAPREFERRED": ReplicaPreferred, "nearest": Nearest} {
		if got, err := ParseReadFrom(in); err != nil || got != want {
			t.Errorf("ParseReadFrom(%q) = %q, %v", in, got, err)
		}
	}
	var e *Error
	if _, err := ParseReadFrom("fastest"); !errors.As(err, &e) || e.Field != "readFrom" || e.Value != "fastest" {
		t.Errorf("ParseReadFrom(fastest): %v", err)
	}
}

// TestFormat checks URL and Redacted on Configs built by hand, including
// ones Parse cannot produce (zero Kind, zero ReadFrom).
func TestFormat(t *testing.T) {
	tests := []struct {
		c             Config
		url, redacted string
	}{
		{Config{Addr: "h:6379"}, "redis://h:6379", "redis://h:6379"},
		{Config{Kind: Standalone, TLS: true, Addr: "[::1]:6379", DB: 3, Username: "a b", Password: "p@ss/w:rd"},
			"rediss://a%20b:p%40ss%2Fw%3Ard@[::1]:6379/3", "rediss://a%20b:xxxxx@[::1]:6379/3"},
		{Config{Kind: Unix, SocketPath: "/run/redis x.sock", DB: 2, Password: "pw"},
			"unix://:pw@/run/redis%20x.sock?db=2", "unix://:xxxxx@/run/redis%20x.sock?db=2"},
		{Config{Kind: Sentinel, Sentinels: []string{"a:26379", "[fe80::1%eth0]:26379"}, MasterName: "my/master", DB: 1,
			SentinelUsername: "w", SentinelPassword: "a&b=c+d", ReadFrom: Nearest, DialTimeout: 1500 * time.Millisecond,
			ClientName: "x", TLS: true, CAFile: "/ca.pem", InsecureSkipVerify: true},
			"rediss+sentinel://a:26379,[fe80::1%25eth0]:26379/my%2Fmaster/1?sentinelUser=w&sentinelPassword=a%26b%3Dc%2Bd&readFrom=nearest&dialTimeout=1.5s&clientName=x&caFile=%2Fca.pem&insecureSkipVerify=true",
			"rediss+sentinel://a:26379,[fe80::1%25eth0]:26379/my%2Fmaster/1?sentinelUser=w&sentinelPassword=xxxxx&readFrom=nearest&dialTimeout=1.5s&clientName=x&caFile=%2Fca.pem&insecureSkipVerify=true"},
		{Config{Kind: Cluster, Addrs: []string{"a:6379", "[fe80::1%eth0]:7000"}, Username: "u", Password: "p&w", ReadFrom: Replica, WriteTimeout: time.Second},
			"redis+cluster://u:p%26w@a:6379,[fe80::1%25eth0]:7000?readFrom=replica&writeTimeout=1s",
			"redis+cluster://u:xxxxx@a:6379,[fe80::1%25eth0]:7000?readFrom=replica&writeTimeout=1s"},
		{Config{Kind: Cluster, TLS: true, Addrs: []string{"h:6379"}, CAFile: "/ca.pem"},
			"rediss+cluster://h:6379?caFile=%2Fca.pem", "rediss+cluster://h:6379?caFile=%2Fca.pem"},
	}
	// go-redis's cluster form is written in rediskit's, which reads back the same.
	goRedis, err := Parse("redis://app:pw@h1:7000?addr=h2:7001&addr=%5B::1%5D:7002&clientName=x")
	if err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		c             Config
		url, redacted string
	}{*goRedis, "redis+cluster://app:pw@h1:7000,h2:7001,[::1]:7002?clientName=x", "redis+cluster://app:xxxxx@h1:7000,h2:7001,[::1]:7002?clientName=x"})
	for _, tt := range tests {
		if got := tt.c.URL(); got != tt.url {
			t.Errorf("URL() = %q\nwant %q", got, tt.url)
		}
		if got := tt.c.Redacted(); got != tt.redacted {
			t.Errorf("Redacted() = %q\nwant %q", got, tt.redacted)
		}
		if got := tt.c.String(); got != tt.redacted {
			t.Errorf("String() = %q, want Redacted()", got)
		}
		back, err := Parse(tt.c.URL())
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.c.URL(), err)
			continue
		}
		if back.URL() != tt.url {
			t.Errorf("Parse(URL()).URL() = %q, want %q", back.URL(), tt.url)
		}
	}
}
