package redisurl

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/lab"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect parses u, builds go-redis options and returns a client; the test
// closes it.
func connect(t *testing.T, u string) *redis.Client {
	t.Helper()
	c, err := Parse(u)
	if err != nil {
		t.Fatalf("Parse(%q): %v", u, err)
	}
	opt, err := c.Options()
	if err != nil {
		t.Fatalf("Options(%s): %v", c, err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestOptionsAgainstRedis(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Config{Password: "data-pw"})
	addr := l.Node(0).Addr()

	c, err := Parse(l.URL())
	if err != nil {
		t.Fatalf("Parse(lab URL %s): %v", l.Redacted(), err)
	}
	want := Config{Kind: Standalone, Addr: addr, Password: "data-pw", ReadFrom: Master}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("Parse(lab URL) = %#v, want %#v", fields(*c), fields(want))
	}
	opt, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	if opt.MaxRetries != -1 || opt.DialerRetries != 1 || opt.Network != "tcp" || opt.Addr != addr || opt.TLSConfig != nil {
		t.Errorf("Options() = %+v: want no retries, one dial, tcp to %s, no TLS", opt, addr)
	}
	// rediskit's client policy, the one guard.New and multidb check: a
	// client built from the options passes.
	if !opt.ContextTimeoutEnabled || !opt.DisableIdentity {
		t.Errorf("Options() = %+v: want context deadlines honoured and no CLIENT SETINFO", opt)
	}
	if vs := redisopt.Check(connect(t, l.URL()).Options()); len(vs) > 0 {
		t.Errorf("a client from Options() departs from the client policy: %s", vs)
	}

	rdb := connect(t, "redis://:data-pw@"+addr+"/3?clientName=rediskit-test&dialTimeout=1s&readTimeout=2s&writeTimeout=3s")
	info, err := rdb.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.DB != 3 || info.Name != "rediskit-test" {
		t.Errorf("CLIENT INFO: db %d, name %q; want db 3, name rediskit-test", info.DB, info.Name)
	}
	if o := rdb.Options(); o.DialTimeout != time.Second || o.ReadTimeout != 2*time.Second || o.WriteTimeout != 3*time.Second {
		t.Errorf("timeouts %v %v %v", o.DialTimeout, o.ReadTimeout, o.WriteTimeout)
	}

	err = connect(t, "redis://:wrong-pw@"+addr).Ping(ctx).Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("wrong password: %v, want WRONGPASS without the password", err)
	}
}

func TestOptionsACLUser(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Config{Username: "app", Password: "app-pw"})
	c, err := Parse(l.URL())
	if err != nil || c.Username != "app" || c.Password != "app-pw" {
		t.Fatalf("Parse(lab URL) = %v, %v", c, err)
	}
	rdb := connect(t, l.URL())
	if who, err := rdb.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != "app" {
		t.Errorf("ACL WHOAMI = %q, %v", who, err)
	}
}

func TestOptionsUnixSocket(t *testing.T) {
	ctx := testContext(t)
	dir, err := os.MkdirTemp("", "rk-sock-") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "redis+1.sock") // "+" must survive the URL (as %2B)
	lab.New(t, lab.Config{Password: "pw", ExtraConfig: []string{`unixsocket "` + sock + `"`, "unixsocketperm 700"}})

	rdb := connect(t, "unix://:pw@"+escape(sock, true)+"?db=5")
	if o := rdb.Options(); o.Network != "unix" || o.Addr != sock {
		t.Errorf("Options: %s %s, want unix %s", o.Network, o.Addr, sock)
	}
	info, err := rdb.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.DB != 5 {
		t.Errorf("db %d, want 5", info.DB)
	}
}

func TestOptionsIPv6(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on this machine: %v", err)
	}
	ln.Close()
	ctx := testContext(t)
	l := lab.New(t, lab.Config{ExtraConfig: []string{"bind 127.0.0.1 ::1"}})
	_, port, _ := net.SplitHostPort(l.Node(0).DirectAddr())
	rdb := connect(t, "redis://[::1]:"+port)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Errorf("PING over [::1]:%s: %v", port, err)
	}
}

func TestOptionsTLS(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Config{TLS: true, TLSClientAuth: true})
	files := l.TLS()
	c, err := Parse(l.URL())
	if err != nil {
		t.Fatalf("Parse(lab URL %s): %v", l.Redacted(), err)
	}
	if !c.TLS || c.CAFile != files.CAFile || c.CertFile != files.CertFile || c.KeyFile != files.KeyFile || c.InsecureSkipVerify {
		t.Fatalf("Parse(lab URL) = %#v", fields(*c))
	}
	_, port, _ := net.SplitHostPort(l.Node(0).Addr())
	other, err := lab.GenerateTLS(t.TempDir()) // a CA the server's certificate is not from
	if err != nil {
		t.Fatal(err)
	}
	q := func(name, value string) string { return name + "=" + escape(value, false) }
	ca, cert, key := q("caFile", files.CAFile), q("certFile", files.CertFile), q("keyFile", files.KeyFile)
	tests := []struct {
		name, url string
		ok        bool
	}{
		{"lab URL", l.URL(), true},
		{"verified as localhost", "rediss://localhost:" + port + "?" + ca + "&" + cert + "&" + key, true},
		{"serverName localhost", "rediss://127.0.0.1:" + port + "?" + ca + "&" + cert + "&" + key + "&serverName=localhost", true},
		{"serverName the certificate does not name", "rediss://127.0.0.1:" + port + "?" + ca + "&" + cert + "&" + key + "&serverName=redis.example", false},
		{"no client certificate", "rediss://127.0.0.1:" + port + "?" + ca, false},
		{"another CA", "rediss://127.0.0.1:" + port + "?" + q("caFile", other.CAFile) + "&" + cert + "&" + key, false},
		{"another CA, insecureSkipVerify", "rediss://127.0.0.1:" + port + "?" + q("caFile", other.CAFile) + "&" + cert + "&" + key + "&insecureSkipVerify=true", true},
		{"system roots only", "rediss://127.0.0.1:" + port + "?" + cert + "&" + key, false},
		{"plain text to a TLS port", "redis://127.0.0.1:" + port + "?dialTimeout=1s&readTimeout=1s", false},
	}
	for _, tt := range tests {
		err := connect(t, tt.url).Ping(ctx).Err()
		if (err == nil) != tt.ok {
			t.Errorf("%s: PING: %v, want success %v", tt.name, err, tt.ok)
		}
	}
}

func TestTLSConfig(t *testing.T) {
	dir := t.TempDir()
	files, err := lab.GenerateTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}

	if cfg, err := (&Config{Addr: "h:1"}).TLSConfig(); cfg != nil || err != nil {
		t.Errorf("TLSConfig without TLS = %v, %v; want nil, nil", cfg, err)
	}
	cfg, err := (&Config{TLS: true, CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile, ServerName: "redis.internal"}).TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.ServerName != "redis.internal" || cfg.InsecureSkipVerify || cfg.MinVersion < 0x0303 {
		t.Errorf("TLSConfig = %+v", cfg)
	}
	// The system roots, loaded when the config is built (not in the first
	// handshake, where parsing them would count against its timeout).
	sys, err := x509.SystemCertPool()
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := (&Config{TLS: true}).TLSConfig(); cfg == nil || cfg.RootCAs == nil || !cfg.RootCAs.Equal(sys) || cfg.InsecureSkipVerify {
		t.Errorf("TLSConfig with no options = %+v: want the system roots, verification on", cfg)
	}

	tests := []struct {
		name  string
		c     Config
		field string
		isErr error
	}{
		{"missing CA file", Config{TLS: true, CAFile: filepath.Join(dir, "nope.pem")}, "caFile", os.ErrNotExist},
		{"CA file is not PEM", Config{TLS: true, CAFile: notPEM}, "caFile", nil},
		{"key does not match", Config{TLS: true, CertFile: files.CertFile, KeyFile: files.CAFile}, "certFile", nil},
		{"key without certificate", Config{TLS: true, KeyFile: files.KeyFile}, "certFile", nil},
	}
	for _, tt := range tests {
		_, err := tt.c.TLSConfig()
		var e *Error
		if !errors.As(err, &e) || e.Field != tt.field {
			t.Errorf("%s: %v, want an *Error on %s", tt.name, err, tt.field)
			continue
		}
		if tt.isErr != nil && !errors.Is(err, tt.isErr) {
			t.Errorf("%s: %v does not wrap %v", tt.name, err, tt.isErr)
		}
		if _, err := tt.c.Options(); err == nil {
			t.Errorf("%s: Options succeeded", tt.name)
		}
	}
}

func TestOptionsRefusesWhatIsNotOneServer(t *testing.T) {
	for _, c := range []Config{
		{Kind: Sentinel, Sentinels: []string{"h:26379"}, MasterName: "m"},
		{Kind: Standalone},
		{Kind: Unix},
		{Kind: "cluster", Addr: "h:1"},
	} {
		var e *Error
		if _, err := c.Options(); !errors.As(err, &e) {
			t.Errorf("Options(%#v) = %v, want an *Error", fields(c), err)
		}
	}
}

// TestSentinelURLAgainstSentinels parses the URL the lab gives for a
// Sentinel topology with separate sentinel credentials, and asks every
// sentinel it lists, with those credentials, for the master it names.
func TestSentinelURLAgainstSentinels(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, Password: "data-pw", SentinelUsername: "watcher", SentinelPassword: "sentinel-pw"})
	c, err := Parse(l.URL())
	if err != nil {
		t.Fatalf("Parse(%s): %v", l.Redacted(), err)
	}
	want := Config{Kind: Sentinel, Sentinels: l.SentinelAddrs(), MasterName: l.MasterName(), Password: "data-pw",
		SentinelUsername: "watcher", SentinelPassword: "sentinel-pw", ReadFrom: Master}
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("Parse(lab URL) = %#v\nwant %#v", fields(*c), fields(want))
	}
	// The lab's redacted URL parses to the same Config with marked passwords.
	red, err := Parse(l.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	marked := want
	marked.Password, marked.SentinelPassword = redactedPassword, redactedPassword
	if !reflect.DeepEqual(*red, marked) {
		t.Errorf("Parse(lab Redacted) = %#v", fields(*red))
	}
	if _, err := c.Options(); err == nil {
		t.Error("Options on a sentinel URL succeeded")
	}
	master, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range c.Sentinels {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: c.SentinelUsername, Password: c.SentinelPassword, MaxRetries: -1, DialerRetries: 1})
		got, err := s.GetMasterAddrByName(ctx, c.MasterName).Result()
		s.Close()
		if err != nil {
			t.Errorf("sentinel %s: %v", addr, err)
			continue
		}
		if net.JoinHostPort(got[0], got[1]) != master.Addr() {
			t.Errorf("sentinel %s names %v, want %s", addr, got, master.Addr())
		}
	}
}

// TestClusterOptions checks what ClusterOptions builds from a URL, the
// readFrom mapping, and the Configs it refuses, without a server.
func TestClusterOptions(t *testing.T) {
	c, err := Parse("redis+cluster://app:pw@h1,h2:7001?clientName=api&dialTimeout=1s&readTimeout=2s&writeTimeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.ClusterOptions()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.Addrs, []string{"h1:6379", "h2:7001"}) || o.Username != "app" || o.Password != "pw" || o.ClientName != "api" ||
		o.DialTimeout != time.Second || o.ReadTimeout != 2*time.Second || o.WriteTimeout != 3*time.Second || o.TLSConfig != nil {
		t.Errorf("ClusterOptions() = %+v", o)
	}
	// rediskit's policy, as Inner sets it on redis.Options, and no
	// redirect loop (in which go-redis also re-sends after network errors).
	want := redisopt.Inner(&redis.Options{})
	if o.MaxRetries != want.MaxRetries || o.DialerRetries != want.DialerRetries || !o.ContextTimeoutEnabled || !o.DisableIdentity ||
		o.MaintNotificationsConfig == nil || o.MaintNotificationsConfig.Mode != want.MaintNotificationsConfig.Mode || o.MaxRedirects != -1 {
		t.Errorf("ClusterOptions() = %+v: want rediskit's client policy and MaxRedirects -1", o)
	}
	c.Addrs[0] = "changed:1"
	if o.Addrs[0] != "h1:6379" {
		t.Error("ClusterOptions shares the Config's Addrs")
	}

	for _, tt := range []struct {
		readFrom           string
		readOnly, byLatncy bool
	}{{"master", false, false}, {"replicaPreferred", true, false}, {"nearest", false, true}} {
		c, err := Parse("redis+cluster://h?readFrom=" + tt.readFrom)
		if err != nil {
			t.Fatal(err)
		}
		o, err := c.ClusterOptions()
		if err != nil || o.ReadOnly != tt.readOnly || o.RouteByLatency != tt.byLatncy {
			t.Errorf("readFrom=%s: ReadOnly %v RouteByLatency %v, %v; want %v %v", tt.readFrom, o.ReadOnly, o.RouteByLatency, err, tt.readOnly, tt.byLatncy)
		}
	}

	dir := t.TempDir()
	for _, tt := range []struct {
		name  string
		c     Config
		field string
	}{
		{"readFrom=replica", Config{Kind: Cluster, Addrs: []string{"h:1"}, ReadFrom: Replica}, "readFrom"},
		{"a standalone URL", Config{Kind: Standalone, Addr: "h:1"}, "scheme"},
		{"a sentinel URL", Config{Kind: Sentinel, Sentinels: []string{"h:1"}, MasterName: "m"}, "scheme"},
		{"no seeds", Config{Kind: Cluster}, "address"},
		{"a database", Config{Kind: Cluster, Addrs: []string{"h:1"}, DB: 2}, "db"},
		{"an unreadable CA file", Config{Kind: Cluster, Addrs: []string{"h:1"}, TLS: true, CAFile: filepath.Join(dir, "nope.pem")}, "caFile"},
	} {
		var e *Error
		if _, err := tt.c.ClusterOptions(); !errors.As(err, &e) || e.Field != tt.field {
			t.Errorf("%s: ClusterOptions: %v, want an *Error on %s", tt.name, err, tt.field)
		}
	}
	var e *Error
	if _, err := (&Config{Kind: Cluster, Addrs: []string{"h:1"}}).Options(); !errors.As(err, &e) || !strings.Contains(err.Error(), "ClusterOptions") {
		t.Errorf("Options on a cluster Config: %v, want an *Error pointing to ClusterOptions", err)
	}
}

// TestClusterURLAgainstCluster parses the URL the lab gives for a TLS
// cluster (go-redis's form, with caFile) and its redis+cluster:// form,
// and talks to the cluster through go-redis's ClusterClient built from
// ClusterOptions: the seeds, the password and the CA file all work.
func TestClusterURLAgainstCluster(t *testing.T) {
	ctx := testContext(t)
	cfg := lab.Cluster(2, 0)
	cfg.TLS, cfg.Password = true, "cluster-pw"
	l := lab.New(t, cfg)
	c, err := Parse(l.URL())
	if err != nil {
		t.Fatalf("Parse(lab URL %s): %v", l.Redacted(), err)
	}
	want := Config{Kind: Cluster, TLS: true, Addrs: l.ClusterAddrs(), Password: "cluster-pw", CAFile: l.TLS().CAFile, ReadFrom: Master}
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("Parse(lab URL) = %#v\nwant %#v", fields(*c), fields(want))
	}
	again, err := Parse(c.URL())
	if err != nil || !reflect.DeepEqual(again, c) || !strings.HasPrefix(c.URL(), "rediss+cluster://") {
		t.Fatalf("Parse(%s) = %v, %v", c.Redacted(), again, err)
	}
	for _, u := range []string{l.URL(), c.URL()} {
		c, _ := Parse(u)
		o, err := c.ClusterOptions()
		if err != nil {
			t.Fatal(err)
		}
		o.MaxRedirects = 3 // the keys go to both shards from the first seed
		rdb := redis.NewClusterClient(o)
		for i := range 20 {
			key := "k" + string(rune('a'+i))
			if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
				t.Errorf("%s: SET %s: %v", c, key, err)
			}
		}
		// go-redis's ClusterClient sums DBSIZE over the masters.
		if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 20 {
			t.Errorf("%s: DBSIZE over the masters = %d, %v; want the 20 keys", c, n, err)
		}
		_ = rdb.Close()
	}
	// Without the CA file the servers' certificates are not trusted.
	c.CAFile = ""
	o, err := c.ClusterOptions()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClusterClient(o)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("PING without the lab's CA file succeeded")
	}
}
