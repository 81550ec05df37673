package cluster

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/redisurl"
)

// TestNewClientFromURL connects to a TLS cluster with a password through
// each URL form NewClientFromURL reads: the lab's (go-redis's form, with
// caFile), redis+cluster://, and a single-node redis:// whose host is the
// only seed. Each client writes keys on both shards, which needs the CA
// file, the password and the map learnt from the seed.
func TestNewClientFromURL(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	const secret = "url-Secret-pw"
	cfg := lab.Cluster(2, 0)
	cfg.TLS, cfg.Password = true, secret
	l := lab.New(t, cfg)
	addrs := l.ClusterAddrs()
	ca := "caFile=" + url.QueryEscape(l.TLS().CAFile)
	forms := []struct {
		name, url string
		seeds     []string
	}{
		{"the lab's URL, go-redis's form", l.URL(), addrs},
		{"redis+cluster://", "rediss+cluster://:" + secret + "@" + strings.Join(addrs, ",") + "?" + ca, addrs},
		{"one seed, redis://", "rediss://:" + secret + "@" + addrs[1] + "?" + ca + "&dialTimeout=1500ms", addrs[1:2]},
	}
	for _, f := range forms {
		c, err := NewClientFromURL(f.url, Config{ReadTimeout: 2 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if !slices.Equal(c.opts.Addrs, f.seeds) || c.opts.Password != secret || c.opts.TLSConfig == nil || c.opts.TLSConfig.RootCAs == nil {
			t.Errorf("%s: seeds %v, TLS %v: want %v and the lab's CA", f.name, c.opts.Addrs, c.opts.TLSConfig != nil, f.seeds)
		}
		for i := range 20 {
			if err := c.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
				t.Errorf("%s: SET k%d: %v", f.name, i, err)
			}
		}
		if st := c.Stats(); len(st.Masters) != 2 {
			t.Errorf("%s: the client knows masters %v, want the 2 shards", f.name, st.Masters)
		}
		if strings.Contains(c.String(), secret) {
			t.Errorf("%s: String() %q shows the password", f.name, c)
		}
		_ = c.Close()
	}

	// The URL's clientName names every connection; its readFrom is the
	// client's where Config has none.
	named, err := NewClientFromURL("rediss+cluster://:"+secret+"@"+addrs[0]+"?"+ca+"&clientName=checkout-api&readFrom=replicaPreferred", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if name, err := named.ClientGetName(ctx).Result(); err != nil || name != "checkout-api" {
		t.Errorf("CLIENT GETNAME: %q, %v; want the URL's clientName", name, err)
	}
	if named.opts.ReadFrom != ReplicaPreferred {
		t.Errorf("ReadFrom %q, want the URL's replicaPreferred", named.opts.ReadFrom)
	}
	_ = named.Close()

	// Timeouts from the URL apply where Config leaves them zero.
	c, err := NewClientFromURL("rediss://:"+secret+"@"+addrs[0]+"?"+ca+"&dialTimeout=1500ms&readTimeout=1s&writeTimeout=700ms", Config{ReadTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if o := c.opts; o.DialTimeout != 1500*time.Millisecond || o.ReadTimeout != 2*time.Second || o.WriteTimeout != 700*time.Millisecond {
		t.Errorf("timeouts %v %v %v, want 1.5s from the URL, 2s from Config, 700ms from the URL", o.DialTimeout, o.ReadTimeout, o.WriteTimeout)
	}
	_ = c.Close()

	// Without the CA file the servers' certificates are not trusted.
	noCA, err := NewClientFromURL("rediss+cluster://:"+secret+"@"+addrs[0]+"?dialTimeout=1s", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer noCA.Close()
	short := testkit.Context(t, 2*time.Second)
	if err := noCA.Set(short, "k", "v", 0).Err(); err == nil {
		t.Error("SET without the lab's CA file succeeded")
	}
}

// TestNewClientFromURLRefuses checks the URLs NewClientFromURL refuses:
// each error is a *redisurl.Error on the right field, and none shows the
// password.
func TestNewClientFromURLRefuses(t *testing.T) {
	const secret = "refused-Secret-pw"
	for _, tt := range []struct{ url, field string }{
		{"redis+sentinel://:{pw}@h1,h2/mymaster", "scheme"},
		{"unix://:{pw}@/run/redis.sock", "scheme"},
		{"redis://:{pw}@h1/2", "db"},
		{"redis+cluster://:{pw}@h1/2", "db"},
		{"redis://:{pw}@h1?addr=h2&addr=h1", "addr"},
		{"redis+cluster://:{pw}@h1:bad", "address"},
		{"redis://:{pw}@h1?dial_timeout=1s", "parameter"},
		{"rediss+cluster://:{pw}@h1?caFile=/nonexistent/ca.pem", "caFile"},
		{"redis+cluster://:p/{pw}@h1,h2", "address"}, // an unencoded '/' in the password
	} {
		u := strings.ReplaceAll(tt.url, "{pw}", secret)
		c, err := NewClientFromURL(u, Config{})
		if err == nil {
			_ = c.Close()
			t.Errorf("NewClientFromURL(%q): no error", tt.url)
			continue
		}
		var e *redisurl.Error
		if !errors.As(err, &e) || e.Field != tt.field {
			t.Errorf("NewClientFromURL(%q): %v, want a *redisurl.Error on %s", tt.url, err, tt.field)
		}
		if !strings.HasPrefix(err.Error(), "cluster: ") || strings.Contains(err.Error(), "Secret") {
			t.Errorf("NewClientFromURL(%q): %q: want it to start with cluster: and not show the password", tt.url, err)
		}
	}
}
