package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/examples/shop/shop"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/rediskitotel"
)

// demo is the guided tour's shared state: one lab, the output, and whether
// to keep it short (CI runs the quick tour).
type demo struct {
	out   io.Writer
	quick bool
	lab   *lab.Lab
	// metrics is the tour's OpenTelemetry pipeline, exported in Prometheus
	// format the way the example shop serves it at GET /metrics; the steps
	// report into it.
	metrics        *rediskitotel.Metrics
	metricsHandler http.Handler
	// shop is the example shop, started by the metrics step (openShop)
	// and stopped after the guard step.
	shop *demoShop
}

// demoStep is one stop of the tour. Steps print what happened and the
// figure they measured.
type demoStep struct {
	title string
	run   func(d *demo, ctx context.Context) error
}

func demoSteps() []demoStep {
	return []demoStep{
		{"The lab", (*demo).describeLab},
		{"A PING round through every node", (*demo).pingRound},
		{"Every sentinel names the master", (*demo).askSentinels},
		{"The replica election reads from the near replica", (*demo).electionTour},
		{"A failover: reads go on, a held write runs once, an in-flight write is refused", (*demo).failoverTour},
		{"What the shop's GET /metrics shows after the failover", (*demo).metricsTour},
		{"Redis down: the shop's catalog falls back, login and payment refuse", (*demo).guardTour},
		{"A hash ring splits 100 keys between two workers", (*demo).ringTour},
		{"Two databases: the client moves off a dead one, and back on an operator's word", (*demo).multidbTour},
		{"A Redis Cluster: reads on each shard's near replica; a shard's master killed under writes", (*demo).clusterTour},
	}
}

// DefaultDemoStepTimeout bounds each step of the tour (and the start of
// its lab). A step takes a few seconds; the whole tour under 2 minutes.
const DefaultDemoStepTimeout = 30 * time.Second

func newDemoCommand() *cobra.Command {
	var quick bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "A guided tour of rediskit on a local lab",
		Long: `Start a local lab (1 master, 2 replicas, 3 sentinels; the master and
replica node1 6 ms away, replica node2 42 ms away, plus standalone servers
for the shop, the ring and the two databases) and walk through what rediskit
does with it, printing what happened and the figures measured. Ctrl-C stops
the tour and every lab cleanly.

--timeout bounds each step of the tour, the labs it starts included (the
network calls inside a step have their own, shorter limits). A step that
exceeds it stops the tour with exit code 1, after stopping every lab.

The tour is narrated for a person reading along: it has no --json. For
machine-readable reports, run the other commands (check, probe, health,
drill) with --json, against --lab or a lab up URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usagef("--timeout must be positive")
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), quick, timeout)
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "a short tour (fewer samples), as CI runs it")
	cmd.Flags().DurationVar(&timeout, "timeout", DefaultDemoStepTimeout, "bound on each step of the tour (and on starting its lab)")
	return cmd
}

// demoLabConfig is the demo's topology, which --lab also starts: a master
// and replica node1 6 ms away, replica node2 42 ms away, three sentinels.
func demoLabConfig(password, sentinelPassword string) lab.Config {
	cfg := lab.Sentinel(2)
	cfg.Nodes = []lab.NodeConfig{
		{Latency: 6 * time.Millisecond},
		{Latency: 6 * time.Millisecond},
		{Latency: 42 * time.Millisecond},
	}
	cfg.Password, cfg.SentinelPassword = password, sentinelPassword
	return cfg
}

func runDemo(ctx context.Context, out io.Writer, quick bool, timeout time.Duration) error {
	began := time.Now()
	cfg := demoLabConfig("", "")
	cfg.StartTimeout = timeout
	l, err := startLab(ctx, cfg, timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "started 1 master, 2 replicas and 3 sentinels in %v\n", time.Since(began).Round(time.Millisecond))
	d := &demo{out: out, quick: quick, lab: l}
	var stopMetrics func(context.Context) error
	if d.metrics, d.metricsHandler, stopMetrics, err = shop.NewPrometheusMetrics(); err != nil {
		_ = l.Close()
		return err
	}
	defer func() { _ = stopMetrics(context.Background()) }()
	defer func() {
		began := time.Now()
		pids := len(l.PIDs())
		if d.shop != nil { // the tour stopped between the metrics and the guard steps
			pids += len(d.shop.lab.PIDs())
		}
		if err := errors.Join(d.closeShop(), l.Close()); err != nil {
			fmt.Fprintf(out, "close: %v\n", err)
		}
		fmt.Fprintf(out, "\nstopped %d processes in %v\n", pids, time.Since(began).Round(time.Millisecond))
	}()

	for i, step := range demoSteps() {
		fmt.Fprintf(out, "\n== %d. %s\n", i+1, step.title)
		if err := runStep(ctx, d, step, timeout); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(out, "interrupted")
				return nil // Ctrl-C ends the tour cleanly
			}
			return fmt.Errorf("%s: %w", step.title, err)
		}
	}
	return nil
}

// runStep runs one step of the tour within timeout.
func runStep(ctx context.Context, d *demo, step demoStep, timeout time.Duration) error {
	began := time.Now()
	stepCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := step.run(d, stepCtx)
	if err != nil && ctx.Err() == nil && stepCtx.Err() != nil {
		return fmt.Errorf("the step did not finish within --timeout %v (gave up after %v): %w",
			timeout, time.Since(began).Round(time.Millisecond), err)
	}
	return err
}

func (d *demo) describeLab(ctx context.Context) error {
	return describeLab(ctx, d.out, d.lab)
}

func (d *demo) pingRound(ctx context.Context) error {
	samples := 20
	if d.quick {
		samples = 5
	}
	for _, n := range d.lab.Nodes() {
		c := n.NewClient()
		rtts, err := pingSamples(ctx, c.Ping, samples)
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name(), err)
		}
		fmt.Fprintf(d.out, "%s %s: PING median %v (injected %v, %d samples)\n",
			n.Name(), n.Addr(), median(rtts).Round(10*time.Microsecond), n.Latency(), samples)
	}
	return nil
}

func (d *demo) askSentinels(ctx context.Context) error {
	for _, s := range d.lab.Sentinels() {
		addr, err := s.MasterAddr(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name(), err)
		}
		name := "unknown node"
		if n := d.lab.NodeByAddr(addr); n != nil {
			name = n.Name()
		}
		fmt.Fprintf(d.out, "sentinel %s names %s (%s) as the master of %q\n", s.Addr(), addr, name, d.lab.MasterName())
	}
	return nil
}

// pingSamples connects once, then times n PINGs.
func pingSamples[T interface{ Err() error }](ctx context.Context, ping func(context.Context) T, n int) ([]time.Duration, error) {
	if err := ping(ctx).Err(); err != nil {
		return nil, err
	}
	rtts := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := ping(ctx).Err(); err != nil {
			return nil, err
		}
		rtts = append(rtts, time.Since(start))
	}
	if len(rtts) == 0 {
		return nil, errors.New("no samples")
	}
	return rtts, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
