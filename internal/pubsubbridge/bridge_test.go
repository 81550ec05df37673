package pubsubbridge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

var (
	errOwnerClosed = errors.New("test owner closed")
	errNoTarget    = errors.New("test owner has no active target")
)

// owner stands in for the router's owner (multidb.Client): its active
// target is whatever the test stores.
type owner struct {
	active atomic.Pointer[Target]
	closed atomic.Bool
}

func (o *owner) route() (*Target, error) {
	switch t := o.active.Load(); {
	case o.closed.Load():
		return nil, errOwnerClosed
	case t == nil:
		return nil, errNoTarget
	default:
		return t, nil
	}
}

// moveTo makes t the active target and moves the router to it, as the
// owner does on a switch (nil: none is active).
func (o *owner) moveTo(r *Router, t *Target) {
	o.active.Store(t)
	r.MoveTo(t)
}

// newRouter returns a router for o and the owner's Close: o closes, the
// bridges' context ends, the router closes (multidb.Client.Close's order).
// The test's end runs it too.
func newRouter(t *testing.T, o *owner) (*Router, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	r := New(Config{Owner: "test", Active: o.route, ErrClosed: errOwnerClosed, Context: ctx})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			o.closed.Store(true)
			cancel()
			r.Close()
		})
	}
	t.Cleanup(stop)
	return r, stop
}

// target is a database on node for the router, with the dial hook, its
// client closed when the test ends.
func target(t *testing.T, name string, opt *redis.Options) *Target {
	client := redis.NewClient(opt)
	AddHook(client)
	t.Cleanup(func() { _ = client.Close() })
	return &Target{Name: name, Client: client}
}

// describe is what a subscriber received, every field.
func describe(v any, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	switch m := v.(type) {
	case *redis.Subscription:
		return fmt.Sprintf("%s %s %d", m.Kind, m.Channel, m.Count)
	case *redis.Message:
		return fmt.Sprintf("message %s pattern=%q payload=%q slice=%q", m.Channel, m.Pattern, m.Payload, m.PayloadSlice)
	case *redis.Pong:
		return "pong " + m.Payload
	}
	return fmt.Sprintf("%T %v", v, v)
}

type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	PSubscribe(ctx context.Context, patterns ...string) *redis.PubSub
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// TestRelay runs pub/sub exchanges through a router and through a plain
// go-redis client of the same server side by side, step by step: after
// each step both subscribers receive the same thing (every field), and it
// is what Redis sends for that step: subscription confirmations of the
// three kinds, messages, pattern and shard messages, pongs, error replies.
func TestRelay(t *testing.T) {
	node := lab.New(t, lab.Standalone()).Node(0)
	o := &owner{}
	o.active.Store(target(t, "node0", node.Options()))
	r, _ := newRouter(t, o)
	direct := node.NewClient()
	defer direct.Close()

	type step struct {
		sub  func(ctx context.Context, ps *redis.PubSub) // on both subscribers; nil: none
		pub  func(ctx context.Context) error             // once, through direct; nil: none
		want string                                      // what both then receive (a prefix of describe)
	}
	publish := func(channel, payload string) func(context.Context) error {
		return func(ctx context.Context) error { return direct.Publish(ctx, channel, payload).Err() }
	}
	tests := []struct {
		name  string
		open  func(ctx context.Context, s subscriber) *redis.PubSub
		steps []step
	}{
		{"channels", func(ctx context.Context, s subscriber) *redis.PubSub { return s.Subscribe(ctx, "a", "b") }, []step{
			{want: "subscribe a 1"},
			{want: "subscribe b 2"},
			{pub: publish("b", "to b"), want: `message b pattern="" payload="to b" slice=[]`},
			{pub: publish("a", "to a"), want: `message a pattern="" payload="to a" slice=[]`},
		}},
		{"patterns", func(ctx context.Context, s subscriber) *redis.PubSub { return s.PSubscribe(ctx, "news.*") }, []step{
			{want: "psubscribe news.* 1"},
			{pub: publish("news.eu", "pattern"), want: `message news.eu pattern="news.*" payload="pattern"`},
		}},
		{"shard channels", func(ctx context.Context, s subscriber) *redis.PubSub { return s.SSubscribe(ctx, "s") }, []step{
			{want: "ssubscribe s 1"},
			{pub: func(ctx context.Context) error { return direct.SPublish(ctx, "s", "sharded").Err() },
				want: `message s pattern="" payload="sharded"`},
		}},
		{"pongs", func(ctx context.Context, s subscriber) *redis.PubSub { return s.Subscribe(ctx, "a") }, []step{
			{want: "subscribe a 1"},
			{sub: func(ctx context.Context, ps *redis.PubSub) { _ = ps.Ping(ctx, "payload") }, want: "pong payload"},
			{sub: func(ctx context.Context, ps *redis.PubSub) { _ = ps.Ping(ctx) }, want: "pong "},
		}},
		{"an error reply, and the subscription goes on", func(ctx context.Context, s subscriber) *redis.PubSub { return s.Subscribe(ctx, "a") }, []step{
			{want: "subscribe a 1"},
			{sub: func(ctx context.Context, ps *redis.PubSub) { _ = ps.Subscribe(ctx) }, want: "error ERR wrong number of arguments"},
			{pub: publish("a", "after"), want: `message a pattern="" payload="after"`},
		}},
		{"unsubscribed", func(ctx context.Context, s subscriber) *redis.PubSub { return s.Subscribe(ctx, "a") }, []step{
			{want: "subscribe a 1"},
			{sub: func(ctx context.Context, ps *redis.PubSub) { _ = ps.PSubscribe(ctx, "p.*") }, want: "psubscribe p.* 2"},
			{sub: func(ctx context.Context, ps *redis.PubSub) { _ = ps.Unsubscribe(ctx, "a") }, want: "unsubscribe a 1"},
			{sub: func(ctx context.Context, ps *redis.PubSub) { _ = ps.PUnsubscribe(ctx) }, want: "punsubscribe p.* 0"},
			// Not received: the pong is next.
			{pub: publish("a", "lost"), sub: func(ctx context.Context, ps *redis.PubSub) { _ = ps.Ping(ctx, "next") }, want: "pong next"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testkit.Context(t, 20*time.Second)
			viaRouter, viaDirect := tt.open(ctx, r.Client()), tt.open(ctx, direct)
			defer viaRouter.Close()
			defer viaDirect.Close()
			for i, s := range tt.steps {
				if s.sub != nil {
					s.sub(ctx, viaRouter)
					s.sub(ctx, viaDirect)
				}
				if s.pub != nil {
					if err := s.pub(ctx); err != nil {
						t.Fatalf("step %d: publish: %v", i, err)
					}
				}
				got := describe(viaRouter.ReceiveTimeout(ctx, 5*time.Second))
				want := describe(viaDirect.ReceiveTimeout(ctx, 5*time.Second))
				if got != want || !strings.HasPrefix(want, s.want) {
					t.Fatalf("step %d:\n through the bridge %s\n direct            %s\n want              %s…", i, got, want, s.want)
				}
			}
		})
	}
}

// TestRawCommands speaks RESP to a bridge directly, as go-redis's PubSub
// would not: HELLO gets the owner's server name, an unsupported command an
// error reply naming it (the connection stays up), a malformed command
// ends the connection.
func TestRawCommands(t *testing.T) {
	node := lab.New(t, lab.Standalone()).Node(0)
	o := &owner{}
	o.active.Store(target(t, "node0", node.Options()))
	r, _ := newRouter(t, o)
	ctx := testkit.Context(t, 10*time.Second)
	conn, err := r.dial(ctx, "tcp", "test/pubsub")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(conn)
	exchange := func(cmd frame, want string) {
		t.Helper()
		if _, err := conn.Write(cmd); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(rd, got); err != nil || string(got) != want {
			t.Fatalf("%q answered %q, %v; want %q", cmd, got, err, want)
		}
	}
	exchange(frame(nil).array(2).bulk("HELLO").bulk("2"),
		"*4\r\n$6\r\nserver\r\n$13\r\nrediskit-test\r\n$5\r\nproto\r\n:2\r\n")
	exchange(frame(nil).array(2).bulk("GET").bulk("k"),
		"-ERR test: 'get' is not supported on a subscription connection\r\n")
	exchange(frame(nil).array(2).bulk("PING").bulk("up"), "*2\r\n$4\r\npong\r\n$2\r\nup\r\n")
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := rd.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after a malformed command: read %q, %v; want the connection closed", b, err)
	}
}

// TestSwitch moves a subscription between two servers: the subscriber's
// next Receive fails with an error matching routing.ErrSwitched, the one
// after it is the subscription made again on the new server, where
// messages then arrive from (and none is left on the old one). Losing
// every target ends the subscription with an error that does not match
// it, and the dial after that gets the owner's reason.
func TestSwitch(t *testing.T) {
	nodes := []*lab.Node{lab.New(t, lab.Standalone()).Node(0), lab.New(t, lab.Standalone()).Node(0)}
	targets := []*Target{target(t, "a", nodes[0].Options()), target(t, "b", nodes[1].Options())}
	o := &owner{}
	o.active.Store(targets[0])
	r, _ := newRouter(t, o)
	ctx := testkit.Context(t, 20*time.Second)
	ps := r.Client().Subscribe(ctx, "news")
	defer ps.Close()
	recv := func(want string) {
		t.Helper()
		if got := describe(ps.ReceiveTimeout(ctx, 5*time.Second)); got != want {
			t.Fatalf("received %s, want %s", got, want)
		}
	}
	subscribers := func(n *lab.Node) int64 {
		t.Helper()
		c := n.NewClient()
		defer c.Close()
		m, err := c.PubSubNumSub(ctx, "news").Result()
		if err != nil {
			t.Fatal(err)
		}
		return m["news"]
	}
	publish := func(n *lab.Node, payload string) {
		t.Helper()
		c := n.NewClient()
		defer c.Close()
		if err := c.Publish(ctx, "news", payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	recv("subscribe news 1")
	publish(nodes[0], "on a")
	recv(`message news pattern="" payload="on a" slice=[]`)

	o.moveTo(r, targets[1])
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); !errors.Is(err, routing.ErrSwitched) {
		t.Fatalf("Receive after the switch: %v, want an error matching routing.ErrSwitched", err)
	}
	recv("subscribe news 1")
	publish(nodes[1], "on b")
	recv(`message news pattern="" payload="on b" slice=[]`)
	testkit.WaitFor(t, 5*time.Second, "the old server's subscription to end", func() bool { return subscribers(nodes[0]) == 0 })
	if n := subscribers(nodes[1]); n != 1 {
		t.Fatalf("%d subscribers on the new server, want 1", n)
	}

	o.moveTo(r, nil)
	_, err := ps.ReceiveTimeout(ctx, 5*time.Second)
	if err == nil || errors.Is(err, routing.ErrSwitched) {
		t.Fatalf("Receive after losing every target: %v, want a lost connection, not a switch", err)
	}
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); !errors.Is(err, errNoTarget) {
		t.Fatalf("Receive with no target: %v, want the owner's reason (%v)", err, errNoTarget)
	}
	o.active.Store(targets[0])
	recv("subscribe news 1") // service resumed: it subscribes again
}

// TestCloseWhileTheServerDoesNotAnswer closes the router while a bridge
// waits on a server that accepts connections and never answers (black-
// holed), while subscribing and once subscribed: Close returns at once,
// not after the database client's ReadTimeout, and the subscriber gets its
// connection's end, then redis.ErrClosed; a dial once the owner closed
// gets the owner's ErrClosed.
func TestCloseWhileTheServerDoesNotAnswer(t *testing.T) {
	const readTimeout = 10 * time.Second
	for _, when := range []string{"subscribing", "subscribed"} {
		t.Run(when, func(t *testing.T) {
			node := lab.New(t, lab.Config{Proxy: true}).Node(0)
			opt := node.Options()
			opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = readTimeout, readTimeout, readTimeout
			tg := target(t, "node0", opt)
			dialled := make(chan struct{}, 8)
			tg.Client.AddHook(dialSignal(dialled))
			o := &owner{}
			o.active.Store(tg)
			r, closeOwner := newRouter(t, o)
			ctx := testkit.Context(t, 30*time.Second)
			received := make(chan error, 1) // the subscriber's Receive, waiting on the black hole

			if when == "subscribed" {
				ps := r.Client().Subscribe(ctx, "ch")
				defer ps.Close()
				if got := describe(ps.ReceiveTimeout(ctx, 5*time.Second)); got != "subscribe ch 1" {
					t.Fatalf("received %s", got)
				}
				node.BlackHole()
				t.Cleanup(node.Restore)
				// The bridge's inner PubSub now waits for a message that
				// cannot come; the caller waits on the bridge.
				go func() { _, err := ps.Receive(ctx); received <- err }()
			} else {
				node.BlackHole()
				t.Cleanup(node.Restore)
				ps := r.Client().Subscribe(ctx, "ch")
				defer ps.Close()
				select { // the bridge's connection to the black hole
				case <-dialled:
				case <-ctx.Done():
					t.Fatal("the bridge never dialled")
				}
				go func() { _, err := ps.Receive(ctx); received <- err }()
			}
			start := time.Now()
			closeOwner()
			took := time.Since(start)
			t.Logf("Close took %v", took)
			// While subscribing, the bridge waits in the database client's
			// handshake, which only the dial hook (AddHook) ends early:
			// without it Close waits out the read timeout (measured: 10 s).
			// Once subscribed, closing the inner PubSub ends its read.
			if took >= readTimeout/2 {
				t.Fatalf("Close took %v: it waited for the database client's read timeout (%v)", took, readTimeout)
			}
			select {
			case err := <-received:
				if err == nil {
					t.Fatal("the subscriber received something from a black-holed server")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the subscriber's Receive did not end with Close")
			}
			ps := r.Client().Subscribe(ctx, "other")
			defer ps.Close()
			if _, err := ps.ReceiveTimeout(ctx, time.Second); !errors.Is(err, redis.ErrClosed) {
				t.Fatalf("Subscribe after Close: %v, want redis.ErrClosed", err)
			}
		})
	}
	t.Run("a dial once the owner closed", func(t *testing.T) {
		node := lab.New(t, lab.Standalone()).Node(0)
		o := &owner{}
		o.active.Store(target(t, "node0", node.Options()))
		r, _ := newRouter(t, o)
		o.closed.Store(true)
		if _, err := r.dial(context.Background(), "tcp", "test/pubsub"); !errors.Is(err, errOwnerClosed) {
			t.Fatalf("dial: %v, want the owner's ErrClosed", err)
		}
	})
}

// dialSignal is a hook that sends on ch once each connection is dialled.
type dialSignal chan struct{}

func (s dialSignal) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			select {
			case s <- struct{}{}:
			default:
			}
		}
		return conn, err
	}
}

func (dialSignal) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialSignal) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
