package main

import (
	"context"
	"fmt"
	"io"
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

With --json, one JSON object describes the lab once it is ready:
{"url", "master_name", "tls", "nodes": [{"name", "role", "addr",
"server", "pid", "latency_ms"}], "sentinels": [{"name", "addr", "pid"}]}.`,
		Example: `  rediskit lab up --replicas 2 --sentinels 3 --latency node2=42ms`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			return runLabUp(cmd, cfg, f.json)
		},
	}
	cmd.Flags().IntVar(&f.replicas, "replicas", 2, "replicas of the master")
	cmd.Flags().IntVar(&f.sentinels, "sentinels", 3, "sentinels monitoring the master (0 for none)")
	cmd.Flags().StringArrayVar(&f.latency, "latency", nil, "added round trip for a node, as nodeN=duration (repeatable); implies --proxy")
	cmd.Flags().BoolVar(&f.tls, "tls", false, "serve over TLS with a throwaway CA")
	cmd.Flags().BoolVar(&f.proxy, "proxy", false, "put every data node behind a latency proxy")
	cmd.Flags().StringVar(&f.masterName, "master-name", lab.DefaultMasterName, "the name the sentinels monitor the master under")
	cmd.Flags().BoolVar(&f.json, "json", false, "describe the lab as one JSON object")
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
	}
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

// parseLatency parses "node2=42ms" (or "2=42ms").
func parseLatency(spec string, replicas int) (int, time.Duration, error) {
	name, value, ok := strings.Cut(spec, "=")
	if !ok {
		return 0, 0, usagef("--latency %q: want nodeN=duration, e.g. node2=42ms", spec)
	}
	idx, err := strconv.Atoi(strings.TrimPrefix(name, "node"))
	if err != nil || idx < 0 || idx > replicas {
		return 0, 0, usagef("--latency %q: no node %q (nodes are node0..node%d)", spec, name, replicas)
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return 0, 0, usagef("--latency %q: invalid duration %q", spec, value)
	}
	return idx, d, nil
}

func runLabUp(cmd *cobra.Command, cfg lab.Config, asJSON bool) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	l, err := lab.Start(ctx, cfg)
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

// describeLab writes the lab's table (lab.WriteStatus) and its ready URL,
// which carries no password.
func describeLab(ctx context.Context, w io.Writer, l *lab.Lab) error {
	if err := lab.WriteStatus(w, l.Status(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(w, "URL: %s\n", readyURL(l))
	c := l.Config()
	if c.Password != "" || c.SentinelPassword != "" {
		fmt.Fprintf(w, "(passwords are not printed: rediskit commands take them from %s / %s)\n", envPassword, envSentinelPassword)
	}
	return nil
}

// labJSON is lab up's --json object.
type labJSON struct {
	URL        string        `json:"url"`
	MasterName string        `json:"master_name,omitempty"`
	TLS        bool          `json:"tls"`
	Nodes      []labNodeJSON `json:"nodes"`
	Sentinels  []labSentJSON `json:"sentinels"`
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
	d := labJSON{URL: readyURL(l), TLS: l.TLS() != nil, Nodes: []labNodeJSON{}, Sentinels: []labSentJSON{}}
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
