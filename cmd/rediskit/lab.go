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

func newLabUpCommand() *cobra.Command {
	var f labFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local topology in the foreground until Ctrl-C",
		Long: `Start a local Redis topology on loopback (real redis-server and
redis-sentinel processes), print its nodes and a ready URL, and stop it
cleanly on Ctrl-C.

Passwords come from REDISKIT_PASSWORD (data nodes) and
REDISKIT_SENTINEL_PASSWORD (sentinels) and are never printed: the URL is
printed without them, and other rediskit commands run with the same
environment fill them in. With --tls the URL carries the throwaway CA's
file (caFile), valid while the lab runs.

--latency nodeN=ms adds a round trip to a data node through its proxy: a
bare number is milliseconds (node2=42), or give a Go duration (node2=42ms,
node2=1.5s). node0 is the master, node1.. the replicas.

--timeout bounds the start: every server answering, every replica synced,
every sentinel knowing the master, its replicas and its peers. When it is
exceeded, whatever was started is stopped and lab up exits with 1.

With --json, one JSON object describes the lab once it is ready:
{"url", "master_name", "tls", "server_version", "nodes": [{"name", "role", "addr",
"server", "pid", "latency_ms"}], "sentinels": [{"name", "addr", "pid"}]}.`,
		Example: `  rediskit lab up --replicas 2 --sentinels 3 --latency node2=42
  rediskit lab up --replicas 1 --sentinels 0 --latency node0=1.5ms --latency node1=20ms --tls --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			return runLabUp(cmd, cfg, f.json, f.timeout)
		},
	}
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

func (f labFlags) config() (lab.Config, error) {
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
	cfg.Nodes = make([]lab.NodeConfig, f.replicas+1)
	for _, spec := range f.latency {
		idx, d, err := parseLatency(spec, f.replicas)
		if err != nil {
			return cfg, err
		}
		cfg.Nodes[idx].Latency = d
		cfg.Proxy = true
	}
	return cfg, nil
}

// parseLatency parses "node2=42" (a bare number is milliseconds), or a Go
// duration such as "node2=42ms" or "node2=1.5s"; the node may be given as
// its index alone ("2=42").
func parseLatency(spec string, replicas int) (int, time.Duration, error) {
	name, value, ok := strings.Cut(spec, "=")
	if !ok {
		return 0, 0, usagef("--latency %q: want nodeN=ms or nodeN=duration, e.g. node2=42 or node2=42ms", spec)
	}
	idx, err := strconv.Atoi(strings.TrimPrefix(name, "node"))
	if err != nil || idx < 0 || idx > replicas {
		return 0, 0, usagef("--latency %q: no node %q (nodes are node0..node%d)", spec, name, replicas)
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
	fmt.Fprintf(w, "URL: %s\n", readyURL(l))
	c := l.Config()
	if c.Password != "" || c.SentinelPassword != "" {
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
	ServerVersion string        `json:"server_version"`
	Nodes         []labNodeJSON `json:"nodes"`
	Sentinels     []labSentJSON `json:"sentinels"`
}

type labNodeJSON struct {
	Name      string  `json:"name"`
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
	for _, r := range l.Status(ctx) {
		if r.Role == "sentinel" {
			d.Sentinels = append(d.Sentinels, labSentJSON{Name: r.Name, Addr: r.Addr, PID: r.PID})
			continue
		}
		d.Nodes = append(d.Nodes, labNodeJSON{Name: r.Name, Role: r.Role, Addr: r.Addr, Server: r.Server,
			PID: r.PID, LatencyMS: ms(r.Latency)})
	}
	return d
}
