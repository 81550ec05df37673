//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
)

// labUpConfig parses lab up's flags as the command line would and returns
// the lab they describe.
func labUpConfig(t *testing.T, args ...string) (lab.Config, error) {
	t.Helper()
	f := &labFlags{}
	cmd := labUpCommand(f)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("lab up %q: %v", args, err)
	}
	return f.config(cmd.Flags().Changed)
}

// --cluster NxR makes a cluster lab of N shards of R replicas, with no
// sentinel, and is refused with what a cluster has no use for.
func TestLabClusterFlags(t *testing.T) {
	t.Setenv(envPassword, "cluster-pw")
	t.Setenv(envSentinelPassword, "sentinel-pw")
	for _, tc := range []struct {
		args               []string
		shards, replicas   int
		sentinels          int
		latencies          []time.Duration // cfg.Nodes' latencies, by index
		sentinelPassword   string
		tls, proxy         bool
		server             lab.ServerKind
		wantErr, errDetail string
	}{
		{args: []string{"--cluster", "3x1"}, shards: 3, replicas: 1},
		{args: []string{"--cluster", "3×2"}, shards: 3, replicas: 2},
		{args: []string{"--cluster", "3X2"}, shards: 3, replicas: 2},
		{args: []string{"--cluster", "1x0"}, shards: 1, replicas: 0},
		{args: []string{"--cluster=16384x0"}, shards: 16384, replicas: 0},
		{args: []string{"--cluster", "2x1", "--latency", "node3=5", "--latency", "1=1.5ms"}, shards: 2, replicas: 1,
			latencies: []time.Duration{0, 1500 * time.Microsecond, 0, 5 * time.Millisecond}, proxy: true},
		{args: []string{"--cluster", "2x1", "--tls", "--server", "valkey", "--proxy"}, shards: 2, replicas: 1,
			tls: true, proxy: true, server: lab.ServerValkey},
		// Without --cluster, the Sentinel lab as before.
		{args: nil, replicas: 2, sentinels: 3, latencies: []time.Duration{}, sentinelPassword: "sentinel-pw"},
		{args: []string{"--replicas", "1", "--latency", "node1=5"}, replicas: 1, sentinels: 3,
			latencies: []time.Duration{0, 5 * time.Millisecond}, sentinelPassword: "sentinel-pw", proxy: true},

		{args: []string{"--cluster", "0x1"}, wantErr: `--cluster "0x1"`, errDetail: `invalid shard count "0"`},
		{args: []string{"--cluster", "3"}, wantErr: `--cluster "3"`, errDetail: "no 'x'"},
		{args: []string{"--cluster", "x1"}, wantErr: `--cluster "x1"`, errDetail: `invalid shard count ""`},
		{args: []string{"--cluster", "3x-1"}, wantErr: `--cluster "3x-1"`, errDetail: `invalid replica count "-1"`},
		{args: []string{"--cluster", "3x"}, wantErr: `--cluster "3x"`, errDetail: `invalid replica count ""`},
		{args: []string{"--cluster", "3x1x1"}, wantErr: `--cluster "3x1x1"`, errDetail: `invalid replica count "1x1"`},
		{args: []string{"--cluster", "+3x1"}, wantErr: `--cluster "+3x1"`, errDetail: `invalid shard count "+3"`},
		{args: []string{"--cluster", " 3x1"}, wantErr: `--cluster " 3x1"`, errDetail: `invalid shard count " 3"`},
		{args: []string{"--cluster", "16385x0"}, wantErr: `--cluster "16385x0"`, errDetail: "1 to 16384"},
		{args: []string{"--cluster", "3x99999"}, wantErr: `--cluster "3x99999"`, errDetail: `invalid replica count "99999"`},
		{args: []string{"--cluster", ""}, wantErr: `--cluster ""`, errDetail: "no 'x'"},
		{args: []string{"--cluster", "3x1", "--sentinels", "3"}, wantErr: "--cluster and --sentinels cannot be given together"},
		// Given with its default value, still refused: the user meant something.
		{args: []string{"--cluster", "3x1", "--sentinels", "0"}, wantErr: "--cluster and --sentinels cannot be given together"},
		{args: []string{"--replicas", "2", "--cluster", "3x1"}, wantErr: "--cluster and --replicas cannot be given together"},
		{args: []string{"--cluster", "3x1", "--master-name", "shop"}, wantErr: "--cluster and --master-name cannot be given together"},
		{args: []string{"--cluster", "2x1", "--latency", "node4=5"}, wantErr: `--latency "node4=5"`, errDetail: "node0..node3"},
		{args: []string{"--cluster", "0x1", "--sentinels", "3"}, wantErr: `--cluster "0x1"`},
		{args: []string{"--latency", "node3=5"}, wantErr: `--latency "node3=5"`, errDetail: "node0..node2"},
	} {
		name := strings.Join(tc.args, " ")
		cfg, err := labUpConfig(t, tc.args...)
		if tc.wantErr != "" {
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.errDetail) {
				t.Errorf("lab up %s: error %v, want a usage error with %q and %q", name, err, tc.wantErr, tc.errDetail)
			}
			continue
		}
		if err != nil {
			t.Errorf("lab up %s: %v", name, err)
			continue
		}
		latencies := []time.Duration{}
		for _, n := range cfg.Nodes {
			latencies = append(latencies, n.Latency)
		}
		if tc.latencies == nil {
			tc.latencies = []time.Duration{}
		}
		if cfg.Shards != tc.shards || cfg.Replicas != tc.replicas || cfg.Sentinels != tc.sentinels ||
			!slices.Equal(latencies, tc.latencies) || cfg.TLS != tc.tls || cfg.Proxy != tc.proxy || cfg.Server != tc.server ||
			cfg.Password != "cluster-pw" || cfg.SentinelPassword != tc.sentinelPassword || cfg.StartTimeout != lab.DefaultStartTimeout {
			t.Errorf("lab up %s: %d shards × %d replicas, %d sentinels, latencies %v, TLS %v, proxy %v, server %v, passwords set %v/%v; "+
				"want %d × %d, %d, %v, %v, %v, %v, sentinel password %v",
				name, cfg.Shards, cfg.Replicas, cfg.Sentinels, latencies, cfg.TLS, cfg.Proxy, cfg.Server,
				cfg.Password != "", cfg.SentinelPassword != "",
				tc.shards, tc.replicas, tc.sentinels, tc.latencies, tc.tls, tc.proxy, tc.server, tc.sentinelPassword != "")
		}
	}
}

// lab up --cluster starts a Redis Cluster: the JSON report gives its shape
// and each node's shard, role and latency, the URL (no password in it)
// works with go-redis's cluster client given the environment's password,
// and Ctrl-C stops every server.
func TestLabUpCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := startRediskit(t, ctx, envPasswords, true, "lab", "up", "--cluster", "2x1", "--latency", "node1=5", "--json")
	r.waitFor(t, "Ctrl-C stops it")
	r.waitUntil(t, "print the JSON report on stdout", func() bool { return json.Valid([]byte(r.out.String())) })
	var d labJSON
	decodeJSON(t, r.output(), r.out.String(), &d)
	if d.Cluster == nil || *d.Cluster != (labClusterJSON{Shards: 2, Replicas: 1}) || d.MasterName != "" || len(d.Sentinels) != 0 || d.TLS {
		t.Fatalf("lab %+v (cluster %+v), want a 2x1 cluster without sentinels or TLS", d, d.Cluster)
	}
	var got []string
	for _, n := range d.Nodes {
		shard := "none"
		if n.Shard != nil {
			shard = fmt.Sprint(*n.Shard)
		}
		got = append(got, fmt.Sprintf("%s shard %s %s %vms", n.Name, shard, n.Role, n.LatencyMS))
		if n.PID == 0 || n.Addr == "" || n.Addr == n.Server {
			t.Errorf("node %+v: want a PID and a proxy address apart from the server's", n)
		}
	}
	want := []string{"node0 shard 0 master 0ms", "node1 shard 0 replica 5ms", "node2 shard 1 master 0ms", "node3 shard 1 replica 0ms"}
	if !slices.Equal(got, want) {
		t.Fatalf("nodes %q, want %q", got, want)
	}
	if !strings.HasPrefix(d.URL, "redis://"+d.Nodes[0].Addr+"?addr=") || strings.Contains(d.URL, "@") || strings.Contains(d.URL, "xxxxx") {
		t.Fatalf("the ready URL %q: want go-redis's cluster URL from node0, without credentials", d.URL)
	}

	opts, err := redis.ParseClusterURL(d.URL)
	if err != nil {
		t.Fatalf("redis.ParseClusterURL(%q): %v", d.URL, err)
	}
	var addrs []string
	for _, n := range d.Nodes {
		addrs = append(addrs, n.Addr)
	}
	if !slices.Equal(opts.Addrs, addrs) || opts.Password != "" {
		t.Fatalf("the URL's seeds %v, want every node's address %v (and no password)", opts.Addrs, addrs)
	}
	// The password from the environment, as rediskit's commands do; no
	// retries, as everywhere in rediskit.
	opts.Password, opts.MaxRetries = dataSecret, -1
	cc := redis.NewClusterClient(opts)
	defer func() { _ = cc.Close() }()
	for i := range 20 {
		key := fmt.Sprintf("lab-up-cluster:%d", i)
		if err := cc.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s through the ready URL: %v", key, err)
		}
		if v, err := cc.Get(ctx, key).Int(); err != nil || v != i {
			t.Fatalf("GET %s through the ready URL: %d, %v; want %d", key, v, err, i)
		}
	}
	// The keys landed on both shards' masters: the client routed by slot.
	var mu sync.Mutex
	sizes := map[string]int64{}
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		mu.Lock() // ForEachMaster calls this from a goroutine per master
		sizes[m.Options().Addr] = n
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[d.Nodes[0].Addr] == 0 || sizes[d.Nodes[2].Addr] == 0 ||
		sizes[d.Nodes[0].Addr]+sizes[d.Nodes[2].Addr] != 20 {
		t.Fatalf("keys per master %v: want the 20 keys split between node0 (%s) and node2 (%s)", sizes, d.Nodes[0].Addr, d.Nodes[2].Addr)
	}
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}

	r.interrupt(t)
	contains(t, r.errs.String(), "stopped 4 processes")
	var pids []int
	for _, n := range d.Nodes {
		pids = append(pids, n.PID)
	}
	assertGone(t, pids)
}
