package guard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/redisurl"
)

func TestClientConfigFromURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want guard.ClientConfig
	}{
		{"redis://127.0.0.1", guard.ClientConfig{Addr: "127.0.0.1:6379"}},
		{"redis://app:pw@10.0.0.7:6380/3?clientName=shop&readTimeout=250ms",
			guard.ClientConfig{Addr: "10.0.0.7:6380", Username: "app", Password: "pw", DB: 3, ClientName: "shop", ReadTimeout: 250 * time.Millisecond}},
		{"unix:///run/redis.sock?db=2", guard.ClientConfig{Addr: "/run/redis.sock", DB: 2}},
	} {
		got, err := guard.ClientConfigFromURL(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if got.String() != tc.want.String() || got.Password != tc.want.Password || got.ClientName != tc.want.ClientName {
			t.Errorf("%s:\n got %v\nwant %v", tc.url, got, tc.want)
		}
	}
	s, err := guard.ClientConfigFromURL("rediss://127.0.0.1:6380")
	if err != nil || s.TLSConfig == nil {
		t.Errorf("rediss://: TLS config %v, %v", s.TLSConfig, err)
	}
}

func TestClientConfigFromURLErrors(t *testing.T) {
	const secret = "url-secret-9c2"
	for _, raw := range []string{
		"redis+sentinel://:" + secret + "@10.0.0.1,10.0.0.2/mymaster",
		"redis://:" + secret + "@127.0.0.1?max_retries=5",
		"redis://:" + secret + "@127.0.0.1:notaport",
		"http://127.0.0.1",
	} {
		_, err := guard.ClientConfigFromURL(raw)
		var ue *redisurl.Error
		if !errors.As(err, &ue) {
			t.Errorf("%s: %v, want a *redisurl.Error", strings.ReplaceAll(raw, secret, "xxxxx"), err)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// A lab URL with a password opens a working guard.
func TestClientConfigFromURLOpens(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Password: "lab-url-secret"})
	s, err := guard.ClientConfigFromURL(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.String(), "lab-url-secret") {
		t.Fatalf("String shows the password: %s", s)
	}
	s.KeyPrefix = "test"
	g := open(t, s)
	if r, err := newChecker(t, g, true).Check(ctx); err != nil || r.State != guard.StateWritable {
		t.Fatalf("check through the URL's settings: %v, %v", r, err)
	}
}

// guard.New(redis.NewClient(opt)), opt from redisurl.Config.Options: the
// URL's options meet the client policy New checks, and the guard works.
func TestNewAcceptsAClientFromRedisurl(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Password: "lab-url-secret"})
	cfg, err := redisurl.Parse(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt, err := cfg.Options()
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	g, err := guard.New(client, guard.Config{KeyPrefix: "test"})
	if err != nil {
		t.Fatalf("guard.New(redis.NewClient(cfg.Options())): %v", err)
	}
	if r, err := newChecker(t, g, true).Check(ctx); err != nil || r.State != guard.StateWritable {
		t.Fatalf("check through the URL's client: %v, %v", r, err)
	}
}
