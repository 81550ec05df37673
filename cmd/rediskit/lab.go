package main

import (
	"fmt"
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
	cmd.AddCommand(newLabUpCommand())
	return cmd
}

type labFlags struct {
	replicas  int
	sentinels int
	latency   []string
	tls       bool
	proxy     bool
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
REDISKIT_SENTINEL_PASSWORD (sentinels) and are never printed.`,
		Example: `  rediskit lab up --replicas 2 --sentinels 3 --latency node2=42ms`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			return runLabUp(cmd, cfg)
		},
	}
	cmd.Flags().IntVar(&f.replicas, "replicas", 2, "replicas of the master")
	cmd.Flags().IntVar(&f.sentinels, "sentinels", 3, "sentinels monitoring the master (0 for none)")
	cmd.Flags().StringArrayVar(&f.latency, "latency", nil, "added round trip for a node, as nodeN=duration (repeatable); implies --proxy")
	cmd.Flags().BoolVar(&f.tls, "tls", false, "serve over TLS with a throwaway CA")
	cmd.Flags().BoolVar(&f.proxy, "proxy", false, "put every data node behind a latency proxy")
	return cmd
}

func (f labFlags) config() (lab.Config, error) {
	cfg := lab.Config{
		Replicas:         f.replicas,
		Sentinels:        f.sentinels,
		TLS:              f.tls,
		Proxy:            f.proxy,
		Password:         os.Getenv("REDISKIT_PASSWORD"),
		SentinelPassword: os.Getenv("REDISKIT_SENTINEL_PASSWORD"),
	}
	if f.replicas < 0 || f.sentinels < 0 {
		return cfg, usagef("--replicas and --sentinels cannot be negative")
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

func runLabUp(cmd *cobra.Command, cfg lab.Config) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	l, err := lab.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		began := time.Now()
		pids := len(l.PIDs())
		if err := l.Close(); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "close: %v\n", err)
		}
		fmt.Fprintf(out, "stopped %d processes in %v\n", pids, time.Since(began).Round(time.Millisecond))
	}()
	if err := l.Describe(ctx, out); err != nil {
		return err
	}
	if cfg.Password != "" || cfg.SentinelPassword != "" {
		fmt.Fprintln(out, "(passwords are not printed: use the values of REDISKIT_PASSWORD / REDISKIT_SENTINEL_PASSWORD)")
	}
	fmt.Fprintln(out, "lab is up; Ctrl-C stops it")
	<-ctx.Done()
	return nil
}
