package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

type probeFlags struct {
	targetFlags
	watch        bool
	interval     time.Duration
	maxStaleness time.Duration
	svg, png     string // files to draw the RTT per node in ("": none)
}

func newProbeCommand() *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe URL",
		Short: "The replica election's RTT table: which replica reads go to, and why",
		Long: `Run the latency-aware replica election of package replica against a
redis+sentinel:// deployment, as a client of it would, and print its RTT
table: per node the role, the moving average (EWMA) of the PING round trip,
the last sample, the replication lag (bytes and estimated seconds), whether
the last probe succeeded, and whether the replica is elected (reads under
replica and replicaPreferred go to it; "nearest" marks where reads under
nearest go) or excluded, and why.

The prober probes every node every --interval on connections of its own
(two PINGs, the shorter counts; ROLE on the master, INFO replication on the
replicas), each command bounded by --timeout. Without --watch, probe prints
the table after the first round and exits: 0 when the master answered and,
if there are replicas, one is elected; 1 otherwise. With --watch it
re-prints the table after every round, until Ctrl-C (exit 0): on a
terminal it redraws the screen (as watch(1) does) with the last five changes
of the election under the table; otherwise it prints each change of the
election and one table after another.

--svg FILE (and --png FILE) draws, when the probe ends (after the first
round, or at Ctrl-C with --watch), the RTT per node over the rounds seen,
one line per node, where reads went marked on it, and the election's
changes as numbered markers; a cluster's shards side by side. It keeps the
last 1,800 rounds.

With --json: {"target", "master_name", "round", "at", "nodes": [{"addr",
"role", "rtt_ms", "last_rtt_ms", "samples", "healthy", "error", "link_up",
"lag_bytes", "lag_ms", "lag_at_least", "elected", "nearest", "excluded",
"why"}]}, one line per round with --watch.

A cluster URL (redis+cluster://h1,h2 or redis://h1?addr=h2) runs the
rediskit cluster client's elections, one per shard, and prints each
shard's table (its master first) after the first round: exit 1 when any
shard's master did not answer or no replica of a shard with replicas is
elected. With --watch the tables are printed again every --interval,
one set after another (the election's changes are not listed); with
--json: {"target", "at", "shards": [{"slots", "master", "nodes": [as
above]}]}.`,
		Example: `  rediskit probe redis+sentinel://10.0.0.1,10.0.0.2,10.0.0.3/mymaster
  rediskit probe --lab --watch --interval 500ms
  rediskit probe --lab --watch --svg rtt.svg
  rediskit probe redis+cluster://10.0.0.1:7000,10.0.0.2:7000`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.interval < replica.MinProbeInterval {
				return usagef("--interval must be at least %v", replica.MinProbeInterval)
			}
			if err := figureFlags(f.svg, f.png); err != nil {
				return err
			}
			t, err := openTarget(cmd.Context(), args, &f.targetFlags)
			if err != nil {
				return err
			}
			defer t.Close()
			if t.isCluster() {
				return runClusterProbe(cmd.Context(), cmd.OutOrStdout(), t, &f)
			}
			if !t.isSentinel() {
				return usagef("probe needs a redis+sentinel:// URL or a cluster URL: the election chooses among a master's replicas")
			}
			return runProbe(cmd.Context(), cmd.OutOrStdout(), t, &f)
		},
	}
	f.targetFlags.register(cmd)
	cmd.Flags().BoolVar(&f.watch, "watch", false, "re-print the table after every probe round until Ctrl-C")
	cmd.Flags().DurationVar(&f.interval, "interval", replica.DefaultProbeInterval, "time between probe rounds")
	cmd.Flags().DurationVar(&f.maxStaleness, "max-staleness", 0, "exclude replicas lagging more than this (0: no bound), as replica.Config.MaxStaleness")
	cmd.Flags().StringVar(&f.svg, "svg", "", "at the end, draw the RTT per node and the election over the rounds seen in this SVG file")
	cmd.Flags().StringVar(&f.png, "png", "", "at the end, draw the RTT per node and the election in this PNG file")
	return cmd
}

// probeJSON is probe's --json report (one per round with --watch).
type probeJSON struct {
	Target     string          `json:"target"`
	MasterName string          `json:"master_name"`
	Round      uint64          `json:"round"`
	At         time.Time       `json:"at"`
	Nodes      []probeNodeJSON `json:"nodes"`
}

type probeNodeJSON struct {
	Addr       string   `json:"addr"`
	Role       string   `json:"role"`
	RTTMS      float64  `json:"rtt_ms"`
	LastRTTMS  float64  `json:"last_rtt_ms"`
	Samples    int      `json:"samples"`
	Healthy    bool     `json:"healthy"`
	Error      string   `json:"error,omitempty"`
	LinkUp     *bool    `json:"link_up,omitempty"`
	LagBytes   *int64   `json:"lag_bytes,omitempty"`
	LagMS      *float64 `json:"lag_ms,omitempty"`
	LagAtLeast bool     `json:"lag_at_least,omitempty"`
	Elected    bool     `json:"elected"`
	Nearest    bool     `json:"nearest"`
	Excluded   string   `json:"excluded,omitempty"`
	Why        string   `json:"why"`
}

// prober is one run of the probe command: the election (the selector) and
// the Sentinel client it learns the topology from, the election's changes
// its observer records (behind evMu) until the next table takes them, and,
// on a terminal with --watch, the last ones shown under the table.
type prober struct {
	out    io.Writer
	t      *target
	f      *probeFlags
	sel    *replica.Selector
	client *sentinel.Client

	evMu   sync.Mutex
	events []replica.Event

	tty    bool     // --watch redraws the screen
	recent []string // the last election changes, shown under the table on a terminal
	fig    *probeRecord
}

// runProbe opens the election and its client, waits for the client's
// first discovery (the selector learns the nodes from it) and starts
// probing; then, round after round, waits for the round and prints its
// table. Without --watch it stops after the first round with the verdict;
// with it, at Ctrl-C.
func runProbe(ctx context.Context, out io.Writer, t *target, f *probeFlags) (err error) {
	p := &prober{out: out, t: t, f: f, tty: !f.json && isTerminal(out)}
	if err := p.open(); err != nil {
		return usageError{err}
	}
	defer p.client.Close() // closes the selector too
	if err := p.start(ctx); err != nil {
		return err
	}
	p.fig = newProbeRecord(f, fmt.Sprintf("rediskit probe of %q, %s", t.cfg.MasterName, t))
	defer func() { err = cmp.Or(err, p.fig.write(out, f)) }()
	for round := uint64(1); ; round++ {
		if done, err := p.awaitRound(ctx, round); done {
			return err
		}
		table := p.sel.Table()
		p.fig.round(0, time.Now(), table)
		if err := p.report(table); err != nil {
			return err
		}
		if !f.watch {
			if err := probeVerdict(table); err != nil {
				return checkFailed{err}
			}
			return nil
		}
	}
}

// open creates the Sentinel client's default election, with the flags'
// settings, and the client that feeds it the topology.
func (p *prober) open() error {
	cfg := replica.Config{}
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.MaxStaleness = p.f.interval, p.t.timeout, p.f.maxStaleness
	cfg.Observer = p.observe
	sel, err := replica.NewSelector(cfg)
	if err != nil {
		return err
	}
	opts, err := p.t.sentinelConfig()
	if err != nil {
		_ = sel.Close()
		return err
	}
	opts.ReplicaSelector = sel
	client, err := sentinel.NewClient(opts)
	if err != nil {
		_ = sel.Close()
		return err
	}
	p.sel, p.client = sel, client
	return nil
}

// observe records a change of the election for the next table.
func (p *prober) observe(ev replica.Event) {
	p.evMu.Lock()
	p.events = append(p.events, ev)
	p.evMu.Unlock()
}

// start waits for the client's first discovery, bounded by --timeout (the
// selector learns the topology from the client), then starts probing.
func (p *prober) start(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, p.t.timeout)
	err := p.client.Ping(pctx).Err()
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return checkFailed{fmt.Errorf("no master for %q: %w", p.t.cfg.MasterName, err)}
	}
	return p.sel.Start()
}

// awaitRound waits for probe round round; done says the probe ends, with
// err (nil when Ctrl-C ends --watch).
func (p *prober) awaitRound(ctx context.Context, round uint64) (done bool, err error) {
	// A round takes at most a few probe timeouts; the first starts now.
	limit := p.f.interval + 4*p.t.timeout
	wctx, cancel := context.WithTimeout(ctx, limit)
	err = p.sel.WaitRound(wctx, round)
	cancel()
	switch {
	case err == nil:
		return false, nil
	case ctx.Err() != nil && p.f.watch:
		return true, nil // Ctrl-C ends --watch
	case ctx.Err() != nil:
		return true, ctx.Err()
	}
	return true, checkFailed{fmt.Errorf("no probe round completed within %v: %w", limit, err)}
}

// report prints the round's table, with the election's changes since the
// last one: as JSON (one line a round with --watch), or as text.
func (p *prober) report(table []replica.NodeStatus) error {
	p.evMu.Lock()
	evs := p.events
	p.events = nil
	p.evMu.Unlock()
	for _, ev := range evs {
		p.fig.change(0, ev)
	}
	rep := probeJSON{Target: p.t.String(), MasterName: p.t.cfg.MasterName, Round: p.sel.Rounds(), At: time.Now(), Nodes: []probeNodeJSON{}}
	for _, n := range table {
		rep.Nodes = append(rep.Nodes, nodeJSON(n))
	}
	switch {
	case p.f.json && p.f.watch:
		return writeJSONLine(p.out, rep)
	case p.f.json:
		return writeJSON(p.out, rep)
	}
	var changes []string
	for _, ev := range evs {
		changes = append(changes, fmt.Sprintf("%s election changed (%s): elected %s (was %s): %s",
			ev.Time.Format("15:04:05.000"), ev.Reason, addrList(ev.Elected), addrList(ev.Previous), ev.Detail))
	}
	header := fmt.Sprintf("%s  round %d of %q, every %v\n", rep.At.Format("15:04:05.000"), rep.Round, p.t.cfg.MasterName, p.f.interval)
	fmt.Fprint(p.out, p.text(header, table, changes))
	return nil
}

// text lays out one round's text: on a terminal with --watch a redrawn
// screen with the last changes under the table; with --watch elsewhere
// the changes, then the table; without --watch the table alone.
func (p *prober) text(header string, table []replica.NodeStatus, changes []string) string {
	var b strings.Builder
	switch {
	case p.f.watch && p.tty:
		// Redraw the screen, as watch(1) does (lines that wrap make
		// moving the cursor up by a count unreliable); the last
		// changes stay under the table.
		p.recent = append(p.recent, changes...)
		p.recent = p.recent[max(0, len(p.recent)-5):]
		b.WriteString("\x1b[H\x1b[2J")
		b.WriteString(header)
		writeProbeTable(&b, table, nil)
		if len(p.recent) > 0 {
			b.WriteString("\nlast changes of the election:\n")
			for _, c := range p.recent {
				b.WriteString(c + "\n")
			}
		}
		b.WriteString("\nCtrl-C stops\n")
	case p.f.watch:
		for _, c := range changes {
			b.WriteString(c + "\n")
		}
		b.WriteString(header)
		writeProbeTable(&b, table, nil)
		b.WriteString("\n")
	default:
		b.WriteString(header)
		writeProbeTable(&b, table, nil)
	}
	return b.String()
}

// probeVerdict fails when the master did not answer, or when no replica is
// elected though there are replicas.
func probeVerdict(table []replica.NodeStatus) error {
	var replicas, elected int
	for _, n := range table {
		switch {
		case n.Role == replica.RoleMaster && !n.Healthy:
			return fmt.Errorf("the master %s did not answer the probe: %v", n.Addr, n.Err)
		case n.Role == replica.RoleReplica:
			replicas++
			if n.Elected {
				elected++
			}
		}
	}
	if replicas > 0 && elected == 0 {
		return errors.New("no replica is elected: reads that may go to a replica go to the master (see the table for why)")
	}
	return nil
}

// writeProbeTable writes the RTT table; name, when not nil, rewrites the
// addresses (the demo names its lab's nodes).
func writeProbeTable(w io.Writer, table []replica.NodeStatus, name func(string) string) {
	if name == nil {
		name = func(s string) string { return s }
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tRTT (EWMA)\tLAST\tSAMPLES\tLAG\tHEALTHY\tELECTION\tWHY")
	for _, n := range table {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", name(n.Addr), n.Role, rttText(n.RTT), rttText(n.LastRTT), n.Samples,
			lagText(n), yesNo(n.Healthy), electionText(n), name(n.Why))
	}
	_ = tw.Flush()
	for line := range strings.Lines(b.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

func rttText(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(10 * time.Microsecond).String()
}

func lagText(n replica.NodeStatus) string {
	if n.Role != replica.RoleReplica {
		return "-"
	}
	if !n.LagKnown {
		return "unknown"
	}
	at := ""
	if n.LagAtLeast {
		at = "≥"
	}
	return fmt.Sprintf("%dB/%s%v", n.LagBytes, at, n.Lag.Round(time.Millisecond))
}

func electionText(n replica.NodeStatus) string {
	var parts []string
	switch {
	case n.Elected:
		parts = append(parts, "elected")
	case n.Excluded != replica.NotExcluded:
		parts = append(parts, "excluded: "+string(n.Excluded))
	case n.Role == replica.RoleReplica:
		parts = append(parts, "not elected")
	}
	if n.Nearest {
		parts = append(parts, "nearest")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func addrList(a []string) string {
	if len(a) == 0 {
		return "none"
	}
	return strings.Join(a, ", ")
}

func nodeJSON(n replica.NodeStatus) probeNodeJSON {
	j := probeNodeJSON{Addr: n.Addr, Role: string(n.Role), RTTMS: ms(n.RTT), LastRTTMS: ms(n.LastRTT), Samples: n.Samples,
		Healthy: n.Healthy, Elected: n.Elected, Nearest: n.Nearest, Excluded: string(n.Excluded), Why: n.Why}
	if n.Err != nil {
		j.Error = n.Err.Error()
	}
	if n.LinkKnown {
		up := n.LinkUp
		j.LinkUp = &up
	}
	if n.LagKnown {
		b, l := n.LagBytes, ms(n.Lag)
		j.LagBytes, j.LagMS, j.LagAtLeast = &b, &l, n.LagAtLeast
	}
	return j
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
