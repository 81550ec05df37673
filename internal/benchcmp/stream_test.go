package benchcmp

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestStream runs the ceiling client against a real server: replies in
// order to concurrent callers, a missing key, an error reply, and a
// connection the server drops.
func TestStream(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	s, err := DialStream(ctx, n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if err := s.Do(ctx, "GET", "stream:missing"); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET of a missing key: %v, want redis.Nil", err)
	}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 200 {
				key := "stream:" + strconv.Itoa(g*1000+i)
				if err := s.Do(ctx, "SET", key); err != nil {
					t.Errorf("SET %s: %v", key, err)
					return
				}
				if err := s.Do(ctx, "GET", key); err != nil {
					t.Errorf("GET %s: %v", key, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, err := n.Do(ctx, "DBSIZE").Int(); err != nil || got != 32*200 {
		t.Fatalf("DBSIZE %d (%v), want %d", got, err, 32*200)
	}
	if err := n.Do(ctx, "RPUSH", "stream:list", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Do(ctx, "GET", "stream:list"); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("GET of a list: %v, want WRONGTYPE", err)
	}
	if err := n.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Do(ctx, "GET", "stream:0"); err == nil {
		t.Fatal("a GET on a killed connection succeeded")
	}
	if err := s.Do(ctx, "GET", "stream:0"); err == nil {
		t.Fatal("a GET after the connection failed succeeded")
	}
}
