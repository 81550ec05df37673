package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/lab"
)

func newLabCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run local Redis topologies",
	}
	groupCommand(cmd)
	cmd.AddCommand(newLabUpCommand())
	return cmd
}

type labFlags struct {
	cluster    string
	replicas   int
	sentinels  int
	latency    []string
	tls        bool
	proxy      bool
	masterName string
	json       bool
	timeout    time.Duration
	server     string
}

func newLabUpCommand() *cobra.Command { return labUpCommand(&labFlags{}) }

// labUpCommand is lab up with its flags parsed into f.
func labUpCommand(f *labFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local topology in the foreground until Ctrl-C",
		Long: `Start a local Redis topology on loopback (real redis-server and
redis-sentinel processes), print its nodes and a ready URL, and stop it
cleanly on Ctrl-C.

--cluster NxR (or N×R) starts a Redis Cluster instead: N shards of a
master and R replicas each, the 16384 slots split evenly between them, no
sentinels (so it cannot be given with --replicas, --sentinels or
--master-name). Its nodes are numbered in shard order: shard s is nodes
s*(R+1) to s*(R+1)+R, the first of them its master at the start; with
--cluster 3x1, node0 and node1 are shard 0, node2 and node3 shard 1, node4
and node5 shard 2. The table gains a SHARD column, and the URL is
go-redis's cluster form, every node a seed
(redis://node0?addr=node1&addr=..., for redis.ParseClusterURL; with --tls
it also names the CA's file, caFile, which go-redis does not read: give it
to the client's TLSConfig); rediskit's other commands learn cluster URLs
in a later version.

Passwords come from REDISKIT_PASSWORD (data nodes) and
REDISKIT_SENTINEL_PASSWORD (sentinels) and are never printed: the URL is
printed without them, and other rediskit commands run with the same
environment fill them in. With --tls the URL carries the throwaway CA's
file (caFile), valid while the lab runs.

--latency nodeN=ms adds a round trip to a data node through its proxy: a
bare number is milliseconds (node2=42), or give a Go duration (node2=42ms,
node2=1.5s). node0 is the master, node1.. the replicas (in a cluster, the
numbering above; the delay applies to the node's cluster bus too).

--timeout bounds the start: every server answering, every replica synced,
every sentinel knowing the master, its replicas and its peers (in a
cluster: every node agreeing on the slots and each shard's master). When it
is exceeded, whatever was started is stopped and lab up exits with 1.

With --json, one JSON object describes the lab once it is ready:
{"url", "master_name", "tls", "server_version", "cluster": {"shards",
"replicas"}, "nodes": [{"name", "shard", "role", "addr", "server", "pid",
"latency_ms"}], "sentinels": [{"name", "addr", "pid"}]}; "cluster" and each
node's "shard" only for a cluster, "master_name" only with sentinels.`,
		Example: `  rediskit lab up --replicas 2 --sentinels 3 --latency node2=42
  rediskit lab up --replicas 1 --sentinels 0 --latency node0=1.5ms --latency node1=20ms --tls --json
  rediskit lab up --cluster 3x1 --latency node3=20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(cmd.Flags().Changed)
			if err != nil {
				return err
			}
			return runLabUp(cmd, cfg, f.json, f.timeout)
		},
	}
	cmd.Flags().StringVar(&f.cluster, "cluster", "", "start a Redis Cluster of N shards of a master and R replicas each, as NxR (3x1); no sentinels")
	cmd.Flags().IntVar(&f.replicas, "replicas", 2, "replicas of the master")
	cmd.Flags().IntVar(&f.sentinels, "sentinels", 3, "sentinels monitoring the master (0 for none)")
	cmd.Flags().StringArrayVar(&f.latency, "latency", nil, "added round trip for a node, as nodeN=ms or nodeN=duration (node2=42, node2=42ms, node2=1.5s; repeatable); implies --proxy")
	cmd.Flags().BoolVar(&f.tls, "tls", false, "serve over TLS with a throwaway CA")
	cmd.Flags().BoolVar(&f.proxy, "proxy", false, "put every data node behind a latency proxy")
	cmd.Flags().StringVar(&f.masterName, "master-name", lab.DefaultMasterName, "the name the sentinels monitor the master under")
	cmd.Flags().BoolVar(&f.json, "json", false, "describe the lab as one JSON object")
	cmd.Flags().StringVar(&f.server, "server", "", "the server to run: redis or valkey (default: $"+lab.ServerEnv+", else redis)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", lab.DefaultStartTimeout,
		"bound on the start: every server up, replicas synced, sentinels ready")
	return cmd
}

// config is the lab the flags describe; changed reports whether a flag
// was given on the command line (cmd.Flags().Changed), so that --cluster
// can refuse what a cluster has no use for even when it is given with its
// default value.
func (f labFlags) config(changed func(name string) bool) (lab.Config, error) {
	cfg := lab.Config{
		Replicas:         f.replicas,
		Sentinels:        f.sentinels,
		TLS:              f.tls,
		Proxy:            f.proxy,
		MasterName:       f.masterName,
		Password:         os.Getenv(envPassword),
		SentinelPassword: os.Getenv(envSentinelPassword),
		StartTimeout:     f.timeout,
	}
	if f.timeout <= 0 {
		return cfg, usagef("--timeout must be positive")
	}
	kind, err := lab.ParseServerKind(f.server)
	if err != nil {
		return cfg, usagef("--server %q: want redis or valkey", f.server)
	}
	cfg.Server = kind
	if f.replicas < 0 || f.sentinels < 0 {
		return cfg, usagef("--replicas and --sentinels cannot be negative")
	}
	if f.masterName == "" || strings.ContainsAny(f.masterName, " /?#@") {
		return cfg, usagef("--master-name %q: want a name without spaces, '/', '?', '#' or '@'", f.masterName)
	}
	nodes := f.replicas + 1
	if changed("cluster") {
		shards, replicas, err := parseCluster(f.cluster)
		if err != nil {
			return cfg, err
		}
		for _, name := range []string{"replicas", "sentinels", "master-name"} {
			if changed(name) {
				return cfg, usagef("--cluster and --%s cannot be given together: a cluster has no sentinels and no master name, and NxR sets its replicas (R of each master)", name)
			}
		}
		cfg.Shards, cfg.Replicas, cfg.Sentinels = shards, replicas, 0
		cfg.MasterName, cfg.SentinelPassword = "", ""
		nodes = shards * (replicas + 1)
	}
	for _, spec := range f.latency {
		idx, d, err := parseLatency(spec, nodes)
		if err != nil {
			return cfg, err
		}
		// Nodes may be shorter than the topology: a cluster's can be large.
		if idx >= len(cfg.Nodes) {
			cfg.Nodes = append(cfg.Nodes, make([]lab.NodeConfig, idx+1-len(cfg.Nodes))...)
		}
		cfg.Nodes[idx].Latency = d
		cfg.Proxy = true
	}
	return cfg, nil
}

// maxClusterShards is the most shards --cluster takes: each master serves
// at least one of the cluster's slots.
const maxClusterShards = lab.ClusterSlots

// parseCluster parses --cluster's NxR ("3x1"; "3X1" and "3×1" too): N
// shards, at least 1, of a master and R replicas each, 0 or more.
func parseCluster(spec string) (shards, replicas int, err error) {
	bad := func(why string) error {
		return usagef("--cluster %q: %s: want NxR, N shards (1 to %d) of a master and R replicas each, e.g. 3x1", spec, why, maxClusterShards)
	}
	n, r, ok := "", "", false
	for _, sep := range []string{"x", "X", "×"} {
		if n, r, ok = strings.Cut(spec, sep); ok {
			break
		}
	}
	if !ok {
		return 0, 0, bad("no 'x' between N and R")
	}
	if shards, ok = smallCount(n); !ok || shards < 1 || shards > maxClusterShards {
		return 0, 0, bad(fmt.Sprintf("invalid shard count %q", n))
	}
	if replicas, ok = smallCount(r); !ok {
		return 0, 0, bad(fmt.Sprintf("invalid replica count %q", r))
	}
	return shards, replicas, nil
}

// smallCount parses a count written in decimal digits only (no sign, no
// space), below 2^16, so that a cluster's node count cannot overflow.
func smallCount(s string) (int, bool) {
	n, err := strconv.ParseUint(s, 10, 16)
	return int(n), err == nil
}

// parseLatency parses "node2=42" (a bare number is milliseconds), or a Go
// duration such as "node2=42ms" or "node2=1.5s", for a lab of nodes data
// nodes; the node may be given as its index alone ("2=42").
func parseLatency(spec string, nodes int) (int, time.Duration, error) {
	name, value, ok := strings.Cut(spec, "=")
	if !ok {
		return 0, 0, usagef("--latency %q: want nodeN=ms or nodeN=duration, e.g. node2=42 or node2=42ms", spec)
	}
	idx, err := strconv.Atoi(strings.TrimPrefix(name, "node"))
	if err != nil || idx < 0 || idx >= nodes {
		return 0, 0, usagef("--latency %q: no node %q (nodes are node0..node%d)", spec, name, nodes-1)
	}
	d, err := parseMillis(value)
	if err != nil || d < 0 {
		return 0, 0, usagef("--latency %q: invalid latency %q: want milliseconds (42, 0.5) or a duration (42ms, 1.5s)", spec, value)
	}
	return idx, d, nil
}

// parseMillis parses a bare number as milliseconds ("42", "0.5") and
// anything else as a Go duration ("42ms", "1.5s").
func parseMillis(value string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(value, 64); err == nil {
		if math.IsNaN(n) || n < 0 || n > float64(math.MaxInt64/int64(time.Millisecond)) {
			return 0, fmt.Errorf("latency %q out of range", value)
		}
		return time.Duration(n * float64(time.Millisecond)), nil
	}
	return time.ParseDuration(value)
}

func runLabUp(cmd *cobra.Command, cfg lab.Config, asJSON bool, timeout time.Duration) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	l, err := startLab(ctx, cfg, timeout)
	if err != nil {
		return err
	}
	// In JSON mode stdout holds the one object; the rest goes to stderr.
	notes := out
	if asJSON {
		notes = cmd.ErrOrStderr()
	}
	defer func() {
		began := time.Now()
		pids := len(l.PIDs())
		if err := l.Close(); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "close: %v\n", err)
		}
		fmt.Fprintf(notes, "stopped %d processes in %v\n", pids, time.Since(began).Round(time.Millisecond))
	}()
	if asJSON {
		if err := writeJSON(out, describeLabJSON(ctx, l)); err != nil {
			return err
		}
	} else if err := describeLab(ctx, out, l); err != nil {
		return err
	}
	fmt.Fprintln(notes, "lab is up; Ctrl-C stops it")
	<-ctx.Done()
	return nil
}

// startLab starts a lab within timeout (cfg.StartTimeout is the lab's own
// bound; the context makes it hold whatever the lab waits on). Exceeding it
// is reported as such, not as a bare "context deadline exceeded".
func startLab(ctx context.Context, cfg lab.Config, timeout time.Duration) (*lab.Lab, error) {
	began := time.Now()
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	l, err := lab.Start(startCtx, cfg)
	if err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || startCtx.Err() != nil) {
		return nil, fmt.Errorf("the lab did not start within --timeout %v (gave up after %v; everything started was stopped): %w",
			timeout, time.Since(began).Round(time.Millisecond), err)
	}
	return l, err
}

// describeLab writes the lab's table (lab.WriteStatus) and its ready URL,
// which carries no password.
func describeLab(ctx context.Context, w io.Writer, l *lab.Lab) error {
	if err := lab.WriteStatus(w, l.Status(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(w, "Server: %s\n", l.ServerVersion())
	c := l.Config()
	if l.IsCluster() {
		// As --cluster takes it; the table says which node is each shard's master.
		fmt.Fprintf(w, "Cluster: %dx%d (shards x replicas of each master)\n", len(l.ShardIDs()), c.Replicas)
	}
	fmt.Fprintf(w, "URL: %s\n", readyURL(l))
	switch {
	case l.IsCluster() && c.Password != "":
		fmt.Fprintf(w, "(the password is not printed: it is %s's; rediskit commands learn cluster URLs in a later version)\n", envPassword)
	case c.Password != "" || c.SentinelPassword != "":
		fmt.Fprintf(w, "(passwords are not printed: rediskit commands take them from %s / %s)\n", envPassword, envSentinelPassword)
	}
	return nil
}

// labJSON is lab up's --json object.
type labJSON struct {
	URL        string `json:"url"`
	MasterName string `json:"master_name,omitempty"`
	TLS        bool   `json:"tls"`
	// ServerVersion is what the data nodes run: "Valkey 8.0.1".
	ServerVersion string `json:"server_version"`
	// Cluster is the cluster's shape; absent outside a cluster.
	Cluster   *labClusterJSON `json:"cluster,omitempty"`
	Nodes     []labNodeJSON   `json:"nodes"`
	Sentinels []labSentJSON   `json:"sentinels"`
}

type labClusterJSON struct {
	Shards   int `json:"shards"`
	Replicas int `json:"replicas"` // of each shard's master
}

type labNodeJSON struct {
	Name string `json:"name"`
	// Shard is the node's shard in a cluster; absent outside one (a
	// pointer, so that shard 0 is written).
	Shard     *int    `json:"shard,omitempty"`
	Role      string  `json:"role"`
	Addr      string  `json:"addr"`
	Server    string  `json:"server"`
	PID       int     `json:"pid"`
	LatencyMS float64 `json:"latency_ms"`
}

type labSentJSON struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
}

// describeLabJSON is the lab's --json object, from the same rows as the
// table.
func describeLabJSON(ctx context.Context, l *lab.Lab) labJSON {
	d := labJSON{URL: readyURL(l), TLS: l.TLS() != nil, ServerVersion: l.ServerVersion().String(), Nodes: []labNodeJSON{}, Sentinels: []labSentJSON{}}
	if len(l.Sentinels()) > 0 {
		d.MasterName = l.MasterName()
	}
	if l.IsCluster() {
		d.Cluster = &labClusterJSON{Shards: len(l.ShardIDs()), Replicas: l.Config().Replicas}
	}
	for _, r := range l.Status(ctx) {
		if r.Role == "sentinel" {
			d.Sentinels = append(d.Sentinels, labSentJSON{Name: r.Name, Addr: r.Addr, PID: r.PID})
			continue
		}
		n := labNodeJSON{Name: r.Name, Role: r.Role, Addr: r.Addr, Server: r.Server, PID: r.PID, LatencyMS: ms(r.Latency)}
		if r.Shard >= 0 {
			n.Shard = &r.Shard
		}
		d.Nodes = append(d.Nodes, n)
	}
	return d
}
