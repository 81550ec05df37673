package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func TestClientConfigOptionsFailFast(t *testing.T) {
	o, err := guard.ClientConfig{Addr: "127.0.0.1:6379", KeyPrefix: "shop"}.Options()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"MaxRetries", o.MaxRetries, -1},
		{"DialerRetries", o.DialerRetries, 1},
		{"DialTimeout", o.DialTimeout, guard.DefaultDialTimeout},
		{"ReadTimeout", o.ReadTimeout, guard.DefaultReadTimeout},
		{"WriteTimeout", o.WriteTimeout, guard.DefaultWriteTimeout},
		{"ContextTimeoutEnabled", o.ContextTimeoutEnabled, true},
		{"PoolSize", o.PoolSize, guard.DefaultPoolSize},
		{"PoolTimeout", o.PoolTimeout, time.Nanosecond},
		{"PipelinePoolSize", o.PipelinePoolSize, -1},
		{"DisableIdentity", o.DisableIdentity, true},
		{"Network", o.Network, "tcp"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	u, err := guard.ClientConfig{Addr: "/run/redis.sock", KeyPrefix: "shop"}.Options()
	if err != nil || u.Network != "unix" {
		t.Errorf("unix socket: network %q, err %v", u.Network, err)
	}
}

func TestClientConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		s     guard.ClientConfig
		field string
	}{
		{guard.ClientConfig{KeyPrefix: "shop"}, "Addr"},
		{guard.ClientConfig{Addr: "a:1"}, "KeyPrefix"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "shop:"}, "KeyPrefix"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "my shop"}, "KeyPrefix"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "shop", PoolSize: -1}, "PoolSize"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "shop", DB: -1}, "DB"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "shop", DialTimeout: -1}, "DialTimeout"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "shop", ReadTimeout: -1}, "ReadTimeout"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "shop", WriteTimeout: -1}, "WriteTimeout"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "shop", CallLimit: -1}, "CallLimit"},
		{guard.ClientConfig{Addr: "a:1", KeyPrefix: "shop", Username: "u"}, "Username"},
	} {
		_, err := guard.Open(tc.s)
		var ce *guard.ConfigError
		if !errors.As(err, &ce) || ce.Package != "guard" || ce.Struct != "ClientConfig" || ce.Field != tc.field ||
			!strings.HasPrefix(err.Error(), "guard: ClientConfig."+tc.field+" ") {
			t.Errorf("Open(%v) = %v, want a ConfigError on ClientConfig.%s", tc.s, err, tc.field)
		}
	}
}

func TestClientConfigNeverShowThePassword(t *testing.T) {
	const secret = "hunter2-very-secret"
	s := guard.ClientConfig{Addr: "127.0.0.1:1", Username: "app", Password: secret, KeyPrefix: "shop"}
	for _, text := range []string{
		s.String(), s.GoString(),
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s),
		fmt.Sprintf("%v %+v", &s, &s),
	} {
		if strings.Contains(text, secret) {
			t.Fatalf("settings text shows the password: %s", text)
		}
	}
	if !strings.Contains(s.String(), `Password: "xxxxx"`) {
		t.Errorf("String() does not say a password is set: %s", s)
	}

	// Errors: an invalid setting, and a failed call.
	bad := s
	bad.KeyPrefix = ""
	if _, err := guard.Open(bad); err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("Open error %v: want an error without the password", err)
	}
	g, err := guard.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if strings.Contains(g.String(), secret) {
		t.Fatalf("Guard.String shows the password: %s", g)
	}
	err = g.Call(context.Background(), "ping", func(ctx context.Context, c redis.Cmdable) error {
		return c.Ping(ctx).Err()
	})
	if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
		t.Fatalf("call error %v: want an error without the password", err)
	}
}

// With PoolSize N, N commands in flight and one more: the extra one fails
// at once instead of queueing for a connection.
func TestPoolDoesNotQueue(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	const size = 3
	s := relaxed(l.Node(0))
	s.PoolSize = size
	g := open(t, s)
	c := g.Client()

	// Hold every connection with a BLPOP on an empty list.
	var wg sync.WaitGroup
	for range size {
		wg.Go(func() { _ = c.BLPop(ctx, 5*time.Second, "test:pool:empty").Err() })
	}
	if err := waitBlocked(ctx, l.Node(0), size); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	err := c.Get(ctx, "test:pool:other").Err()
	took := time.Since(start)
	if !errors.Is(err, redis.ErrPoolTimeout) {
		t.Fatalf("command %d of a pool of %d: %v, want redis.ErrPoolTimeout", size+1, size, err)
	}
	// "At once": no wait for a connection. go-redis's default would have
	// waited ReadTimeout + 1 s (here 3 s) for one of the BLPOPs to end.
	if took > 50*time.Millisecond {
		t.Errorf("the extra command failed after %v, want at once", took)
	}
	// Through the guard it is a FailurePoolFull.
	err = g.Call(ctx, "extra", func(ctx context.Context, c redis.Cmdable) error { return c.Ping(ctx).Err() })
	var re *guard.RedisError
	if !errors.As(err, &re) || re.Kind != guard.FailurePoolFull || !errors.Is(err, guard.ErrUnavailable) {
		t.Fatalf("guarded call on a full pool: %v, want a RedisError of kind pool-full", err)
	}

	// Release the BLPOPs.
	if err := l.Node(0).Do(ctx, "RPUSH", "test:pool:empty", 1, 2, 3).Err(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING once the pool is free: %v", err)
	}
}

// waitBlocked waits until n clients are blocked on the node.
func waitBlocked(ctx context.Context, n *lab.Node, want int) error {
	for {
		info, err := n.Do(ctx, "INFO", "clients").Text()
		if err != nil {
			return err
		}
		if lab.ParseInfo(info)["blocked_clients"] == fmt.Sprint(want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d blocked clients: %w (INFO: %s)", want, ctx.Err(), info)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
