package replica_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

// A Sentinel client reading from the nearest replica, with its own
// Selector to watch the election: a local lab with the master at 15 ms,
// replica 1 at 100 ms (more than 3 × the master: never elected) and
// replica 2 at 3 ms, where reads under Nearest go. The gaps are wide so
// that one slow first probe on a loaded machine does not change the
// outcome.
func ExampleSelector() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Config{Replicas: 2, Sentinels: 3, Nodes: []lab.NodeConfig{
		{Latency: 15 * time.Millisecond}, {Latency: 100 * time.Millisecond}, {Latency: 3 * time.Millisecond}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	events := make(chan replica.Event, 16)
	cfg := replica.Config{} // the Sentinel client's default: a 2 ms window
	cfg.ProbeInterval = 500 * time.Millisecond
	cfg.Observer = func(ev replica.Event) {
		select { // an Observer must not block
		case events <- ev:
		default:
		}
	}
	sel, err := replica.NewSelector(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := sentinel.NewClient(sentinel.Config{
		MasterName:      l.MasterName(),
		SentinelAddrs:   l.SentinelAddrs(),
		ReadFrom:        sentinel.Nearest,
		ReplicaSelector: sel, // the client closes it
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// The first read that may go to a replica starts the prober; until its
	// first round completes, reads go to the master.
	_ = c.Get(ctx, "greeting").Err()
	ev := <-events
	fmt.Println(ev.Reason, ev.Elected[0] == l.Node(2).Addr())

	name := map[string]string{l.Node(0).Addr(): "node0", l.Node(1).Addr(): "node1", l.Node(2).Addr(): "node2"}
	for _, n := range l.Nodes() {
		for _, st := range sel.Table() {
			if st.Addr == n.Addr() {
				fmt.Printf("%s %s elected=%v nearest=%v excluded=%q\n", name[st.Addr], st.Role, st.Elected, st.Nearest, st.Excluded)
			}
		}
	}
	// Output:
	// first-round true
	// node0 master elected=false nearest=false excluded=""
	// node1 replica elected=false nearest=false excluded="slow"
	// node2 replica elected=true nearest=true excluded=""
}
