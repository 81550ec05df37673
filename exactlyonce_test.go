package rediskit_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rediskit/rediskit"
	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestExactlyOnceStandalone: a standalone server behind a proxy whose
// connections are reset while 8 writers write through the front door,
// plainly and exactly-once side by side. Exactly-once: every write
// acknowledged, none run twice, no may-have-executed error; plain: the
// resets' may-have-executed errors, logged.
func TestExactlyOnceStandalone(t *testing.T) {
	ctx := testkit.Context(t, time.Minute)
	l := lab.New(t, lab.Config{Proxy: true})
	url := "redis://" + l.Node(0).Addr()
	plain, err := rediskit.NewClientFromURL(url, rediskit.Config{Kind: rediskit.KindStandalone})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	once, err := rediskit.NewClientFromURL(url, rediskit.Config{Kind: rediskit.KindStandalone, ExactlyOnce: &exactlyonce.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer once.Close()
	runs := testkit.StartOnce(ctx, t, "{eo}", testkit.Named{Name: "plain", Client: plain}, testkit.Named{Name: "exactly-once", Client: once})
	for range 10 {
		time.Sleep(150 * time.Millisecond)
		l.Node(0).ResetConnections()
	}
	time.Sleep(300 * time.Millisecond)
	testkit.StopAll(runs)
	final := l.Node(0).NewClient()
	defer final.Close()
	reps := testkit.CheckOnce(ctx, t, final, fmt.Sprintf("10 connection resets, %s", l.ServerVersion()), runs)
	for _, rep := range reps {
		if rep.Lost+rep.CounterLost != 0 {
			t.Errorf("%s: %d lost without a failover", rep.Name, rep.Lost+rep.CounterLost)
		}
		if rep.Name == "exactly-once" && len(rep.Errors) != 0 {
			t.Errorf("%s: errors reached callers: %v", rep.Name, rep.Errors)
		}
	}
	// A call that insists on a write the path cannot take.
	err = once.BLPop(exactlyonce.With(ctx, true), time.Second, "list").Err()
	if !errors.Is(err, exactlyonce.ErrUnsupported) {
		t.Errorf("BLPOP asked exactly-once: %v", err)
	}
}
