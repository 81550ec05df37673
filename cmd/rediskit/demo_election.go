package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

// electionTour shows package replica's latency-aware election on the lab
// (master and node1 6 ms away, node2 42 ms): the probe's RTT table, reads
// that all go to the near replica (counted on the servers), the same reads
// with replicas taken in turn for comparison, and a re-election when the
// two replicas' latencies swap.
func (d *demo) electionTour(ctx context.Context) error {
	l := d.lab
	var mu sync.Mutex
	var events []replica.Event
	changed := make(chan struct{}, 1)
	const interval = 250 * time.Millisecond
	cfg := replica.Config{} // the Sentinel client's default, probing faster
	cfg.ProbeInterval = interval
	cfg.Observer = func(ev replica.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	sel, err := replica.NewSelector(cfg)
	if err != nil {
		return err
	}
	client, err := d.sentinelClient(sentinel.ReplicaPreferred, sel)
	if err != nil {
		_ = sel.Close()
		return err
	}
	defer client.Close()
	if err := client.Set(sentinel.WithDurable(ctx, true), "demo:greeting", "hello", 0).Err(); err != nil {
		return err
	}
	if err := sel.Start(); err != nil {
		return err
	}
	if err := sel.WaitRound(ctx, 1); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "the election after its first probe round (every node PINGed on its own connection; replicas %v apart are elected together, none slower than 3 × the master):\n",
		replica.DefaultLatencyWindow)
	d.printTable(sel.Table())

	n := 60
	if d.quick {
		n = 20
	}
	near, err := d.readAndCount(ctx, client, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%d GETs with readFrom=replicaPreferred: %s\n", n, near)

	rr, err := d.sentinelClient(sentinel.ReplicaPreferred, sentinel.NewRoundRobinSelector())
	if err != nil {
		return err
	}
	defer rr.Close()
	turn, err := d.readAndCount(ctx, rr, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "the same GETs with a latency-blind choice (the replicas in turn; go-redis picks one at random): %s\n", turn)

	// The replicas' latencies swap.
	node1, node2 := l.Node(1), l.Node(2)
	r1, r2 := node1.Latency(), node2.Latency()
	defer func() {
		node1.SetLatency(r1)
		node2.SetLatency(r2)
	}()
	mu.Lock()
	events = nil
	mu.Unlock()
	swapped := time.Now()
	node1.SetLatency(r2)
	node2.SetLatency(r1)
	fmt.Fprintf(d.out, "node1 and node2 swap latencies: node1 now %v away, node2 %v\n", r2, r1)
	var ev replica.Event
	deadline := time.After(10 * time.Second)
wait:
	for {
		select {
		case <-changed:
			mu.Lock()
			for _, e := range events {
				if slices.Contains(e.Elected, node2.Addr()) {
					ev = e
				}
			}
			mu.Unlock()
			if ev.Round != 0 {
				break wait
			}
		case <-deadline:
			return errors.New("the election did not move to node2 within 10s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Fprintf(d.out, "re-elected %v after the swap (probe interval %v; reason %q): %s\n",
		ev.Time.Sub(swapped).Round(time.Millisecond), interval, ev.Reason, d.names(ev.Detail))
	after, err := d.readAndCount(ctx, client, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%d GETs again: %s\n", n, after)
	return nil
}

// sentinelClient is a rediskit Sentinel client of the demo's lab.
func (d *demo) sentinelClient(rf sentinel.ReadFrom, sel sentinel.ReplicaSelector) (*sentinel.Client, error) {
	l := d.lab
	return sentinel.NewClient(sentinel.Config{
		MasterName:       l.MasterName(),
		SentinelAddrs:    l.SentinelAddrs(),
		Password:         l.Config().Password,
		SentinelPassword: l.Config().SentinelPassword,
		TLSConfig:        l.TLSConfig(),
		ReadFrom:         rf,
		ReplicaSelector:  sel,
	})
}

// readAndCount runs n GETs one after another and says their latency and
// where they ran (GET calls counted by each server, INFO commandstats).
// Four GETs first, not counted, open the client's connections.
func (d *demo) readAndCount(ctx context.Context, c *sentinel.Client, n int) (string, error) {
	for range 4 {
		if err := c.Get(ctx, "demo:greeting").Err(); err != nil {
			return "", err
		}
	}
	before, err := d.getCalls(ctx)
	if err != nil {
		return "", err
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := c.Get(ctx, "demo:greeting").Err(); err != nil {
			return "", err
		}
		lat = append(lat, time.Since(start))
	}
	after, err := d.getCalls(ctx)
	if err != nil {
		return "", err
	}
	slices.Sort(lat)
	var where []string
	for i, node := range d.lab.Nodes() {
		if k := after[i] - before[i]; k > 0 {
			where = append(where, fmt.Sprintf("%d on %s", k, node.Name()))
		}
	}
	return fmt.Sprintf("p50 %v, p99 %v; %s", lat[n/2].Round(100*time.Microsecond), lat[n*99/100].Round(100*time.Microsecond),
		strings.Join(where, ", ")), nil
}

// getCalls reads how many GETs each data node has run.
func (d *demo) getCalls(ctx context.Context) ([]int, error) {
	var calls []int
	for _, n := range d.lab.Nodes() {
		info, err := n.Do(ctx, "INFO", "commandstats").Text()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name(), err)
		}
		stat, _ := strings.CutPrefix(redisinfo.ParseInfo(info)["cmdstat_get"], "calls=")
		k, _ := strconv.Atoi(strings.SplitN(stat, ",", 2)[0])
		calls = append(calls, k)
	}
	return calls, nil
}

// printTable prints the election's table with the lab's node names.
func (d *demo) printTable(table []replica.NodeStatus) {
	var b strings.Builder
	writeProbeTable(&b, table, d.names)
	fmt.Fprint(d.out, indent(b.String()))
}

// names replaces the lab's node addresses with "nodeN (addr)".
func (d *demo) names(s string) string {
	for _, n := range d.lab.Nodes() {
		s = strings.ReplaceAll(s, n.Addr(), n.Name())
	}
	return s
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "")
}
