package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/examples/ringworker/worker"
	"github.com/rediskit/rediskit/hashring"
)

// ringFlags are the flags every ring subcommand shares.
type ringFlags struct {
	targetFlags
	key   string
	crc32 bool
}

func (f *ringFlags) register(cmd *cobra.Command) {
	f.targetFlags.register(cmd)
	cmd.Flags().StringVar(&f.key, "key", "", "the ring's Redis key (required)")
	cmd.Flags().BoolVar(&f.crc32, "crc32", false, "hash keys with CRC-32 instead of xxHash (older rings)")
}

func (f *ringFlags) config() hashring.Config {
	cfg := hashring.Config{SubscribeTimeout: f.timeout}
	if f.crc32 {
		cfg.Hash = hashring.CRC32
	}
	return cfg
}

// open resolves the target and returns a client for it: the rediskit
// cluster client for a cluster URL.
func (f *ringFlags) open(ctx context.Context, args []string) (*target, redis.UniversalClient, error) {
	if f.key == "" {
		return nil, nil, usagef("--key is required: the ring's Redis key")
	}
	t, err := openTarget(ctx, args, &f.targetFlags)
	if err != nil {
		return nil, nil, err
	}
	var c redis.UniversalClient
	if t.isCluster() {
		c, err = t.clusterClient(cluster.Config{})
	} else {
		c, err = t.client(nil)
	}
	if err != nil {
		_ = t.Close()
		return nil, nil, usageError{err}
	}
	return t, c, nil
}

func newRingCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ring",
		Short: "Inspect and join a hash ring (package hashring, redis-hashring compatible)",
		Long: `Inspect a hash ring stored in Redis (package hashring, wire-compatible with
redis-hashring 0.6), find which node owns an item, or join it with an
example node.

On a Redis Cluster (a redis+cluster:// URL, or redis://h1?addr=h2) the
ring works as on one server, through the rediskit cluster client: the
ring is one key (a sorted set, --key), so it lives in one slot, on one
shard, and needs no hash tag; its notices are published on the channel of
the same name, which cluster pub/sub carries to every node.`,
	}
	groupCommand(cmd)
	cmd.AddCommand(newRingPrintCommand(), newRingOwnerCommand(), newRingJoinCommand())
	return cmd
}

func newRingPrintCommand() *cobra.Command {
	var f ringFlags
	cmd := &cobra.Command{
		Use:   "print URL --key K",
		Short: "Print the ring's replicas and nodes (redis-hashring's debug listing)",
		Long: `Print the ring's debug listing, read from Redis now: every replica in ring
order with its share of the ring, the seconds since its last heartbeat
and its node, expired replicas marked (EXPIRED); then every node with
its share, replica count, largest delay, hostname and PID.

With --json: {"key", "hash", "read_at", "nodes": [{"id", "hostname",
"pid", "replicas", "share", "oldest_heartbeat"}], "replicas": [{"start",
"member", "node", "heartbeat"}]} (live replicas only).`,
		Example: `  rediskit ring print redis://127.0.0.1:6379 --key example-ring`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, c, err := f.open(cmd.Context(), args)
			if err != nil {
				return err
			}
			defer t.Close()
			defer c.Close()
			return runRingPrint(cmd.Context(), cmd.OutOrStdout(), c, &f)
		},
	}
	f.register(cmd)
	return cmd
}

// ringJSON is ring print's --json report.
type ringJSON struct {
	Key      string            `json:"key"`
	Hash     string            `json:"hash"`
	ReadAt   time.Time         `json:"read_at"`
	Nodes    []ringNodeJSON    `json:"nodes"`
	Replicas []ringReplicaJSON `json:"replicas"`
}

type ringNodeJSON struct {
	ID              string    `json:"id"`
	Hostname        string    `json:"hostname"`
	PID             string    `json:"pid"`
	Replicas        int       `json:"replicas"`
	Share           float64   `json:"share"`
	OldestHeartbeat time.Time `json:"oldest_heartbeat"`
}

type ringReplicaJSON struct {
	Start     uint32    `json:"start"`
	Member    string    `json:"member"`
	Node      string    `json:"node"`
	Heartbeat time.Time `json:"heartbeat"`
}

func runRingPrint(ctx context.Context, out io.Writer, c redis.UniversalClient, f *ringFlags) error {
	r, err := hashring.NewRing(c, f.key, f.config())
	if err != nil {
		return usageError{err}
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if !f.json {
		return r.Print(ctx, out)
	}
	s, err := r.Load(ctx)
	if err != nil {
		return err
	}
	rep := ringJSON{Key: s.Key(), Hash: s.Hash().String(), ReadAt: s.ReadAt(), Nodes: []ringNodeJSON{}, Replicas: []ringReplicaJSON{}}
	for _, n := range s.Nodes() {
		rep.Nodes = append(rep.Nodes, ringNodeJSON{ID: n.ID, Hostname: n.Hostname, PID: n.PID, Replicas: n.Replicas,
			Share: n.Share(), OldestHeartbeat: n.OldestHeartbeat})
	}
	for _, rp := range s.Replicas() {
		rep.Replicas = append(rep.Replicas, ringReplicaJSON{Start: rp.Start, Member: rp.String(), Node: rp.NodeID(), Heartbeat: rp.Heartbeat})
	}
	return writeJSON(out, rep)
}

func newRingOwnerCommand() *cobra.Command {
	var f ringFlags
	cmd := &cobra.Command{
		Use:   "owner URL --key K ITEM...",
		Short: "Say which node owns each item",
		Long: `Read the ring once and print, for each item, its point on the ring and the
node ("hostname:pid") that owns it. The exit code is 1 when the ring has
no live node, so no item has an owner.

With --json: {"key", "nodes", "owners": [{"item", "point", "owner"}]}
("owner" is "" when there is none).`,
		Example: `  rediskit ring owner redis://127.0.0.1:6379 --key example-ring 17 42 account-7`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || (!f.lab && len(args) < 2) {
				return usagef("give the URL (or --lab) and at least one ITEM")
			}
			var urlArgs []string
			items := args
			if !f.lab {
				urlArgs, items = args[:1], args[1:]
			}
			t, c, err := f.open(cmd.Context(), urlArgs)
			if err != nil {
				return err
			}
			defer t.Close()
			defer c.Close()
			return runRingOwner(cmd.Context(), cmd.OutOrStdout(), c, &f, items)
		},
	}
	f.register(cmd)
	return cmd
}

type ownersJSON struct {
	Key    string      `json:"key"`
	Nodes  int         `json:"nodes"`
	Owners []ownerJSON `json:"owners"`
}

type ownerJSON struct {
	Item  string `json:"item"`
	Point uint32 `json:"point"`
	Owner string `json:"owner"`
}

func runRingOwner(ctx context.Context, out io.Writer, c redis.UniversalClient, f *ringFlags, items []string) error {
	r, err := hashring.NewRing(c, f.key, f.config())
	if err != nil {
		return usageError{err}
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	s, err := r.Load(ctx)
	if err != nil {
		return err
	}
	rep := ownersJSON{Key: s.Key(), Nodes: s.NodeCount(), Owners: []ownerJSON{}}
	for _, it := range items {
		owner, _ := s.Owner(it)
		rep.Owners = append(rep.Owners, ownerJSON{Item: it, Point: s.Point(it), Owner: owner})
	}
	if f.json {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
	} else {
		width := len("ITEM")
		for _, it := range items {
			width = max(width, len(it))
		}
		fmt.Fprintf(out, "ring %q: %d node(s)\n", s.Key(), s.NodeCount())
		fmt.Fprintf(out, "%-*s  %10s  %s\n", width, "ITEM", "POINT", "OWNER")
		for _, o := range rep.Owners {
			owner := o.Owner
			if owner == "" {
				owner = "(none)"
			}
			fmt.Fprintf(out, "%-*s  %10d  %s\n", width, o.Item, o.Point, owner)
		}
	}
	if s.NodeCount() == 0 {
		return checkFailed{fmt.Errorf("ring %q has no live node: no item has an owner", s.Key())}
	}
	return nil
}

func newRingJoinCommand() *cobra.Command {
	var f ringFlags
	var items int
	cmd := &cobra.Command{
		Use:   "join URL --key K",
		Short: "Run an example node that logs the items it owns until Ctrl-C",
		Long: `Join the ring as a node (16 replicas, this host's name and this process's
PID, the library's default timings: 10s heartbeat, 60s expiry, so it can
share a ring with other Go and Python nodes) and print the items it owns,
named 0 … N-1 as redis-hashring's example names its accounts, each time
they change. Ctrl-C leaves the ring (the others take the items over at
once) and exits 0. The node's warnings go to stderr.

With --json, one JSON object per line: {"time", "node", "nodes",
"owned", "items"}.`,
		Example: `  rediskit ring join redis://127.0.0.1:6379 --key example-ring --items 20`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if items <= 0 {
				return usagef("--items must be positive")
			}
			t, c, err := f.open(cmd.Context(), args)
			if err != nil {
				return err
			}
			defer t.Close()
			defer c.Close()
			return runRingJoin(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c, &f, items)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&items, "items", 100, "the number of items, named 0 … items-1")
	return cmd
}

type joinJSON struct {
	Time  time.Time `json:"time"`
	Node  string    `json:"node"`
	Nodes int       `json:"nodes"`
	Owned int       `json:"owned"`
	Items []string  `json:"items"`
}

func runRingJoin(ctx context.Context, out, errOut io.Writer, c redis.UniversalClient, f *ringFlags, n int) error {
	cfg := f.config()
	cfg.Logger = slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := worker.New(c, f.key, worker.Items(n), cfg)
	if err != nil {
		return usageError{err}
	}
	node := w.Node()
	if !f.json {
		fmt.Fprintf(out, "joining ring %q as %s (pid %d) with %d items; Ctrl-C leaves\n", f.key, node.ID(), os.Getpid(), n)
	}
	var last []string
	lastNodes := -1
	printed := false
	err = w.Run(ctx, func(_ context.Context, owned []string) {
		nodes := node.NodeCount()
		if printed && nodes == lastNodes && slices.Equal(owned, last) {
			return
		}
		printed, last, lastNodes = true, owned, nodes
		now := time.Now()
		if f.json {
			_ = writeJSONLine(out, joinJSON{Time: now, Node: node.ID(), Nodes: nodes, Owned: len(owned), Items: append([]string{}, owned...)})
			return
		}
		fmt.Fprintf(out, "%s owns %d of %d items (%d node(s) on the ring): %s\n",
			now.Format("15:04:05.000"), len(owned), n, nodes, strings.Join(owned, " "))
	})
	if err != nil {
		return err
	}
	if !f.json {
		fmt.Fprintf(out, "left ring %q\n", f.key)
	}
	return nil
}
